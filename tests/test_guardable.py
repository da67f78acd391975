"""Which filters could guard a hazard (`lint_plugin.engine.guardable`), and the witness order
that follows: a hazard no filter could guard is decided by its first witness alone, with the
verdict every order gives."""

from __future__ import annotations

import ast

import pytest

from lint_plugin.engine import interpreter
from lint_plugin.engine.analysis import analyze_hazard, selector
from lint_plugin.engine.guardable import guard_paths
from lint_plugin.rule_examples import te2_example
from selector_patch.registry import get_hazard

#: TE 2.20.2's SM 10.x head-dim-256 filters: none is true for the seqused hazards' witnesses.
SM10X_HEAD_DIM_FILTERS = """
    if (
        use_flash_attention_4
        and (10, 0) <= device_compute_capability < (12, 0)
        and head_dim_qk == head_dim_v == 512
    ):
        use_flash_attention_4 = False
    if use_flash_attention_4 and head_dim_qk == head_dim_v == 256 and max_seqlen_q != max_seqlen_kv:
        use_flash_attention_4 = False
"""
#: The codemod's TEA006 guard.
SEQUSED_GUARD = """
    if (
        use_flash_attention_4
        and head_dim_qk == 256
        and head_dim_v == 256
        and pad_between_seqs
        and (10, 0) <= device_compute_capability < (12, 0)
    ):
        use_flash_attention_4 = False
"""


def selector_of(filters: str):
    source = te2_example(compute_capability=filters).replace(
        "    device_compute_capability = get_device_compute_capability()\n",
        "    device_compute_capability = get_device_compute_capability()\n"
        "    max_seqlen_q = attention_params.max_seqlen_q\n"
        "    max_seqlen_kv = attention_params.max_seqlen_kv\n",
    )
    module = ast.parse(source)
    return module, module.body[-1]


@pytest.mark.parametrize(
    "filters, paths",
    [("", 0), (SM10X_HEAD_DIM_FILTERS, 2), (SEQUSED_GUARD, 1)],
    ids=["none", "filters for other head dims", "the guard"],
)
def test_guard_paths_read_an_input(filters: str, paths: int) -> None:
    module, function = selector_of(filters)
    program = selector(module, function).program
    inputs = program.derived_names({"head_dim_qk", "head_dim_v", "pad_between_seqs"})
    assert len(guard_paths(program, {"use_flash_attention_4"}, inputs)) == paths


@pytest.mark.parametrize(
    "filters, reachable, runs",
    [(SM10X_HEAD_DIM_FILTERS, True, 1), (SEQUSED_GUARD, False, 1)],
    ids=["no filter could guard: its first witness alone", "guarded: all in one run"],
)
def test_witnesses_are_ordered_by_what_could_guard_them(
    monkeypatch, filters: str, reachable: bool, runs: int
) -> None:
    module, function = selector_of(filters)
    hazard = get_hazard("TEA006")
    together = analyze_hazard(module, function, hazard, expect_guarded=True)
    counted = []
    run = interpreter.Interpreter.run
    monkeypatch.setattr(
        interpreter.Interpreter,
        "run",
        lambda self, *a, **k: counted.append(1) or run(self, *a, **k),
    )
    verdict = analyze_hazard(module, function, hazard)
    assert verdict == together
    assert verdict.reachable is reachable
    assert len(counted) == runs
