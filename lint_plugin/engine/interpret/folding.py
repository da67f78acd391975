"""Folding Python's operators and pure builtins over abstract values (`absint`).

What the interpreter computes when the operands are known, or a short choice of known objects;
kept apart from the interpreter so that the rules and the dialect can share its tables.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import math
import operator
from typing import Any, Callable, Sequence

from lint_plugin.engine.absint import (
    MAX_CHOICES,
    UNKNOWN,
    Value,
    alternatives,
    const,
    join,
    one_of,
    unknown,
)
from lint_plugin.engine.program import dotted_name

#: Builtins folded on constant arguments; any other call yields an unknown value.
PURE_BUILTINS: dict[str, Callable] = {
    name: getattr(builtins, name)
    for name in (
        "abs", "all", "any", "bool", "float", "frozenset", "int", "len", "list", "max", "min",
        "round", "set", "sorted", "str", "sum", "tuple",
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


def state_key(node: ast.AST) -> str | None:
    """The state key an expression names: a variable or a dotted attribute."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return dotted_name(node)
    return None


def sized(obj: Any) -> int | None:
    try:
        return len(obj)
    except TypeError:
        return None


def compare_values(op: ast.cmpop, left: Value, right: Value) -> bool | None:
    """The comparison's outcome, when it is the same for whatever both sides may be."""
    if isinstance(op, (ast.Is, ast.IsNot)) and _truthy_against_none(left, right):
        return isinstance(op, ast.IsNot)  # `None` is falsy: a truthy value is not it
    if left.const is not UNKNOWN:
        if right.const is not UNKNOWN:
            return compare_objects(op, left.const, right.const)
        if right.choices is None:
            return None
    elif left.choices is None:
        return None
    lefts, rights = alternatives(left), alternatives(right)
    if lefts is None or rights is None:
        return None
    outcomes = {compare_objects(op, a, b) for a in lefts for b in rights}
    return outcomes.pop() if len(outcomes) == 1 else None


def _truthy_against_none(left: Value, right: Value) -> bool:
    """Whether one side is `None` and the other, unknown as it may be, is known truthy (an
    installed kernel's function, `kernel_calls.WIRED`)."""
    return (left.const is None and right.truth is True) or (
        right.const is None and left.truth is True
    )


def compare_objects(op: ast.cmpop, left: Any, right: Any) -> bool | None:
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
    consts = [operand.const for operand in operands]
    if all(obj is not UNKNOWN for obj in consts):
        try:
            return const(function(*consts), deps)
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


def known_items(iterable: Value) -> tuple | None:
    """The items of a known tuple, list, string or frozenset (a frozenset in a stable
    order)."""
    if not iterable.known:
        return None
    if isinstance(iterable.const, (tuple, list, str)):
        return tuple(iterable.const)
    if isinstance(iterable.const, frozenset):
        return tuple(sorted(iterable.const, key=repr))
    return None


def element_of(iterable: Value) -> Value:
    """One element of an iterable, as precisely as its value allows."""
    if iterable.known and isinstance(iterable.const, (tuple, list)) and iterable.const:
        return join_all_values(const(item, iterable.deps) for item in iterable.const)
    return unknown(iterable.deps)


def join_all_values(values) -> Value:
    result = None
    for value in values:
        result = value if result is None else join(result, value)
    return result if result is not None else const(None)
