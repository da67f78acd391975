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
from typing import Callable, Mapping

from lint_plugin.engine.absint import EMPTY, EMPTY_MAPPING, State, Value, unknown
from lint_plugin.engine.interpret.binding import Binding
from lint_plugin.engine.interpret.evaluators import evaluator
from lint_plugin.engine.interpret.expressions import NOT_YET, Expressions
from lint_plugin.engine.interpret.frames import RAISES, Frame, Unreachable
from lint_plugin.engine.interpret.refinement import Refinement
from lint_plugin.engine.interpret.statements import Executor, Statements, executor
from lint_plugin.engine.predicates import Predicate
from lint_plugin.engine.program import Program
from lint_plugin.engine.slicing import Slice
from selector_patch.records import TupleRecord

#: Statements one run may execute before it gives up (loops are widened long before this).
STATEMENT_BUDGET = 200_000


#: Where `Interpreter.run` starts splitting a run (a top-level statement), and how to split.
Split = tuple[ast.stmt, Callable[[list[State]], list[State]]]
#: Whether `Interpreter.run` may end before a top-level statement (its index), with the states
#: that reach it.
Stop = Callable[[int, list[State]], bool]


class AnalysisBudgetExceeded(Exception):
    """The selector needs more work than `STATEMENT_BUDGET` allows."""


class Facts(TupleRecord):
    """Everything one run knows about the world; the rest is unknown.

    `params` holds `AttentionParams` fields (an absent field reads as an unknown value that
    depends on that field), `calls` the results of hardware / library queries by callee name,
    `names` module globals and class attributes by dotted name (the module's own constants
    among them). Names in `opaque` (backend flags, for the coverage rules) are tracked for
    provenance but their truthiness is never trusted when read; a read of one depends on its
    name. `kernels` lets a run ask the kernels' own validators TE wires in (`kernel_calls`):
    the miner does, to judge a kernel's refusals as the harness does; flake8 and the codemod
    never do, since that imports torch and may fetch a flash-attn-4 wheel.
    """

    params: Mapping[str, Value] = EMPTY_MAPPING
    calls: Mapping[str, Value] = EMPTY_MAPPING
    names: Mapping[str, Value] = EMPTY_MAPPING
    opaque: frozenset[str] = EMPTY
    #: Pure functions the module imports (packaging's `Version`), folded like `PURE_BUILTINS`.
    functions: Mapping[str, Callable] = EMPTY_MAPPING
    #: The module's own pure predicates (`predicates.module_predicates`), expanded where called.
    predicates: Mapping[str, Predicate] = EMPTY_MAPPING
    #: The module's pure functions with statements (`pure_functions`), run where called.
    pure_functions: Mapping[str, ast.FunctionDef] = EMPTY_MAPPING
    kernels: bool = False
    #: Names a run never binds (`analysis.Selector.run_slice`: the other backends' flags in a
    #: run about a flash backend, whose slice skips what they are computed from). A store of
    #: one is dropped, so that whatever the slice skipped, no value of it is ever held: each
    #: read is unknown, and no branch is refined, or ruled out, by what one held. They are
    #: `opaque` too, so that no refinement binds one either.
    unbound: frozenset[str] = EMPTY


class Observer:
    """Hook for analyses that need to look at each `if` (or `return`) as the interpreter
    decides it."""

    def on_if(self, interpreter: "Interpreter", node: ast.If, test: Value, state: State) -> None:
        """Called before the branches of `node` run, with the test's value in `state`."""

    def on_return(
        self, interpreter: "Interpreter", node: ast.Return, value: Value, state: State
    ) -> None:
        """Called when a `return` is reached (of a helper too: `interpreter.frame.depth`)."""


