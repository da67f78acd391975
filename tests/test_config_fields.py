"""`ConfigFields`: TE 2.20+'s `FusedAttentionParams` as the v2 query's attribute settings.

A small dataclass and header stand in for the release's (the real ones run in `test_te_lib_v2`):
the conversion's rules, and its memo's keys, are what is checked here.
"""

from __future__ import annotations

import dataclasses

import pytest

from selector_patch.harness.config_fields import ATTRIBUTES, ConfigFields

ENUMS = {
    ATTRIBUTES: {
        "kNVTEFusedAttnConfigIsTraining": 0,
        "kNVTEFusedAttnConfigDropout": 1,
        "kNVTEFusedAttnConfigQKVDtype": 2,
    }
}


@dataclasses.dataclass
class FusedAttentionParams:
    is_training: bool
    dropout: float
    qkv_dtype: int


def test_each_field_is_its_attribute_with_its_value_as_pybind11_converts_it() -> None:
    convert = ConfigFields(ENUMS)
    assert convert((FusedAttentionParams(True, 0.1, 5),), {}) == (
        (0, False, 1),
        (1, True, 0.1),
        (2, False, 5),
    )


def test_equal_values_of_other_types_are_converted_each_as_its_own() -> None:
    """`0.0` and `0` are equal keys: the memo keys each value with its type, or the integer
    setting would be answered with the real one converted first."""
    convert = ConfigFields(ENUMS)
    real = convert((FusedAttentionParams(True, 0.0, 5),), {})
    integer = convert((FusedAttentionParams(True, 0, 5),), {})
    assert real[1] == (1, True, 0.0) and integer[1] == (1, False, 0)
    assert convert((FusedAttentionParams(True, 0.0, 5),), {}) is real


def test_a_field_no_attribute_names_is_refused_as_the_wrapper_refuses_it() -> None:
    @dataclasses.dataclass
    class Renamed:
        is_training: bool
        dropout_probability: float

    with pytest.raises(TypeError, match="FusedAttentionParams.dropout_probability"):
        ConfigFields(ENUMS)((Renamed(True, 0.1),), {})
    with pytest.raises(TypeError, match="takes one FusedAttentionParams"):
        ConfigFields(ENUMS)((), {"params": FusedAttentionParams(True, 0.1, 5)})
