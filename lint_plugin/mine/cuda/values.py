"""The values the dispatch interpreter computes with: constants, unknowns and input symbols.

The dispatch is run once for all architectures and selector inputs at a time: an input is a
*symbol* with a finite domain (the architecture: 12 compute capabilities; the head dim: the
multiples of 8 up to 512; dropout: off or on; ...), and a value computed from one symbol stays
symbolic (`params.arch = dprops->major * 10 + dprops->minor` is a function of the
architecture). Where the dispatch branches on a symbolic value the interpreter splits the
symbol's domain between the two arms, so each path knows exactly the inputs that take it. What
the table of inputs does not cover (sequence lengths, strides, pointers) is `UNKNOWN`: a
branch on it takes both arms, and a check on it may or may not fail.

The operations (`combine`, `unary`, `truth_of`, `concrete`) work over all of these: a value
needed as one constant while it still depends on a symbol raises `NeedSplit`, and the
interpreter runs the statement again once per part of the symbol's domain.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from lint_plugin.mine.devices import SHARED_MEMORY


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


@dataclass(frozen=True)
class Sym:
    """A function of one input symbol: `expr` is a nested tuple over `("x",)`, the symbol."""

    name: str
    expr: tuple = ("x",)


@dataclass(frozen=True)
class Tensor:
    """A tensor argument: only its dtype is known (a symbol for the attention tensors)."""

    dtype: Any


@dataclass(frozen=True)
class Optional:
    """A `std::optional` argument: `value` is None when the caller passes nothing."""

    value: Any


@dataclass(frozen=True)
class Device:
    """`at::cuda::getCurrentDeviceProperties()`: its fields are functions of the arch."""


@dataclass(frozen=True, eq=False)
class Closure:
    """A lambda; its body runs in the scopes of the call site (`[&]` in a macro expansion)."""

    node: Any
    context: Any


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": lambda a, b: a // b if isinstance(a, int) and isinstance(b, int) else a / b,
    "%": operator.mod,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "&&": lambda a, b: bool(a and b),
    "||": lambda a, b: bool(a or b),
}
UNARY: dict[str, Callable[[Any], Any]] = {"!": lambda a: not a, "-": operator.neg}

#: Device facts by attribute (`cudaDeviceGetAttribute`) or property (`cudaDeviceProp`) name.
DEVICE_FACTS: dict[str, Callable[[tuple[int, int]], Any]] = {
    "cudaDevAttrComputeCapabilityMajor": lambda arch: arch[0],
    "cudaDevAttrComputeCapabilityMinor": lambda arch: arch[1],
    "major": lambda arch: arch[0],
    "minor": lambda arch: arch[1],
    "cudaDevAttrMaxSharedMemoryPerBlockOptin": lambda arch: SHARED_MEMORY[arch].per_block_optin,
    "sharedMemPerBlockOptin": lambda arch: SHARED_MEMORY[arch].per_block_optin,
    "cudaDevAttrMaxSharedMemoryPerMultiprocessor": lambda arch: SHARED_MEMORY[arch].per_sm,
    "sharedMemPerMultiprocessor": lambda arch: SHARED_MEMORY[arch].per_sm,
}


def apply(expr: tuple, value: Any) -> Any:
    """`expr` evaluated with the symbol at `value`."""
    kind = expr[0]
    if kind == "x":
        return value
    if kind == "const":
        return expr[1]
    if kind == "bin":
        left, right = apply(expr[2], value), apply(expr[3], value)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        return BINARY[expr[1]](left, right)
    if kind == "un":
        operand = apply(expr[2], value)
        return UNKNOWN if operand is UNKNOWN else UNARY[expr[1]](operand)
    if kind == "cond":  # a ternary whose condition is a function of the same symbol
        test = apply(expr[1], value)
        return UNKNOWN if test is UNKNOWN else apply(expr[2] if test else expr[3], value)
    if kind == "fact":
        return DEVICE_FACTS[expr[1]](apply(expr[2], value))
    if kind == "pick":  # a per-value table: (("pick", ((v, result), ...)), inner)
        return dict(expr[1])[apply(expr[2], value)]
    raise ValueError(f"unknown symbolic expression {kind}")


def lift(value: Any) -> tuple:
    return value.expr if isinstance(value, Sym) else ("const", value)


def values_of(value: Sym, domains: "Region | Mapping[str, frozenset]") -> dict[Any, Any]:
    """Each domain value of the symbol -> what `value` is there."""
    return {v: apply(value.expr, v) for v in domains[value.name]}


class Region:
    """A set of input points: a union of boxes, each a domain per symbol.

    Paths that end alike are merged whatever inputs take them, so a path's inputs are a union
    of boxes rather than one box; splitting on one symbol narrows every box.
    """

    __slots__ = ("boxes",)

    def __init__(self, boxes: tuple[Mapping[str, frozenset], ...]) -> None:
        self.boxes = boxes

    def __getitem__(self, name: str) -> frozenset:
        return frozenset().union(*(box[name] for box in self.boxes))

    def __contains__(self, name: str) -> bool:
        return bool(self.boxes) and name in self.boxes[0]

    def key(self) -> tuple:
        return tuple(sorted(tuple(sorted(box.items())) for box in self.boxes))

    def restrict(self, name: str, part: frozenset) -> "Region":
        narrowed = []
        for box in self.boxes:
            values = box[name] & part
            if values:
                narrowed.append({**box, name: values})
        return Region(tuple(narrowed))

    def union(self, other: "Region") -> "Region":
        boxes = list(self.boxes)
        for box in other.boxes:
            for index, mine in enumerate(boxes):
                differing = [name for name in box if box[name] != mine[name]]
                if len(differing) <= 1:
                    boxes[index] = {**mine, **{n: mine[n] | box[n] for n in differing}}
                    break
            else:
                boxes.append(box)
        return Region(tuple(boxes))


@dataclass(frozen=True)
class Name:
    """An identifier the sources do not bind: an enumerator, a type, a constant from a header."""

    text: str


@dataclass(frozen=True)
class Ref:
    """A struct object on the heap (`Flash_fwd_params params;`), passed by reference."""

    id: int


@dataclass(frozen=True)
class FunctionRef:
    """`&run_mha_bwd`: a library function held in a variable (`auto launch = &run_mha_bwd;`)."""

    name: str


class NeedSplit(Exception):
    """A value needed concretely depends on an input symbol: split its domain into `parts`."""

    def __init__(self, name: str, parts: list[frozenset]) -> None:
        super().__init__(name)
        self.name, self.parts = name, parts


#: Pure standard functions, computed when their arguments are known.
STANDARD = {"max": max, "min": min}


def truth_of(value: Any) -> Any:
    if value is UNKNOWN or isinstance(value, (Name, Sym)):
        return UNKNOWN
    if isinstance(value, Optional):
        return UNKNOWN if value.value is UNKNOWN else value.value is not None
    if isinstance(value, tuple):
        return UNKNOWN
    if isinstance(value, (Tensor, Ref, Closure, Device)):
        return True
    return bool(value)


def concrete(value: Any, domains: Mapping[str, frozenset]) -> Any:
    """The value, with a symbol resolved where its domain leaves it one value; else NeedSplit."""
    if not isinstance(value, Sym):
        return value
    results = values_of(value, domains)
    distinct = {hashable(r) for r in results.values()}
    if len(distinct) == 1:
        return next(iter(results.values()))
    raise NeedSplit(value.name, [frozenset([v]) for v in sorted(results, key=repr)])


def combine(op: str, left: Any, right: Any, domains: Mapping[str, frozenset]) -> Any:
    """`left op right` over constants, symbols and unknowns."""
    if op not in BINARY:
        return UNKNOWN
    if isinstance(left, Sym) or isinstance(right, Sym):
        if isinstance(left, Sym) and isinstance(right, Sym) and left.name != right.name:
            # one function of one symbol at a time: the narrower one must be decided first
            if len(domains[right.name]) <= len(domains[left.name]):
                right = concrete(right, domains)
            else:
                left = concrete(left, domains)
            return combine(op, left, right, domains)
        if left is UNKNOWN or right is UNKNOWN or _opaque(left) or _opaque(right):
            if op == "&&" and (truth_of(left) is False or truth_of(right) is False):
                return False
            return UNKNOWN
        name = left.name if isinstance(left, Sym) else right.name
        result = Sym(name, ("bin", op, lift(left), lift(right)))
        try:
            values_of(result, domains)
        except (TypeError, ZeroDivisionError, KeyError):
            return UNKNOWN
        return result
    if op == "&&" and (truth_of(left) is False or truth_of(right) is False):
        return False
    if op == "||" and (truth_of(left) is True or truth_of(right) is True):
        return True
    if op in ("&&", "||"):
        truths = (truth_of(left), truth_of(right))
        return UNKNOWN if UNKNOWN in truths else BINARY[op](*truths)
    if op in ("==", "!=") and (left is None or right is None):
        other = right if left is None else left
        if other is UNKNOWN or isinstance(other, (Name, Optional)):
            return UNKNOWN
        return (other is None) == (op == "==")
    if op in ("==", "!=") and isinstance(left, Name) and isinstance(right, Name):
        return (left == right) == (op == "==") if left == right else UNKNOWN
    if left is UNKNOWN or right is UNKNOWN or _opaque(left) or _opaque(right):
        return UNKNOWN
    try:
        return BINARY[op](left, right)
    except (TypeError, ZeroDivisionError):
        return UNKNOWN


def _opaque(value: Any) -> bool:
    return isinstance(value, (Name, Tensor, Optional, Ref, Closure, Device, tuple)) or value is None


def unary(op: str, value: Any) -> Any:
    if op not in UNARY:
        return UNKNOWN
    if isinstance(value, Sym):
        return Sym(value.name, ("un", op, value.expr))
    if op == "!":
        truth = truth_of(value)
        return UNKNOWN if truth is UNKNOWN else not truth
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return -value
    return UNKNOWN


def standard(name: str, values: list, domains) -> Any:
    if any(isinstance(v, Sym) for v in values):
        values = [concrete(v, domains) for v in values]
    if any(not isinstance(v, (int, float)) for v in values):
        return UNKNOWN
    return STANDARD[name](values)


def hashable(value: Any) -> Any:
    """The value as a dict key or set member: itself, or its identity if unhashable."""
    try:
        hash(value)
    except TypeError:
        return id(value)
    return value
