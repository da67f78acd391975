"""Group differing requests into regions: "sm90, training, head_dim_qk > 192: A → B".

A region is a conjunction, one allowed set of values per input (an interval for an ordered
input), within which every compared request that side A answered with A now gets B. It need not
restate where side A chose A (the change says so): the requests A answered otherwise are no
concern of the region, which is what keeps "NVTE_FLASH_ATTN_V4=0: FlashAttention 4 →
FlashAttention 2" from listing every condition under which TE picks FA4. Regions are
found by sequential covering, as rule learners do (CN2, RIPPER): take the plainest request not yet
covered (fewest inputs off their default), start from exactly its values, and widen one input
at a time as far as no other request joins, in a fixed order: the pairwise inputs first, then
the backend switches, then the mode, the architecture last. An input that does not matter is
thereby dropped; one that does keeps the values the change needs. The region covers its
requests, and the next plainest uncovered one starts the next region. Two regions of one change
that differ in one input only are one region (their union is again a conjunction), so a region
names every architecture it holds on.

The grid is a product (architecture x mode x switch setting x pairwise row), so the set of
requests with one input at one value is a periodic bit pattern: each is one Python integer,
built without visiting the requests, and a region is tested against all the others with a few
integer `&`s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Iterator, Mapping, NamedTuple, Sequence

from selector_patch.snapshot.codec import spelled
from selector_patch.snapshot.grid import MODE_NAMES, Factor, Grid
from selector_patch.snapshot.outcome import Pick, change_text

ARCHITECTURE = "architecture"
MODE = "mode"


def _repeat(pattern: int, width: int, count: int) -> int:
    """`pattern` (`width` bits) repeated `count` times."""
    if count <= 1:
        return pattern
    return pattern * (((1 << (width * count)) - 1) // ((1 << width) - 1))


def indices(mask: int) -> Iterator[int]:
    """The positions of the set bits, ascending."""
    data = mask.to_bytes((mask.bit_length() + 7) // 8, "little")
    for offset, byte in enumerate(data):
        while byte:
            low = byte & -byte
            yield offset * 8 + low.bit_length() - 1
            byte ^= low


def mask_of(positions: Sequence[int], size: int) -> int:
    data = bytearray((size + 7) // 8)
    for position in positions:
        data[position >> 3] |= 1 << (position & 7)
    return int.from_bytes(data, "little")


class Dimension(NamedTuple):
    """One input of the grid as regions state it: its values, in order, and a mask per value."""

    name: str
    kind: str  # "architecture" | "mode" | "switch" | "factor"
    values: tuple[Any, ...]
    masks: tuple[int, ...]
    ordered: bool
    #: The factor, for stating its intervals in the selector's constants.
    factor: Factor | None = None


class Space:
    """The grid's requests as bit positions, and one mask per value of every input.

    Within one architecture and mode the grid asks each switch setting its rows (`Grid.rows_of`),
    so a value's requests there are one bit pattern, the same for every architecture and mode:
    built once, then repeated.
    """

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        per_mode = grid.per_mode
        self.size = len(grid)
        self.every = (1 << self.size) - 1
        blocks = len(grid.architectures) * len(grid.modes)
        spans = []  # per setting: (offset within the block, its rows)
        offset = 0
        for setting in grid.settings():
            rows = grid.rows_of(setting)
            spans.append((offset, setting, rows))
            offset += len(rows)

        def repeated(select_row) -> int:
            pattern = 0
            for start, setting, rows in spans:
                for row in rows:
                    if select_row(setting, row):
                        pattern |= 1 << (start + row)
            return _repeat(pattern, per_mode, blocks)

        dimensions = []
        for position, factor in enumerate(grid.factors):
            if not factor.levels:
                continue
            order = _sorted_levels(factor)
            masks = tuple(
                repeated(lambda _s, row, level=level: grid.rows[row][position] == level)
                for level in order
            )
            values = tuple(_value(factor, level) for level in order)
            dimensions.append(
                Dimension(factor.keyword, "factor", values, masks, _is_ordered(factor), factor)
            )
        for position, switch in enumerate(grid.switches):
            masks = tuple(
                repeated(lambda setting, _r, on=on: setting[position] == on) for on in (True, False)
            )
            dimensions.append(Dimension(switch.name, "switch", ("on", "off"), masks, False))
        block = (1 << per_mode) - 1
        per_architecture = per_mode * len(grid.modes)
        masks = tuple(
            _repeat(block << (index * per_mode), per_architecture, len(grid.architectures))
            for index in range(len(grid.modes))
        )
        dimensions.append(Dimension(MODE, "mode", grid.modes, masks, False))
        block = (1 << per_architecture) - 1
        masks = tuple(
            block << (index * per_architecture) for index in range(len(grid.architectures))
        )
        dimensions.append(Dimension(ARCHITECTURE, "architecture", grid.architectures, masks, False))
        self.dimensions = tuple(dimensions)
        self._plainness = [sum(1 for level in row if level) for row in grid.rows]
        #: Per pairwise dimension, its factor's column and each level's place in its order.
        self._columns = [
            (position, {level: i for i, level in enumerate(_sorted_levels(factor))})
            for position, factor in enumerate(grid.factors)
            if factor.levels
        ]

    def is_set(self, dimension: int, index: int) -> bool:
        """Whether the value is off the plain call's: an input not at its default, a switch
        turned off."""
        found = self.dimensions[dimension]
        if found.kind == "switch":
            return index != 0
        if found.kind == "factor":
            return found.values[index] != found.factor.default
        return False

    def value_index(self, position: int) -> list[int]:
        """Per dimension, the index of the request's value."""
        grid = self.grid
        configuration = grid.at(position)
        found = [order[grid.rows[configuration.row][column]] for column, order in self._columns]
        found += [0 if on else 1 for on in configuration.switches]
        found.append(grid.modes.index(configuration.mode))
        return found + [grid.architectures.index(configuration.architecture)]

    def plainness(self, position: int) -> tuple:
        """Fewer inputs off their default first, then the grid's order."""
        configuration = self.grid.at(position)
        off = sum(1 for on in configuration.switches if not on)
        return (self._plainness[configuration.row] + off, position)


