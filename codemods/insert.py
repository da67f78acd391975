"""The planned insertions, performed on libcst's concrete syntax tree, and then proven.

Deciding *what* to insert and *where* is `codemods.plan`'s job (it asks the analyzer); this
module only performs the planned insertions, so comments, blank lines, line endings and every
other byte of the selector survive, and has the analyzer verify the result (`plan.self_check`):
an inserted guard that does not verify is a `PlanError`, whichever runner called. It needs
libcst's core alone: its codemod framework (`libcst.codemod`, a third of a second to import)
loads only for libcst's own runner (`codemods.command`).

`python -m codemods.apply` hands over text, and libcst parses only the top-level statements
that receive a statement (`insert_into_text`): on TE 2.20.2 the selector function, the
`AttentionParams` class and one import line, 45% of `utils.py`, whose whole parse was the
largest single cost of a run. libcst's runner (`codemods.command`) hands over the whole tree.
"""

from __future__ import annotations

import ast
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
    updated = _inserted(tree, plan.module.body, plan.insertions)
    code = updated.code
    _prove(code, plan, function_names)
    return updated, code


def insert_into_text(code: str, plan: Plan, function_names: Sequence[str]) -> str:
    """`code` (the text `plan` was made from) with the insertions, proven like `insert_guards`.

    Each group of top-level statements that receives one is parsed by libcst on its own lines
    and written back in their place; every other line is copied, not parsed.
    """
    lines = code.splitlines(keepends=True)
    patched = list(lines)
    for first, last, statements in reversed(_touched_lines(plan)):
        try:
            segment = cst.parse_module("".join(lines[first - 1 : last]))
        except cst.ParserSyntaxError as error:
            line = first + error.raw_line - 1
            raise PlanError(f"syntax error at line {line}: {error.message}") from None
        updated = _inserted(segment, statements, plan.insertions)
        patched[first - 1 : last] = [updated.code]
    result = "".join(patched)
    _prove(result, plan, function_names)
    return result


def _touched_lines(plan: Plan) -> list[tuple[int, int, list[ast.stmt]]]:
    """(first line, last line, statements) of each run of top-level statements that receives
    an insertion, in source order. Statements that share a line (`import a; import b`, a
    backslash continuation) go in one run, so that each run is whole lines of whole statements.
    """
    body = plan.module.body
    touched = set()
    for insertion in plan.insertions:
        outer = enclosing_statements(body, insertion.anchor) or [insertion.anchor]
        touched.add(id(outer[0]))
    runs: list[tuple[int, int, list[ast.stmt]]] = []
    for index, statement in enumerate(body):
        if id(statement) not in touched:
            continue
        first = min(
            [statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))]
        )
        last, members = statement.end_lineno, [statement]
        before, after = index - 1, index + 1
        while before >= 0 and body[before].end_lineno >= first:
            members.insert(0, body[before])
            first, before = min(first, body[before].lineno), before - 1
        while after < len(body) and body[after].lineno <= last:
            members.append(body[after])
            last, after = max(last, body[after].end_lineno), after + 1
        if runs and runs[-1][1] >= first:  # overlaps the previous run: one run
            previous_first, _, previous = runs.pop()
            members = [*previous, *(m for m in members if m not in previous)]
            first = previous_first
        runs.append((first, last, members))
    return runs


def _inserted(tree: Body, statements: list[ast.stmt], insertions: Sequence[Insertion]) -> Body:
    inserter = GuardInserter(tree, statements, insertions)
    updated = tree.visit(inserter)
    if inserter.pending:
        lines = sorted(i.anchor.lineno for pending in inserter.pending.values() for i in pending)
        raise PlanError(f"cannot insert next to the one-line statement at line {lines[0]}")
    return updated


def _prove(code: str, plan: Plan, function_names: Sequence[str]) -> None:
    inserted = {i.hazard.id: i.hazard for i in plan.insertions if i.hazard is not None}
    self_check(code, list(inserted.values()), function_names)


class GuardInserter(cst.CSTTransformer):
    """Puts each insertion before or after the libcst statement its ast anchor maps to.

    `tree` spells `statements` (a whole module's, or a run of its top-level ones); insertions
    whose anchor lies outside them are another run's.
    """

    def __init__(
        self, tree: cst.Module, statements: list[ast.stmt], insertions: Sequence[Insertion]
    ) -> None:
        super().__init__()
        try:
            nodes = statement_nodes(tree, statements)
        except AlignmentError as error:
            raise PlanError(f"cannot map the selector's statements: {error}") from None
        mine = [i for i in insertions if id(i.anchor) in nodes]
        #: Insertions by the `id` of the libcst statement they go next to.
        self.pending: dict[int, list[Insertion]] = {}
        for insertion in mine:
            self.pending.setdefault(id(nodes[id(insertion.anchor)]), []).append(insertion)
        #: `id`s of the compound statements that contain an anchor: the only ones visited.
        self.open = frozenset(
            id(nodes[id(statement)])
            for insertion in mine
            for statement in enclosing_statements(statements, insertion.anchor)
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
