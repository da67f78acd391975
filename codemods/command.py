"""The libcst codemod command: `python -m libcst.tool codemod command.InsertSelectorGuards PATH`.

A regular libcst `VisitorBasedCodemodCommand` (found through `modules` in `.libcst.codemod.yaml`)
around the codemod's own insertion (`codemods.insert`): it plans the file's guards, inserts them
and has the result proven, so libcst's runner can no more write an unverified guard than
`python -m codemods.apply` can.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile, VisitorBasedCodemodCommand

from codemods.insert import insert_guards
from codemods.plan import Plan, plan_insertions
from selector_patch.config import Config, load_config, select_hazards
from selector_patch.sources import resolve


class InsertSelectorGuards(VisitorBasedCodemodCommand):
    """Insert the hazard registry's missing guards into TE's `get_attention_backend`."""

    DESCRIPTION = "Insert missing te-attn-guards hazard guards into TE's attention selector."

    def __init__(
        self,
        context: CodemodContext,
        hazard_ids: Sequence[str] = (),
        *,
        config: Config | None = None,
        plan: Plan | None = None,
        emit_tests: str | Path | None = None,
        force: bool = False,
    ) -> None:
        super().__init__(context)
        self.hazard_ids = tuple(hazard_ids)
        #: `--emit-tests DIR`: where the test module for the inserted guards goes; `--force`
        #: lets it replace a file with other content (`codemods.selector_tests`).
        self.emit_tests = Path(emit_tests) if emit_tests is not None else None
        self.force = force
        #: `[tool.te-attn-guards]` settings; read from the file's pyproject.toml when None.
        self.config = config
        #: What the last run decided (set by `transform_module_impl`); a caller that already
        #: planned the module's text passes its plan, which the first run then uses.
        self.plan = plan
        self._planned = plan is not None
        #: The last run's new text.
        self.patched: str | None = None

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--hazard",
            dest="hazard_ids",
            action="append",
            default=[],
            help="Limit the run to this hazard id (repeatable).",
        )
        arg_parser.add_argument(
            "--emit-tests",
            dest="emit_tests",
            metavar="DIR",
            default=None,
            help="Also write a pytest module for the inserted guards into DIR.",
        )
        arg_parser.add_argument(
            "--force",
            action="store_true",
            default=False,
            help="Let --emit-tests replace an existing test module with other content.",
        )

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        config = self.config or load_config(self.context.filename or Path.cwd())
        hazards = select_hazards(config, self.hazard_ids)
        if self._planned:
            plan, self._planned = self.plan, False
        else:
            plan = self.plan = plan_insertions(tree.code, hazards, config.selector_functions)
        if not plan.insertions:
            raise SkipFile("every applicable guard is already present")
        updated, self.patched = insert_guards(tree, plan, config.selector_functions)
        if self.emit_tests is not None:  # before libcst's runner writes the selector
            from codemods.selector_tests import emit

            source = resolve(self.context.filename or "")
            emit(self.emit_tests, source, tree.code, self.patched, plan, force=self.force)
        return updated
