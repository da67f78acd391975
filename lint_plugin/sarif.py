"""SARIF 2.1.0 output, so GitHub code scanning can show TEA findings on the pull request.

One builder serves both producers: the flake8 formatter registered as `--format=sarif`
(`sarif_format`) and `python -m codemods.apply --check --format sarif`. Rule metadata comes
from the rule registry (`lint_plugin.rules`), the same text as `docs/rules/`.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from lint_plugin.rules import RULES, Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL = "te-attn-guards"
VERSION = "0.1.0"


class Result(NamedTuple):
    """One finding."""

    code: str
    message: str
    path: str
    #: 1-based line and column, as SARIF counts them.
    line: int
    column: int = 1
    level: str = "error"


def _rule_descriptor(code: str, rules: dict[str, Rule]) -> dict:
    rule = rules.get(code)
    if rule is None:  # another flake8 plugin's code, selected beside TEA
        return {"id": code}
    return {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.what},
        "help": {"text": f"{rule.why}\n\nFix: {rule.fix}"},
    }


def sarif_log(results: Iterable[Result], rules: dict[str, Rule] | None = None) -> dict:
    """A complete SARIF log with one run; `rules` adds descriptors beyond the registry's."""
    results = list(results)
    known = {**(rules or {}), **RULES}
    codes = sorted({result.code for result in results})
    index = {code: position for position, code in enumerate(codes)}
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL,
                        "version": VERSION,
                        "rules": [_rule_descriptor(code, known) for code in codes],
                    }
                },
                "results": [
                    {
                        "ruleId": result.code,
                        "ruleIndex": index[result.code],
                        "level": result.level,
                        "message": {"text": result.message},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": result.path},
                                    "region": {
                                        "startLine": max(1, result.line),
                                        "startColumn": max(1, result.column),
                                    },
                                }
                            }
                        ],
                    }
                    for result in results
                ],
            }
        ],
    }
