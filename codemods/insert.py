"""The planned insertions, performed on libcst's concrete syntax tree, and then proven.

Deciding *what* to insert and *where* is `codemods.plan`'s job (it asks the analyzer); this
module only performs the planned insertions, so comments, blank lines, line endings and every
other byte of the selector survive, and has the analyzer verify the result (`plan.self_check`):
an inserted guard that does not verify is a `PlanError`, whichever runner called. It needs
libcst's core alone: its codemod framework (`libcst.codemod`, a third of a second to import)
loads only for libcst's own runner (`codemods.command`).
"""

from __future__ import annotations

from typing import Sequence, Union

import libcst as cst

from codemods.align import AlignmentError, statement_nodes
from codemods.plan import Insertion, Plan, PlanError, self_check
from lint_plugin.engine.program import enclosing_statements

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


def insert_guards(
    tree: cst.Module, plan: Plan, function_names: Sequence[str]
) -> tuple[cst.Module, str]:
    """`tree` with `plan`'s insertions, and its text (generated once), after the analyzer
    found every inserted guard effective in that text."""
    inserter = GuardInserter(tree, plan)
    updated = tree.visit(inserter)
    if inserter.pending:
        lines = sorted(i.anchor.lineno for pending in inserter.pending.values() for i in pending)
        raise PlanError(f"cannot insert next to the one-line statement at line {lines[0]}")
    code = updated.code
    inserted = {i.hazard.id: i.hazard for i in plan.insertions if i.hazard is not None}
    self_check(code, list(inserted.values()), function_names)
    return updated, code


class GuardInserter(cst.CSTTransformer):
    """Puts each insertion before or after the libcst statement its ast anchor maps to."""

    def __init__(self, tree: cst.Module, plan: Plan) -> None:
        super().__init__()
        try:
            nodes = statement_nodes(tree, plan.module)
        except AlignmentError as error:
            raise PlanError(f"cannot map the selector's statements: {error}") from None
        #: Insertions by the `id` of the libcst statement they go next to.
        self.pending: dict[int, list[Insertion]] = {}
        for insertion in plan.insertions:
            self.pending.setdefault(id(nodes[id(insertion.anchor)]), []).append(insertion)
        #: `id`s of the compound statements that contain an anchor: the only ones visited.
        self.open = frozenset(
            id(nodes[id(statement)])
            for insertion in plan.insertions
            for statement in enclosing_statements(plan.module.body, insertion.anchor)
        )

    def on_visit(self, node: cst.CSTNode) -> bool:
        """Descend only towards an anchor: into compound statements that contain one, and into
        the blocks (suites, `else`, handlers, cases) of those. Rebuilding every compound
        statement instead took 56 ms on TE 2.20.2's selector; this visit takes 6."""
        if isinstance(node, cst.BaseCompoundStatement):
            return id(node) in self.open
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
            at = self.pending.pop(id(original.body[index]), None)
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
