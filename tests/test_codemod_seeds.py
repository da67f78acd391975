"""The two seed reports, replayed on TE 2.20.2 after the codemod, in the harness.

Seed 000: deterministic training on SM 12.0 must leave FlashAttention 4 for TE's own fallback
(or report no backend) while eval and nondeterministic training keep FA4. Seed 001: FA2 off for
dropout training at padded head dim > 192 on SM 12.0, kept for its five controls. "Forward only"
needs a selector that can tell it from training (`requires_backward`, newer TE main); it is
checked on 2.20.2 with that field added the way newer main adds it.
"""

from __future__ import annotations

import pytest
from seed_cases import (
    SEED_000,
    SEED_000_CONTROLS,
    SEED_000_NO_UNFUSED,
    SEED_001,
    SEED_001_CONTROLS,
    SEED_001_FORWARD_ONLY,
)

from codemods.apply import transform
from selector_patch.harness import Unrepresentable, load_selector
from selector_patch.registry import HAZARDS


def with_requires_backward(selector_text: str) -> str:
    """2.20.2 as newer TE main has it: `AttentionParams.requires_backward`, read by the selector."""
    field = "    is_training: bool = True\n"
    read = "    is_training = attention_params.is_training\n"
    params = selector_text.index("class AttentionParams")
    at = selector_text.index(field, params) + len(field)
    text = selector_text[:at] + "    requires_backward: bool = True\n" + selector_text[at:]
    assert text.count(read) == 1
    return text.replace(read, read + "    requires_backward = attention_params.requires_backward\n")


@pytest.fixture(scope="module")
def patched(release):
    source = release("2.20.2")
    text = source.path.read_text()
    return {
        "2.20.2": load_selector(source, text=transform(text, HAZARDS)[0]),
        "main": load_selector(source, text=transform(with_requires_backward(text), HAZARDS)[0]),
    }


@pytest.mark.parametrize("dialect", ["2.20.2", "main"])
def test_seed_000_deterministic_training_falls_back_to_unfused(patched, dialect) -> None:
    selection = patched[dialect].select(SEED_000)
    assert selection.backend == "UnfusedDotProductAttention"
    assert selection.available == (False, False, True)
    assert any(HAZARDS[0].message in line for line in selection.log)


def test_seed_000_without_unfused_reports_no_backend(patched) -> None:
    selection = patched["2.20.2"].select(SEED_000_NO_UNFUSED)
    assert selection.backend == "NoBackend"
    assert selection.available == (False, False, False)


@pytest.mark.parametrize("control", sorted(SEED_000_CONTROLS))
def test_seed_000_controls_keep_fa4(patched, control) -> None:
    selection = patched["2.20.2"].select(SEED_000_CONTROLS[control])
    assert (selection.role, selection.flash_version) == ("FA4", "4.0.0b24")


def test_seed_000_with_fused_attention_stays_deterministic(patched) -> None:
    scenario = SEED_000.with_changes({"env": {"NVTE_FUSED_ATTN": "1"}})
    for fused_backend in ("F16_arbitrary_seqlen", "No_Backend"):
        selection = patched["2.20.2"].select(
            scenario.with_changes({"fused_backend": fused_backend})
        )
        assert selection.role in ("FUSED", "UNFUSED"), selection


@pytest.mark.parametrize("dialect", ["2.20.2", "main"])
@pytest.mark.parametrize("case", sorted(SEED_001))
def test_seed_001_dropout_cases_leave_fa2_off(patched, dialect, case) -> None:
    selection = patched[dialect].select(SEED_001[case])
    assert selection.role != "FA2"
    assert selection.available[0] is False


@pytest.mark.parametrize("control", sorted(SEED_001_CONTROLS))
def test_seed_001_controls_keep_fa2(patched, control) -> None:
    selection = patched["2.20.2"].select(SEED_001_CONTROLS[control])
    assert (selection.role, selection.flash_version) == ("FA2", "2.8.3")


def test_seed_001_forward_only_keeps_fa2_where_the_selector_can_tell(patched) -> None:
    selection = patched["main"].select(SEED_001_FORWARD_ONLY)
    assert (selection.role, selection.flash_version) == ("FA2", "2.8.3")


def test_forward_only_is_indistinguishable_without_requires_backward(patched) -> None:
    """Released TE reads `is_training` as "backward will run": forward-only cannot be asked."""
    with pytest.raises(Unrepresentable):
        patched["2.20.2"].select(SEED_001_FORWARD_ONLY)
