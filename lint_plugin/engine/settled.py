"""Where a witness run may stop: the backend is off, and nothing after can bring it back.

A run asks one question, whether TE can still run the hazard's backend at some return, and on
TE's selectors the answer is often settled long before the end: TE 2.19+ switch FA4 off below
sm90 in their first filters, and nothing later turns a flag on again. Every later write of the
flag is `flag = False` or TE's recombination `flag = use_flash_attention and flag`, which keep an
off flag off, and the flash version FA4 is dispatched by is only picked under `if
use_flash_attention_4:`. Where that holds of every statement from some top-level statement on
(`settled_from`, read off the source once per selector and backend), a run whose every path
there has the flag definitely off (`off`) stops: its answer, "cannot", is the one the rest of the
run would give. The rest of the run is most of it for a witness an architecture filter excludes
(TE 2.20.2's FA4 on SM 8.x: 20 of 444 statements).

Anything else that writes the flag (or, where the selector returns its flash version, the
returned version variable, or the expressions that hold a flash package's version) keeps the run
going: an assignment of another value, a helper whose assignments are not of that kind, a loop
target, a walrus. TE's flash-attn 2 code path runs for any returned version that is not FA3's
or FA4's (`dispatch`), so a FA2 run whose selector returns the version never stops early.
"""

from __future__ import annotations

import ast
from typing import Iterable

from lint_plugin.engine.absint import State, alternatives
from lint_plugin.engine.dispatch import FlashVersion
from lint_plugin.engine.program import DEFINITIONS, Program, heads


class Settled:
    """For one backend of one selector: from which top-level statements on its runs may stop."""

    def __init__(
        self,
        program: Program,
        flag: str,
        role: str | None = None,
        version: str | None = None,
        version_expressions: dict[str, str] | None = None,
    ) -> None:
        """`flag` alone where the flag at a return is the selection; with `role`, `version`
        (the returned version variable) and `version_expressions` (each flash role's version
        expression), where TE dispatches on the returned version."""
        self.program = program
        self.flag = flag
        self.role = role
        self.version = version
        #: The expression holding this role's version, which only a flag-guarded assignment
        #: may give `version`; the other roles' may be assigned freely.
        self.own_version = (version_expressions or {}).get(role) if role else None
        self.others = {e for r, e in (version_expressions or {}).items() if r != role}
        watched = [flag, *([version] if version else []), *(version_expressions or {}).values()]
        self.watched = program.names.bits(watched)
        #: Per local helper: whether its body writes the watched names only safely.
        self._helpers: dict[ast.FunctionDef, bool] = {}
        body = program.function.body
        settled = [True] * (len(body) + 1)
        for index in range(len(body) - 1, -1, -1):
            settled[index] = settled[index + 1] and self._safe(body[index], guarded=False)
        #: Per top-level statement: whether no statement from it on can make the backend
        #: selectable again once its flag is off.
        self.from_statement = tuple(settled)

    def off(self, index: int, states: Iterable[State]) -> bool:
        """Whether a run may stop before top-level statement `index` with these states: every
        statement from there on is safe, and in every state the flag is definitely off, no
        version expression is rebound, and the version variable cannot hold this role's."""
        if not self.from_statement[index]:
            return False
        for state in states:
            value = state.vars.get(self.flag)
            if value is None or value.truth is not False:
                return False
            if self.version is not None:
                if any(expression in state.vars for expression in self.others):
                    return False
                if self.own_version in state.vars:
                    return False
                held = state.vars.get(self.version)
                if held is not None:
                    options = alternatives(held)
                    if options is None or any(
                        isinstance(option, FlashVersion) and option.role == self.role
                        for option in options
                    ):
                        return False
        return True

    def _safe(self, stmt: ast.stmt, guarded: bool) -> bool:
        """Whether `stmt` cannot make the backend selectable again once its flag is off;
        `guarded`: it runs only where the flag is on."""
        program = self.program
        if not program.write_bits(stmt) & self.watched:
            return True
        if isinstance(stmt, DEFINITIONS):
            return True  # binds only its name; what a helper's body writes counts where called
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            return (
                value is not None
                and self._evaluation_safe(value)
                and all(self._assignment_safe(target, value, guarded) for target in targets)
            )
        if isinstance(stmt, ast.Expr):
            return not program.mutated(stmt) and self._evaluation_safe(stmt.value)
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            inner = 0
            for block in program.blocks(stmt):
                for each in block:
                    inner |= program.write_bits(each)
            own = program.write_bits(stmt) & ~inner  # a loop target, a handler's name, a walrus
            if own & self.watched or not all(self._evaluation_safe(h) for h in heads(stmt)):
                return False
            if isinstance(stmt, ast.If):
                then = guarded or self._requires_flag(stmt.test)
                return all(self._safe(s, then) for s in stmt.body) and all(
                    self._safe(s, guarded) for s in stmt.orelse
                )
            return all(
                self._safe(each, guarded) for block in program.blocks(stmt) for each in block
            )
        return False

    def _evaluation_safe(self, node: ast.AST) -> bool:
        """Whether evaluating `node` writes the watched names only safely: no walrus binds one,
        and the local helpers it calls write them only as `_safe` allows."""
        program = self.program
        if program.stored_bits(node) & self.watched:
            return False
        for helper in program.called_helpers(node):
            if not program.names.bits(helper.nonlocals) & self.watched:
                continue
            known = self._helpers.get(helper.node)
            if known is None:
                self._helpers[helper.node] = True  # a helper that calls itself adds nothing new
                known = self._helpers[helper.node] = all(
                    self._safe(inner, guarded=False) for inner in helper.node.body
                )
            if not known:
                return False
        return True

    def _assignment_safe(self, target: ast.AST, value: ast.expr, guarded: bool) -> bool:
        program, names = self.program, self.program.names
        if not program.expression_write_bits(target) & self.watched:
            return True
        if not isinstance(target, ast.Name):
            return False  # an unpacking, a rebound version expression
        if target.id == self.flag:
            return _keeps_off(value, self.flag)
        if target.id == self.version:
            if isinstance(value, ast.Constant):
                return True
            written = ast.unparse(value)
            return written in self.others or (written == self.own_version and guarded)
        return not names.of(target.id) & self.watched

    def _requires_flag(self, test: ast.expr) -> bool:
        """Whether `test` is true only where the flag is on: the flag itself, or an `and`
        with the flag among its operands."""
        if isinstance(test, ast.Name):
            return test.id == self.flag
        return (
            isinstance(test, ast.BoolOp)
            and isinstance(test.op, ast.And)
            and any(
                isinstance(operand, ast.Name) and operand.id == self.flag for operand in test.values
            )
        )


def _keeps_off(value: ast.expr, flag: str) -> bool:
    """Whether assigning `value` to an off `flag` leaves it off: a falsy constant, or an `and`
    with the flag among its operands (TE's `flag = use_flash_attention and flag`)."""
    if isinstance(value, ast.Constant):
        return not value.value
    return (
        isinstance(value, ast.BoolOp)
        and isinstance(value.op, ast.And)
        and any(isinstance(operand, ast.Name) and operand.id == flag for operand in value.values)
    )
