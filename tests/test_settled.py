"""Where a witness run may stop (`lint_plugin.engine.settled`), and that stopping there changes
no verdict.

Each case is a selector body and, per top-level statement, whether no statement from it on can
bring the backend back once its flag is off: `+` yes, `-` no (the body's first statements are
the prelude's, all `-`: they enable the flag).
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from lint_plugin.engine.analysis import analyze_hazard, compute_capability, selector
from lint_plugin.engine.interpreter import Facts, Interpreter
from lint_plugin.engine.program import Program
from lint_plugin.engine.settled import Settled
from lint_plugin.rule_examples import te2_example
from selector_patch.registry import get_hazard

PRELUDE = """
    device_compute_capability = get_device_compute_capability()
    flag = int(os.environ.get("FLAG", "1"))
"""
HELPERS = """
    def _off():
        nonlocal flag
        flag = False

    def _on():
        nonlocal flag
        flag = True
"""


def settled(body: str, **shape) -> str:
    source = "def get_attention_backend(attention_params):\n" + textwrap.indent(
        textwrap.dedent(PRELUDE + HELPERS) + textwrap.dedent(body), "    "
    )
    function = ast.parse(source).body[0]
    marks = Settled(Program(function), "flag", **shape).from_statement[:-1]
    return "".join("+" if mark else "-" for mark in marks)[4:]  # prelude and helpers left out


CASES = [
    ("switched off, kept off", "flag = False\nflag = other and flag\nreturn flag", "+++"),
    ("a helper that switches it off", "_off()\nreturn flag", "++"),
    ("switched on again", "flag = False\nflag = True\nreturn flag", "--+"),
    ("a helper that switches it on", "_off()\n_on()\nreturn flag", "--+"),
    ("or-ed with another flag", "flag = other or flag\nreturn flag", "-+"),
    ("a walrus", "if (flag := other):\n    pass\nreturn flag", "-+"),
    ("a loop target", "for flag in options:\n    pass\nreturn flag", "-+"),
    ("an unpacking", "flag, other = options\nreturn flag", "-+"),
    ("inside a branch", "if other:\n    flag = 1\nreturn flag", "-+"),
]


@pytest.mark.parametrize("body, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_settled_from(body: str, expected: str) -> None:
    assert settled(body) == expected


VERSIONS = {"FA2": "Utils.version", "FA4": "Utils.fa4_version"}
RETURNED_VERSION = dict(role="FA4", version="backend", version_expressions=VERSIONS)
VERSION_CASES = [
    ("picked where the flag is on", "if flag:\n    backend = Utils.fa4_version", "++"),
    ("picked under a conjunction", "if other and flag:\n    backend = Utils.fa4_version", "++"),
    ("picked whatever the flag", "if other:\n    backend = Utils.fa4_version", "-+"),
    ("another role's version", "backend = Utils.version", "++"),
    ("a constant", "backend = None", "++"),
    ("anything else", "backend = pick(flag)", "-+"),
    ("a version expression rebound", "Utils.version = Utils.fa4_version", "-+"),
]


@pytest.mark.parametrize(
    "body, expected", [c[1:] for c in VERSION_CASES], ids=[c[0] for c in VERSION_CASES]
)
def test_settled_from_with_a_returned_version(body: str, expected: str) -> None:
    assert settled(body + "\nreturn flag, backend", **RETURNED_VERSION) == expected


def test_a_run_stops_where_the_flag_is_off_for_good_and_answers_the_same() -> None:
    """TE 2.19+'s own FA4 filter below sm90 settles TEA005 in its first filters: the run that
    stops there reads fewer statements, and the witness is guarded either way."""
    module = ast.parse(te2_example())
    function = module.body[-1]
    prepared = selector(module, function)
    stop = prepared.settled("FA4").off
    facts = Facts(calls=compute_capability((8, 0)))
    runs = {}
    for name, ending in (("full", None), ("stopped", stop)):
        interpreter = Interpreter(prepared.program, facts, relevant=prepared.relevant)
        returns = interpreter.run(stop=ending)
        runs[name] = (
            interpreter.statements,
            {s.vars["use_flash_attention_4"].truth for s in returns},
        )
    assert runs["stopped"][0] < runs["full"][0]
    assert runs["stopped"][1] == runs["full"][1] == {False}
    assert not analyze_hazard(module, function, get_hazard("TEA005")).reachable
