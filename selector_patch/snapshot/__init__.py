"""Selection snapshots: what a selector picks for every request of a grid derived from it.

`grid_for(*selectors)` reads the selectors' comparisons (`comparisons`), gives every input a value
in each cell its constants cut (`values`), drops the values a selector cannot take on its own,
and crosses architectures, modes and backend switches with pairwise rows of everything else
(`grid`, `covering`). `take(selector, grid)` asks the selector every request (`runner`) and keeps
each pick with TE's log lines (`outcome`); `record` writes and reads the stable JSON file.
Importing this package imports neither torch nor TE; taking a snapshot loads the harness.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Callable, Sequence

from selector_patch.registry import HAZARDS, Hazard
from selector_patch.snapshot.grid import Factor, Grid, build, derive, factors_of, refusal
from selector_patch.snapshot.record import Snapshot, SnapshotError, parse, read

if TYPE_CHECKING:
    from selector_patch.harness import LoadedSelector

__all__ = ["Grid", "Snapshot", "SnapshotError", "grid_for", "parse", "read", "take"]


def grid_for(
    selectors: Sequence["LoadedSelector"], hazards: Sequence[Hazard] = HAZARDS, cxx: bool = False
) -> Grid:
    """The grid of one selector, or of several on the union of their comparisons: a value is
    kept where one of them takes it (where another raises, that is a difference to report).
    A grid of more than `grid.REQUEST_BUDGET` requests is refused (`SnapshotError`) before
    any is asked. With `cxx`, the comparisons of the C++ fused query answering for each are in
    it too, and a row for each of its refusals that needs three inputs or more at once."""
    from selector_patch.snapshot.runner import probe

    derivation = derive(selectors[0], hazards, cxx)
    for selector in selectors[1:]:
        derivation = derivation.union(derive(selector, hazards, cxx))
    factors = factors_of(derivation)
    tried = [list(probe(selector, factors)) for selector in selectors]
    grid = build(derivation, [_kept(factor, tries) for factor, *tries in zip(factors, *tried)])
    refused = refusal(grid)
    if refused is not None:
        raise SnapshotError(" and ".join(str(s.path) for s in selectors), refused)
    return grid


def _kept(factor: Factor, tries: Sequence[Factor]) -> Factor:
    """The factor's values some selector takes; those none takes dropped, with the first one's
    reason."""
    kept = tuple(v for v in factor.levels if any(v in tried.levels for tried in tries))
    dropped = tuple((v, reason) for v, reason in tries[0].dropped if v not in kept)
    return factor._replace(levels=kept, dropped=dropped)


def selector_name(loaded: "LoadedSelector") -> str:
    """The selector file as a snapshot records it: relative to its TE tree."""
    return loaded.source.relative or loaded.source.path.name


def take(
    loaded: "LoadedSelector",
    grid: Grid | None = None,
    advance: Callable[[int], None] = lambda _count: None,
) -> Snapshot:
    """Ask `loaded` every request of `grid` (by default its own)."""
    from selector_patch.snapshot.runner import run

    grid = grid_for([loaded]) if grid is None else grid
    return Snapshot(
        te_version=loaded.te_version,
        selector=selector_name(loaded),
        sha256=hashlib.sha256(loaded.text.encode("utf-8")).hexdigest(),
        fused_assumption=loaded.fused_assumption,
        grid=grid,
        outcomes=run(loaded, grid, advance),
    )
