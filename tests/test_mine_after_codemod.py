"""After the codemod, the miner finds nothing UNGUARDED on any release 2.15.0-2.20.2 (issue 23).

For each release the codemod patches the selector (the session's `codemod_result`), and the
miner's cases of flash-attn-4 4.0.0b24 and 4.0.0b36 and flash-attn 2.8.3 are judged against the
patched selector by both judges. Mining is the cost (some 10 s a kernel), so each kernel is
mined once per test run and distinct shape of TE's calls into it (`mined_kernel`, shared with
the other modules that mine the same pairs): releases whose calls pass the same parameters, the
same way, get the same cases (only the cited lines differ).
"""

from __future__ import annotations

import pytest

from lint_plugin.mine.crosscheck import UNGUARDED, Judges, crosscheck
from selector_patch.registry import HAZARDS

RELEASES = ["2.15.0", "2.16.0", "2.16.1", "2.17.0", "2.17.1", "2.18.0", "2.19.0", "2.20.2"]
KERNELS = [("flash-attn-4", "4.0.0b24"), ("flash-attn-4", "4.0.0b36"), ("flash-attn", "2.8.3")]


@pytest.fixture(scope="session")
def mined(mined_kernel):
    """`mined(kernel, version, te)`: the kernel's cases through `te`'s calls (`mined_kernel`:
    once per test run, per kernel and shape of TE's calls)."""

    def get(distribution: str, version: str, te: str):
        if distribution == "flash-attn":
            return mined_kernel(distribution, version).cases
        return mined_kernel(distribution, version, te)

    return get


@pytest.fixture(scope="session")
def patched_judges(codemod_result):
    """`patched_judges(te)`: both judges of the release's patched selector, loaded once per
    session (each kernel's cases are judged on it)."""
    loaded: dict[str, Judges] = {}

    def get(te: str) -> Judges:
        if te not in loaded:
            patched = codemod_result(te)
            loaded[te] = Judges(patched.source, text=patched.result)
        return loaded[te]

    return get


@pytest.mark.parametrize("distribution, version", KERNELS)
@pytest.mark.parametrize("te", RELEASES)
def test_nothing_is_unguarded_after_the_codemod(te, distribution, version, mined, patched_judges):
    verdicts = crosscheck(mined(distribution, version, te), patched_judges(te), HAZARDS)
    unguarded = [
        f"{v.case.site.file}:{v.case.site.line} {v.case.site.message}"
        for v in verdicts
        if v.status == UNGUARDED
    ]
    assert verdicts
    assert not unguarded, unguarded


@pytest.mark.parametrize("te", ["2.19.0", "2.20.2"])
def test_before_the_codemod_the_hd256_seqused_asserts_are_tea006_and_tea007(te, mined, release):
    """Unpatched, TE 2.19+ reach flash-attn-4 4.0.0b24's head-dim-256 seqused asserts on
    SM 10.x / 11.0, and the miner names them by the registry's ids (nothing new to declare)."""
    source = release(te)
    verdicts = crosscheck(mined("flash-attn-4", "4.0.0b24", te), Judges(source), HAZARDS)
    seqused = {
        (v.case.site.function, v.status, v.matches)
        for v in verdicts
        if "does not support seqused_q/seqused_k" in (v.case.site.message or "")
    }
    assert seqused == {
        ("_flash_attn_fwd", UNGUARDED, "TEA006"),
        ("_flash_attn_bwd", UNGUARDED, "TEA007"),
    }
