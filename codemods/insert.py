"""The planned insertions, performed on libcst's concrete syntax tree, and then proven.

Deciding *what* to insert and *where* is `codemods.plan`'s job (it asks the analyzer); this
module only performs the planned insertions, so comments, blank lines, line endings and every
other byte of the selector survive, and has the analyzer verify the result (`plan.self_check`):
an inserted guard that does not verify is a `PlanError`, whichever runner called. It needs
libcst's core alone: its codemod framework (`libcst.codemod`, a third of a second to import)
loads only for libcst's own runner (`codemods.command`).

`python -m codemods.apply` hands over text, and libcst parses only the runs of statements
that receive a statement (`insert_into_text`, `_segments`): in the selector's body, each anchor
with its two neighbours. On TE 2.20.2 that is 172 of `utils.py`'s 3,588 lines (353 with TE's
fixes), where parsing the top-level statements that receive one took 1,621 (the selector,
`AttentionParams` and an import line), whose parse was the largest single cost of a run. What
it writes is what the codemod writes on libcst's tree of the whole module, byte for byte:
libcst's runner (`codemods.command`) hands over that tree.
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple, Sequence, Union

import libcst as cst

from codemods.align import AlignmentError, statement_nodes
from codemods.plan import Insertion, Plan, PlanError, self_check
from lint_plugin.engine.program import blocks, enclosing_statements

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

    Each run of statements that receives one (`_segments`) is parsed by libcst on its own lines
    and written back in their place; every other line is copied, not parsed.
    """
    lines = code.splitlines(keepends=True)
    patched = list(lines)
    segments = _segments(plan)
    newline = _default_newline(code)
    wrapper = WRAPPER + newline
    indent = _default_indent(plan.module, lines) if any(s.nested for s in segments) else ""
    for segment in reversed(segments):
        text = "".join(lines[segment.first - 1 : segment.last])
        try:
            tree = cst.parse_module(wrapper + text if segment.nested else text)
        except cst.ParserSyntaxError as error:
            wrapped = 1 if segment.nested else 0  # the wrapper's line comes first
            line = segment.first + error.raw_line - 1 - wrapped
            raise PlanError(f"syntax error at line {line}: {error.message}") from None
        tree = tree.with_changes(default_newline=newline)
        if segment.nested:
            tree = _indented_as_the_file(tree, indent)
        updated = _inserted(tree, segment.statements, plan.insertions, segment.nested)
        written = updated.code
        patched[segment.first - 1 : segment.last] = [
            written[len(wrapper) :] if segment.nested else written
        ]
    result = "".join(patched)
    _prove(result, plan, function_names)
    return result


#: What a run of statements nested in a block is parsed under, so that it keeps its indentation
#: (ended by the file's newline).
WRAPPER = "if _:"


class Segment(NamedTuple):
    """A run of sibling statements libcst parses on its own, as whole lines."""

    first: int
    last: int
    statements: list[ast.stmt]
    #: In a block (parsed under `WRAPPER`), not at the module's top level.
    nested: bool


def _segments(plan: Plan, nested: bool = True) -> list[Segment]:
    """The runs of sibling statements that receive an insertion, in source order.

    In a block (the selector's body), an anchor's run holds its neighbours too: the comments and
    blank lines between them then go to the statement libcst gives them in the whole module (a
    comment above the anchor is its own, one indented deeper than it below a block is that
    block's), so a guard lands where it lands there. An anchor first or last in its block
    stands for that block's statement, one level up. At the top level a run is the statements
    that receive one, as before: on TE 2.20.2 that was the whole selector, 45% of `utils.py`
    with the others, and libcst's parse of it most of what `codemods.apply FILE` cost. Runs
    that would overlap otherwise than one inside another give way to the top-level runs
    (`nested` False), as a guard against a layout this does not foresee.
    """
    body = plan.module.body
    picked: dict[int, tuple[list[ast.stmt], set[int]]] = {}
    for insertion in plan.insertions:
        target, chain = insertion.anchor, enclosing_statements(body, insertion.anchor) or []
        while True:
            block, index = _position(blocks(chain[-1]) if chain else [body], target)
            if not chain or (nested and 0 < index < len(block) - 1):
                break
            target = chain.pop()
        around = {index} if block is body else {index - 1, index, index + 1}
        picked.setdefault(id(block), (block, set()))[1].update(around)
    runs = sorted(
        (run for block, indices in picked.values() for run in _runs(block, indices, body)),
        key=lambda run: (run.first, -run.last),
    )
    kept: list[Segment] = []
    for run in runs:
        if kept and run.first <= kept[-1].last:
            if run.last <= kept[-1].last:
                continue  # inside a run kept already, which parses it too
            return _segments(plan, nested=False)  # overlapping: the top-level runs
        kept.append(run)
    return kept