def _is_ordered(factor: Factor) -> bool:
    """An input whose values the selector's constants cut (`values.Values.cuts`)."""
    return bool(factor.cuts)


def _sorted_levels(factor: Factor) -> list[int]:
    """Level indices (0: the default) in the order of their values, for an ordered input."""
    levels = list(range(len(factor.levels) + 1))
    if _is_ordered(factor):
        return sorted(levels, key=lambda level: _value(factor, level))
    return levels


def _value(factor: Factor, level: int) -> Any:
    return factor.default if level == 0 else factor.value(level)


@dataclass
class Region:
    #: Per dimension (in `Space.dimensions` order), the allowed value indices; None: any.
    allowed: tuple[tuple[int, ...] | None, ...]
    #: `change_text` of its requests' picks: what side A's pick became.
    change: str
    #: The requests it holds.
    mask: int
    #: The plainest of them.
    witness: int
    #: What accounts for its requests' change, the same for each (for a report: the hazards
    #: whose guards do, and the log line that explains it).
    cause: Hashable = ()

    def statement(self, space: Space) -> tuple[list[str], list[str]]:
        """(architectures, conditions): `["sm90"]`, `["training", "head_dim_qk > 192"]`."""
        architectures, conditions = [], []
        ordered_dimensions = sorted(
            zip(space.dimensions, self.allowed), key=lambda pair: _STATED[pair[0].kind]
        )
        for dimension, allowed in ordered_dimensions:
            if allowed is None:
                continue
            if dimension.kind == "architecture":
                architectures = [_sm(dimension.values[i]) for i in allowed]
            else:
                conditions.append(_condition(dimension, allowed))
        return architectures, conditions


_STATED = {"architecture": 0, "mode": 1, "switch": 2, "factor": 3}
#: Widening: inputs and switches first (at their default before set ones), then mode, then
#: architecture.
_STAGE = {"factor": 0, "switch": 0, "mode": 1, "architecture": 2}


def _sm(architecture: tuple[int, int]) -> str:
    return f"sm{10 * architecture[0] + architecture[1]}"


def _condition(dimension: Dimension, allowed: tuple[int, ...]) -> str:
    if dimension.kind == "mode":
        return " or ".join(
            MODE_NAMES.get(dimension.values[i], dimension.values[i]) for i in allowed
        )
    if dimension.kind == "switch":
        switch = dimension.name
        return f"{switch} unset" if dimension.values[allowed[0]] == "on" else f"{switch}=0"
    name, values = dimension.name, dimension.values
    if dimension.ordered:
        return _interval(name, values, allowed[0], allowed[-1], dimension.factor)
    if len(allowed) == 1:
        return f"{name}={spelled(values[allowed[0]])}"
    excluded = [i for i in range(len(values)) if i not in allowed]
    if len(excluded) == 1:
        return f"{name} != {spelled(values[excluded[0]])}"
    return f"{name} in ({', '.join(spelled(values[i]) for i in allowed)})"


