"""The flake8 plugin: `TEA` findings for TE attention selectors.

Registered as `flake8.extension` `TEA = lint_plugin.plugin:TeaChecker`. Only functions named in
`--tea-functions` (default `get_attention_backend`) are analysed; any other file is dismissed by
a substring test on its text before the tree is looked at. A failure of the analysis itself
becomes one `TEA900` / `TEA901` finding that names the cause, never a traceback in flake8's run.
"""

from __future__ import annotations

import ast
from typing import Iterator

from lint_plugin.analysis import analyze_hazard
from lint_plugin.coverage import analyze_coverage
from lint_plugin.dialect import SELECTOR_FUNCTIONS, find_selectors
from lint_plugin.interpreter import AnalysisBudgetExceeded
from lint_plugin.rules import FIX_COMMAND, RULES
from selector_patch.registry import HAZARDS

Finding = tuple[int, int, str, type]


class TeaChecker:
    name = "te-attn-guards"
    version = "0.1.0"
    functions: tuple[str, ...] = SELECTOR_FUNCTIONS

    def __init__(self, tree: ast.AST, filename: str = "", lines: list[str] | None = None) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, parser) -> None:
        parser.add_option(
            "--tea-functions",
            default=",".join(SELECTOR_FUNCTIONS),
            parse_from_config=True,
            comma_separated_list=True,
            help="Names of the attention-backend selector functions to analyse"
            " (default: %(default)s).",
        )

    @classmethod
    def parse_options(cls, options) -> None:
        cls.functions = tuple(options.tea_functions)

    def run(self) -> Iterator[Finding]:
        if self.lines is not None:
            text = "".join(self.lines)
            if not any(name in text for name in self.functions):
                return
        try:
            findings = list(self._findings())
        except AnalysisBudgetExceeded as error:
            findings = [self._failure("TEA901", str(error))]
        except Exception as error:  # a linter reports its own failure instead of crashing
            findings = [self._failure("TEA900", f"{type(error).__name__}: {error}")]
        yield from findings

    def _findings(self) -> Iterator[Finding]:
        module = self.tree
        for function in find_selectors(module, self.functions):
            for hazard in HAZARDS:
                verdict = analyze_hazard(module, function, hazard)
                if verdict.reachable:
                    detail = f"{verdict.detail}; run `{FIX_COMMAND} {self.filename or 'PATH'}`"
                    yield self._finding(hazard.id, verdict.line, verdict.col, detail)
            for finding in analyze_coverage(module, function):
                yield self._finding(finding.code, finding.line, finding.col, finding.detail)

    def _finding(self, code: str, line: int, col: int, detail: str) -> Finding:
        return line, col, RULES[code].message(detail), type(self)

    def _failure(self, code: str, cause: str) -> Finding:
        """One finding for a failed analysis, on the first selector's `def` line if any."""
        lines = [
            node.lineno
            for node in getattr(self.tree, "body", ())
            if isinstance(node, ast.FunctionDef) and node.name in self.functions
        ]
        return self._finding(code, lines[0] if lines else 1, 0, cause)
