"""Two sides, each a selector or a snapshot of one, asked the same requests.

Two selectors are asked the grid of the union of their comparisons (`snapshot.grid_for`), so
each one's constants are on both sides: a threshold that moved from 192 to 200 shows as the
requests between. A snapshot brings its own grid, and a selector beside it is asked that grid;
two snapshots are compared on the requests both hold. A request one side cannot express (an
input the other release added) is not compared, and is counted as such.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from selector_patch.registry import HAZARDS, Hazard
from selector_patch.snapshot import Snapshot, grid_for
from selector_patch.snapshot.codec import encode
from selector_patch.snapshot.grid import Configuration, Grid
from selector_patch.snapshot.outcome import UNREPRESENTABLE, Outcome

if TYPE_CHECKING:
    from selector_patch.harness import LoadedSelector
    from selector_patch.progress import Progress


@dataclass
class Side:
    """One side of a diff: what to call it, and a loaded selector or a snapshot."""

    name: str
    te_version: str | None
    fused_assumption: str | None
    loaded: "LoadedSelector | None" = None
    snapshot: Snapshot | None = None
    #: The release tree a selector file alone was placed in by inference (`sources`), stated.
    tree_assumption: str | None = None

    @classmethod
    def of_selector(cls, loaded: "LoadedSelector", name: str | None = None) -> "Side":
        return cls(
            name or str(loaded.path),
            loaded.te_version,
            loaded.fused_assumption,
            loaded=loaded,
            tree_assumption=loaded.source.assumption,
        )

    @classmethod
    def of_snapshot(cls, snapshot: Snapshot, name: str) -> "Side":
        return cls(name, snapshot.te_version, snapshot.fused_assumption, snapshot=snapshot)

    @property
    def kind(self) -> str:
        return "snapshot" if self.snapshot is not None else "selector"

    def describe(self) -> str:
        version = f"TE {self.te_version}" if self.te_version else "TE (version unknown)"
        return f"{version}, {self.kind} {self.name}"


def open_side(spec: str, te_version: str | None = None) -> Side:
    """A snapshot file (`.json`), else any selector source `sources.resolve` takes (a file
    alone in `te_version`'s tree where given); raises the one-line `SnapshotError`,
    `SourceError` or `LoadError`."""
    from selector_patch.snapshot import read
    from selector_patch.snapshot.record import looks_like_snapshot

    path = Path(spec)
    if looks_like_snapshot(path):
        return Side.of_snapshot(read(path), spec)
    from selector_patch.harness import load_selector
    from selector_patch.sources import resolve

    return Side.of_selector(load_selector(resolve(spec, te_version)), spec)


@dataclass
class Compared:
    """Both sides' outcomes for every request of `grid`, and which were compared."""

    grid: Grid
    a: list[Outcome | None]
    b: list[Outcome | None]
    #: Bit i set: request i has an outcome on both sides that both could express.
    compared: int
    #: Requests left out, by why.
    not_compared: dict[str, int]


def _identity(grid: Grid, configuration: Configuration) -> str:
    return json.dumps(encode(tuple(sorted(grid.keywords(configuration).items()))))


def _looked_up(snapshot: Snapshot, grid: Grid) -> list[Outcome | None]:
    """The snapshot's outcome of each request of `grid`, where it holds that request."""
    if snapshot.grid == grid:
        return list(snapshot.outcomes)
    held = {
        _identity(snapshot.grid, configuration): outcome
        for configuration, outcome in snapshot.configured()
    }
    return [held.get(_identity(grid, c)) for c in grid.configurations()]


def compare(
    a: Side, b: Side, hazards: Sequence[Hazard] = HAZARDS, progress: "Progress | None" = None
) -> Compared:
    """Ask both sides the requests of one grid (see the module's docstring for which);
    `progress` counts the requests asked."""
    from selector_patch.snapshot.runner import run

    if a.snapshot is not None:
        grid = a.snapshot.grid
    elif b.snapshot is not None:
        grid = b.snapshot.grid
    else:
        grid = grid_for([a.loaded, b.loaded], hazards)

    asked = [side for side in (a, b) if side.loaded is not None]
    if progress is not None:
        progress.begin(len(grid) * len(asked), "diff")

    def outcomes(label: str, side: Side) -> list[Outcome | None]:
        if side.snapshot is not None:
            return _looked_up(side.snapshot, grid)
        if progress is None:
            return list(run(side.loaded, grid))
        progress.relabel(f"diff: asking {label}")
        return list(run(side.loaded, grid, progress.advance))

    found_a, found_b = outcomes("A", a), outcomes("B", b)
    positions, not_compared = [], {}
    for position, (one, other) in enumerate(zip(found_a, found_b)):
        reason = _left_out(one, other)
        if reason is None:
            positions.append(position)
        else:
            not_compared[reason] = not_compared.get(reason, 0) + 1
    from selector_patch.selection_diff.regions import mask_of

    return Compared(grid, found_a, found_b, mask_of(positions, len(grid)), not_compared)


def _left_out(one: Outcome | None, other: Outcome | None) -> str | None:
    if one is None or other is None:
        return "not in both snapshots"
    if one.pick.backend == UNREPRESENTABLE and other.pick.backend == UNREPRESENTABLE:
        return "neither side can express them"
    if one.pick.backend == UNREPRESENTABLE:
        return "only B can express them"
    if other.pick.backend == UNREPRESENTABLE:
        return "only A can express them"
    return None