def _interval(name: str, values: tuple, low: int, high: int, factor: Factor | None) -> str:
    """`head_dim_qk > 192`, `128 < head_dim_qk <= 192`, `head_dim_v=256`: bounded at the
    selector's own constant where one lies between two neighbouring values, else at the value."""
    cuts = sorted(factor.cuts) if factor is not None else []
    lower = upper = None  # (constant, inclusive)
    cut_below = cut_above = None
    if low > 0:
        cut_below = next((c for c in cuts if _between(values[low - 1], c, values[low])), None)
        lower = (cut_below[0], not cut_below[1]) if cut_below else (values[low], True)
    if high < len(values) - 1:
        cut_above = next(
            (c for c in reversed(cuts) if _between(values[high], c, values[high + 1])), None
        )
        upper = (cut_above[0], bool(cut_above[1])) if cut_above else (values[high], True)
    if low == high and (low > 0 and cut_below is None or upper and cut_above is None):
        return f"{name}={spelled(values[low])}"  # a value its neighbours share a cell with
    if lower and upper:
        if lower == upper and lower[1]:
            return f"{name}={spelled(lower[0])}"
        return (
            f"{spelled(lower[0])} {'<=' if lower[1] else '<'} {name}"
            f" {'<=' if upper[1] else '<'} {spelled(upper[0])}"
        )
    if lower:
        return f"{name} {'>=' if lower[1] else '>'} {spelled(lower[0])}"
    if upper:
        return f"{name} {'<=' if upper[1] else '<'} {spelled(upper[0])}"
    return name


def _between(low: Any, cut: tuple[Any, int], high: Any) -> bool:
    """Whether the cut (`value`, 0: just below it; 1: just above) lies between two values."""
    value, side = cut
    try:
        return (low <= value < high) if side else (low < value <= high)
    except TypeError:
        return False


def find(
    space: Space,
    picks_a: Sequence[Pick],
    picks_b: Sequence[Pick],
    compared: int,
    causes: Mapping[int, Hashable] | None = None,
) -> list[Region]:
    """The regions of every change (`change_text`): within each, every request side A answered
    as the change says now gets what the change says. With `causes` (per differing position,
    what accounts for its change), requests of one change with different causes are kept in
    regions of their own: TEA001's sm120 and TEA005's sm80 are two regions, not one that
    neither hazard explains."""
    changes: dict[tuple[str, Hashable], list[int]] = {}
    answered: dict[str, list[int]] = {}
    texts: dict[tuple[Pick, Pick], str] = {}
    for position in indices(compared):
        a, b = picks_a[position], picks_b[position]
        answered.setdefault(a.label(), []).append(position)
        if a != b:
            if (a, b) not in texts:
                texts[(a, b)] = change_text(a, b)
            cause = causes.get(position, ()) if causes is not None else ()
            changes.setdefault((texts[(a, b)], cause), []).append(position)
    domains = {label: mask_of(positions, space.size) for label, positions in answered.items()}
    regions = []
    for (change, cause), positions in sorted(changes.items(), key=lambda item: item[1][0]):
        holds = mask_of(positions, space.size)
        others = domains[picks_a[positions[0]].label()] & ~holds
        regions.extend(_cover(space, change, cause, holds, others, positions))
    return _merged(space, regions)


def _cover(
    space: Space,
    change: str,
    cause: Hashable,
    holds: int,
    others: int,
    positions: list[int],
) -> Iterator[Region]:
    remaining = holds
    seeds = sorted(positions, key=space.plainness)
    for seed in seeds:
        if not remaining >> seed & 1:
            continue
        allowed = _widened(space, seed, others)
        mask = space.every
        for dimension, chosen in zip(space.dimensions, allowed):
            if chosen is not None:
                mask &= _union(dimension, chosen)
        remaining &= ~mask
        held = mask & holds
        yield Region(_tightened(space, allowed, held), change, held, seed, cause)
        if not remaining:
            break


