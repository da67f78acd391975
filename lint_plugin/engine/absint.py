"""Abstract values and states for interpreting a selector without running it.

A selector is decided by a few inputs (compute capability, determinism, dropout, head dims) and
reads many more that a static judge cannot know (`NVTE_*` variables, cuDNN's answer, the other
`AttentionParams` fields). An abstract `Value` keeps exactly what matters for the question "can
this backend flag still be true here?":

- `const`: the concrete Python value when it is known, else `UNKNOWN`;
- `choices`: for an unknown value, the finite set of Python values it may still be, if known
  (several witnesses interpreted in one run bind an input to all their values at once);
- `truth`: three-valued truthiness (`True`, `False`, `None` for "either"), which stays known where
  the value is not (a branch `if not flag:` teaches the else-branch that `flag` is truthy);
- `deps`: which selector inputs the value was computed from, so a condition can be recognised as
  a determinism / dropout / compute-capability test by what it reads, not by how it is spelt;
- `enablers` / `disablers`: the `Site`s where a possibly-true / possibly-false value came from.
  They let a finding point at the line that enables a backend, and let the coverage rules see
  which filters can switch a flag off before the selector returns.

A `State` maps variable names (and dotted attribute names such as
`FlashAttentionUtils.v4_is_installed`) to values; `None` stands for an unreachable state.
Join is pointwise; widening forgets constants that keep changing, so loops reach a fixpoint.
"""

from __future__ import annotations

import ast
import functools
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from selector_patch.records import TupleRecord


