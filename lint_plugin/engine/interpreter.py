"""Abstract interpretation of a selector function's AST.

The interpreter executes the function body on `absint` values: conditions are three-valued and
refine the branch they guard (`if x and y:` teaches the then-branch both are truthy), both sides
of an undecided branch run and join where they meet, loops iterate to a widened fixpoint,
`try` handlers start from every state the body passed through, and local helper functions are
inlined at each call site with their `nonlocal` writes landing in the caller. What a run knows
about the world comes only from `Facts`; everything else is unknown, which is what makes a
"definitely off" conclusion hold for every environment, cuDNN answer and unrelated input.

Calls to functions the selector does not define cannot rebind its local variables (Python
forbids it) and are assumed not to mutate objects passed as arguments; a method call whose
result is discarded (`reasons.append(...)`) forgets what was known about its receiver.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import itertools
import math
import operator
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from lint_plugin.engine.absint import (
    EMPTY,
    FRESH,
    FRESH_SITE,
    MAX_CHOICES,
    UNKNOWN,
    Site,
    State,
    Value,
    alternatives,
    choice,
    choice_set,
    const,
    join,
    join_all,
    join_states,
    new_value,
    one_of,
    unknown,
    widen_states,
    with_deps,
    with_truth,
)
from lint_plugin.engine.predicates import Predicate, expand
from lint_plugin.engine.program import Program, dotted_name, root_names, target_names
from lint_plugin.engine.slicing import Slice

#: Statements one run may execute before it gives up (loops are widened long before this).
STATEMENT_BUDGET = 200_000
#: Nested helper calls inlined before a call's effect is over-approximated instead.
MAX_INLINE_DEPTH = 8
#: Loop iterations joined before values that keep changing are widened to unknown.
WIDEN_AFTER = 2
#: Loops over a known sequence of at most this many items run once per item.
MAX_UNROLLED = 16

#: Builtins folded on constant arguments; any other call yields an unknown value.
PURE_BUILTINS: dict[str, Callable] = {
    name: getattr(builtins, name)
    for name in (
        "abs", "all", "any", "bool", "float", "frozenset", "int", "len", "list", "max", "min",
        "round", "set", "str", "sum", "tuple",
    )
}  # fmt: skip

BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
#: Values whose methods cannot change them.
IMMUTABLE = (str, bytes, int, float, complex, tuple, frozenset, type(None))


#: Where `Interpreter.run` starts splitting a run (a top-level statement), and how to split.
Split = tuple[ast.stmt, Callable[[list[State]], list[State]]]


class AnalysisBudgetExceeded(Exception):
    """The selector needs more work than `STATEMENT_BUDGET` allows."""


class _Unreachable(Exception):
    """Raised by an expression whose evaluation never completes (a helper that always raises)."""


#: A `Facts.calls` answer for a call known to raise (a kernel's validator refusing the
#: witness): the statement making it does not complete, and an enclosing `try` takes over.
RAISES = unknown()


@dataclass(frozen=True)
class LocalFunction:
    """The `const` of a name bound to a helper defined inside the selector."""

    node: ast.FunctionDef


#: An empty mapping that cannot be changed, the default of every `Facts` mapping.
EMPTY_MAPPING: Mapping[str, Any] = MappingProxyType({})


class Facts(NamedTuple):
    """Everything one run knows about the world; the rest is unknown.

    `params` holds `AttentionParams` fields (an absent field reads as an unknown value that
    depends on that field), `calls` the results of hardware / library queries by callee name,
    `names` module globals and class attributes by dotted name (the module's own constants
    among them). Names in `opaque` (backend flags, for the coverage rules) are tracked for
    provenance but their truthiness is never trusted when read; a read of one depends on its
    name.
    """

    params: Mapping[str, Value] = EMPTY_MAPPING
    calls: Mapping[str, Value] = EMPTY_MAPPING
    names: Mapping[str, Value] = EMPTY_MAPPING
    opaque: frozenset[str] = EMPTY
    #: Pure functions the module imports (packaging's `Version`), folded like `PURE_BUILTINS`.
    functions: Mapping[str, Callable] = EMPTY_MAPPING
    #: The module's own pure predicates (`predicates.module_predicates`), expanded where called.
    predicates: Mapping[str, Predicate] = EMPTY_MAPPING


class Observer:
    """Hook for analyses that need to look at each `if` (or `return`) as the interpreter
    decides it."""

    def on_if(self, interpreter: "Interpreter", node: ast.If, test: Value, state: State) -> None:
        """Called before the branches of `node` run, with the test's value in `state`."""

    def on_return(
        self, interpreter: "Interpreter", node: ast.Return, value: Value, state: State
    ) -> None:
        """Called when a `return` is reached (of a helper too: `interpreter.frame.depth`)."""


