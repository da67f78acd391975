"""Module-level pure predicates, expanded where a condition calls them.

A fork may move a guard's condition out of the selector into a module-level function,
`def _fa4_cannot_run_deterministic(capability, deterministic): return deterministic and
(12, 0) <= capability < (13, 0)`, and test `_fa4_cannot_run_deterministic(device_compute_capability,
deterministic)`. That call means its returned expression with the arguments in place of the
parameters, so the interpreter evaluates and refines the expansion, exactly as it does the
condition written inline. Only functions whose whole body is one `return` of an expression
over their parameters, the module's constants and pure functions are predicates: anything
else may read or change state the call site cannot see.
"""

from __future__ import annotations

import ast
import functools
from typing import Collection, Mapping

from lint_plugin.engine.program import descendants
from selector_patch.records import TupleRecord

#: How deep predicates calling predicates are expanded (a cycle stops here, unexpanded).
MAX_DEPTH = 8
#: Expression nodes a predicate may not hold: they bind names or run code of their own.
_BINDING = (ast.Lambda, ast.NamedExpr, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)
_IMPURE = (*_BINDING, ast.Await, ast.Yield, ast.YieldFrom, ast.Starred)


class Predicate(TupleRecord):
    params: tuple[str, ...]
    expression: ast.expr


@functools.lru_cache(maxsize=2)  # predicates and pure functions both ask; keeps trees alive
def module_functions(module: ast.Module) -> dict[str, ast.FunctionDef]:
    """The module's top-level functions that its name always means: defined once, and never
    rebound by an assignment or an import (a call of the name is a call of that body)."""
    definitions: dict[str, ast.AST] = {}
    rebound = set()
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in definitions:
                rebound.add(node.name)
            definitions[node.name] = node
        elif isinstance(
            node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom)
        ):
            for target in descendants(node):
                if isinstance(target, ast.Name) and not isinstance(target.ctx, ast.Load):
                    rebound.add(target.id)
                elif isinstance(target, ast.alias):
                    rebound.add(target.asname or target.name.partition(".")[0])
    return {
        name: node
        for name, node in definitions.items()
        if isinstance(node, ast.FunctionDef) and name not in rebound
    }


def module_predicates(module: ast.Module, pure_names: Collection[str]) -> dict[str, Predicate]:
    """The module's predicates by name. `pure_names` are the names an expression may read
    besides its parameters and other predicates (constants, pure builtins and imports)."""
    shapes = {name: _shape(node) for name, node in module_functions(module).items()}
    candidates = {name: shape for name, shape in shapes.items() if shape}
    allowed = set(pure_names) | set(candidates)
    return {
        name: predicate for name, predicate in candidates.items() if _reads_only(predicate, allowed)
    }


def _shape(function: ast.FunctionDef) -> Predicate | None:
    arguments = function.args
    body = [
        stmt
        for stmt in function.body
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
    ]
    if (
        function.decorator_list
        or arguments.vararg
        or arguments.kwarg
        or arguments.defaults
        or arguments.kw_defaults
        or len(body) != 1
        or not isinstance(body[0], ast.Return)
        or body[0].value is None
    ):
        return None
    params = tuple(a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs))
    return Predicate(params, body[0].value)


def _reads_only(predicate: Predicate, allowed: set[str]) -> bool:
    names = allowed | set(predicate.params)
    for node in descendants(predicate.expression):
        if isinstance(node, _IMPURE):
            return False
        if isinstance(node, ast.Name) and node.id not in names:
            return False
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in allowed
        ):
            return False
    return True


def expand(call: ast.Call, predicates: Mapping[str, Predicate], depth: int = 0) -> ast.expr | None:
    """The predicate's expression with the call's arguments in place of its parameters (the
    argument nodes themselves, so what the caller knows of them holds), predicates it calls
    expanded too; None for a call that does not bind every parameter once."""
    if depth > MAX_DEPTH or not isinstance(call.func, ast.Name):
        return None
    predicate = predicates.get(call.func.id)
    if predicate is None or len(call.args) > len(predicate.params):
        return None
    bound = dict(zip(predicate.params, call.args))
    for keyword in call.keywords:
        if keyword.arg is None or keyword.arg in bound or keyword.arg not in predicate.params:
            return None
        bound[keyword.arg] = keyword.value
    if len(bound) != len(predicate.params) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    import copy  # only an expansion needs it: 4 M instructions `--check` of a release never pays

    return _Substitution(bound, predicates, depth).visit(copy.deepcopy(predicate.expression))


class _Substitution(ast.NodeTransformer):
    def __init__(self, bound: dict[str, ast.expr], predicates, depth: int) -> None:
        self.bound, self.predicates, self.depth = bound, predicates, depth

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.bound.get(node.id, node)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.predicates:
            expanded = expand(node, self.predicates, self.depth + 1)
            return node if expanded is None else expanded
        return node