class _Unknown:
    """The `const` of a value that is not a known Python object."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
EMPTY: frozenset = frozenset()
#: An empty mapping that cannot be changed (the default of `Facts` mappings, of known operands).
EMPTY_MAPPING: Mapping = MappingProxyType({})
#: The most values a value's `choices` holds; beyond that it is simply unknown.
MAX_CHOICES = 64


class Site(TupleRecord):
    """A statement that introduced a value, and the inputs its path and value depend on."""

    stmt: ast.stmt | None
    deps: frozenset[str]


#: `Site(...)` without the namedtuple's `__new__`, a Python function (see `new_value`).
new_site = functools.partial(tuple.__new__, Site)
#: Placeholder for "introduced by the statement now executing"; replaced on assignment.
FRESH_SITE = Site(None, EMPTY)
FRESH: frozenset[Site] = frozenset((FRESH_SITE,))


class Value(TupleRecord):
    const: Any
    truth: bool | None
    deps: frozenset[str]
    enablers: frozenset[Site]
    disablers: frozenset[Site]
    #: Only where `const` is UNKNOWN: the values it may be (None: any value at all). Code that
    #: reads `const` alone sees an unknown value, which is always sound.
    choices: frozenset | None = None

    @property
    def known(self) -> bool:
        return self.const is not UNKNOWN


#: `Value(...)` with all six fields, in order, minus the call of the namedtuple's own `__new__`
#: (a Python function): values are built at every step of every run, and this halves the cost.
new_value = functools.partial(tuple.__new__, Value)


def truth_of(obj: Any) -> bool | None:
    try:
        return bool(obj)
    except Exception:  # an exotic constant whose truthiness raises is simply unknown
        return None


def const(obj: Any, deps: frozenset[str] = EMPTY) -> Value:
    """A known Python value, introduced by the statement now executing (see
    `Interpreter.store`): what may be true or false of it comes from here (`FRESH`).

    `const` and `unknown` build a value at nearly every step of a run: each is written out in
    full, without calls of its own."""
    try:
        truth = bool(obj)
    except Exception:  # an exotic constant whose truthiness raises is simply unknown
        return new_value((obj, None, deps, FRESH, FRESH, None))
    if truth:
        return new_value((obj, True, deps, FRESH, EMPTY, None))
    return new_value((obj, False, deps, EMPTY, FRESH, None))


def unknown(deps: frozenset[str] = EMPTY, truth: bool | None = None) -> Value:
    """An unknown value whose truthiness may still be known (see `const`)."""
    if truth is None:
        return new_value((UNKNOWN, None, deps, FRESH, FRESH, None))
    if truth:
        return new_value((UNKNOWN, True, deps, FRESH, EMPTY, None))
    return new_value((UNKNOWN, False, deps, EMPTY, FRESH, None))


TRUE = const(True)


def one_of(objs: Iterable[Any], deps: frozenset[str] = EMPTY) -> Value:
    """A value known to be one of `objs` (a single one makes a known value; too many, or ones
    `choice_set` refuses, an unknown value)."""
    choices = choice_set(objs)
    if choices is not None and len(choices) == 1:
        return const(next(iter(choices)), deps)
    return choice(choices, deps)


def choice(choices: frozenset | None, deps: frozenset[str] = EMPTY) -> Value:
    """An unknown value that may be any of `choices` (None: anything). Even a single choice
    stays one, so that joining it with another choice keeps both."""
    if choices is None:
        return unknown(deps)
    truths = {truth_of(obj) for obj in choices}
    value = unknown(deps, truths.pop() if len(truths) == 1 else None)
    return value._replace(choices=choices)


def alternatives(value: Value) -> tuple[Any, ...] | None:
    """Every Python value `value` may be: its constant, its choices, or None for any value."""
    if value.const is not UNKNOWN:
        return (value.const,)
    return tuple(value.choices) if value.choices is not None else None


def with_truth(value: Value, truth: bool) -> Value:
    """`value` as seen on a branch where its truthiness is `truth` (branch refinement)."""
    if value.truth is truth:
        return value
    known = value.const if value.known and truth_of(value.const) is truth else UNKNOWN
    choices = value.choices
    if choices is not None:
        choices = frozenset(c for c in choices if truth_of(c) is truth) or None
    if truth:
        return new_value((known, True, value.deps, value.enablers, EMPTY, choices))
    return new_value((known, False, value.deps, EMPTY, value.disablers, choices))


def with_deps(value: Value, deps: frozenset[str]) -> Value:
    if deps <= value.deps:
        return value
    const, truth, mine, enablers, disablers, choices = value
    return new_value((const, truth, mine | deps, enablers, disablers, choices))


def _same_const(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if a is UNKNOWN or b is UNKNOWN or type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _union(a: frozenset, b: frozenset) -> frozenset:
    return a if b <= a else b if a <= b else a | b


def join(a: Value, b: Value) -> Value:
    """The least value that describes both `a` and `b`.

    Joins run at every merge point of every witness run, and most join a value with an equal
    one: `a` itself is returned then, without building a new value. Written out without calls
    of its own (`_same_const` and `_union` only where the parts differ).
    """
    if a is b:
        return a
    mine, theirs = a.const, b.const
    if mine is theirs:
        const = mine
    elif mine is UNKNOWN or theirs is UNKNOWN or type(mine) is not type(theirs):
        const = UNKNOWN
    else:
        const = mine if _same_const(mine, theirs) else UNKNOWN
    truth = a.truth if a.truth is b.truth else None
    deps, enablers, disablers = a.deps, a.enablers, a.disablers
    if b.deps is not deps:
        deps = _union(deps, b.deps)
    if b.enablers is not enablers:
        enablers = _union(enablers, b.enablers)
    if b.disablers is not disablers:
        disablers = _union(disablers, b.disablers)
    choices = None
    if const is UNKNOWN and (a.choices is not None or b.choices is not None):
        choices = _joined_choices(a, b)
    if (
        const is mine
        and truth is a.truth
        and deps is a.deps
        and enablers is a.enablers
        and disablers is a.disablers
        and choices is a.choices
    ):
        return a
    return new_value((const, truth, deps, enablers, disablers, choices))


def _joined_choices(a: Value, b: Value) -> frozenset | None:
    """What either value may be, when both are known to be one of a few."""
    left, right = alternatives(a), alternatives(b)
    if left is None or right is None:
        return None
    joined = choice_set((*left, *right))
    return a.choices if joined == a.choices else joined


def choice_set(objs: Iterable[Any]) -> frozenset | None:
    """`objs` as the choices of a value; None when too many, unhashable, or when equal objects
    of different types would merge (`1 == True`, yet they are not the same constant)."""
    try:
        typed = {(type(obj), obj) for obj in objs}
    except TypeError:
        return None
    choices = frozenset(obj for _, obj in typed)
    return choices if len(choices) == len(typed) <= MAX_CHOICES else None


def widen(old: Value, new: Value) -> Value:
    """`join`, except that a constant (or set of choices) which changed between iterations
    becomes unknown."""
    joined = join(old, new)
    if joined.known or (old.const is UNKNOWN and joined.choices == old.choices):
        return joined
    truth = joined.truth if old.truth is new.truth else None
    return joined._replace(const=UNKNOWN, truth=truth, choices=None)


class State:
    """Variables of one program point, plus the inputs the path to it depends on.

    States are mutated in place along straight-line code and copied at branches.
    """

    __slots__ = ("vars", "path")

    def __init__(self, vars: dict[str, Value], path: frozenset[str] = EMPTY) -> None:
        self.vars = vars
        self.path = path

    def copy(self) -> "State":
        copy = _new_state(State)  # every undecided `if` copies: no `__init__` call
        copy.vars, copy.path = dict(self.vars), self.path
        return copy

    def __eq__(self, other: object) -> bool:
        return isinstance(other, State) and self.vars == other.vars and self.path == other.path

    __hash__ = None  # type: ignore[assignment]


_new_state = object.__new__


def join_states(a: State | None, b: State | None) -> State | None:
    """Both states in one, a new state."""
    if a is None:
        return b
    if b is None or a is b:
        return a
    merged = State(dict(a.vars), a.path)
    return join_into(merged, b, b.vars)


def join_into(a: State, b: State, keys: Iterable[str]) -> State:
    """`b` joined into `a` itself, which the caller owns (the end of an `if`'s branch, which no
    path reads again): `keys` are the only names the two may differ in (what the code between
    their common origin and here can bind or refine; every name of `b` where they need not
    have one). Joins run at the end of every undecided `if` of every run, and most names are
    the same value on both sides: no copy of the state, no new value for them."""
    merged = a.vars
    get = merged.get
    theirs = b.vars
    for name in keys:
        value = theirs.get(name)
        if value is not None:
            mine = get(name)
            if mine is not value:
                # A name bound on one side only raises NameError on the other: no new paths.
                merged[name] = value if mine is None else join(mine, value)
    a.path = a.path | b.path
    return a


def widen_states(old: State, new: State) -> State:
    merged = dict(old.vars)
    for name, value in new.vars.items():
        mine = merged.get(name)
        merged[name] = value if mine is None else widen(mine, value)
    return State(merged, old.path | new.path)


def join_all(states) -> State | None:
    result = None
    for state in states:
        result = join_states(result, state)
    return result
