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

Their outcome is decided by what they are given, so the interpreter keeps each run's outcome
for every later run that gives the same (`Expressions._run_pure`); what decides it is said here
(`typed_value`, `facts_read`).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Collection, Mapping

from lint_plugin.engine.absint import UNKNOWN, Value
from lint_plugin.engine.interpret.frames import RAISES
from lint_plugin.engine.predicates import Predicate, module_functions
from lint_plugin.engine.program import Program, descendants, dotted_name

if TYPE_CHECKING:
    from lint_plugin.engine.interpreter import Facts

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
#: Node types that make a function impure on sight: the statements outside `_STATEMENTS`, and
#: `_IMPURE` (told by type alone: the walk asks it of every node of every candidate).
_REFUSED = frozenset(
    kind for kind in ast.stmt.__subclasses__() if not issubclass(kind, _STATEMENTS)
) | frozenset(_IMPURE)


def pure_functions(
    module: ast.Module,
    pure_names: Collection[str],
    predicates: Mapping[str, Predicate],
    used: Collection[str],
) -> dict[str, ast.FunctionDef]:
    """The module's pure functions with statements that the selector reaches, by name
    (predicates excluded: they are expanded where called instead). `pure_names`: what else
    their code may read; `used`: the names the selector uses. Only the functions it reaches,
    directly or through each other, are read: flake8 pays for `get_qkv_format`, not for the
    rest of TE's module."""
    definitions = module_functions(module)
    free: dict[str, frozenset[str] | None] = {}
    pending = [name for name in used if name in definitions and name not in predicates]
    while pending:
        name = pending.pop()
        if name not in free:
            free[name] = reads = _free_names(definitions[name])
            pending += [n for n in reads or () if n in definitions and n not in predicates]
    allowed = {*pure_names, *predicates}
    pure = {name for name, reads in free.items() if reads is not None}
    # A function reading another candidate is pure only if that one is: drop until stable.
    while True:
        kept = {name for name in pure if free[name] <= allowed | pure}
        if kept == pure:
            return {name: definitions[name] for name in sorted(pure)}
        pure = kept


def _free_names(function: ast.FunctionDef) -> frozenset[str] | None:
    """The names `function` reads besides its parameters and locals (callees included), or
    None where it may touch other state: decorators, `*args` / `**kwargs`, a statement or an
    expression outside those allowed, a store into an attribute or an item, a method outside
    `PURE_METHODS`."""
    arguments = function.args
    if function.decorator_list or arguments.vararg or arguments.kwarg:
        return None
    params = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    body = [*function.body, *arguments.defaults, *(d for d in arguments.kw_defaults if d)]
    loads, stores = set(), set()
    for node in (node for part in body for node in descendants(part)):
        kind = type(node)
        if kind is ast.Name:
            (loads if type(node.ctx) is ast.Load else stores).add(node.id)
        elif kind in _REFUSED:
            return None
        elif kind is ast.Attribute or kind is ast.Subscript:
            if type(node.ctx) is not ast.Load:
                return None
        elif kind is ast.Call:
            func = node.func
            if not (
                type(func) is ast.Name or type(func) is ast.Attribute and func.attr in PURE_METHODS
            ):
                return None
    return frozenset(loads - params - stores)


# ---------------------------------------------------------------- what decides a run of one
# The interpreter keeps the outcome of each run of such a function (`Expressions._run_pure`)
# under a key of what decides it: the arguments and these facts.

#: Constants whose type and `==` together say how the interpreter treats them.
_PLAIN = (str, int, bool, type(None), bytes, type(UNKNOWN))


def typed(obj: object) -> tuple:
    """`obj` with its type, nested in tuples and frozensets, where `1 == True == 1.0` would
    make different constants one key; a float by its `repr` (`-0.0` is not `0.0`). Raises
    `TypeError` for any other type: its `==` may not say how it behaves."""
    kind = type(obj)
    if kind in _PLAIN:
        return kind, obj
    if kind is float:
        return kind, repr(obj)
    if kind is tuple or kind is frozenset:
        return kind, kind(map(typed, obj))
    raise TypeError(f"no typed key for a {kind.__name__}")


def typed_value(value: Value) -> tuple:
    """A value as a key: its constant and choices `typed`, and whether it is `RAISES` (equal
    to an unknown value, yet an answer of its own)."""
    obj, truth, deps, enablers, disablers, choices = value
    held = None if choices is None else frozenset(map(typed, choices))
    return value is RAISES, typed(obj), truth, deps, enablers, disablers, held


def facts_read(program: Program, facts: Facts, choices: bool) -> tuple | None:
    """What the module's pure functions may read of a run's `facts`, as a key: the facts of
    the names they spell (`spelt_names`), the pure functions, predicates and imports
    themselves, and whether the run binds `choices` (refinement narrows them). None where
    they spell the selector's argument, whose fields the facts hold."""
    spelt = spelt_names(program, facts.pure_functions, facts.predicates)
    if program.parameter in spelt:
        return None
    try:
        known = tuple(
            (name, typed_value(facts.names[name]) if name in facts.names else None)
            + (typed_value(facts.calls[name]) if name in facts.calls else None,)
            for name in sorted(spelt & (facts.names.keys() | facts.calls.keys()))
        )
    except TypeError:
        return None
    return (
        known,
        facts.opaque & spelt,
        facts.unbound & spelt,
        tuple(facts.functions.items()),
        tuple(facts.predicates.items()),
        tuple(facts.pure_functions.items()),
        choices,
    )


def spelt_names(
    program: Program, functions: Mapping[str, ast.FunctionDef], predicates: Mapping[str, Predicate]
) -> frozenset[str]:
    """Every name, dotted name, attribute and parameter the pure functions and predicates
    spell: all their runs may look up in the facts. Kept on the program for these two
    mappings (every run of an analysis has the dialect's own)."""
    kept = program.pure_names
    if kept is not None and kept[0] is functions and kept[1] is predicates:
        return kept[2]
    spelt: set[str] = set()
    roots = (*functions.values(), *(predicate.expression for predicate in predicates.values()))
    for node in (part for root in roots for part in descendants(root)):
        kind = type(node)
        if kind is ast.Name:
            spelt.add(node.id)
        elif kind is ast.Attribute:
            spelt.add(node.attr)
            dotted = dotted_name(node)
            if dotted is not None:
                spelt.add(dotted)
        elif kind is ast.arg:
            spelt.add(node.arg)
    program.pure_names = (functions, predicates, frozenset(spelt))
    return program.pure_names[2]