class Interpreter(Statements, Binding, Expressions, Refinement):
    """One run's machinery: the entry point, the statement and expression dispatch, and the
    state a run carries (its facts, budget, observer and overrides); each concern's handlers
    come from the mixin of its own module."""

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
        self._plans = program.plans if relevant is None else relevant.plans
        #: Whether a call statement the slice skips may still raise (`_plan`).
        self._raising = any(fact is RAISES for fact in facts.calls.values())
        self.statements = 0
        #: The statement and frame executing now (provenance sites, helper calls).
        self.stmt: ast.stmt | None = None
        self.frame = Frame([], 0)
        #: Values forced for particular comparisons, for "what if" evaluations by observers.
        self.overrides: dict[ast.Compare, Value] = {}
        #: When a list, every evaluated comparison is appended as (node, value).
        self.trace: list[tuple[ast.Compare, Value]] | None = None
        #: The `and` / `or` whose operand values are being kept, and them (an `if` test's:
        #: `statements._if`).
        self.recorded: ast.BoolOp | None = None
        self.operands: dict[ast.AST, Value] | None = None
        #: Whether some fact is a choice of values (several witnesses in one run).
        self.choices = any(
            value.choices is not None
            for known in (facts.params, facts.calls, facts.names)
            for value in known.values()
        )
        #: What the module's pure functions may read of the facts (`Expressions._pure_key`).
        self._pure_facts: tuple | None | object = NOT_YET

    # ---------------------------------------------------------------- entry point

    def run(
        self, state: State | None = None, split: Split | None = None, stop: Stop | None = None
    ) -> list[State]:
        """Execute the function; the states at each reachable return (falling off included).

        With `split = (statement, partition)`, from that top-level statement on, each top-level
        statement runs separately on each of the states `partition` makes of the current ones:
        path sensitivity for a correlation that joining the paths would lose. With `stop`, the
        run ends before the first top-level statement at which `stop(index, states)` holds,
        those states taken for where it falls off.
        """
        frame = self.frame = Frame([], 0)
        start = state or State(
            {
                name: self.facts.params.get(name) or unknown(frozenset((name,)))
                for name in self.program.inputs
            }
        )
        plan = self.plan(self.program.function.body)
        if split is None and stop is None:
            ends = [self.steps(plan, start, frame)]
        else:
            first = len(plan) if split is None else self.program.function.body.index(split[0])
            ends = [start]
            partitioned = False  # whether `ends` is what the partition makes of it already
            for index, step in enumerate(plan):
                if stop is not None and stop(index, ends):
                    break
                if step[1] is None and not self._raising:
                    # Skipped by the slice, and nothing that raises: the states stay as they
                    # are, split once; a partition of a partition is itself.
                    if index >= first and not partitioned:
                        ends, partitioned = split[1](ends), True
                    continue
                if index < first:
                    ends = [self.steps((step,), ends[0], frame)]
                else:
                    parts = ends if partitioned else split[1](ends)
                    outcomes = (self.steps((step,), part, frame) for part in parts)
                    ends = [end for end in outcomes if end is not None]
                partitioned = False
                if not ends or ends[0] is None:  # (a split run keeps no None)
                    ends = []
                    break
        return [returned for _, returned in frame.returns] + [e for e in ends if e is not None]

    # ---------------------------------------------------------------- dispatch

    def block(self, body: list[ast.stmt], state: State | None, frame: Frame) -> State | None:
        if state is None:
            return None  # unreachable: not planned, nor its statements compiled, for nothing
        entry = self._plans.get(id(body))
        if entry is None or entry[0] is not body:
            entry = self._plan_entry(body)
        return self.steps(entry[1], state, frame)

    def plan(self, body: list[ast.stmt]) -> tuple[Step, ...]:
        """`body` as this run's slice executes it (`Step`), made once per body and slice."""
        entry = self._plans.get(id(body))
        if entry is None or entry[0] is not body:
            entry = self._plan_entry(body)
        return entry[1]

    def _plan_entry(self, body: list[ast.stmt]) -> tuple[list[ast.stmt], tuple[Step, ...]]:
        """Kept with its body, so that the id of a list no longer alive finds no plan."""
        entry = self._plans[id(body)] = (body, _plan(self.program, body, self.relevant))
        return entry

    def steps(self, plan: tuple[Step, ...], state: State | None, frame: Frame) -> State | None:
        for stmt, execute, raising, callee in plan:
            if state is None:
                return None
            if raising and frame.sinks:
                # Even a statement the slice skips may raise into an enclosing handler.
                snapshot = state.copy()
                for sink in frame.sinks:
                    sink.append(snapshot)
            if execute is None:
                # Skipped by the slice, unless it is a call `Facts.calls` says raises: it writes
                # nothing the flag reads, but its exception decides where control goes.
                if not (self._raising and self.facts.calls.get(callee) is RAISES):
                    continue
                execute = executor(self.program, stmt)
            self.statements += 1
            if self.statements > STATEMENT_BUDGET:
                raise AnalysisBudgetExceeded(
                    f"more than {STATEMENT_BUDGET} statements interpreted (line {stmt.lineno})"
                )
            self.stmt, self.frame = stmt, frame
            try:
                state = execute(self, state, frame)
            except Unreachable:
                state = None
        return state

    def _affords(self, statements: int) -> bool:
        """Whether `statements` more stay within the budget (a kept outcome's, `_run_pure`)."""
        return self.statements + statements <= STATEMENT_BUDGET

    def eval(self, node: ast.AST, state: State) -> Value:
        compiled = self.program.evaluators.get(node)
        if compiled is None:
            compiled = evaluator(self.program, node)
        return compiled(self, state)


#: One statement of a body as a run meets it: the statement; its executor, None where the slice
#: skips it; whether it may raise into an enclosing `try` (`_may_raise`); and the callee of a
#: skipped call statement, which a fact may say raises.
Step = tuple[ast.stmt, Executor | None, bool, str | None]


def _plan(program: Program, body: list[ast.stmt], relevant: Slice | None) -> tuple[Step, ...]:
    plan = []
    for stmt in body:
        needed = relevant is None or relevant.needed(stmt)
        callee = None
        if not needed and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        plan.append((stmt, executor(program, stmt) if needed else None, _may_raise(stmt), callee))
    return tuple(plan)


#: Statements that never raise.
_SILENT = frozenset((ast.Pass, ast.Global, ast.Nonlocal))


def _may_raise(stmt: ast.stmt) -> bool:
    """False for statements that cannot raise (binding a constant, `pass`, declarations)."""
    kind = type(stmt)
    if kind is ast.Assign:
        if type(stmt.value) is not ast.Constant:
            return True
        return any(type(target) is not ast.Name for target in stmt.targets)
    return kind not in _SILENT
