"""Inputs a selector cannot tell apart (`lint_plugin.engine.indistinct`), and witnesses that
differ only in them answered by one run."""

from __future__ import annotations

import ast
import textwrap

import pytest

from lint_plugin.engine import interpreter
from lint_plugin.engine.analysis import analyze_hazards, selector
from lint_plugin.engine.indistinct import indistinct
from lint_plugin.engine.program import Program
from lint_plugin.rule_examples import te2_example
from selector_patch.registry import get_hazard


def program(body: str) -> Program:
    source = "def get_attention_backend(attention_params):\n" + textwrap.indent(
        "num_splits = attention_params.num_splits\n" + textwrap.dedent(body), "    "
    )
    return Program(ast.parse(source).body[0])


CASES = [
    ("compared alike", "if num_splits != 1:\n    flag = False", True),
    ("compared from the right", "if 1 != num_splits:\n    flag = False", True),
    ("logged", 'log(f"num_splits = {num_splits}")', True),
    ("the attribute read again, alike", "if attention_params.num_splits != 1:\n    pass", True),
    ("compared apart", "if num_splits > 1:\n    flag = False", False),
    ("tested for truth", "if num_splits:\n    flag = False", False),
    ("computed with", "splits = num_splits + 1", False),
    ("passed on", "flag = check(num_splits)", False),
    ("rebound", "num_splits = 1", False),
]


@pytest.mark.parametrize("body, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_indistinct(body: str, expected: bool) -> None:
    assert indistinct(program(body), "num_splits", (2, 0)) is expected


@pytest.mark.parametrize(
    "num_splits, runs",
    [("    if num_splits != 1:\n        pass\n", 0), ("    if num_splits > 1:\n        pass\n", 1)],
    ids=["alike: TEA003's run answers", "apart: a run of its own"],
)
def test_witnesses_alike_share_a_run(monkeypatch, num_splits: str, runs: int) -> None:
    """TEA003 (num_splits 2) and TEA004 (num_splits 0) on SM 12.x, both reachable: where the
    selector cannot tell 2 from 0, no run binds TEA004's 0, and the verdicts are the runs
    apart's."""
    module = ast.parse(te2_example(num_splits=num_splits))
    function = module.body[-1]
    hazards = [get_hazard("TEA003"), get_hazard("TEA004")]
    apart = [analyze_hazards(module, function, [hazard])[0] for hazard in hazards]
    selector.cache_clear()
    bound = []
    run = interpreter.Interpreter.run

    def counting(self, *arguments, **keywords):
        splits = self.facts.params.get("num_splits")
        bound.append(splits is not None and splits.const == 0)
        return run(self, *arguments, **keywords)

    monkeypatch.setattr(interpreter.Interpreter, "run", counting)
    together = analyze_hazards(module, function, hazards)
    assert together == apart
    assert all(verdict.reachable for verdict in together)
    assert sum(bound) == runs
