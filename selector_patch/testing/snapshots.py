"""Snapshot tests of a whole selector: what it picks over its grid, kept in a committed file.

The strongest unit test a fork can keep of its selector is a record of everything it picks,
checked on every change, the way syrupy and pytest-regressions keep snapshots: the test fails
with the selection diff's regions (each with a witness and both sides' TE log lines), and
`pytest --te-snapshot-update` rewrites the file once the change is meant. The comparison runs on
the snapshot's own grid; a log line, a print or a reformat changes no pick, so it fails nothing.

    def test_selection(te_selection_snapshot):
        te_selection_snapshot.assert_match()   # __snapshots__/<module>/<test>.json beside it

Importing this module imports neither torch nor TE.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selector_patch.testing.selector import SelectorUnderTest

UPDATE_OPTION = "--te-snapshot-update"


def assert_selection_matches(
    selector: "SelectorUnderTest", path: Path | str, *, update: bool = False
) -> None:
    """The selector picks what the snapshot at `path` records, request by request; with
    `update`, the snapshot is (re)written from the selector instead."""
    __tracebackhide__ = True
    from selector_patch.selection_diff import Side, diff
    from selector_patch.selection_diff.text import render_text
    from selector_patch.snapshot import SnapshotError, read, take

    path = Path(path)
    loaded = selector.loaded
    if update:
        take(loaded).write(path)
        return
    if not path.is_file():
        raise AssertionError(
            f"no selection snapshot at {path}: run pytest {UPDATE_OPTION} to record one"
        )
    try:
        snapshot = read(path)
    except SnapshotError as error:
        raise AssertionError(f"{error}; run pytest {UPDATE_OPTION} to record it anew") from None
    report = diff(Side.of_snapshot(snapshot, str(path)), Side.of_selector(loaded))
    if report["differences"]:
        raise AssertionError(
            f"the selector's picks differ from {path} (run pytest {UPDATE_OPTION} if the"
            f" change is meant):\n{render_text(report)}"
        )


class SelectionSnapshot:
    """The `te_selection_snapshot` fixture: the configured selector against its snapshot."""

    def __init__(self, selector: "SelectorUnderTest", default: Path, update: bool) -> None:
        self.selector = selector
        #: Where `assert_match()` keeps the snapshot when given no path.
        self.default = default
        self.update = update

    def assert_match(self, path: Path | str | None = None) -> None:
        __tracebackhide__ = True
        assert_selection_matches(
            self.selector, self.default if path is None else path, update=self.update
        )


def default_path(test_file: Path, test_name: str) -> Path:
    """`__snapshots__/<module>/<test>.json` beside the test module, as syrupy lays them out."""
    name = re.sub(r"[^\w.-]+", "_", test_name).strip("_")
    return test_file.parent / "__snapshots__" / test_file.stem / f"{name}.json"
