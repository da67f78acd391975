"""TE 2.20+'s `FusedAttentionParams` as the compiled v2 query takes it, and cuDNN's assumed verdict.

TE's Python side builds a `FusedAttentionParams` dataclass and passes it whole; the wrapper
sets each field as the attribute of the same name on an `NVTEFusedAttnConfig`
(`is_training` is `kNVTEFusedAttnConfigIsTraining`, `qkv_dtype` `kNVTEFusedAttnConfigQKVDtype`:
the same words, in snake case). `ConfigFields` turns the instance into `(attribute value,
is real, value)` per field, values as pybind11 converts them (enum members and TE's `DType` to
their integers), the attributes valued by the release's own header. A field no attribute
names is refused, as the wrapper would refuse it.

Where TE's own rules admit a request, the query asks cuDNN's graph support check, which only a
GPU's cuDNN can answer. There the verdict is assumed, "supported", and the backend is the one
TE checks that dtype with: FP8 for an FP8 `qkv_dtype`, else F16_arbitrary_seqlen; the
selection's log says so (`VERDICT_ASSUMED`).
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, Callable, Mapping, Sequence

from selector_patch.harness.opaque import OpaqueDecision, is_opaque
from selector_patch.memo import once

ATTRIBUTES = "NVTEFusedAttnConfigAttribute"
PREFIX = "kNVTEFusedAttnConfig"
VERDICT_ASSUMED = "cuDNN's support verdict assumed"
FP8_DTYPES = ("kFloat8E4M3", "kFloat8E5M2")


def _key(name: str) -> str:
    return name.replace("_", "").lower()


class ConfigFields:
    """A `FusedAttentionParams` as the query's attribute settings, by one release's header.

    The header's attributes are read once, and each distinct set of field values is converted
    once: a grid asks the same few thousand configurations again and again, and converting is
    a pure function. Keys hold each value with its type, as `extension.arguments_of` keys the
    older query's arguments (`128` and `128.0` are equal keys, but one is an integer setting
    and the other a real one)."""

    def __init__(self, enums: Mapping[str, Mapping[str, int]]) -> None:
        self._attributes = {
            _key(name.removeprefix(PREFIX)): value
            for name, value in enums[ATTRIBUTES].items()
            if name.startswith(PREFIX)
        }
        #: Per dataclass, its field names and a getter of all their values at once.
        self._names: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple]]] = {}
        self._converted: dict[tuple, tuple[tuple[int, bool, float], ...]] = {}

    def __call__(self, args: tuple, kwargs: dict) -> tuple[tuple[int, bool, float], ...]:
        """The one `FusedAttentionParams` argument as the query's attribute settings."""
        if kwargs or len(args) != 1 or not dataclasses.is_dataclass(args[0]):
            raise TypeError("get_fused_attn_backend(): takes one FusedAttentionParams")
        params = args[0]
        known = self._names.get(type(params))
        if known is None:
            names = tuple(field.name for field in dataclasses.fields(params))
            getter = operator.attrgetter(*names) if len(names) > 1 else _one(names)
            known = self._names[type(params)] = (names, getter)
        names, getter = known
        values = getter(params)
        key = (names, values, tuple(map(type, values)))
        return once(self._converted, key, lambda: self._convert(names, values))

    def _convert(
        self, names: tuple[str, ...], values: tuple
    ) -> tuple[tuple[int, bool, float], ...]:
        fields = []
        for name, value in zip(names, values):
            attribute = self._attributes.get(_key(name))
            if attribute is None:
                raise TypeError(f"FusedAttentionParams.{name}: no configuration attribute")
            if is_opaque(value):
                raise OpaqueDecision(
                    f"FusedAttentionParams.{name} would be {value.__qualname__}, which has no"
                    " answer"
                )
            if isinstance(value, float):
                fields.append((attribute, True, value))
                continue
            try:
                fields.append((attribute, False, operator.index(value)))
            except TypeError:
                raise TypeError(
                    f"FusedAttentionParams.{name}: {value!r} is neither a number nor an enum"
                ) from None
        return tuple(fields)


def assumed_verdict(
    enums: Mapping[str, Mapping[str, int]], fields: Sequence[tuple[int, bool, float]]
) -> str:
    """The backend assumed where cuDNN's check was reached: by the request's `qkv_dtype`."""
    qkv_dtype = enums[ATTRIBUTES][f"{PREFIX}QKVDtype"]
    fp8 = {enums["DType"][name] for name in FP8_DTYPES if name in enums["DType"]}
    dtype = next(value for attribute, _, value in fields if attribute == qkv_dtype)
    return "FP8" if dtype in fp8 else "F16_arbitrary_seqlen"


def _one(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """A getter of the values of `names` (none or one) as a tuple, as `attrgetter` of several
    names gives them."""
    return lambda params: tuple(getattr(params, name) for name in names)
