"""The values of an input that put it on both sides of every constant the selector compares it with.

Every comparison of an ordered input with a constant cuts the input's range: `x > 192` between
192 and 193, `x >= 128` between 127 and 128, `x == 256` on both sides of 256. Between two
consecutive cuts the selector's comparisons all answer alike, so one value per cell covers them
all, and it is exactly the cells that must be covered: a second selector with `x > 200` adds the
cut at 200 and with it the cell (192, 200], where the two disagree. A cell's value is the input's
default where it lies there, else the constant that closes the cell (192 for (128, 192]), else one
step inside (200 for (192, 256) where the selector also tests `x % 8`: the step keeps the
residue, so a head dim stays one a kernel could take). Residue tests (`x % 8 != 0`) get a value
of each residue class; values below zero are left out for inputs that are never negative.

Unordered inputs (strings, `None`, named constants such as `torch.float16`, tuples such as
`window_size`) take their default and every constant they are compared with; a tuple compared
element by element also takes the default with each element moved across its constants. Where
the selector offers no value for one side (`softmax_type != "vanilla"`, and no other softmax type
in sight), that side is recorded as such, not invented.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, NamedTuple, Sequence

from selector_patch.snapshot.comparisons import Comparison

#: Operators after which the constant belongs to the lower cell, resp. the upper one.
CUT_AFTER = (">", "<=")
CUT_BEFORE = (">=", "<")
EQUALITY = ("==", "!=")
MEMBERSHIP = ("in", "not in")
FLOAT_STEP = 0.1


class Values(NamedTuple):
    #: The values other than the default, in ascending order where the input is ordered.
    levels: tuple[Any, ...]
    #: Comparisons one of whose sides no value reaches, described.
    one_sided: tuple[str, ...] = ()
    #: For an ordered input, where its constants cut it: (constant, 0) just below the
    #: constant, (constant, 1) just above; a region is stated in these.
    cuts: tuple[tuple[Any, int], ...] = ()


def ordered(value: object) -> bool:
    """Numbers, and tuples of numbers (versions, compute capabilities), are ordered."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, tuple) and bool(value) and all(ordered(v) for v in value)


def _numbers(comparison: Comparison) -> list[Any]:
    value = comparison.value
    return list(value) if comparison.op in MEMBERSHIP else [value]


def cuts_of(comparisons: Iterable[Comparison]) -> list[tuple[Any, int]]:
    """(value, 0) cuts just below `value`, (value, 1) just above it."""
    cuts = set()
    for comparison in comparisons:
        for value in _numbers(comparison):
            if comparison.op in CUT_AFTER:
                cuts.add((value, 1))
            elif comparison.op in CUT_BEFORE:
                cuts.add((value, 0))
            else:
                cuts.update({(value, 0), (value, 1)})
    return sorted(cuts)


def _step_up(value: Any, step: Any) -> Any:
    if isinstance(value, tuple):
        return (*value[:-1], value[-1] + 1)
    return round(value + step, 6) if isinstance(value, float) else value + step


def _step_down(value: Any, step: Any) -> Any:
    if isinstance(value, tuple):
        for position in range(len(value) - 1, -1, -1):
            if value[position] > 0:
                return (*value[:position], value[position] - 1, *value[position + 1 :])
        return None
    return round(value - step, 6) if isinstance(value, float) else value - step


def _inside(value: Any, lower: tuple[Any, int] | None, upper: tuple[Any, int] | None) -> bool:
    """Whether `value` lies strictly between the two cuts."""
    if value is None:
        return False
    if lower is not None and not (value > lower[0] if lower[1] else value >= lower[0]):
        return False
    if upper is not None and not (value <= upper[0] if upper[1] else value < upper[0]):
        return False
    return True


def _representative(
    default: Any, lower: tuple[Any, int] | None, upper: tuple[Any, int] | None, step: Any
) -> Any:
    """The cell's value: the default, a constant that closes it, one step inside, or (for a
    cell narrower than a step) its middle."""
    candidates = [default]
    if upper is not None and upper[1]:
        candidates.append(upper[0])
    if lower is not None and not lower[1]:
        candidates.append(lower[0])
    if lower is not None:
        candidates.append(_step_up(lower[0], step))
    if upper is not None:
        candidates.append(_step_down(upper[0], step))
    if lower is not None and upper is not None and not isinstance(lower[0], tuple):
        middle = (lower[0] + upper[0]) / 2
        candidates.append(int(middle) if isinstance(default, int) else round(middle, 6))
    return next((c for c in candidates if _inside(c, lower, upper)), None)


