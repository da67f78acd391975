"""How each kind of statement executes on a `State`: assignments, branches, loops to a widened
fixpoint, `try` handlers fed from every state the body passed through, returns and loop exits
recorded in the running `Frame`.

Each statement compiles, once per `Program`, into its executor, `executor(interpreter, state,
frame) -> State | None`, as each expression does into its evaluator (`evaluators`, whose
docstring says why): the statements every run executes most, assignments, `if`s and returns,
have what their source alone says worked out there; the others call their handler."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable

from lint_plugin.engine.absint import (
    EMPTY_MAPPING,
    State,
    Value,
    const,
    join_all,
    join_into,
    join_states,
    unknown,
    widen_states,
)
from lint_plugin.engine.interpret.evaluators import arithmetic, evaluator
from lint_plugin.engine.interpret.folding import element_of, join_all_values, known_items
from lint_plugin.engine.interpret.frames import Frame, LocalFunction, Loop
from lint_plugin.engine.program import Program, descendants, target_names

if TYPE_CHECKING:
    from lint_plugin.engine.interpreter import Interpreter

#: Loop iterations joined before values that keep changing are widened to unknown.
WIDEN_AFTER = 2
#: Loops over a known sequence of at most this many items run once per item.
MAX_UNROLLED = 16


class Statements:
    """How `Interpreter` executes the statements it has no compiled executor of its own for
    (`FACTORIES`), and what the compiled ones share."""

    def _opaque(self, stmt: ast.stmt, state: State, frame: Frame) -> State:
        """A statement the interpreter does not model: whatever it binds becomes unknown."""
        for node in descendants(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.store(node.id, unknown(), state)
        return state

    def _helper_branches(
        self, call: ast.Call, negated: bool, state: State
    ) -> tuple[Value, State | None, State | None] | None:
        """`if helper():` / `if not helper():` (`call`, `negated`) for a local helper with
        several returns: each branch starts from the returns that lead there, so a guard written
        with early returns (`if not deterministic: return False`) keeps what each return knew.
        None where `call` does not call a local helper."""
        bound = state.vars.get(call.func.id)
        if bound is None or not isinstance(bound.const, LocalFunction):
            return None
        outcomes = self._inline_outcomes(bound.const.node, call, state)
        if outcomes is None:
            return unknown(), state, state.copy()
        value = join_all_values(value for value, _ in outcomes)
        truthy = join_all(s for v, s in outcomes if v.truth is not False)
        falsy = join_all(s for v, s in outcomes if v.truth is not True)
        if falsy is truthy and falsy is not None:  # one return, either way: a state per branch
            falsy = falsy.copy()
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


Executor = Callable[["Interpreter", State, Frame], "State | None"]


def executor(program: Program, stmt: ast.stmt) -> Executor:
    """The executor of `stmt`, compiled on first use and kept on `program`."""
    compiled = program.executors.get(stmt)
    if compiled is None:
        factory = FACTORIES.get(type(stmt))
        compiled = program.executors[stmt] = (
            factory(program, stmt)
            if factory is not None
            else _handled(Statements._opaque)(program, stmt)
        )
    return compiled


def _assign(program: Program, node: ast.Assign) -> Executor:
    value_of = evaluator(program, node.value)
    names = [target.id for target in node.targets if isinstance(target, ast.Name)]
    if len(names) == len(node.targets):  # `flag = False`: stored without destructuring

        def store(interpreter: Interpreter, state: State, frame: Frame) -> State:
            value = value_of(interpreter, state)
            for name in names:
                interpreter.store(name, value, state)
            return state

        return store

    def assign(interpreter: Interpreter, state: State, frame: Frame) -> State:
        value = value_of(interpreter, state)
        for target in node.targets:
            interpreter.assign(target, value, state)
        return state

    return assign


def _augassign(program: Program, node: ast.AugAssign) -> Executor:
    current_of, value_of = evaluator(program, node.target), evaluator(program, node.value)
    fold = arithmetic(type(node.op))

    def execute(interpreter: Interpreter, state: State, frame: Frame) -> State:
        value = fold(current_of(interpreter, state), value_of(interpreter, state))
        interpreter.assign(node.target, value, state)
        return state

    return execute


def _annassign(program: Program, node: ast.AnnAssign) -> Executor:
    if node.value is None:
        return _unchanged
    value_of = evaluator(program, node.value)

    def execute(interpreter: Interpreter, state: State, frame: Frame) -> State:
        interpreter.assign(node.target, value_of(interpreter, state), state)
        return state

    return execute


def _expr(program: Program, node: ast.Expr) -> Executor:
    """An expression statement: a call (or a helper's walrus) runs; a method call whose result
    is discarded (`reasons.append(...)`) changes its receiver; a docstring does nothing."""
    if not (isinstance(node.value, ast.Call) or program.calls_helper(node.value)):
        return _unchanged
    value_of, mutated = evaluator(program, node.value), program.mutated(node)

    def execute(interpreter: Interpreter, state: State, frame: Frame) -> State:
        value = value_of(interpreter, state)
        for name in mutated:
            if name in state.vars:
                interpreter._mutated(name, value.deps, state)
        return state

    return execute


def _unchanged(interpreter: Interpreter, state: State, frame: Frame) -> State:
    return state


def _if(program: Program, node: ast.If) -> Executor:
    """Both branches of an undecided test run, each on the state refined by the test's truth,
    and join where they meet; a decided one runs its branch alone."""
    test, body, orelse = node.test, node.body, node.orelse
    test_of = evaluator(program, test)
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    call = test.operand if negated else test
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        call = None  # no `if helper():`
    core = test
    while isinstance(core, ast.UnaryOp) and isinstance(core.op, ast.Not):
        core = core.operand
    # An `and` / `or` test (under any `not`) that runs no helper: refining a branch asks for its
    # operands' truth first, and without side effects they evaluate alike until the state
    # changes, so their values are kept from the test (an undecided one evaluates them all).
    recorded = core if isinstance(core, ast.BoolOp) and not program.calls_helper(test) else None

    def execute(interpreter: Interpreter, state: State, frame: Frame) -> State | None:
        before = state.path
        branches = None if call is None else interpreter._helper_branches(call, negated, state)
        if branches is not None:
            value, then_in, else_in = branches
            if interpreter.observer is not None:
                joined = join_states(then_in, else_in) or state
                interpreter.observer.on_if(interpreter, node, value, joined)
            # Each side learns what the helper's truth says (a one-line helper's expression).
            if then_in is not None:
                then_in = interpreter.refine(test, True, then_in)
            if else_in is not None:
                else_in = interpreter.refine(test, False, else_in)
        else:
            operands = EMPTY_MAPPING
            if recorded is None:
                value = test_of(interpreter, state)
            else:
                interpreter.recorded, interpreter.operands = recorded, {}
                try:
                    value = test_of(interpreter, state)
                    operands = interpreter.operands
                finally:
                    interpreter.recorded = interpreter.operands = None
            if interpreter.observer is not None:
                interpreter.observer.on_if(interpreter, node, value, state)
            truth = value.truth
            if truth is True:
                then_in, else_in = state, None
            elif truth is False:
                then_in, else_in = None, state
            else:
                # Refined where undecided only: the refiner is compiled on first use.
                then_in = interpreter.refine(test, True, state.copy(), operands)
                else_in = interpreter.refine(test, False, state, operands)
        deps = value.deps
        if then_in is not None:
            then_in.path = then_in.path | deps
        if else_in is not None:
            else_in.path = else_in.path | deps
        then_out = interpreter.block(body, then_in, frame)
        else_out = interpreter.block(orelse, else_in, frame) if orelse else else_in
        if then_out is None or else_out is None:
            merged = then_out or else_out
        else:
            merged = join_into(then_out, else_out, interpreter.program.branch_keys(node))
        if (
            merged is not None
            and (then_in is None or then_out is not None)
            and (else_in is None or else_out is not None)
        ):
            merged.path = before  # both sides fall through: what follows no longer depends on it
        return merged

    return execute


def _return(program: Program, node: ast.Return) -> Executor:
    value_of = evaluator(program, node.value) if node.value is not None else None

    def execute(interpreter: Interpreter, state: State, frame: Frame) -> None:
        value = value_of(interpreter, state) if value_of is not None else const(None)
        if interpreter.observer is not None:
            interpreter.observer.on_return(interpreter, node, value, state)
        frame.returns.append((value, state))
        return None

    return execute


def _handled(handler: Callable[..., State | None]) -> Callable[[Program, ast.stmt], Executor]:
    """The factory of a statement kind a `Statements` method handles at run time."""
    return lambda program, stmt: lambda interpreter, state, frame: handler(
        interpreter, stmt, state, frame
    )


#: How each kind of statement compiles (`executor`); any other is `Statements._opaque`.
FACTORIES: dict[type, Callable[[Program, ast.stmt], Executor]] = {
    ast.Assign: _assign,
    ast.AugAssign: _augassign,
    ast.AnnAssign: _annassign,
    ast.Expr: _expr,
    ast.If: _if,
    ast.Return: _return,
    ast.For: _handled(Statements._for),
    ast.AsyncFor: _handled(Statements._for),
    ast.While: _handled(Statements._while),
    ast.Try: _handled(Statements._try),
    ast.With: _handled(Statements._with),
    ast.AsyncWith: _handled(Statements._with),
    ast.Raise: _handled(Statements._raise),
    ast.Break: _handled(Statements._break),
    ast.Continue: _handled(Statements._continue),
    ast.FunctionDef: _handled(Statements._def),
    ast.Assert: _handled(Statements._assert),
    ast.Delete: _handled(Statements._delete),
    ast.Match: _handled(Statements._match),
}
if hasattr(ast, "TryStar"):
    FACTORIES[ast.TryStar] = _handled(Statements._try)
