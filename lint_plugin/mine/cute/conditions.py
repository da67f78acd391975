"""Kernel conditions in three-valued logic, on one device and one setting of the features.

A refusal's path is a list of branch tests. Whether it fires on (12, 0) with `deterministic`
True is a question about those tests with the arch names and the feature's variables bound
and every other name unknown: exactly what the selector analysis asks of TE's filters. So the
tests are evaluated by `lint_plugin.engine.interpreter` on the kernel function's own `Program`; the
interpreter's unknowns and short-circuit rules are the ones the analyzer trusts.

CuTe DSL wraps compile-time tests as `const_expr(...)` (`cutlass.const_expr`), which returns
its argument: the wrapper is dropped before evaluation.
"""

from __future__ import annotations

import ast
import copy
from typing import Any, Mapping

from lint_plugin.engine.absint import State, const
from lint_plugin.engine.interpreter import Facts, Interpreter
from lint_plugin.mine.cute.arch import ARCH_NAMES, Arch, arch_value
from lint_plugin.engine.program import Program, dotted_name

#: CuTe DSL's identity marker for compile-time conditions.
CONST_EXPR = "const_expr"


class _DropConstExpr(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        callee = node.func
        name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
        if name == CONST_EXPR and len(node.args) == 1 and not node.keywords:
            return self.visit(node.args[0])
        return self.generic_visit(node)


def plain(test: ast.expr) -> ast.expr:
    """`test` without `const_expr(...)` wrappers (a copy; the module's tree is left alone)."""
    return _DropConstExpr().visit(copy.deepcopy(test))


class Scope:
    """The conditions of one kernel function: its arch names and how to evaluate its tests."""

    def __init__(self, function: ast.FunctionDef, forwarded: Mapping[str, ast.expr]) -> None:
        #: Parameters holding an expression of the arch (`compute_capability`: `arch // 10`).
        self.forwarded = dict(forwarded)
        self.arch_names = frozenset((*ARCH_NAMES, *self.forwarded))
        self._interpreter = Interpreter(Program(function), Facts())

    def truth(self, test: ast.expr, arch: Arch, bindings: Mapping[str, Any]) -> bool | None:
        """The truth of `test` on `arch` with `bindings`; None where unknown names decide it."""
        state = State({name: const(arch_value(arch)) for name in ARCH_NAMES})
        for name, expression in self.forwarded.items():
            state.vars[name] = self._interpreter.eval(expression, state)
        state.vars.update((name, const(value)) for name, value in bindings.items())
        return self._interpreter.eval(test, state).truth

    def names(self, test: ast.expr) -> frozenset[str]:
        """Names and whole dotted names (`self.x`, not `self`) `test` reads, arch names excepted."""
        inner = {id(node.value) for node in ast.walk(test) if isinstance(node, ast.Attribute)}
        read = {
            dotted_name(node)
            for node in ast.walk(test)
            if isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in inner
        }
        return frozenset(read - {None} - self.arch_names)
