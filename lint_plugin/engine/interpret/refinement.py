"""Refinement: a state restricted to the paths on which a condition has a given truthiness
(`if x and y:` teaches the then-branch both are truthy; `cc == (9, 0)` makes `cc` known).

Every undecided test refines both branches, so a condition compiles into its refiner once per
`Program`, as an expression does into its evaluator (`evaluators`): what kind of condition it is
and which variable it narrows is worked out there, its operands' refiners and evaluators are
called directly.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Callable, Mapping

from lint_plugin.engine.absint import (
    EMPTY,
    EMPTY_MAPPING,
    UNKNOWN,
    State,
    Value,
    alternatives,
    choice,
    choice_set,
    const,
    new_value,
    one_of,
    with_truth,
)
from lint_plugin.engine.interpret.evaluators import evaluator
from lint_plugin.engine.interpret.folding import compare_objects, sized, state_key
from lint_plugin.engine.interpret.frames import LocalFunction
from lint_plugin.engine.predicates import expand
from lint_plugin.engine.program import Program

if TYPE_CHECKING:
    from lint_plugin.engine.interpreter import Interpreter

#: `refiner(interpreter, truth, state, operands)`: `state` restricted to the paths on which the
#: condition has truthiness `truth` (None: none); see `Refinement.refine`.
Refiner = Callable[["Interpreter", bool, State, Mapping[ast.AST, Value]], "State | None"]


class Refinement:
    """How `Interpreter` narrows a state by a condition."""

    def refine(
        self,
        node: ast.AST,
        truth: bool,
        state: State | None,
        operands: Mapping[ast.AST, Value] = EMPTY_MAPPING,
    ) -> State | None:
        """`state` restricted to the paths on which `node` has truthiness `truth` (None: none).

        `operands`: what the operands of the `and` / `or` at the top of `node` (under any
        `not`) evaluate to in `state`, when the caller knows (an `if` test's: `statements._if`).
        """
        if state is None:
            return None
        compiled = self.program.refiners.get(node)
        if compiled is None:
            compiled = refiner(self.program, node)
        return compiled(self, truth, state, operands)

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

    def _refine_name(self, key: str, current: Value, truth: bool, state: State) -> State | None:
        """`state` with the variable `key`, valued `current` there, of truthiness `truth`."""
        if current.truth is (not truth):
            return None
        if key not in self.facts.opaque:
            state.vars[key] = with_truth(current, truth)
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
            if value.choices is None or state_key(side) is None:
                continue
            kept = [
                mine
                for mine in options[index]
                if any(
                    compare_objects(op, *((mine, other) if index == 0 else (other, mine)))
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
        key = state_key(node)
        if key in self.facts.opaque:
            return state
        current = state.vars.get(key) or self.eval(node, state)
        if current.choices is not None:
            known = choice(choice_set(objs))
        else:
            known = const(objs[0]) if len(objs) == 1 else one_of(objs)
        state.vars[key] = new_value(
            (
                known.const,
                known.truth,
                current.deps,
                current.enablers if known.truth is not False else EMPTY,
                current.disablers if known.truth is not True else EMPTY,
                known.choices,
            )
        )
        return state


def refiner(program: Program, node: ast.AST) -> Refiner:
    """The refiner of `node`, compiled on first use and kept on `program`."""
    compiled = program.refiners.get(node)
    if compiled is None:
        compiled = program.refiners[node] = _compile(program, node)
    return compiled


def _compile(program: Program, node: ast.AST) -> Refiner:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = refiner(program, node.operand)
        return lambda interpreter, truth, state, operands: inner(
            interpreter, not truth, state, operands
        )
    if isinstance(node, ast.BoolOp):
        return _boolop(program, node)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _compare(program, node)
    if isinstance(node, ast.NamedExpr):
        return _name(program, node.target)
    if isinstance(node, ast.Call):
        return _call(program, node)
    if state_key(node) is not None:
        return _name(program, node)
    return _unchanged


def _unchanged(interpreter: Interpreter, truth: bool, state: State, operands) -> State:
    return state


def _boolop(program: Program, node: ast.BoolOp) -> Refiner:
    """Every operand of a true `and` (a false `or`) has its truthiness; of a false `and`, the
    one operand that can be false, where only one can."""
    conjunction = isinstance(node.op, ast.And)
    parts = [(v, refiner(program, v), evaluator(program, v)) for v in node.values]

    def refine(interpreter: Interpreter, truth: bool, state: State, operands) -> State | None:
        if truth is conjunction:  # every operand has this truthiness
            for _, narrow, _ in parts:
                state = narrow(interpreter, truth, state, EMPTY_MAPPING)
                if state is None:
                    return None
            return state
        undecided = [
            narrow
            for operand, narrow, value_of in parts
            if (operands.get(operand) or value_of(interpreter, state)).truth is not conjunction
        ]
        if not undecided:
            return None
        if len(undecided) == 1:
            return undecided[0](interpreter, truth, state, EMPTY_MAPPING)
        return state

    return refine


def _compare(program: Program, node: ast.Compare) -> Refiner:
    """A variable compared with `==` / `is` (or their negations) to a known value is that
    value on the equal side; `in` a one-item container, that item. With choices in the run,
    each side keeps only the choices that can give the test its truth."""
    op, key = type(node.ops[0]), state_key(node.left)
    other_of = evaluator(program, node.comparators[0])

    def refine(interpreter: Interpreter, truth: bool, state: State, operands) -> State | None:
        if interpreter.choices:
            state = interpreter._narrow_choices(node, truth, state)
        if key is None:
            return state
        if op in (ast.In, ast.NotIn):
            if truth is (op is ast.In):
                container = other_of(interpreter, state)
                if container.const is not UNKNOWN and sized(container.const) == 1:
                    return interpreter._restrict(node.left, [next(iter(container.const))], state)
            return state
        if truth is (op is ast.Eq or op is ast.Is) and op in _EQUALITIES:
            other = other_of(interpreter, state)
            if other.const is not UNKNOWN:
                return interpreter._restrict(node.left, [other.const], state)
        return state

    return refine


#: Comparisons that make one side known from the other: as they are, or negated.
_EQUALITIES = (ast.Eq, ast.Is, ast.NotEq, ast.IsNot)


def _name(program: Program, node: ast.Name | ast.Attribute) -> Refiner:
    key, value_of = state_key(node), evaluator(program, node)

    def refine(interpreter: Interpreter, truth: bool, state: State, operands) -> State | None:
        current = state.vars.get(key) or value_of(interpreter, state)
        return interpreter._refine_name(key, current, truth, state)

    return refine


def _call(program: Program, node: ast.Call) -> Refiner:
    """`bool(x)` refines `x`; a local one-line helper or a module predicate, what it returns."""
    func = node.func
    name = func.id if isinstance(func, ast.Name) else None
    wraps = refiner(program, node.args[0]) if name == "bool" and len(node.args) == 1 else None

    def refine(interpreter: Interpreter, truth: bool, state: State, operands) -> State | None:
        if wraps is not None and name not in state.vars:
            return wraps(interpreter, truth, state, EMPTY_MAPPING)
        returned = interpreter._returned_expression(node, state)
        if returned is None:
            returned = interpreter._expanded(node, state)
        if returned is not None:
            return interpreter.refine(returned, truth, state)
        return state

    return refine
