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
    ) -> None:
        super().__init__(context)
        self.hazard_ids = tuple(hazard_ids)
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
        return updated
