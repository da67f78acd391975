"""The libcst codemod: insert each missing guard next to its anchor statement.

Deciding *what* to insert and *where* is `codemods.plan`'s job (it asks the analyzer); this
module only performs the planned insertions on the concrete syntax tree, so comments, blank
lines, line endings and every other byte of the selector survive. It is a regular libcst
`VisitorBasedCodemodCommand`, so `python -m libcst.tool codemod command.InsertSelectorGuards`
runs it too (with `codemods` listed under `modules` in `.libcst.codemod.yaml`).
"""

from __future__ import annotations

import argparse
from typing import Sequence, Union

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile, VisitorBasedCodemodCommand
from libcst.metadata import PositionProvider

from codemods.plan import Insertion, plan_insertions
from selector_patch.registry import HAZARDS, get_hazard

Body = Union[cst.Module, cst.IndentedBlock]


def parse_at_indent(source: str, column: int) -> cst.BaseStatement:
    """Parse a statement written at `column` so that its bracketed lines keep their indent.

    libcst re-indents block statements on insertion but stores whitespace inside brackets
    verbatim, so the statement is parsed inside dummy blocks that reach the same depth.
    """
    depth = column // 4
    wrapper = "".join(f"{'    ' * level}if _:\n" for level in range(depth))
    block: Body = cst.parse_module(wrapper + source)
    for _ in range(depth):
        block = block.body[0].body
    return block.body[0]


class InsertSelectorGuards(VisitorBasedCodemodCommand):
    """Insert the hazard registry's missing guards into TE's `get_attention_backend`."""

    DESCRIPTION = "Insert missing te-attn-guards hazard guards into TE's attention selector."
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, context: CodemodContext, hazards: Sequence[str] = ()) -> None:
        super().__init__(context)
        self.hazards = tuple(get_hazard(h) for h in hazards) or HAZARDS
        self.insertions: list[Insertion] = []
        self.statuses: dict[str, str] = {}

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--hazard",
            dest="hazards",
            action="append",
            default=[],
            help="Limit the run to this hazard id (repeatable).",
        )

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        plan = plan_insertions(tree.code, self.hazards)
        self.statuses = plan.statuses
        self.insertions = plan.insertions
        if not self.insertions:
            raise SkipFile("every applicable guard is already present")
        return super().transform_module_impl(tree)

    def _insert_into(self, original: Body, updated: Body) -> Body:
        body = list(updated.body)
        for index in reversed(range(len(original.body))):
            start = self.get_metadata(PositionProvider, original.body[index]).start
            at = [i for i in self.insertions if (i.line, i.column) == (start.line, start.column)]
            if not at:
                continue
            before = [parse_at_indent(i.source, i.column) for i in at if i.position == "before"]
            after = [parse_at_indent(i.source, i.column) for i in at if i.position == "after"]
            body[index : index + 1] = [*before, body[index], *after]
        return updated.with_changes(body=body)

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return self._insert_into(original_node, updated_node)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return self._insert_into(original_node, updated_node)
