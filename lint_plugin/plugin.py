"""The flake8 plugin: `TEA` findings for TE attention selectors.

Registered as `flake8.extension` `TEA = lint_plugin.plugin:TeaChecker`. Only functions named in
`--tea-functions` (default `get_attention_backend`) are analysed; any other file is dismissed by
a substring test on its text before the tree is looked at. A failure of the analysis itself
becomes one `TEA900` / `TEA901` finding that names the cause, never a traceback in flake8's run.
"""

from __future__ import annotations

import ast
from typing import Iterator, Sequence

from lint_plugin.engine.analysis import analyze_hazard
from lint_plugin.engine.coverage import analyze_coverage
from lint_plugin.engine.dialect import SELECTOR_FUNCTIONS, find_selectors
from lint_plugin.engine.interpreter import AnalysisBudgetExceeded
from lint_plugin.rules import FIX_COMMAND, RULES, hazard_rule
from selector_patch.config import Config, ConfigError, load_config
from selector_patch.registry import Hazard

Finding = tuple[int, int, str, type]
#: Names flake8 gives code read from standard input, which has no pyproject.toml of its own.
STDIN = ("", "stdin", "-")


class TeaChecker:
    name = "te-attn-guards"
    version = "0.1.0"
    #: `--tea-functions`; empty means "as `[tool.te-attn-guards]` says, else the default".
    functions: tuple[str, ...] = ()

    def __init__(self, tree: ast.AST, filename: str = "", lines: list[str] | None = None) -> None:
        self.tree = tree
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, parser) -> None:
        parser.add_option(
            "--tea-functions",
            default="",
            parse_from_config=True,
            comma_separated_list=True,
            help="Names of the attention-backend selector functions to analyse (default:"
            f" `selector-functions` of [tool.te-attn-guards], else {', '.join(SELECTOR_FUNCTIONS)}).",
        )

    @classmethod
    def parse_options(cls, options) -> None:
        cls.functions = tuple(options.tea_functions)

    def run(self) -> Iterator[Finding]:
        try:
            config = load_config(self.filename) if self.filename not in STDIN else Config()
        except ConfigError as error:
            yield self._failure("TEA902", str(error), SELECTOR_FUNCTIONS)
            return
        functions = self.functions or config.selector_functions
        if self.lines is not None:
            text = "".join(self.lines)
            if not any(name in text for name in functions):
                return
        try:
            findings = list(self._findings(config.hazards, functions))
        except AnalysisBudgetExceeded as error:
            findings = [self._failure("TEA901", str(error), functions)]
        except Exception as error:  # a linter reports its own failure instead of crashing
            findings = [self._failure("TEA900", f"{type(error).__name__}: {error}", functions)]
        yield from findings

    def _findings(self, hazards: Sequence[Hazard], functions: Sequence[str]) -> Iterator[Finding]:
        module = self.tree
        for function in find_selectors(module, tuple(functions)):
            for hazard in hazards:
                verdict = analyze_hazard(module, function, hazard)
                if verdict.reachable:
                    detail = f"{verdict.detail}; run `{FIX_COMMAND} {self.filename or 'PATH'}`"
                    rule = RULES.get(hazard.id) or hazard_rule(hazard)
                    yield verdict.line, verdict.col, rule.message(detail), type(self)
            for finding in analyze_coverage(module, function):
                yield self._finding(finding.code, finding.line, finding.col, finding.detail)

    def _finding(self, code: str, line: int, col: int, detail: str) -> Finding:
        return line, col, RULES[code].message(detail), type(self)

    def _failure(self, code: str, cause: str, functions: Sequence[str]) -> Finding:
        """One finding for a failed analysis, on the first selector's `def` line if any."""
        lines = [
            node.lineno
            for node in getattr(self.tree, "body", ())
            if isinstance(node, ast.FunctionDef) and node.name in functions
        ]
        return self._finding(code, lines[0] if lines else 1, 0, cause)
