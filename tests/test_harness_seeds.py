"""The seed reports' scenarios on the real, unpatched TE 2.20.2 selector: today's behaviour."""

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

from selector_patch.harness import Selection
from selector_patch.registry import get_hazard
from selector_patch.scenario import Scenario

TEA001, TEA002 = get_hazard("TEA001"), get_hazard("TEA002")


@pytest.fixture(scope="module")
def te(load_te_selector):
    return load_te_selector("2.20.2").loaded


def test_seed_000_selects_fa4_as_reported(te):
    selection = te.select(SEED_000)
    assert selection == Selection(
        backend="FlashAttention",
        role="FA4",
        flash_version="4.0.0b24",
        available=(True, False, True),
    )
    # The report's log lines, verbatim.
    assert (
        "Available backends = {FlashAttention=True (4.0.0b24), FusedAttention=False,"
        " UnfusedDotProductAttention=True}" in selection.log
    )
    assert "Selected backend = FlashAttention (4.0.0b24)." in selection.log
    assert TEA001.triggered_by(SEED_000)


def test_seed_000_without_unfused_still_selects_fa4(te):
    selection = te.select(SEED_000_NO_UNFUSED)
    assert (selection.role, selection.available) == ("FA4", (True, False, False))


@pytest.mark.parametrize("name", sorted(SEED_001))
def test_seed_001_dropout_cases_select_fa2(te, name):
    scenario = SEED_001[name]
    selection = te.select(scenario)
    assert (selection.backend, selection.role, selection.flash_version) == (
        "FlashAttention",
        "FA2",
        "2.8.3",
    )
    assert TEA002.triggered_by(scenario)


CONTROLS = {
    **{f"seed 000 {name}": (scenario, TEA001) for name, scenario in SEED_000_CONTROLS.items()},
    **{f"seed 001 {name}": (scenario, TEA002) for name, scenario in SEED_001_CONTROLS.items()},
}


@pytest.mark.parametrize("name", list(CONTROLS))
def test_controls_keep_the_backend(te, name):
    scenario, hazard = CONTROLS[name]
    assert te.select(scenario).role == hazard.backend
    assert not hazard.triggered_by(scenario)


def test_seed_000_in_eval_with_a_backward_selects_fa4_too(te):
    """`is_training` is not "a backward will run": the eval-mode backward reaches FA4."""
    assert te.select(SEED_000_EVAL_WITH_BACKWARD).role == "FA4"
    assert TEA001.triggered_by(SEED_000_EVAL_WITH_BACKWARD)


def test_log_lines_are_te_formatted(te):
    lines = te.select(SEED_001["head dim 256"]).log
    assert lines[0].startswith("Running with config={'transformer_engine_version': '2.20.2',")
    assert "'compute_capability': 'sm120'" in lines[0]
    assert "Disabling FusedAttention due to NVTE_FUSED_ATTN=0" in lines


@pytest.mark.parametrize("version", ["2.18.0", "2.20.2"])  # an enum member, then an int
def test_the_fused_sub_backend_is_named(load_te_selector, version):
    selector = load_te_selector(version).loaded
    fused = selector.select(Scenario())
    assert (fused.backend, fused.fused_backend) == ("FusedAttention", "F16_arbitrary_seqlen")
    off = selector.select(Scenario(env=(("NVTE_FUSED_ATTN", "0"),)))
    assert off.fused_backend is None
