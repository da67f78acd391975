"""After the codemod, the miner finds nothing UNGUARDED on any release 2.15.0-2.20.2 (issue 23).

For each release the codemod patches the selector (the session's `codemod_result`), and the
miner's cases of flash-attn-4 4.0.0b24 and 4.0.0b36 and flash-attn 2.8.3 are judged against the
patched selector by both judges. Mining is the cost (some 20 s a kernel), so each kernel is read
once per session and mined once per distinct shape of TE's calls into it: releases whose calls
pass the same parameters, the same way, get the same cases (only the cited lines differ).
"""

from __future__ import annotations

import ast

import pytest

from lint_plugin.mine.crosscheck import UNGUARDED, Judges, crosscheck
from lint_plugin.mine.cute import mine as mine_cute
from lint_plugin.mine.cute.kernel import BACKEND, from_release
from lint_plugin.mine.te_calls import kernel_calls
from selector_patch.registry import HAZARDS

RELEASES = ["2.15.0", "2.16.0", "2.16.1", "2.17.0", "2.17.1", "2.18.0", "2.19.0", "2.20.2"]
KERNELS = [("flash-attn-4", "4.0.0b24"), ("flash-attn-4", "4.0.0b36"), ("flash-attn", "2.8.3")]


def _shape(calls) -> tuple:
    """TE's FA4 calls without their lines: what decides the cases mined through them."""
    return tuple(
        (
            call.function,
            tuple(sorted((name, ast.dump(value)) for name, value in call.keywords.items())),
            tuple(ast.dump(argument) for argument in call.positional),
            call.starred,
        )
        for call in calls
        if call.backend == BACKEND
    )


@pytest.fixture(scope="session")
def mined(release):
    """`mined(kernel, version, te)`: the kernel's cases through `te`'s calls, each kernel and
    TE's calls read once and the kernel mined once per shape of those calls."""
    kernels: dict = {}
    calls_of: dict = {}
    found: dict = {}

    def get(distribution: str, version: str, te: str):
        if distribution == "flash-attn":
            from lint_plugin.mine.cuda import mine as mine_cuda
            from lint_plugin.mine.cuda.source import from_release as cuda_release

            if version not in found:
                found[version] = mine_cuda(cuda_release(version)).cases
            return found[version]
        if version not in kernels:
            kernels[version] = from_release(version)
        if te not in calls_of:
            calls_of[te] = kernel_calls(release(te))
        calls = calls_of[te]
        key = (version, _shape(calls))
        if key not in found:
            found[key] = mine_cute(kernels[version], calls)
        return found[key]

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