class _Loop:
    __slots__ = ("breaks", "continues")

    def __init__(self) -> None:
        self.breaks: list[State] = []
        self.continues: list[State] = []


class _Frame:
    """Where control goes out of a function body: returns, loop exits, exception handlers."""

    __slots__ = ("returns", "loops", "sinks", "depth")

    def __init__(self, sinks: list[list[State]], depth: int) -> None:
        self.returns: list[tuple[Value, State]] = []
        self.loops: list[_Loop] = []
        #: One list per enclosing `try`: states from which an exception may reach its handlers.
        self.sinks = sinks
        self.depth = depth


class Interpreter:
    def __init__(
        self,
        program: Program,
        facts: Facts,
        observer: Observer | None = None,
        relevant: Slice | None = None,
    ) -> None:
        self.program = program
        self.facts = facts
        self.observer = observer
        #: When given, statements that cannot affect the slice's names are not executed.
        self.relevant = relevant
        self.statements = 0
        #: The statement and frame executing now (provenance sites, helper calls).
        self.stmt: ast.stmt | None = None
        self.frame = _Frame([], 0)
        #: Values forced for particular nodes, for "what if" evaluations by observers.
        self.overrides: dict[ast.AST, Value] = {}
        #: When a list, every evaluated comparison is appended as (node, value).
        self.trace: list[tuple[ast.Compare, Value]] | None = None
        self._constants = program.constants
        #: Whether some fact is a choice of values (several witnesses in one run).
        self.choices = any(
            value.choices is not None
            for known in (facts.params, facts.calls, facts.names)
            for value in known.values()
        )

    # ---------------------------------------------------------------- entry point

    def run(self, state: State | None = None, split: Split | None = None) -> list[State]:
        """Execute the function; the states at each reachable return (falling off included).

        With `split = (statement, partition)`, from that top-level statement on, each top-level
        statement runs separately on each of the states `partition` makes of the current ones:
        path sensitivity for a correlation that joining the paths would lose.
        """
        frame = self.frame = _Frame([], 0)
        body = self.program.function.body
        start = state or State(
            {
                name: self.facts.params.get(name) or unknown(frozenset((name,)))
                for name in self.program.inputs
            }
        )
        if split is None:
            ends = [self.block(body, start, frame)]
        else:
            statement, partition = split
            index = body.index(statement)
            head = self.block(body[:index], start, frame)
            ends = [] if head is None else [head]
            for stmt in body[index:]:
                outcomes = (self.block([stmt], part, frame) for part in partition(ends))
                ends = [end for end in outcomes if end is not None]
        return [returned for _, returned in frame.returns] + [e for e in ends if e is not None]

    # ---------------------------------------------------------------- statements

    def block(self, body: list[ast.stmt], state: State | None, frame: _Frame) -> State | None:
        relevant = self.relevant
        for stmt in body:
            if state is None:
                return None
            if frame.sinks and _may_raise(stmt):
                # Even a statement the slice skips may raise into an enclosing handler.
                snapshot = state.copy()
                for sink in frame.sinks:
                    sink.append(snapshot)
            if relevant is not None and not relevant.needed(stmt) and not self._raises(stmt):
                continue
            self.statements += 1
            if self.statements > STATEMENT_BUDGET:
                raise AnalysisBudgetExceeded(
                    f"more than {STATEMENT_BUDGET} statements interpreted (line {stmt.lineno})"
                )
            self.stmt, self.frame = stmt, frame
            handler = STATEMENTS.get(type(stmt))
            try:
                state = handler(self, stmt, state, frame) if handler else self._opaque(stmt, state)
            except _Unreachable:
                state = None
        return state

    def _raises(self, stmt: ast.stmt) -> bool:
        """Whether `stmt` is a call `Facts.calls` says raises (`RAISES`): the slice skips a call
        that writes nothing the flag reads, but its exception decides where control goes."""
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return False
        callee = stmt.value.func
        name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
        return self.facts.calls.get(name) is RAISES

    def _opaque(self, stmt: ast.stmt, state: State) -> State:
        """A statement the interpreter does not model: whatever it binds becomes unknown."""
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.store(node.id, unknown(), state)
        return state

    def _assign_stmt(self, node: ast.Assign, state: State, frame: _Frame) -> State:
        value = self.eval(node.value, state)
        for target in node.targets:
            self.assign(target, value, state)
        return state

    def _augassign(self, node: ast.AugAssign, state: State, frame: _Frame) -> State:
        current = self.eval(node.target, state)
        value = self._arith(type(node.op), current, self.eval(node.value, state))
        self.assign(node.target, value, state)
        return state

    def _annassign(self, node: ast.AnnAssign, state: State, frame: _Frame) -> State:
        if node.value is not None:
            self.assign(node.target, self.eval(node.value, state), state)
        return state

    def _expr_stmt(self, node: ast.Expr, state: State, frame: _Frame) -> State:
        if isinstance(node.value, ast.Call) or self.program.calls_helper(node.value):
            value = self.eval(node.value, state)
            for name in self.program.mutated(node):
                if name in state.vars:
                    self._mutated(name, value.deps, state)
        return state

    def _if(self, node: ast.If, state: State, frame: _Frame) -> State | None:
        before = state.path
        branches = self._helper_branches(node.test, state)
        if branches is not None:
            test, then_in, else_in = branches
            if self.observer is not None:
                self.observer.on_if(self, node, test, join_states(then_in, else_in) or state)
        else:
            test = self.eval(node.test, state)
            if self.observer is not None:
                self.observer.on_if(self, node, test, state)
            then_in = else_in = None
            if test.truth is not False:
                then_in = state if test.truth else self.refine(node.test, True, state.copy())
            if test.truth is not True:
                else_in = state if test.truth is False else self.refine(node.test, False, state)
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

    def _loop_body(self, node, state: State, frame: _Frame, bind) -> tuple[State, list[State]]:
        """Fixpoint of a loop: the state at its head, and the states that `break` out of it.

        `bind(state)` prepares one iteration (binds the target, refines the test) or returns
        None when the body cannot be entered.
        """
        head = state
        loop = _Loop()
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

    def _for(self, node: ast.For, state: State, frame: _Frame) -> State | None:
        iterable = self.eval(node.iter, state)
        items = _items(iterable)
        if items is not None and len(items) <= MAX_UNROLLED and not isinstance(node, ast.AsyncFor):
            return self._unrolled_for(node, items, iterable.deps, state, frame)
        element = _element(iterable)

        def bind(entry: State) -> State:
            self.assign(node.target, element, entry)
            return entry

        head, breaks = self._loop_body(node, state, frame, bind)
        done = self.block(node.orelse, head.copy(), frame)
        return join_all([done, *breaks])

    def _unrolled_for(
        self, node: ast.For, items: tuple, deps: frozenset[str], state: State, frame: _Frame
    ) -> State | None:
        """A loop over a known, short sequence (a module's tuple of architectures): each
        iteration with its own element, as Python runs it, so `if cc == arch:` is decided."""
        loop = _Loop()
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

    def _while(self, node: ast.While, state: State, frame: _Frame) -> State | None:
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

    def _try(self, node: ast.Try, state: State, frame: _Frame) -> State | None:
        sink: list[State] = []
        finally_returns = finally_loop = None
        if node.finalbody:
            finally_returns, frame.returns = frame.returns, []
            if frame.loops:
                finally_loop, frame.loops[-1] = frame.loops[-1], _Loop()
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

    def _with(self, node: ast.With, state: State, frame: _Frame) -> State | None:
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

    def _match(self, node: ast.Match, state: State, frame: _Frame) -> State | None:
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

    def _return(self, node: ast.Return, state: State, frame: _Frame) -> None:
        value = self.eval(node.value, state) if node.value is not None else const(None)
        if self.observer is not None:
            self.observer.on_return(self, node, value, state)
        frame.returns.append((value, state))
        return None

    def _raise(self, node: ast.Raise, state: State, frame: _Frame) -> None:
        """An exception leaves here: nothing falls through (handlers see it via `_may_raise`)."""
        return None

    def _break(self, node: ast.Break, state: State, frame: _Frame) -> None:
        if frame.loops:
            frame.loops[-1].breaks.append(state)
        return None

    def _continue(self, node: ast.Continue, state: State, frame: _Frame) -> None:
        if frame.loops:
            frame.loops[-1].continues.append(state)
        return None

    def _def(self, node: ast.FunctionDef, state: State, frame: _Frame) -> State:
        self.store(node.name, const(LocalFunction(node)), state)
        return state

    def _assert(self, node: ast.Assert, state: State, frame: _Frame) -> State | None:
        test = self.eval(node.test, state)
        if test.truth is None:
            return self.refine(node.test, True, state)
        return state if test.truth else None

    def _delete(self, node: ast.Delete, state: State, frame: _Frame) -> State:
        for target in node.targets:
            for name in target_names(target):
                state.vars.pop(name, None)
        return state

    # ---------------------------------------------------------------- binding

    def store(self, name: str, value: Value, state: State) -> None:
        """Bind `name`, recording this statement as where its fresh parts came from.

        A possibly-true value copied from another variable counts as enabled *here* (the line
        that turns the backend on for this flag); one carried over from the flag's own earlier
        value keeps its origin. Possibly-false origins are kept as they are: they are the
        filters that may have switched a flag off.
        """
        site = None
        enablers = value.enablers
        if enablers:
            own = [
                s for s in enablers if s.stmt is not None and name in self.program.assigned(s.stmt)
            ]
            if len(own) != len(enablers):
                site = Site(self.stmt, state.path | value.deps)
                enablers = frozenset((*own, site))
        disablers = value.disablers
        if FRESH_SITE in disablers:
            site = site or Site(self.stmt, state.path | value.deps)
            disablers = (disablers - FRESH) | {site}
        if enablers is not value.enablers or disablers is not value.disablers:
            value = new_value(
                (value.const, value.truth, value.deps, enablers, disablers, value.choices)
            )
        state.vars[name] = value

    def assign(self, target: ast.AST, value: Value, state: State) -> None:
        if isinstance(target, ast.Name):
            self.store(target.id, value, state)
        elif isinstance(target, (ast.Tuple, ast.List)):
            elements = target.elts
            known = value.known and isinstance(value.const, (tuple, list))
            if (
                known
                and len(value.const) == len(elements)
                and not any(isinstance(e, ast.Starred) for e in elements)
            ):
                for element, item in zip(elements, value.const):
                    self.assign(element, const(item, value.deps), state)
            else:
                for element in elements:
                    self.assign(element, unknown(value.deps), state)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, unknown(value.deps), state)
        elif isinstance(target, ast.Attribute):
            dotted = dotted_name(target)
            if dotted is not None:
                self.store(dotted, value, state)
        elif isinstance(target, ast.Subscript):
            for name in root_names(target.value, self.program.locals):
                if name in state.vars:
                    self._mutated(name, value.deps, state)

    def _mutated(self, name: str, deps: frozenset[str], state: State) -> None:
        """An object held by a local variable was changed in place: forget what was known."""
        held = state.vars[name]
        if not (held.known and isinstance(held.const, IMMUTABLE)):
            self.store(name, unknown(held.deps | deps), state)

    # ---------------------------------------------------------------- expressions

    def eval(self, node: ast.AST, state: State) -> Value:
        if self.overrides and node in self.overrides:
            return self.overrides[node]
        handler = EXPRESSIONS.get(type(node))
        if handler is not None:
            return handler(self, node, state)
        return self._unmodelled(node, state)

    def _deps_of(self, node: ast.AST, state: State) -> frozenset[str]:
        """Inputs an expression reads, without evaluating it."""
        names, fields = self.program.reads(node)
        deps = fields
        for name in names:
            value = state.vars.get(name)
            if value is not None and value.deps:
                deps = deps | value.deps
        return deps

    def _unmodelled(self, node: ast.AST, state: State) -> Value:
        """f-strings, lambdas, dicts, and comprehensions or set displays over what is not known:
        unknown, but not input-free."""
        if self.program.calls_helper(node):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child, state)
        truth = None
        if isinstance(node, ast.Dict):  # `{**other}` may be empty
            truth = True if any(key is not None for key in node.keys) else None
            truth = False if not node.keys else truth
        elif isinstance(node, ast.Set):  # never empty unless it is all `*other`
            truth = True if not all(isinstance(e, ast.Starred) for e in node.elts) else None
        return unknown(self._deps_of(node, state), truth)

    def _constant(self, node: ast.Constant, state: State) -> Value:
        value = self._constants.get(node)
        if value is None:
            value = self._constants[node] = const(node.value)
        return value

    def _read(self, name: str, value: Value) -> Value:
        if name in self.facts.opaque:
            # Unknown truth, and a dependency on the flag itself: conditions can be told
            # apart by which backends' flags they read.
            return value._replace(const=UNKNOWN, truth=None, deps=value.deps | {name}, choices=None)
        return value

    def _name(self, node: ast.Name, state: State) -> Value:
        value = state.vars.get(node.id)
        if value is None:
            value = self.facts.names.get(node.id)
            if value is None:
                return unknown()
        return self._read(node.id, value)

    def _attribute(self, node: ast.Attribute, state: State) -> Value:
        dotted = dotted_name(node)
        if dotted is not None:
            value = state.vars.get(dotted)
            if value is not None:
                return self._read(dotted, value)
            base = node.value
            if (
                isinstance(base, ast.Name)
                and base.id == self.program.parameter
                and base.id not in state.vars
            ):
                value = self.facts.params.get(node.attr)
                return value if value is not None else unknown(frozenset((node.attr,)))
            value = self.facts.names.get(dotted)
            if value is not None:
                return value
        return unknown(self.eval(node.value, state).deps)

    def _subscript(self, node: ast.Subscript, state: State) -> Value:
        base = self.eval(node.value, state)
        index = self.eval(node.slice, state)
        return apply(operator.getitem, (base, index), base.deps | index.deps)

    def _set(self, node: ast.Set, state: State) -> Value:
        """A set display of known, hashable items is known (as a frozenset: same membership)."""
        values, deps = self._display(node, state)
        if values is not None:
            with contextlib.suppress(TypeError):
                return const(frozenset(values), deps)
        return self._unmodelled(node, state)

    def _display(self, node: ast.Set | ast.Tuple | ast.List, state: State):
        """The items' values of a display (None unless all are known and none is starred),
        and what they depend on."""
        items = [self.eval(element, state) for element in node.elts]
        deps = EMPTY
        for item in items:
            deps = deps | item.deps
        if all(item.known for item in items) and not any(
            isinstance(e, ast.Starred) for e in node.elts
        ):
            return [item.const for item in items], deps
        return None, deps

    def _comprehension(self, node: ast.GeneratorExp | ast.ListComp | ast.SetComp, state: State):
        """A comprehension over known, short sequences, evaluated item by item in a scope of its
        own (`any(cc == arch for arch in SM12X)`); otherwise unknown."""
        results: list[Value] = []

        def run(generators: list[ast.comprehension], scope: State) -> bool:
            if not generators:
                results.append(self.eval(node.elt, scope))
                return len(results) <= MAX_CHOICES
            first, rest = generators[0], generators[1:]
            items = _items(self.eval(first.iter, scope))
            if items is None or first.is_async:
                return False
            for item in items:
                inner = scope.copy()
                self.assign(first.target, const(item), inner)
                tests = [self.eval(test, inner).truth for test in first.ifs]
                if None in tests:
                    return False
                if all(tests) and not run(rest, inner):
                    return False
            return True

        if self.program.calls_helper(node) or not run(node.generators, state.copy()):
            return self._unmodelled(node, state)
        deps = EMPTY
        for result in results:
            deps = deps | result.deps
        if not all(result.known for result in results):
            return unknown(deps)
        values = [result.const for result in results]
        kind = {ast.GeneratorExp: tuple, ast.ListComp: list, ast.SetComp: frozenset}[type(node)]
        try:
            return const(kind(values), deps)
        except TypeError:  # unhashable items of a set comprehension
            return unknown(deps)

    def _sequence(self, node: ast.Tuple | ast.List, state: State) -> Value:
        values, deps = self._display(node, state)
        if values is not None:
            return const(tuple(values) if isinstance(node, ast.Tuple) else values, deps)
        nonempty = any(not isinstance(element, ast.Starred) for element in node.elts)
        return unknown(deps, truth=True if nonempty else None)

    def _namedexpr(self, node: ast.NamedExpr, state: State) -> Value:
        value = self.eval(node.value, state)
        self.store(node.target.id, value, state)
        return value

    def _boolop(self, node: ast.BoolOp, state: State) -> Value:
        stops_on = not isinstance(node.op, ast.And)  # `and` stops at falsy, `or` at truthy
        result = None
        deps = EMPTY
        last = len(node.values) - 1
        for index, operand in enumerate(node.values):
            value = self.eval(operand, state)
            deps = deps | value.deps
            if index == last or value.truth is stops_on:
                result = value if result is None else join(result, value)
                break
            if value.truth is None:
                part = with_truth(value, stops_on)
                result = part if result is None else join(result, part)
        return with_deps(result, deps)

    def _unaryop(self, node: ast.UnaryOp, state: State) -> Value:
        operand = self.eval(node.operand, state)
        if isinstance(node.op, ast.Not):
            if operand.truth is None:
                return unknown(operand.deps)
            return const(not operand.truth, operand.deps)
        return apply(UNARY[type(node.op)], (operand,), operand.deps)

    def _arith(self, op: type, left: Value, right: Value) -> Value:
        deps = left.deps | right.deps
        if op not in BINARY:
            return unknown(deps)
        return apply(BINARY[op], (left, right), deps)

    def _binop(self, node: ast.BinOp, state: State) -> Value:
        return self._arith(type(node.op), self.eval(node.left, state), self.eval(node.right, state))

    def _compare(self, node: ast.Compare, state: State) -> Value:
        left = self.eval(node.left, state)
        deps = left.deps
        outcome: bool | None = True
        for op, comparator in zip(node.ops, node.comparators):
            right = self.eval(comparator, state)
            deps = deps | right.deps
            step = _compare(op, left, right)
            if step is False:
                outcome = False
                break
            if step is None:
                outcome = None
            left = right
        value = unknown(deps) if outcome is None else const(outcome, deps)
        if self.trace is not None:
            self.trace.append((node, value))
        return value

    def _ifexp(self, node: ast.IfExp, state: State) -> Value:
        test = self.eval(node.test, state)
        if test.truth is True:
            value = self.eval(node.body, state)
        elif test.truth is False:
            value = self.eval(node.orelse, state)
        else:
            value = join(self.eval(node.body, state), self.eval(node.orelse, state))
        return with_deps(value, test.deps)

    def _call(self, node: ast.Call, state: State) -> Value:
        func = node.func
        if isinstance(func, ast.Name):
            bound = state.vars.get(func.id)
            if bound is not None and isinstance(bound.const, LocalFunction):
                return self._inline(bound.const.node, node, state)
            name = func.id
        elif isinstance(func, ast.Attribute):
            name = func.attr
        else:
            name = None
        fact = self.facts.calls.get(name) if name is not None else None
        if fact is RAISES:
            raise _Unreachable
        if fact is not None:
            return fact
        expanded = self._expanded(node, state)
        if expanded is not None:
            return self.eval(expanded, state)
        if (
            isinstance(func, ast.Name)
            and (func.id in PURE_BUILTINS or func.id in self.facts.functions)
            and func.id not in state.vars
            and not node.keywords
        ):
            return self._builtin(func.id, node, state)
        if self.program.calls_helper(node):
            for argument in (*node.args, *(k.value for k in node.keywords)):
                self.eval(argument, state)
        return unknown(self._deps_of(node, state))

    def _builtin(self, name: str, node: ast.Call, state: State) -> Value:
        arguments = [
            self.eval(a.value if isinstance(a, ast.Starred) else a, state) for a in node.args
        ]
        deps = EMPTY
        for argument in arguments:
            deps = deps | argument.deps
        starred = any(isinstance(a, ast.Starred) for a in node.args)
        if name == "bool" and len(arguments) == 1 and not starred:
            truth = arguments[0].truth
            return unknown(deps) if truth is None else const(truth, deps)
        if starred:
            return unknown(deps)
        return apply(self.facts.functions.get(name) or PURE_BUILTINS[name], arguments, deps)

    def _inline(self, function: ast.FunctionDef, call: ast.Call, state: State) -> Value:
        """Run a local helper on the caller's state: closures read it, `nonlocal` writes land."""
        outcomes = self._inline_outcomes(function, call, state)
        if outcomes is None:
            return unknown()
        after = join_all(returned for _, returned in outcomes)
        state.vars, state.path = after.vars, after.path
        return join_all_values(value for value, _ in outcomes)

    def _inline_outcomes(
        self, function: ast.FunctionDef, call: ast.Call, state: State
    ) -> list[tuple[Value, State]] | None:
        """Each way a local helper can return, with the caller's state there (the helper's own
        names put back); None when it is nested too deep to follow (its writes forgotten)."""
        helper = self.program.helper(function)
        arguments = [self.eval(a, state) for a in call.args]
        keywords = {k.arg: self.eval(k.value, state) for k in call.keywords}
        caller, caller_stmt, path = self.frame, self.stmt, state.path
        if caller.depth >= MAX_INLINE_DEPTH:
            for name in helper.nonlocals:
                self.store(name, unknown(), state)
            return None
        saved = {name: state.vars.get(name) for name in helper.locals}
        for index, param in enumerate(helper.params):
            if index < len(arguments):
                value = arguments[index]
            else:
                value = keywords.get(param, unknown())
            self.store(param, value, state)
        frame = _Frame(caller.sinks, caller.depth + 1)
        try:
            end = self.block(function.body, state, frame)
        finally:
            self.stmt, self.frame = caller_stmt, caller
        results = frame.returns + ([(const(None), end)] if end is not None else [])
        if not results:
            raise _Unreachable
        for _, returned in results:
            for name, value in saved.items():
                if value is None:
                    returned.vars.pop(name, None)
                else:
                    returned.vars[name] = value
            returned.path = path
        return results

    # ---------------------------------------------------------------- refinement

    def refine(self, node: ast.AST, truth: bool, state: State | None) -> State | None:
        """`state` restricted to the paths on which `node` has truthiness `truth` (None: none)."""
        if state is None:
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.refine(node.operand, not truth, state)
        if isinstance(node, ast.BoolOp):
            conjunction = isinstance(node.op, ast.And)
            if truth is conjunction:  # every operand has this truthiness
                for operand in node.values:
                    state = self.refine(operand, truth, state)
                    if state is None:
                        return None
                return state
            undecided = [v for v in node.values if self.eval(v, state).truth is not conjunction]
            if not undecided:
                return None
            if len(undecided) == 1:
                return self.refine(undecided[0], truth, state)
            return state
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self._refine_compare(node, truth, state)
        if isinstance(node, ast.NamedExpr):
            return self._refine_name(node.target, truth, state)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "bool"
            and node.func.id not in state.vars
            and len(node.args) == 1
        ):
            return self.refine(node.args[0], truth, state)
        returned = self._returned_expression(node, state)
        if returned is None:
            returned = self._expanded(node, state)
        if returned is not None:
            return self.refine(returned, truth, state)
        if _key(node) is not None:
            return self._refine_name(node, truth, state)
        return state

    def _expanded(self, node: ast.AST, state: State) -> ast.expr | None:
        """A call of one of the module's predicates, as its expression (None for any other)."""
        if not (
            self.facts.predicates
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in self.facts.predicates
            and node.func.id not in state.vars
        ):
            return None
        expansions = self.program.expansions
        if node not in expansions:
            expansions[node] = expand(node, self.facts.predicates)
        return expansions[node]

    def _returned_expression(self, node: ast.AST, state: State) -> ast.expr | None:
        """What `helper()` stands for, when the helper is a local one-line `return <expr>`.

        Without parameters or locals its names are the caller's, so `if not
        _any_flash_attention_enabled():` refines the flags it `or`s together (TE 2.20).
        """
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and not node.args
            and not node.keywords
        ):
            return None
        bound = state.vars.get(node.func.id)
        if bound is None or not isinstance(bound.const, LocalFunction):
            return None
        function = bound.const.node
        body = [
            stmt
            for stmt in function.body
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
        ]
        arguments = function.args
        if (
            len(body) == 1
            and isinstance(body[0], ast.Return)
            and body[0].value is not None
            and not (arguments.posonlyargs or arguments.args or arguments.kwonlyargs)
            and arguments.vararg is None
            and arguments.kwarg is None
        ):
            return body[0].value
        return None

    def _refine_name(
        self, node: ast.Name | ast.Attribute, truth: bool, state: State
    ) -> State | None:
        key = _key(node)
        current = state.vars.get(key) or self.eval(node, state)
        if current.truth is (not truth):
            return None
        if key not in self.facts.opaque:
            state.vars[key] = with_truth(current, truth)
        return state

    def _refine_compare(self, node: ast.Compare, truth: bool, state: State) -> State:
        if self.choices:
            state = self._narrow_choices(node, truth, state)
        op = type(node.ops[0])
        if _key(node.left) is None:
            return state
        equal = {ast.Eq: truth, ast.Is: truth, ast.NotEq: not truth, ast.IsNot: not truth}.get(op)
        if op in (ast.In, ast.NotIn) and truth is (op is ast.In):
            container = self.eval(node.comparators[0], state)
            if container.known and _sized(container.const) == 1:
                return self._restrict(node.left, [next(iter(container.const))], state)
            return state
        if equal:
            other = self.eval(node.comparators[0], state)
            if other.known:
                return self._restrict(node.left, [other.const], state)
        return state

    def _narrow_choices(self, node: ast.Compare, truth: bool, state: State) -> State:
        """Keep only the choices of a compared variable that can give the test this truth:
        the else branch of `if head_dim_qk != head_dim_v:` leaves both their common values."""
        op, sides = node.ops[0], (node.left, node.comparators[0])
        if any(self.program.calls_helper(side) for side in sides):
            return state  # evaluating it again would run the helper's writes again
        values = [self.eval(side, state) for side in sides]
        options = [alternatives(value) for value in values]
        if options[0] is None or options[1] is None:
            return state
        for index, (side, value) in enumerate(zip(sides, values)):
            if value.choices is None or _key(side) is None:
                continue
            kept = [
                mine
                for mine in options[index]
                if any(
                    _compare_objects(op, *((mine, other) if index == 0 else (other, mine)))
                    is not (not truth)
                    for other in options[1 - index]
                )
            ]
            if kept and len(kept) < len(options[index]):
                state = self._restrict(side, kept, state)
                options[index] = kept
        return state

    def _restrict(self, node: ast.Name | ast.Attribute, objs: list[Any], state: State) -> State:
        """Refine a variable to one of `objs` (its provenance and inputs stay its own).

        A single object makes it known, unless it was a choice: then it stays a choice, so
        that where the branches meet the variable is again one of all their values.
        """
        key = _key(node)
        if key in self.facts.opaque:
            return state
        current = state.vars.get(key) or self.eval(node, state)
        if current.choices is not None:
            known = choice(choice_set(objs))
        else:
            known = const(objs[0]) if len(objs) == 1 else one_of(objs)
        state.vars[key] = Value(
            known.const,
            known.truth,
            current.deps,
            current.enablers if known.truth is not False else EMPTY,
            current.disablers if known.truth is not True else EMPTY,
            known.choices,
        )
        return state


