"""What the inserted guards change in the selection, and the check that it is only their own.

`--selection-diff` runs the selector before and after the insertion on the virtual device over
the union of both grids (`selector_patch.selection_diff`). Every request whose pick changed must
lie inside a hazard's region: the hazard's guard fires for it (its inputs, architectures and
kernel version) and, where the backend changed, the request had the hazard's backend. A change
anywhere else means a guard does more than its hazard asks: an error, never a write, as for a
guard the analyzer cannot verify. This is what the harness-based self-check of the controls
(each control's selection identical) generalises to every request of the grid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from codemods.files import FileError
from selector_patch.registry import Hazard
from selector_patch.sources import SelectorSource

if TYPE_CHECKING:
    from selector_patch.harness import LoadedSelector


def selection_report(
    source: SelectorSource,
    original: str,
    patched: str,
    hazards: Sequence[Hazard],
    *,
    quiet: bool = False,
    loaded: "tuple[LoadedSelector | None, LoadedSelector | None]" = (None, None),
) -> dict:
    """The selection diff of `original` and `patched` (the same file, before and after); a
    `FileError` (one line) when the harness cannot run them or a change lies outside every
    hazard's region. `loaded`: either text already loaded in the harness, for a caller that
    runs it besides (each load imports the selector anew and runs its kernel wiring)."""
    try:
        from selector_patch.harness import LoadError, load_selector
    except ImportError as error:  # torch: the harness extra
        raise FileError(
            f"{source.path}: --selection-diff runs the selector, which needs the harness extra"
            f" (pip install 'te-attn-guards[harness]'): {error}"
        ) from None
    from selector_patch.progress import progress
    from selector_patch.selection_diff import Side, diff

    try:
        unguarded, guarded = loaded
        before = Side.of_selector(
            unguarded or load_selector(source, text=original), f"{source.path}"
        )
        after = Side.of_selector(
            guarded or load_selector(source, text=patched), f"{source.path} (guarded)"
        )
        with progress(0, "selection diff", quiet=quiet) as bar:
            report = diff(before, after, hazards, bar)
    except LoadError as error:
        raise FileError(str(error)) from None
    return report


def outside(report: dict) -> str | None:
    """Why the guards are not only their hazards' (None: every change is inside a region)."""
    count = report["outside_hazards"]
    if not count:
        return None
    return f"the guards change {count} requests outside every hazard's region; not written"