def _position(candidates: list[list[ast.stmt]], statement: ast.stmt) -> tuple[list[ast.stmt], int]:
    """The block of `candidates` that holds `statement`, and its index there."""
    return next((block, i) for block in candidates for i, s in enumerate(block) if s is statement)


def _runs(block: list[ast.stmt], indices: set[int], body: list[ast.stmt]) -> list[Segment]:
    """The statements of `block` at `indices`, as runs of whole lines: consecutive ones in one
    run, and statements that share a line (`import a; import b`, a backslash continuation)
    too."""
    runs: list[tuple[int, int, int, int]] = []  # (first line, last line, first index, last index)
    for index in sorted(indices):
        statement = block[index]
        first = min(
            [statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))]
        )
        low, high, last = index, index, statement.end_lineno
        while low > 0 and block[low - 1].end_lineno >= first:
            low -= 1
            first = min(first, block[low].lineno)
        while high + 1 < len(block) and block[high + 1].lineno <= last:
            high += 1
            last = max(last, block[high].end_lineno)
        if runs and runs[-1][3] + 1 >= low:  # next to the previous run, or in it: one run
            first, _, low, _ = runs.pop()
        runs.append((first, last, low, high))
    nested = block is not body
    return [Segment(f, l, block[low : high + 1], nested) for f, l, low, high in runs]


def _default_newline(code: str) -> str:
    """The line ending libcst finds for the whole module (`Module.default_newline`), which the
    statements it writes end with: the first in the text (a run parsed on its own would take
    its own first, or the wrapper's)."""
    found = re.search("\r\n?|\n", code)
    return found.group(0) if found else "\n"


def _default_indent(module: ast.Module, lines: list[str]) -> str:
    """The indentation libcst finds for the whole module (`Module.default_indent`): that of its
    first indented line, the first statement in source order that begins its own line."""
    for top in module.body:
        nested = [
            node
            for node in ast.walk(top)
            if isinstance(node, ast.stmt)
            and node.col_offset > 0
            and not lines[node.lineno - 1][: node.col_offset].strip()
        ]
        if nested:
            first = min(nested, key=lambda node: node.lineno)
            return lines[first.lineno - 1][: first.col_offset]
    return "    "


def _indented_as_the_file(tree: cst.Module, indent: str) -> cst.Module:
    """A run parsed under `WRAPPER` whose blocks and inserted statements indent as they do in
    the whole module: libcst takes a run's first block's indentation for its default, and a
    block indented by the default records none, so where the two differ the run's blocks get
    their indentation spelt out before the file's becomes the default."""
    if tree.default_indent == indent:
        return tree
    return tree.visit(_SpeltIndent(tree.default_indent)).with_changes(default_indent=indent)


class _SpeltIndent(cst.CSTTransformer):
    """Blocks that record no indentation (the default's) get `indent` spelt out."""

    def __init__(self, indent: str) -> None:
        super().__init__()
        self.indent = indent

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        if updated_node.indent is None:
            return updated_node.with_changes(indent=self.indent)
        return updated_node


def _inserted(
    tree: Body, statements: list[ast.stmt], insertions: Sequence[Insertion], nested: bool = False
) -> Body:
    """`tree` with the insertions anchored in `statements`; `nested`: `tree` spells them
    under `WRAPPER`."""
    inserter = GuardInserter(tree, statements, insertions, nested)
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

    `tree` spells `statements` (a whole module's, or a run of its top-level ones, or, where
    `nested`, a run of a block's under `WRAPPER`); insertions whose anchor lies outside them are
    another run's.
    """

    def __init__(
        self,
        tree: cst.Module,
        statements: list[ast.stmt],
        insertions: Sequence[Insertion],
        nested: bool = False,
    ) -> None:
        super().__init__()
        wrapper = tree.body[0] if nested else None
        try:
            nodes = statement_nodes(wrapper.body if wrapper else tree, statements)
        except AlignmentError as error:
            raise PlanError(f"cannot map the selector's statements: {error}") from None
        mine = [i for i in insertions if id(i.anchor) in nodes]
        #: Insertions by the `id` of the libcst statement they go next to.
        self.pending: dict[int, list[Insertion]] = {}
        for insertion in mine:
            self.pending.setdefault(id(nodes[id(insertion.anchor)]), []).append(insertion)
        #: `id`s of the compound statements that contain an anchor (and the wrapper): the only
        #: ones visited.
        self.open = frozenset(
            id(nodes[id(statement)])
            for insertion in mine
            for statement in enclosing_statements(statements, insertion.anchor)
        ) | ({id(wrapper)} if wrapper else frozenset())

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