#: How each kind of statement executes (`Interpreter.block`); any other kind is `_opaque`.
#: Module-level, not bound methods in the instance: those would make every interpreter, and
#: every state it ever held, cyclic garbage that only a full collection frees.
STATEMENTS: dict[type, Callable[..., State | None]] = {
    ast.Assign: Interpreter._assign_stmt,
    ast.AugAssign: Interpreter._augassign,
    ast.AnnAssign: Interpreter._annassign,
    ast.Expr: Interpreter._expr_stmt,
    ast.If: Interpreter._if,
    ast.For: Interpreter._for,
    ast.AsyncFor: Interpreter._for,
    ast.While: Interpreter._while,
    ast.Try: Interpreter._try,
    ast.With: Interpreter._with,
    ast.AsyncWith: Interpreter._with,
    ast.Return: Interpreter._return,
    ast.Raise: Interpreter._raise,
    ast.Break: Interpreter._break,
    ast.Continue: Interpreter._continue,
    ast.FunctionDef: Interpreter._def,
    ast.Assert: Interpreter._assert,
    ast.Delete: Interpreter._delete,
    ast.Match: Interpreter._match,
}
if hasattr(ast, "TryStar"):
    STATEMENTS[ast.TryStar] = Interpreter._try
#: How each kind of expression evaluates (`Interpreter.eval`); any other is `_unmodelled`.
EXPRESSIONS: dict[type, Callable[..., Value]] = {
    ast.Constant: Interpreter._constant,
    ast.Name: Interpreter._name,
    ast.Attribute: Interpreter._attribute,
    ast.Subscript: Interpreter._subscript,
    ast.Call: Interpreter._call,
    ast.BoolOp: Interpreter._boolop,
    ast.UnaryOp: Interpreter._unaryop,
    ast.BinOp: Interpreter._binop,
    ast.Compare: Interpreter._compare,
    ast.IfExp: Interpreter._ifexp,
    ast.Tuple: Interpreter._sequence,
    ast.List: Interpreter._sequence,
    ast.Set: Interpreter._set,
    ast.GeneratorExp: Interpreter._comprehension,
    ast.ListComp: Interpreter._comprehension,
    ast.SetComp: Interpreter._comprehension,
    ast.NamedExpr: Interpreter._namedexpr,
}