def _residues(default: int, comparisons: Sequence[Comparison], chosen: set) -> set:
    """A value of each residue class the selector's `x % m` tests tell apart."""
    added = set()
    for comparison in comparisons:
        modulus, wanted = comparison.modulus, comparison.value
        if not isinstance(wanted, int):
            continue
        values = chosen | added | {default}
        if not any(value % modulus == wanted for value in values):
            base = default - default % modulus + wanted
            added.add(base if base > 0 else base + modulus)
        if not any(value % modulus != wanted for value in values | added):
            added.add(default + 1 if (default + 1) % modulus != wanted else default + 2)
    return added


def ordered_values(default: Any, comparisons: Sequence[Comparison]) -> Values:
    """One value per cell of an ordered input (ints, floats, version tuples)."""
    plain = [c for c in comparisons if c.index is None and c.modulus is None]
    plain = [c for c in plain if all(ordered(v) or v is None for v in _numbers(c))]
    plain = [c for c in plain if None not in _numbers(c)]
    moduli = [c for c in comparisons if c.modulus is not None and c.index is None]
    integral = isinstance(default, int)
    step: Any = FLOAT_STEP if isinstance(default, float) else 1
    aligned = [c.modulus for c in moduli if c.value == 0 and default % c.modulus == 0]
    if integral and aligned:
        step = math.lcm(*aligned)
    cuts = cuts_of(plain)
    bounds = [None, *cuts, None]
    chosen = set()
    for lower, upper in zip(bounds, bounds[1:]):
        value = _representative(default, lower, upper, step)
        if value is not None:
            chosen.add(value)
    if integral:
        chosen |= _residues(default, moduli, chosen)
    never_negative = _never_negative(default, plain)
    levels = sorted(
        value for value in chosen if value != default and not (never_negative and _negative(value))
    )
    return Values(tuple(levels), cuts=tuple(cuts))


def _negative(value: Any) -> bool:
    return any(v < 0 for v in value) if isinstance(value, tuple) else value < 0


def _never_negative(default: Any, comparisons: Sequence[Comparison]) -> bool:
    values = [default, *(v for c in comparisons for v in _numbers(c))]
    return not any(_negative(v) for v in values)


def categorical_values(
    default: Any, comparisons: Sequence[Comparison], truth_tested: bool
) -> Values:
    """The default and every constant an unordered input is compared with; for a tuple compared
    element by element, the default with each element on each side of its constants."""
    found: list[Any] = []
    for comparison in comparisons:
        if comparison.index is not None or comparison.modulus is not None:
            continue
        if comparison.op in ("contains", "not contains"):
            continue  # substrings: the whole values come from the other constants
        found.extend(_numbers(comparison))
    if isinstance(default, bool) or truth_tested and default in (None, False, True, 0, ""):
        found.extend([False, True] if isinstance(default, bool) else [])
    if isinstance(default, tuple):
        found.extend(_element_values(default, comparisons))
    levels = tuple(dict.fromkeys(v for v in found if not _same(v, default)))
    one_sided = tuple(
        comparison.describe()
        for comparison in comparisons
        if not _two_sided(comparison, (default, *levels))
    )
    return Values(levels, one_sided)


def _element_values(default: tuple, comparisons: Sequence[Comparison]) -> list[tuple]:
    found = []
    for position in range(len(default)):
        element = [
            c._replace(index=None) for c in comparisons if c.index == position and c.modulus is None
        ]
        if not element or not ordered(default[position]):
            continue
        for value in ordered_values(default[position], element).levels:
            found.append((*default[:position], value, *default[position + 1 :]))
    return found


def _same(value: Any, default: Any) -> bool:
    return type(value) is type(default) and value == default


def _two_sided(comparison: Comparison, values: Sequence[Any]) -> bool:
    """Whether some value makes the comparison true and another makes it false."""
    outcomes = set()
    for value in values:
        outcome = holds(comparison, value)
        if outcome is not None:
            outcomes.add(outcome)
    return outcomes == {True, False}


def holds(comparison: Comparison, value: Any) -> bool | None:
    """What the comparison answers for `value` (None where it cannot be asked of it)."""
    try:
        if comparison.index is not None:
            value = value[comparison.index]
        if comparison.modulus is not None:
            value = value % comparison.modulus
        constant, op = comparison.value, comparison.op
        if op in ("is", "==") and constant is None:
            return value is None
        if op in ("is not", "!=") and constant is None:
            return value is not None
        return {
            "==": lambda: value == constant,
            "!=": lambda: value != constant,
            "<": lambda: value < constant,
            "<=": lambda: value <= constant,
            ">": lambda: value > constant,
            ">=": lambda: value >= constant,
            "in": lambda: value in constant,
            "not in": lambda: value not in constant,
            "is": lambda: value is constant or value == constant,
            "is not": lambda: not (value is constant or value == constant),
            "contains": lambda: constant in value,
            "not contains": lambda: constant not in value,
        }[op]()
    except (TypeError, IndexError, KeyError, ZeroDivisionError):
        return None