def _tightened(
    space: Space, allowed: list[tuple[int, ...] | None], held: int
) -> tuple[tuple[int, ...] | None, ...]:
    """What a region names: the architectures and modes its requests are on, and every input
    all of them set off its default.

    Widening lets in any value where side A never chose the region's backend (no request there
    to keep out): "sm70" in a region of FlashAttention 4 would say it changed where FA4 never
    ran, and where dropout is the only reason A chose FA2, "sm90: FA2 → FA3" would leave the
    dropout unsaid. Narrowed to what the requests share, the region holds the same requests.
    """
    tightened = list(allowed)
    for position, dimension in enumerate(space.dimensions):
        present = tuple(i for i, mask in enumerate(dimension.masks) if mask & held)
        if dimension.kind in ("factor", "switch"):
            if not all(space.is_set(position, i) for i in present):
                continue  # the region's requests include the input's default: said as widened
            if dimension.ordered:
                present = tuple(range(present[0], present[-1] + 1))
        tightened[position] = None if len(present) == len(dimension.values) else present
    return tuple(tightened)


def _union(dimension: Dimension, chosen: Sequence[int]) -> int:
    mask = 0
    for index in chosen:
        mask |= dimension.masks[index]
    return mask


def _widened(space: Space, seed: int, others: int) -> list[tuple[int, ...] | None]:
    """From the seed's own values, each input widened as far as no other request joins.

    The order decides which inputs a region keeps where several could explain it: the inputs
    the seed leaves at their default go first (the plainest request changed, so they are the
    least likely cause), then those it sets (what it took to change it), then the mode, the
    architecture last.
    """
    dimensions = space.dimensions
    seed_values = space.value_index(seed)
    current = [dimension.masks[i] for dimension, i in zip(dimensions, seed_values)]
    allowed: list[tuple[int, ...] | None] = [(i,) for i in seed_values]
    order = sorted(
        range(len(dimensions)),
        key=lambda p: (_STAGE[dimensions[p].kind], space.is_set(p, seed_values[p]), p),
    )
    for position in order:
        dimension = dimensions[position]
        rest = space.every
        for other, mask in enumerate(current):
            if other != position:
                rest &= mask
        blocked = rest & others
        fits = [not (blocked & mask) for mask in dimension.masks]
        (start,) = allowed[position]
        if all(fits):
            allowed[position], current[position] = None, space.every
            continue
        if dimension.ordered:
            low = high = start
            while low > 0 and fits[low - 1]:
                low -= 1
            while high < len(fits) - 1 and fits[high + 1]:
                high += 1
            chosen = tuple(range(low, high + 1))
        else:
            chosen = tuple(i for i, fit in enumerate(fits) if fit or i == start)
        allowed[position], current[position] = chosen, _union(dimension, chosen)
    return allowed


def _merged(space: Space, regions: list[Region]) -> list[Region]:
    """Regions of one change and cause that differ in one input only, as one, until none do."""
    by_change: dict[tuple[str, Hashable], list[Region]] = {}
    for region in regions:
        by_change.setdefault((region.change, region.cause), []).append(region)
    merged = []
    for group in by_change.values():
        changed = True
        while changed:
            changed = False
            for i, first in enumerate(group):
                for j in range(i + 1, len(group)):
                    union = _union_region(space, first, group[j])
                    if union is not None:
                        group[i] = union
                        del group[j]
                        changed = True
                        break
                if changed:
                    break
        merged.extend(group)
    return sorted(merged, key=lambda region: space.plainness(region.witness))


def _union_region(space: Space, first: Region, second: Region) -> Region | None:
    differing = [
        position for position, (a, b) in enumerate(zip(first.allowed, second.allowed)) if a != b
    ]
    if len(differing) > 1:
        return None
    allowed = list(first.allowed)
    if differing:
        (position,) = differing
        joined = _merge_allowed(first.allowed[position], second.allowed[position])
        dimension = space.dimensions[position]
        if joined is not None and len(joined) == len(dimension.values):
            joined = None
        if (
            dimension.ordered
            and joined is not None
            and joined != tuple(range(joined[0], joined[-1] + 1))
        ):
            return None  # an ordered input's values must stay one interval
        allowed[position] = joined
    witness = min(first.witness, second.witness, key=space.plainness)
    return Region(tuple(allowed), first.change, first.mask | second.mask, witness, first.cause)


def _merge_allowed(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> tuple[int, ...] | None:
    if a is None or b is None:
        return None
    return tuple(sorted(set(a) | set(b)))