def _may_raise(stmt: ast.stmt) -> bool:
    """False for statements that cannot raise (binding a constant, `pass`, declarations)."""
    if isinstance(stmt, (ast.Pass, ast.Global, ast.Nonlocal)):
        return False
    return not (
        isinstance(stmt, ast.Assign)
        and isinstance(stmt.value, ast.Constant)
        and all(isinstance(target, ast.Name) for target in stmt.targets)
    )


def _key(node: ast.AST) -> str | None:
    """The state key an expression names: a variable or a dotted attribute."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return dotted_name(node)
    return None


def _sized(obj: Any) -> int | None:
    try:
        return len(obj)
    except TypeError:
        return None


def _compare(op: ast.cmpop, left: Value, right: Value) -> bool | None:
    """The comparison's outcome, when it is the same for whatever both sides may be."""
    if left.known and right.known:
        return _compare_objects(op, left.const, right.const)
    lefts, rights = alternatives(left), alternatives(right)
    if lefts is None or rights is None:
        return None
    outcomes = {_compare_objects(op, a, b) for a in lefts for b in rights}
    return outcomes.pop() if len(outcomes) == 1 else None


def _compare_objects(op: ast.cmpop, left: Any, right: Any) -> bool | None:
    if isinstance(op, (ast.Is, ast.IsNot)) and not any(
        side is None or isinstance(side, bool) for side in (left, right)
    ):
        return None  # identity of other equal constants is the implementation's choice
    try:
        return bool(COMPARE[type(op)](left, right))
    except Exception:
        return None


