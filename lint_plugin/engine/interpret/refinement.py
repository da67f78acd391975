"""Refinement: a state restricted to the paths on which a condition has a given truthiness
(`if x and y:` teaches the then-branch both are truthy; `cc == (9, 0)` makes `cc` known)."""

from __future__ import annotations

import ast
from typing import Any, Mapping

from lint_plugin.engine.absint import (
    EMPTY,
    EMPTY_MAPPING,
    State,
    Value,
    alternatives,
    choice,
    choice_set,
    const,
    one_of,
    with_truth,
)
from lint_plugin.engine.interpret.folding import compare_objects, sized, state_key
from lint_plugin.engine.interpret.frames import LocalFunction
from lint_plugin.engine.predicates import expand


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
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.refine(node.operand, not truth, state, operands)
        if isinstance(node, ast.BoolOp):
            conjunction = isinstance(node.op, ast.And)
            if truth is conjunction:  # every operand has this truthiness
                for operand in node.values:
                    state = self.refine(operand, truth, state)
                    if state is None:
                        return None
                return state
            undecided = [
                v
                for v in node.values
                if (operands.get(v) or self.eval(v, state)).truth is not conjunction
            ]
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
        if state_key(node) is not None:
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
        key = state_key(node)
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
        if state_key(node.left) is None:
            return state
        equal = {ast.Eq: truth, ast.Is: truth, ast.NotEq: not truth, ast.IsNot: not truth}.get(op)
        if op in (ast.In, ast.NotIn) and truth is (op is ast.In):
            container = self.eval(node.comparators[0], state)
            if container.known and sized(container.const) == 1:
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
        state.vars[key] = Value(
            known.const,
            known.truth,
            current.deps,
            current.enablers if known.truth is not False else EMPTY,
            current.disablers if known.truth is not True else EMPTY,
            known.choices,
        )
        return state
