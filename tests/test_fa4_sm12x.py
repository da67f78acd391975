"""FlashAttention 4 on SM 12.x on every release that has it, after the codemod and with the
runtime patch: deterministic backward (TEA001, eval-mode backward included), split-KV (TEA003)
and the split heuristic below 4.0.0b36 (TEA004).

Seed 000's environment: `NVTE_ALLOW_NONDETERMINISTIC_ALGO=0`, FA3 and fused attention off, FA2
off (`NVTE_FLASH_ATTN_V2=0` from 2.18 on; before, no such switch exists, so FA2 is simply not
installed), FA4 4.0.0b24 or 4.0.0b36. `table()` is the per-release table the closing note of
issue 12 prints.
"""

from __future__ import annotations

import pytest
from fa4_requests import (
    FA4,
    NO_BACKEND,
    NOT_FA4,
    PATCHES,
    UNCHANGED,
    UNFUSED,
    assert_table,
    fa4_only,
)
from packaging.version import Version

from selector_patch.scenario import Scenario
from selector_patch.sources import CORPUS_RELEASES

WITH_FA4 = [v for v in CORPUS_RELEASES if Version(v) >= Version("2.15.0")]
SM12X = ((12, 0), (12, 1))


def cases(te_version: str, fa4: str) -> dict[str, tuple[Scenario, object]]:
    """Each request of the issue's table and what the patched selector must answer."""
    plain = fa4_only(te_version, fa4, NVTE_ALLOW_NONDETERMINISTIC_ALGO="0")
    no_unfused = {"NVTE_UNFUSED_ATTN": "0"}
    table: dict[str, tuple[Scenario, object]] = {}
    for arch in SM12X:
        at = plain.with_changes({"compute_capability": arch, "deterministic": True})
        sm = at.sm
        for mode, changes in (("training", {}), ("eval with backward", {"training": False})):
            table[f"{sm} deterministic {mode}"] = (at.with_changes(changes), UNFUSED)
            off = at.with_changes({**changes, "env": no_unfused})
            table[f"{sm} deterministic {mode}, unfused off"] = (off, NO_BACKEND)
        for mode, training in (("training", True), ("eval", False)):
            split = plain.with_changes(
                {"compute_capability": arch, "num_splits": 2, "training": training}
            )
            table[f"{sm} num_splits 2, {mode}"] = (split, NOT_FA4)
        heuristic = plain.with_changes({"compute_capability": arch, "num_splits": 0})
        table[f"{sm} num_splits 0"] = (heuristic, FA4 if fa4 == "4.0.0b36" else NOT_FA4)
    sm120 = plain.with_changes({"compute_capability": (12, 0), "deterministic": True})
    table["sm120 deterministic forward-only eval"] = (
        sm120.with_changes({"training": False, "backward": False}),
        FA4,
    )
    table["sm120 nondeterministic training"] = (sm120.with_changes({"deterministic": False}), FA4)
    table["sm120 num_splits 1"] = (plain.with_changes({"compute_capability": (12, 0)}), FA4)
    sm100 = plain.with_changes({"compute_capability": (10, 0)})
    table["sm100 deterministic training"] = (sm100.with_changes({"deterministic": True}), UNCHANGED)
    table["sm100 num_splits 2"] = (sm100.with_changes({"num_splits": 2}), FA4)
    return table


@pytest.mark.parametrize("patch", PATCHES)
@pytest.mark.parametrize("te_version", WITH_FA4)
def test_fa4_sm12x_table(release, load_te_selector, te_version, patch):
    assert_table(patch, release(te_version), load_te_selector(te_version).loaded, cases)


def test_unpatched_selectors_reach_every_witness_of_the_table(release, load_te_selector):
    """The table is not vacuous: unpatched, deterministic eval-with-backward, split-KV and the
    split heuristic all select FA4 on sm120."""
    for te_version in (WITH_FA4[0], WITH_FA4[-1]):
        selector = load_te_selector(te_version).loaded
        for name, (scenario, expected) in cases(te_version, "4.0.0b24").items():
            if expected in (UNFUSED, NO_BACKEND, NOT_FA4):
                assert selector.select(scenario).role == FA4, (te_version, name)
