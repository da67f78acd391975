"""What a selector change changes: every request whose pick differs, grouped into regions.

`compare` asks both sides (selectors or snapshots) the requests of one grid, `regions` groups the
requests that differ into compact regions, `report` names each by its hazards and gives it a
witness and both sides' reasons, and `text` / `page` render the report (text, markdown, one
static HTML page; JSON is the report itself). Importing this package imports neither torch nor
TE; a selector side loads the harness.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Callable, Sequence

from selector_patch.registry import HAZARDS, Hazard
from selector_patch.selection_diff.compare import Side, compare, open_side
from selector_patch.selection_diff.report import Report, build

if TYPE_CHECKING:
    from selector_patch.progress import Progress

__all__ = ["RENDERERS", "Report", "Side", "diff", "open_side"]


def diff(
    a: Side, b: Side, hazards: Sequence[Hazard] = HAZARDS, progress: "Progress | None" = None
) -> Report:
    """The selection diff of `a` and `b`; `progress` counts the requests asked."""
    return build(a, b, compare(a, b, hazards, progress), hazards)


def _json(report: Report) -> str:
    return json.dumps(report, indent=1, ensure_ascii=False) + "\n"


def _html(report: Report) -> str:
    from selector_patch.selection_diff.page import render

    return render(report)


def _text(report: Report) -> str:
    from selector_patch.selection_diff.text import render_text

    return render_text(report)


def _markdown(report: Report) -> str:
    from selector_patch.selection_diff.text import render_markdown

    return render_markdown(report)


RENDERERS: dict[str, Callable[[Report], str]] = {
    "text": _text,
    "markdown": _markdown,
    "json": _json,
    "html": _html,
}
