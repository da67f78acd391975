"""The flake8 plugin: `TEA` findings for TE attention selectors.

Registered as `flake8.extension` `TEA = lint_plugin.plugin:TeaChecker`. flake8 imports it in
every run, and runs it on every file, so this module is the standard library alone: a file is
first dismissed by a substring test for the selector names (`--tea-functions`, else
`selector-functions` of `[tool.te-attn-guards]`, else `get_attention_backend`), and only a file
that names one loads the analysis (`checks`).

The analysis runs with the cyclic garbage collector paused (`engine.collector`).
"""

from __future__ import annotations

import ast
from typing import Iterator

from selector_patch.project import DEFAULT_SELECTOR_FUNCTIONS, selector_functions

Finding = tuple[int, int, str, type]


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
            " `selector-functions` of [tool.te-attn-guards], else"
            f" {', '.join(DEFAULT_SELECTOR_FUNCTIONS)}).",
        )

    @classmethod
    def parse_options(cls, options) -> None:
        cls.functions = tuple(options.tea_functions)

    def run(self) -> Iterator[Finding]:
        names = self.functions or selector_functions(self.filename or None)
        text = None if self.lines is None else "".join(self.lines)  # what flake8 parsed
        if names is not None and text is not None and not any(name in text for name in names):
            return
        from lint_plugin.engine.collector import paused

        with paused():
            from lint_plugin.checks import rows  # the analysis, for a file that names a selector

            found = list(rows(self.tree, self.filename, self.functions, text))
        for line, col, message in found:
            yield line, col, message, type(self)