def apply(function: Callable, operands: Sequence[Value], deps: frozenset[str]) -> Value:
    """`function` folded over what the operands may be (`absint.alternatives`): a constant,
    or a choice of results when some operand is a choice; unknown when some operand is, when
    a combination raises, or when there would be too many."""
    if all(operand.known for operand in operands):
        try:
            return const(function(*(operand.const for operand in operands)), deps)
        except Exception:
            return unknown(deps)
    options = [alternatives(operand) for operand in operands]
    if any(option is None for option in options):
        return unknown(deps)
    if math.prod(len(option) for option in options) > MAX_CHOICES:
        return unknown(deps)
    try:
        results = [function(*combination) for combination in itertools.product(*options)]
    except Exception:
        return unknown(deps)
    return one_of(results, deps)


def _items(iterable: Value) -> tuple | None:
    """The items of a known tuple, list or frozenset (a frozenset in a stable order)."""
    if not iterable.known:
        return None
    if isinstance(iterable.const, (tuple, list)):
        return tuple(iterable.const)
    if isinstance(iterable.const, frozenset):
        return tuple(sorted(iterable.const, key=repr))
    return None


def _element(iterable: Value) -> Value:
    """One element of an iterable, as precisely as its value allows."""
    if iterable.known and isinstance(iterable.const, (tuple, list)) and iterable.const:
        return join_all_values(const(item, iterable.deps) for item in iterable.const)
    return unknown(iterable.deps)


def join_all_values(values) -> Value:
    result = None
    for value in values:
        result = value if result is None else join(result, value)
    return result if result is not None else const(None)
