"""The libcst codemod: insert each missing guard next to its anchor statement.

Deciding *what* to insert and *where* is `codemods.plan`'s job (it asks the analyzer); this
module only performs the planned insertions on the concrete syntax tree, so comments, blank
lines, line endings and every other byte of the selector survive, and then has the analyzer
verify the result (`plan.self_check`): an inserted guard that does not verify is a `PlanError`
here, whichever runner called. It is a regular libcst `VisitorBasedCodemodCommand`, so
`python -m libcst.tool codemod command.InsertSelectorGuards` runs it too (with `codemods` listed
under `modules` in `.libcst.codemod.yaml`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence, Union

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile, VisitorBasedCodemodCommand

from codemods.align import AlignmentError, statement_nodes
from codemods.plan import INSERTED, Insertion, Plan, PlanError, plan_insertions, self_check
from lint_plugin.engine.program import enclosing_statements
from selector_patch.config import Config, load_config, select_hazards

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
        #: The last run's new text: generated once for the self-check, and reused by callers.
        self.patched: str | None = None
        self._pending: dict[int, list[Insertion]] = {}
        #: `id`s of the compound statements that contain an anchor: the only ones visited.
        self._open: frozenset[int] = frozenset()

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
        try:
            nodes = statement_nodes(tree, plan.module)
        except AlignmentError as error:
            raise PlanError(f"cannot map the selector's statements: {error}") from None
        self._pending = {}
        for insertion in plan.insertions:
            self._pending.setdefault(id(nodes[id(insertion.anchor)]), []).append(insertion)
        self._open = frozenset(
            id(nodes[id(statement)])
            for insertion in plan.insertions
            for statement in enclosing_statements(plan.module.body, insertion.anchor)
        )
        updated = tree.visit(self)
        if self._pending:
            lines = sorted(i.anchor.lineno for pending in self._pending.values() for i in pending)
            raise PlanError(f"cannot insert next to the one-line statement at line {lines[0]}")
        inserted = [h for h in hazards if plan.statuses[h.id] == INSERTED]
        self.patched = updated.code
        self_check(self.patched, inserted, config.selector_functions)
        return updated

    def on_visit(self, node: cst.CSTNode) -> bool:
        """Descend only towards an anchor: into compound statements that contain one, and into
        the blocks (suites, `else`, handlers, cases) of those. Rebuilding every compound
        statement instead took 56 ms on TE 2.20.2's selector; this visit takes 6."""
        if isinstance(node, cst.BaseCompoundStatement):
            return id(node) in self._open
        return isinstance(
            node,
            (
                cst.Module,
                cst.BaseSuite,
                cst.Else,
                cst.ExceptHandler,
                cst.ExceptStarHandler,
                cst.Finally,
                cst.MatchCase,
            ),
        )

    def _insert_into(self, original: Body, updated: Body) -> Body:
        body = list(updated.body)
        for index in reversed(range(len(original.body))):
            at = self._pending.pop(id(original.body[index]), None)
            if not at:
                continue
            column = at[0].anchor.col_offset
            before = [parse_at_indent(i.source, column) for i in at if i.position == "before"]
            after = [parse_at_indent(i.source, column) for i in at if i.position == "after"]
            body[index : index + 1] = [*before, body[index], *after]
        return updated.with_changes(body=body)

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return self._insert_into(original_node, updated_node)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return self._insert_into(original_node, updated_node)
