"""Module-level pure functions with statements, run where the selector calls them.

TE derives inputs in module functions of its own: `qkv_format, q_format, kv_format =
get_qkv_format(qkv_layout, inference_params)` (TE 2.x) strips and splits the layout string in
an `if` and a few assignments. Left unknown, every filter on `qkv_format` is undecided, and a
hazard TE's THD filter handles reads as reachable. A predicate (`predicates`) is one `return`;
these have statements, so the interpreter runs their body in a scope of its own on the values
of the call's arguments, as CPython would.

Only functions that cannot see or change the caller's state qualify: no `global` or
`nonlocal`, no stores into attributes or items, no nested scopes but comprehensions, no loop
that need not end, names read only from their own parameters and locals, the module's
constants, pure imports and builtins, its predicates and other such functions; and methods
only from `PURE_METHODS`, which the interpreter folds only on known strings.
"""

from __future__ import annotations

import ast
from typing import Collection, Mapping

from lint_plugin.engine.predicates import Predicate, module_functions

#: `str` methods that read their receiver and arguments only (`qkv_layout.split("_")`).
PURE_METHODS = frozenset(
    {
        "count", "endswith", "find", "isalnum", "isalpha", "isdigit", "islower", "isupper",
        "join", "lower", "lstrip", "partition", "removeprefix", "removesuffix", "replace",
        "rfind", "rpartition", "rsplit", "rstrip", "split", "startswith", "strip", "upper",
    }
)  # fmt: skip
#: Statements such a function may hold: each binds only its own names or returns.
_STATEMENTS = (
    ast.Assign, ast.AnnAssign, ast.AugAssign, ast.If, ast.For, ast.Return, ast.Expr, ast.Pass,
)  # fmt: skip
#: Expressions it may not hold: they run code of their own or bind past the comprehension.
_IMPURE = (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)


def pure_functions(
    module: ast.Module, pure_names: Collection[str], predicates: Mapping[str, Predicate]
) -> dict[str, ast.FunctionDef]:
    """The module's pure functions with statements, by name (predicates excluded: they are
    expanded where called instead). `pure_names`: what else their code may read."""
    candidates = {
        name: node
        for name, node in module_functions(module).items()
        if name not in predicates and _signature_is_plain(node)
    }
    allowed = {*pure_names, *predicates}
    # A function calling another candidate is pure only if that one is: drop until stable.
    while True:
        pure = {
            name: node
            for name, node in candidates.items()
            if _reads_only(node, allowed | set(candidates))
        }
        if len(pure) == len(candidates):
            return pure
        candidates = pure


def _signature_is_plain(function: ast.FunctionDef) -> bool:
    """Parameters the interpreter binds one by one: no decorators, no `*args` / `**kwargs`."""
    arguments = function.args
    return not (function.decorator_list or arguments.vararg or arguments.kwarg)


def _reads_only(function: ast.FunctionDef, allowed: set[str]) -> bool:
    arguments = function.args
    params = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    body = [*function.body, *arguments.defaults, *(d for d in arguments.kw_defaults if d)]
    nodes = [node for part in body for node in ast.walk(part)]
    stores = {
        node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    names = allowed | params | stores
    for node in nodes:
        if isinstance(node, ast.stmt) and not isinstance(node, _STATEMENTS):
            return False
        if isinstance(node, _IMPURE):
            return False
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in names:
            return False
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            return False
        if isinstance(node, ast.Call) and not _pure_callee(node.func, allowed):
            return False
    return True


def _pure_callee(func: ast.expr, allowed: set[str]) -> bool:
    if isinstance(func, ast.Name):
        return func.id in allowed
    return isinstance(func, ast.Attribute) and func.attr in PURE_METHODS
