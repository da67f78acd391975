"""The seeds as users hit them: nothing disabled, the packages installed, cuDNN answered by TE's C++.

With cuDNN's fused answer from TE's own C++, the hazards need no `NVTE_*` variable to show. TE
2.18.0's C++ refuses deterministic training on SM 12.0, so its selector picks FlashAttention 4
for seed 000's call with nothing set; the codemod's guard and the runtime patch take FA4 away
and TE falls back to what it reports; `verify` lists that very default-environment witness as
reachable before and fixed after.
"""

from __future__ import annotations

import pytest

from codemods.apply import transform
from selector_patch import runtime
from selector_patch.harness import load_selector
from selector_patch.registry import HAZARDS, get_hazard
from selector_patch.scenario import Scenario
from selector_patch.verify import verify_hazard

#: Seed 000 with nothing set: TE 2.18.0 on sm120, deterministic training, cuDNN 9.18.1.
SEED_000_DEFAULT = Scenario(
    compute_capability=(12, 0), deterministic=True, cudnn_version=(9, 18, 1)
)


@pytest.fixture(scope="module")
def selectors(release, te_cxx):
    source = release("2.18.0")
    patched_copy = load_selector(source)
    runtime.install(patched_copy.module, HAZARDS)
    yield {
        "unpatched": load_selector(source),
        "codemod": load_selector(source, text=transform(source.path.read_text(), HAZARDS)[0]),
        "runtime patch": patched_copy,
    }
    runtime.uninstall(patched_copy.module)


def _reported(selection) -> str:
    (line,) = [line for line in selection.log if line.startswith("Selected backend = ")]
    return line


def test_te_2_18_picks_fa4_for_seed_000_with_nothing_set(selectors):
    selection = selectors["unpatched"].select(SEED_000_DEFAULT)
    assert selection.role == "FA4"
    assert "Disabling FusedAttention as no backend supports the provided input" in selection.log
    assert _reported(selection) == "Selected backend = FlashAttention (4.0.0b24)."


@pytest.mark.parametrize("guard", ["codemod", "runtime patch"])
def test_the_guard_takes_fa4_away_and_te_reports_its_fallback(selectors, guard):
    selection = selectors[guard].select(SEED_000_DEFAULT)
    assert selection.role != "FA4"
    assert any(get_hazard("TEA001").message in line for line in selection.log)
    assert _reported(selection) == f"Selected backend = {_backend_words(selection)}."


def _backend_words(selection) -> str:
    """How TE's own log names the selection it returned."""
    if selection.flash_version is not None:
        return f"{selection.backend} ({selection.flash_version})"
    return selection.backend


def test_both_guards_select_the_same(selectors):
    assert selectors["codemod"].select(SEED_000_DEFAULT) == selectors["runtime patch"].select(
        SEED_000_DEFAULT
    )


def test_verify_lists_the_default_environment_witness_reachable_then_fixed(selectors):
    hazard = get_hazard("TEA001")
    default = next(
        witness
        for witness in hazard.witnesses()
        if witness.env == () and witness.training and witness.compute_capability == (12, 0)
    )
    assert default == Scenario(
        compute_capability=(12, 0), deterministic=True, flash_attn_4=hazard.kernel_version
    )
    before = dict(verify_hazard(selectors["unpatched"], hazard).witnesses)
    after = dict(verify_hazard(selectors["codemod"], hazard).witnesses)
    assert before[default] is True
    assert after[default] is False


@pytest.mark.parametrize("version", ["2.15.0", "2.16.1", "2.17.1", "2.18.0", "2.19.0"])
def test_seed_000_default_witness_is_tes_own_answer_on_every_fa4_release(release, te_cxx, version):
    """TE 2.15 - 2.18 answer from their C++ trees, 2.19.0 (no public source) from its compiled
    library: no release states an assumption, and each refuses cuDNN for seed 000 as it is."""
    loaded = load_selector(release(version))
    assert loaded.fused_assumption is None
    selection = loaded.select(SEED_000_DEFAULT)
    assert selection.role == "FA4"
    assert "Disabling FusedAttention as no backend supports the provided input" in selection.log
