"""TE's own history as a hazard source: what each release (or commit) changed in the selection.

The engine is `selector_patch diff`: consecutive versions are compared request by request, and
each change is read as its causes (`selection_diff.grouping`). Asking every version its own
grid would ask each one twice (once beside each neighbour) on grids that do not line up, so all
versions are asked one grid, the union of their comparisons (`snapshot.grid_for`): every
version's constants are in it, each version's selection is computed once, and consecutive
selections are compared where both could express the request. The selections are taken in
`workers` processes (both cores of a small machine), each version loaded in the process that
asks it; the diffs are taken in this one as soon as both neighbours are in.
"""

from __future__ import annotations

import concurrent.futures
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, Sequence

if TYPE_CHECKING:
    from selector_patch.snapshot import Grid, Snapshot

WORKERS = 2


class Version(NamedTuple):
    """One point of the history: a release, or a commit's tree."""

    #: What the report calls it: `2.10.0`, or a commit's short hash.
    name: str
    #: A source spec `sources.resolve` takes (a release version, a checkout's directory).
    spec: str
    #: For a commit: its hash and subject.
    commit: str | None = None
    subject: str | None = None


def shared_grid(versions: Sequence[Version], te_cxx: str | None) -> "Grid":
    """The grid every version is asked: the union of all their comparisons, their C++ fused
    query's included (TE fixed many cases there, on cuDNN versions the Python never names)."""
    from selector_patch.harness import load_selector
    from selector_patch.snapshot import grid_for

    return grid_for([load_selector(v.spec, te_cxx=te_cxx) for v in versions], cxx=True)


_GRID: "Grid | None" = None
_TE_CXX: str | None = None


def _start(grid: "Grid", te_cxx: str | None) -> None:
    """A worker's start: the grid arrives once, not with every version."""
    global _GRID, _TE_CXX
    _GRID, _TE_CXX = grid, te_cxx


def _take(spec: str) -> "Snapshot":
    from selector_patch.harness import load_selector
    from selector_patch.snapshot import take

    return take(load_selector(spec, te_cxx=_TE_CXX), _GRID)


def selections(
    versions: Sequence[Version],
    grid: "Grid",
    te_cxx: str | None,
    workers: int = WORKERS,
    done: Callable[[Version], None] = lambda _version: None,
) -> Iterator["Snapshot"]:
    """Each version's snapshot on `grid`, in the versions' order, taken `workers` at a time;
    `done(version)` as each is in."""
    if workers <= 1:
        _start(grid, te_cxx)
        for version in versions:
            snapshot = _take(version.spec)
            done(version)
            yield snapshot
        return
    with concurrent.futures.ProcessPoolExecutor(
        workers, initializer=_start, initargs=(grid, te_cxx)
    ) as pool:
        futures = [pool.submit(_take, version.spec) for version in versions]
        for version, future in zip(versions, futures):
            snapshot = future.result()
            done(version)
            yield snapshot


def releases(names: Sequence[str]) -> list[Version]:
    """Releases as history points, fetched here (in this process, before any worker starts)."""
    from selector_patch.sources import resolve

    for name in names:
        resolve(name)
    return [Version(name, name) for name in names]
