"""The two seed reports, replayed on TE 2.20.2 after the codemod, in the harness.

Seed 000: deterministic training on SM 12.0, and the same call with the module in eval() whose
backward autograd records, must leave FlashAttention 4 for TE's own fallback (or report no
backend) while forward-only eval and nondeterministic training keep FA4. Seed 001: FA2 off for
dropout training at padded head dim > 192 on SM 12.0, kept for its controls, forward-only
training among them. Both on 2.20.2 as released (the codemod adds the backward signal) and with
`requires_backward` as newer TE main has it (the codemod uses that one).
"""

from __future__ import annotations

import pytest
from seed_cases import (
    SEED_000,
    SEED_000_CONTROLS,
    SEED_000_EVAL_WITH_BACKWARD,
    SEED_000_NO_UNFUSED,
    SEED_001,
    SEED_001_CONTROLS,
)

from codemods.apply import transform
from selector_patch.harness import load_selector
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
@pytest.mark.parametrize("mode", ["training", "eval with backward"])
def test_seed_000_deterministic_backward_falls_back_to_unfused(patched, dialect, mode) -> None:
    scenario = SEED_000 if mode == "training" else SEED_000_EVAL_WITH_BACKWARD
    selection = patched[dialect].select(scenario)
    assert selection.backend == "UnfusedDotProductAttention"
    assert selection.available == (False, False, True)
    assert any(HAZARDS[0].message in line for line in selection.log)


def test_seed_000_without_unfused_reports_no_backend(patched) -> None:
    selection = patched["2.20.2"].select(SEED_000_NO_UNFUSED)
    assert selection.backend == "NoBackend"
    assert selection.available == (False, False, False)


@pytest.mark.parametrize("dialect", ["2.20.2", "main"])
@pytest.mark.parametrize("control", sorted(SEED_000_CONTROLS))
def test_seed_000_controls_keep_fa4(patched, dialect, control) -> None:
    selection = patched[dialect].select(SEED_000_CONTROLS[control])
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


@pytest.mark.parametrize("dialect", ["2.20.2", "main"])
@pytest.mark.parametrize("control", sorted(SEED_001_CONTROLS))
def test_seed_001_controls_keep_fa2(patched, dialect, control) -> None:
    selection = patched[dialect].select(SEED_001_CONTROLS[control])
    assert (selection.role, selection.flash_version) == ("FA2", "2.8.3")
