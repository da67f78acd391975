"""Every rule's own VALID / INVALID example selectors, run through the flake8 plugin (fixit style).

An INVALID example must be reported with its rule's code, a VALID one must not; neither may
produce an internal-failure code. Adding an example to a rule in `lint_plugin/rule_examples.py`
adds a case here.
"""

from __future__ import annotations

import ast

import pytest

from lint_plugin.plugin import TeaChecker
from lint_plugin.rules import RULES
from selector_patch.registry import HAZARDS

EXAMPLES = [
    pytest.param(rule.code, kind, source, id=f"{rule.code}-{kind}-{index}")
    for rule in RULES.values()
    for kind, sources in (("valid", rule.valid), ("invalid", rule.invalid))
    for index, source in enumerate(sources)
]


def codes(source: str) -> list[str]:
    checker = TeaChecker(ast.parse(source), "example.py", source.splitlines(keepends=True))
    return [message.split()[0] for _, _, message, _ in checker.run()]


@pytest.mark.parametrize(("code", "kind", "source"), EXAMPLES)
def test_example(code: str, kind: str, source: str) -> None:
    reported = codes(source)
    assert not [c for c in reported if c.startswith("TEA9")], reported
    assert (code in reported) == (kind == "invalid"), reported


def test_every_analysis_rule_has_both_kinds_of_example() -> None:
    for rule in RULES.values():
        if not rule.code.startswith("TEA9"):
            assert rule.valid and rule.invalid, rule.code


def test_every_hazard_has_a_rule_with_docs() -> None:
    for hazard in HAZARDS:
        rule = RULES[hazard.id]
        assert hazard.evidence.file in rule.why
        assert hazard.title == rule.summary
    for rule in RULES.values():
        assert rule.what and rule.why and rule.fix, rule.code
