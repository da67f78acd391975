"""Which statements of a selector can influence a given backend flag (a static backward slice).

TE's selector is long, and most of it - logging, `run_config`, building cuDNN's query - cannot
change whether FlashAttention 4 ends up enabled. The interpreter runs once per witness, so not
executing what cannot matter is where its speed comes from.

The slice walks the function backwards from its end, keeping the set of names whose current
value may still reach the flag ("live"). A statement is needed when it writes a live name
(through a local helper's `nonlocal`, or by mutating a local object, too) or returns; a compound
statement when any statement inside it is needed, or when it can raise under a condition that
reads a live name (a guard may be written as a `raise`). Whatever a needed statement reads, and
what the conditions around it read, becomes live for the statements before it. Skipping an
unneeded statement changes no live value, so it can only make the interpreter less precise
(a `raise` not taken into account), never wrong. A skipped statement inside a `try` or `with`
still counts as a point where an exception may leave for the handler (see the interpreter).

Jumps (`raise`, `assert`, `break`, `continue`) run whenever the block around them runs: they are
never skipped on their own, and they do not make the block around them needed.

Names may be cut from a slice: a run with that slice never binds them and reads them as unknown
(`Facts.unbound`), so what they were computed from cannot matter to it, and reading one does not
make it live. A run about a flash backend cuts the other backends' flags
(`analysis.Selector.run_slice`).

The live names are `Program.names` bits, as are what each statement reads and writes.
"""

from __future__ import annotations

import ast
from typing import Mapping

from lint_plugin.engine.program import BLOCK_STATEMENTS, DEFINITIONS, Program

#: Statements that run whenever their enclosing block runs.
JUMPS = (ast.Raise, ast.Assert, ast.Break, ast.Continue)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
TRIES = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)
#: Statements a slice keeps by rules of their own (`Slice._stmt`); a simple statement of any
#: other kind is needed exactly when it writes a live name.
_OWN_RULES = frozenset((*JUMPS, ast.Return, *DEFINITIONS))


class Slice:
    """The statements of `program` that may affect the final values of `roots`, where the
    names in `cut` read as unknown; with `points`, instead the values before each top-level
    statement `index` of the names (bits) it maps to (runs that stop there: `guard_proof`)."""

    def __init__(
        self,
        program: Program,
        roots: frozenset[str],
        cut: frozenset[str] = frozenset(),
        points: Mapping[int, int] | None = None,
    ) -> None:
        self.program = program
        #: The bits a read makes live: all but the cut names'.
        self._readable = ~program.names.bits(cut)
        #: Each body as a run with this slice executes it (`Interpreter.plan`), kept here rather
        #: than on the program, which would make a cycle of the two: what an analysis compiled
        #: is then freed when it is released, not at the next collection of the cyclic garbage.
        self.plans: dict[int, tuple] = {}
        self._needed: set[ast.stmt] = set()
        self._visited: set[ast.stmt] = set()
        if points is None:
            self._block(program.function.body, program.names.bits(roots))
        else:
            self._before(program.function.body, points)

    def needed(self, stmt: ast.stmt) -> bool:
        """False only for a statement the slice saw and found unable to matter.

        Statements of local helpers are never skipped: they run where they are called.
        """
        return stmt in self._needed or stmt not in self._visited

    def _before(self, body: list[ast.stmt], points: Mapping[int, int]) -> None:
        """Walk `body` backwards from its last point on, each point's names live before it."""
        live, end = 0, None
        for index in sorted(points, reverse=True):
            if end is not None:
                live = self._block(body[index:end], live)[0]
            live |= points[index] & self._readable
            end = index
        self._block(body[:end], live)

    def _block(self, body: list[ast.stmt], live: int) -> tuple[int, bool]:
        """Walk `body` backwards; the names live before it, and whether any of it is needed.
        A simple statement other than a jump or a return is needed exactly when it writes a
        live name: decided here, as most statements are."""
        any_needed = False
        program, visited, kept, readable = self.program, self._visited, self._needed, self._readable
        for stmt in reversed(body):
            kind = type(stmt)
            visited.add(stmt)
            if kind in BLOCK_STATEMENTS:
                live, needed = self._compound(stmt, live)
            elif kind in _OWN_RULES:
                live, needed = self._stmt(stmt, live)
            else:
                needed = bool(program.write_bits(stmt) & live)
                if needed:
                    live |= program.read_bits(stmt) & readable
            if needed:
                kept.add(stmt)
                any_needed = True
        return live, any_needed

    def _stmt(self, stmt: ast.stmt, live: int) -> tuple[int, bool]:
        """A jump, a return or a definition (`_OWN_RULES`)."""
        if isinstance(stmt, JUMPS):
            self._needed.add(stmt)
            return live, False
        if isinstance(stmt, ast.Return):
            return live, True  # the state here is what the verdict reads, not the value
        return live, bool(self.program.names.of(stmt.name) & live)

    def _compound(self, stmt: ast.stmt, live: int) -> tuple[int, bool]:
        program = self.program
        head_reads, written_by_heads = program.head_bits(stmt)
        reads_live = bool(head_reads & live)
        head_reads &= self._readable
        if isinstance(stmt, LOOPS):
            entry, needed = live, False
            while True:  # what one iteration needs feeds the iteration before it
                before, body_needed = self._block(stmt.body, entry | head_reads)
                needed |= body_needed
                if not before & ~entry:
                    break
                entry |= before
            after_else, else_needed = self._block(stmt.orelse, live)
            live_in, needed = entry | after_else, needed or else_needed
        elif isinstance(stmt, TRIES):
            # `finally` runs last; a handler may start from any point of the body.
            after, needed = self._block(stmt.finalbody, live)
            live_in = after
            for block in [stmt.orelse, *(handler.body for handler in stmt.handlers)]:
                before, block_needed = self._block(block, after)
                live_in |= before
                needed |= block_needed
            live_in, body_needed = self._block(stmt.body, live_in)
            needed |= body_needed
        else:
            live_in, needed = live, False  # a block may not run at all
            for block in program.blocks(stmt):
                before, block_needed = self._block(block, live)
                live_in |= before
                needed |= block_needed
        needed = needed or bool(written_by_heads & live) or (reads_live and program.raises(stmt))
        if not needed:
            return live, False
        return live_in | head_reads, True
