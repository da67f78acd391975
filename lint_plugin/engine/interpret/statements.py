"""How each kind of statement executes on a `State`: assignments, branches, loops to a widened
fixpoint, `try` handlers fed from every state the body passed through, returns and loop exits
recorded in the running `Frame`."""

from __future__ import annotations

import ast
from typing import Callable

from lint_plugin.engine.absint import (
    State,
    Value,
    const,
    join_all,
    join_states,
    unknown,
    widen_states,
)
from lint_plugin.engine.interpret.folding import element_of, join_all_values, known_items
from lint_plugin.engine.interpret.frames import Frame, LocalFunction, Loop
from lint_plugin.engine.program import target_names

#: Loop iterations joined before values that keep changing are widened to unknown.
WIDEN_AFTER = 2
#: Loops over a known sequence of at most this many items run once per item.
MAX_UNROLLED = 16


class Statements:
    """The statement handlers of `Interpreter` (`STATEMENTS` maps each node type to one)."""

    def _opaque(self, stmt: ast.stmt, state: State) -> State:
        """A statement the interpreter does not model: whatever it binds becomes unknown."""
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.store(node.id, unknown(), state)
        return state

    def _assign_stmt(self, node: ast.Assign, state: State, frame: Frame) -> State:
        value = self.eval(node.value, state)
        for target in node.targets:
            self.assign(target, value, state)
        return state

    def _augassign(self, node: ast.AugAssign, state: State, frame: Frame) -> State:
        current = self.eval(node.target, state)
        value = self._arith(type(node.op), current, self.eval(node.value, state))
        self.assign(node.target, value, state)
        return state

    def _annassign(self, node: ast.AnnAssign, state: State, frame: Frame) -> State:
        if node.value is not None:
            self.assign(node.target, self.eval(node.value, state), state)
        return state

    def _expr_stmt(self, node: ast.Expr, state: State, frame: Frame) -> State:
        if isinstance(node.value, ast.Call) or self.program.calls_helper(node.value):
            value = self.eval(node.value, state)
            for name in self.program.mutated(node):
                if name in state.vars:
                    self._mutated(name, value.deps, state)
        return state

    def _if(self, node: ast.If, state: State, frame: Frame) -> State | None:
        before = state.path
        branches = self._helper_branches(node.test, state)
        if branches is not None:
            test, then_in, else_in = branches
            if self.observer is not None:
                self.observer.on_if(self, node, test, join_states(then_in, else_in) or state)
        else:
            test, operands = self._test_operands(node.test, state)
            if self.observer is not None:
                self.observer.on_if(self, node, test, state)
            then_in = else_in = None
            if test.truth is not False:
                if test.truth:
                    then_in = state
                else:
                    then_in = self.refine(node.test, True, state.copy(), operands)
            if test.truth is not True:
                if test.truth is False:
                    else_in = state
                else:
                    else_in = self.refine(node.test, False, state, operands)
        for branch in (then_in, else_in):
            if branch is not None:
                branch.path = branch.path | test.deps
        then_out = self.block(node.body, then_in, frame)
        else_out = self.block(node.orelse, else_in, frame)
        merged = join_states(then_out, else_out, self.program.branch_keys(node))
        if (
            merged is not None
            and (then_in is None or then_out is not None)
            and (else_in is None or else_out is not None)
        ):
            merged.path = before  # both sides fall through: what follows no longer depends on it
        return merged

    def _helper_branches(
        self, test: ast.expr, state: State
    ) -> tuple[Value, State | None, State | None] | None:
        """`if helper():` / `if not helper():` for a local helper with several returns: each
        branch starts from the returns that lead there, so a guard written with early returns
        (`if not deterministic: return False`) keeps what each return knew."""
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        call = test.operand if negated else test
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            return None
        bound = state.vars.get(call.func.id)
        if bound is None or not isinstance(bound.const, LocalFunction):
            return None
        outcomes = self._inline_outcomes(bound.const.node, call, state)
        if outcomes is None:
            return unknown(), state, state.copy()
        value = join_all_values(value for value, _ in outcomes)
        truthy = join_all(s for v, s in outcomes if v.truth is not False)
        falsy = join_all(s for v, s in outcomes if v.truth is not True)
        if negated:
            value = (
                unknown(value.deps) if value.truth is None else const(not value.truth, value.deps)
            )
            truthy, falsy = falsy, truthy
        return value, truthy, falsy

    def _loop_body(self, node, state: State, frame: Frame, bind) -> tuple[State, list[State]]:
        """Fixpoint of a loop: the state at its head, and the states that `break` out of it.

        `bind(state)` prepares one iteration (binds the target, refines the test) or returns
        None when the body cannot be entered.
        """
        head = state
        loop = Loop()
        iterations = 0
        while True:
            iterations += 1
            entry = bind(head.copy())
            frame.loops.append(loop)
            end = self.block(node.body, entry, frame) if entry is not None else None
            frame.loops.pop()
            following = join_all([state, end, *loop.continues])
            loop.continues.clear()
            following = widen_states(head, following) if iterations > WIDEN_AFTER else following
            if following == head:
                break
            head = following
        return head, loop.breaks

    def _for(self, node: ast.For, state: State, frame: Frame) -> State | None:
        iterable = self.eval(node.iter, state)
        items = known_items(iterable)
        if items is not None and len(items) <= MAX_UNROLLED and not isinstance(node, ast.AsyncFor):
            return self._unrolled_for(node, items, iterable.deps, state, frame)
        element = element_of(iterable)

        def bind(entry: State) -> State:
            self.assign(node.target, element, entry)
            return entry

        head, breaks = self._loop_body(node, state, frame, bind)
        done = self.block(node.orelse, head.copy(), frame)
        return join_all([done, *breaks])

    def _unrolled_for(
        self, node: ast.For, items: tuple, deps: frozenset[str], state: State, frame: Frame
    ) -> State | None:
        """A loop over a known, short sequence (a module's tuple of architectures): each
        iteration with its own element, as Python runs it, so `if cc == arch:` is decided."""
        loop = Loop()
        current: State | None = state
        for item in items:
            if current is None:
                break
            entry = current.copy()
            self.assign(node.target, const(item, deps), entry)
            frame.loops.append(loop)
            end = self.block(node.body, entry, frame)
            frame.loops.pop()
            current = join_all([end, *loop.continues])
            loop.continues.clear()
        done = self.block(node.orelse, current, frame)
        return join_all([done, *loop.breaks])

    def _while(self, node: ast.While, state: State, frame: Frame) -> State | None:
        def bind(entry: State) -> State | None:
            test = self.eval(node.test, entry)
            if test.truth is False:
                return None
            return entry if test.truth else self.refine(node.test, True, entry)

        head, breaks = self._loop_body(node, state, frame, bind)
        test = self.eval(node.test, head)
        exit_state = None
        if test.truth is not True:
            exit_state = head if test.truth is False else self.refine(node.test, False, head.copy())
        done = self.block(node.orelse, exit_state, frame)
        return join_all([done, *breaks])

    def _try(self, node: ast.Try, state: State, frame: Frame) -> State | None:
        sink: list[State] = []
        finally_returns = finally_loop = None
        if node.finalbody:
            finally_returns, frame.returns = frame.returns, []
            if frame.loops:
                finally_loop, frame.loops[-1] = frame.loops[-1], Loop()
        frame.sinks = [*frame.sinks, sink]
        body_end = self.block(node.body, state, frame)
        frame.sinks = frame.sinks[:-1]
        raised = join_all(sink)
        outcomes = [self.block(node.orelse, body_end, frame)]
        for handler in node.handlers:
            entry = raised.copy() if raised is not None else None
            if entry is not None and handler.name:
                self.store(handler.name, unknown(), entry)
            outcomes.append(self.block(handler.body, entry, frame))
        result = join_all(outcomes)
        if not node.finalbody:
            return result
        pending, frame.returns = frame.returns, finally_returns
        for value, returned in pending:
            after = self.block(node.finalbody, returned, frame)
            if after is not None:
                frame.returns.append((value, after))
        if finally_loop is not None:
            inner, frame.loops[-1] = frame.loops[-1], finally_loop
            for exits, into in (
                (inner.breaks, finally_loop.breaks),
                (inner.continues, finally_loop.continues),
            ):
                into.extend(s for s in (self.block(node.finalbody, e, frame) for e in exits) if s)
        if raised is not None:  # an exception passing through: only a `return` in finally stops it
            self.block(node.finalbody, raised.copy(), frame)
        return self.block(node.finalbody, result, frame)

    def _with(self, node: ast.With, state: State, frame: Frame) -> State | None:
        for item in node.items:
            value = self.eval(item.context_expr, state)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, unknown(value.deps), state)
        # A context manager may swallow an exception raised anywhere in the body.
        sink: list[State] = []
        frame.sinks = [*frame.sinks, sink]
        end = self.block(node.body, state, frame)
        frame.sinks = frame.sinks[:-1]
        return join_all([end, *sink])

    def _match(self, node: ast.Match, state: State, frame: Frame) -> State | None:
        subject = self.eval(node.subject, state)
        last = node.cases[-1]
        exhaustive = (
            last.guard is None
            and isinstance(last.pattern, ast.MatchAs)
            and (last.pattern.pattern is None)
        )
        outcomes = [] if exhaustive else [state.copy()]  # no case matched
        for case in node.cases:
            entry = state.copy()
            entry.path = entry.path | subject.deps
            for child in ast.walk(case.pattern):
                for name in (getattr(child, "name", None), getattr(child, "rest", None)):
                    if isinstance(name, str):
                        self.store(name, unknown(subject.deps), entry)
            if case.guard is not None:
                entry = self.refine(case.guard, True, entry)
            outcomes.append(self.block(case.body, entry, frame))
        return join_all(outcomes)

    def _return(self, node: ast.Return, state: State, frame: Frame) -> None:
        value = self.eval(node.value, state) if node.value is not None else const(None)
        if self.observer is not None:
            self.observer.on_return(self, node, value, state)
        frame.returns.append((value, state))
        return None

    def _raise(self, node: ast.Raise, state: State, frame: Frame) -> None:
        """An exception leaves here: nothing falls through (handlers see it via `_may_raise`)."""
        return None

    def _break(self, node: ast.Break, state: State, frame: Frame) -> None:
        if frame.loops:
            frame.loops[-1].breaks.append(state)
        return None

    def _continue(self, node: ast.Continue, state: State, frame: Frame) -> None:
        if frame.loops:
            frame.loops[-1].continues.append(state)
        return None

    def _def(self, node: ast.FunctionDef, state: State, frame: Frame) -> State:
        self.store(node.name, const(LocalFunction(node)), state)
        return state

    def _assert(self, node: ast.Assert, state: State, frame: Frame) -> State | None:
        test = self.eval(node.test, state)
        if test.truth is None:
            return self.refine(node.test, True, state)
        return state if test.truth else None

    def _delete(self, node: ast.Delete, state: State, frame: Frame) -> State:
        for target in node.targets:
            for name in target_names(target):
                state.vars.pop(name, None)
        return state


#: How each kind of statement executes (`Interpreter.block`); any other kind is `_opaque`.
#: Module-level, not bound methods in the instance: those would make every interpreter, and
#: every state it ever held, cyclic garbage that only a full collection frees.
STATEMENTS: dict[type, Callable[..., State | None]] = {
    ast.Assign: Statements._assign_stmt,
    ast.AugAssign: Statements._augassign,
    ast.AnnAssign: Statements._annassign,
    ast.Expr: Statements._expr_stmt,
    ast.If: Statements._if,
    ast.For: Statements._for,
    ast.AsyncFor: Statements._for,
    ast.While: Statements._while,
    ast.Try: Statements._try,
    ast.With: Statements._with,
    ast.AsyncWith: Statements._with,
    ast.Return: Statements._return,
    ast.Raise: Statements._raise,
    ast.Break: Statements._break,
    ast.Continue: Statements._continue,
    ast.FunctionDef: Statements._def,
    ast.Assert: Statements._assert,
    ast.Delete: Statements._delete,
    ast.Match: Statements._match,
}
if hasattr(ast, "TryStar"):
    STATEMENTS[ast.TryStar] = Statements._try
