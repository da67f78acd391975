"""What TEA reports for one module: hazard verdicts and filter coverage, as flake8 rows.

The flake8 face (`plugin`) imports this only for a file that names a selector function: the
analysis engine, the registry and the rule texts load then, and a commit of ordinary files
never pays for them. A failure of the analysis itself becomes one `TEA900` / `TEA901` row (a
bad configuration `TEA902`) that names the cause, never a traceback in flake8's run.
"""

from __future__ import annotations

import ast
from typing import Iterator, Sequence

from lint_plugin.engine.analysis import analyze_hazards, release
from lint_plugin.engine.coverage import analyze_coverage
from lint_plugin.engine.dialect import find_selectors
from lint_plugin.engine.interpreter import AnalysisBudgetExceeded
from lint_plugin.engine.module_scan import parsed_from
from lint_plugin.rules import FIX_COMMAND, RULES, hazard_rule
from selector_patch.config import Config, ConfigError, load_config
from selector_patch.registry import TeFix

#: (line, column, message): a flake8 row without its checker type.
Row = tuple[int, int, str]
#: Names flake8 gives code read from standard input, which has no pyproject.toml of its own.
STDIN = ("", "stdin", "-")


def rows(
    tree: ast.Module, filename: str, functions: Sequence[str], source: str | None = None
) -> Iterator[Row]:
    """Every TEA row for `tree`; `functions` overrides the configured selector names; `source`,
    where given, is the text `tree` was parsed from (`module_scan.parsed_from`)."""
    try:
        config = load_config(filename) if filename not in STDIN else Config()
    except ConfigError as error:
        yield _failure(tree, "TEA902", str(error), functions or config_defaults())
        return
    functions = tuple(functions) or config.selector_functions
    try:
        if source is not None:
            parsed_from(tree, source)
        found = list(_findings(tree, filename, config, functions))
    except AnalysisBudgetExceeded as error:
        found = [_failure(tree, "TEA901", str(error), functions)]
    except Exception as error:  # a linter reports its own failure instead of crashing
        found = [_failure(tree, "TEA900", f"{type(error).__name__}: {error}", functions)]
    finally:
        release()  # the file is done: what its analysis kept goes now (`release`)
    yield from found


def config_defaults() -> tuple[str, ...]:
    return Config().selector_functions


def _findings(
    module: ast.Module, filename: str, config: Config, functions: Sequence[str]
) -> Iterator[Row]:
    te_version = _tree_release(filename, config)
    for function in find_selectors(module, tuple(functions)):
        verdicts = analyze_hazards(module, function, config.hazards, te_version=te_version)
        for hazard, verdict in zip(config.hazards, verdicts):
            if verdict.reachable:
                detail = f"{verdict.detail}; run `{FIX_COMMAND} {filename or 'PATH'}`"
                rule = RULES.get(hazard.id) or hazard_rule(hazard)
                yield verdict.line, verdict.col, rule.message(detail)
        for finding in analyze_coverage(module, function):
            yield finding.line, finding.col, RULES[finding.code].message(finding.detail)


def _tree_release(filename: str, config: Config) -> str | None:
    """The TE release the file's tree records, asked only where a TE fix is configured (`te-fixes
    = true`): a fix TE made in its C++ is guarded in a tree at or past it."""
    if filename in STDIN or not any(isinstance(h.evidence, TeFix) for h in config.hazards):
        return None
    from selector_patch.sources import recorded_release

    return recorded_release(filename)


def _failure(tree: ast.Module, code: str, cause: str, functions: Sequence[str]) -> Row:
    """One row for a failed analysis, on the first selector's `def` line if any."""
    lines = [
        node.lineno
        for node in getattr(tree, "body", ())
        if isinstance(node, ast.FunctionDef) and node.name in functions
    ]
    return lines[0] if lines else 1, 0, RULES[code].message(cause)
