"""The HTML selection table, rendered by a real browser (headless Chromium, `--dump-dom`).

The page's tables exist only after its inline script has run, so the DOM Chromium dumps is proof
that the page renders: the unpatched table of TE 2.20.2 has hazard cells (at sm120, for TEA001
and TEA002), the patched one has none. Skipped only where no `chromium` binary is installed
(Debian's `chromium` package; `.ci/run` installs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from selector_patch.table import build, page

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no `chromium` binary on PATH")


class RenderedTables(HTMLParser):
    """Per `data-variant` table: rows of (architecture, [(cell class, data-hazards), ...])."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {}
        self._variant: str | None = None
        self._in_body = False
        self._in_row_header = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "table":
            self._variant = attributes.get("data-variant")
            self.tables[self._variant] = []
        elif tag == "tbody":
            self._in_body = True
        elif self._in_body and tag == "tr":
            self.tables[self._variant].append(("", []))
        elif self._in_body and tag == "th":
            self._in_row_header = True
        elif self._in_body and tag == "td":
            cells = self.tables[self._variant][-1][1]
            cells.append((attributes.get("class") or "", attributes.get("data-hazards") or ""))

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_body = False
        elif tag == "th":
            self._in_row_header = False

    def handle_data(self, data):
        if self._in_row_header:
            architecture, cells = self.tables[self._variant][-1]
            self.tables[self._variant][-1] = (architecture + data.strip(), cells)


def dump_dom(path, profile) -> str:
    command = [CHROMIUM, "--headless", "--disable-gpu", f"--user-data-dir={profile}"]
    if os.geteuid() == 0:
        command.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    command += ["--dump-dom", path.as_uri()]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout


def test_hazard_cells_render_unpatched_and_not_patched(release, tmp_path):
    data = build(release("2.20.2"), patched=True)
    path = tmp_path / "table.html"
    path.write_text(page.render(data), encoding="utf-8")
    assert "<td" not in path.read_text(encoding="utf-8")  # only the script makes cells

    parser = RenderedTables()
    parser.feed(dump_dom(path, tmp_path / "profile"))
    tables = parser.tables

    assert list(tables) == ["unpatched", "patched"]
    for rows in tables.values():
        assert [architecture for architecture, _ in rows] == [
            row["architecture"] for row in data["variants"][0]["rows"]
        ]
        assert all(len(cells) == len(data["columns"]) for _, cells in rows)
    unpatched_hazards = {
        (architecture, hazard)
        for architecture, cells in tables["unpatched"]
        for css_class, hazards in cells
        if css_class == "hazard"
        for hazard in hazards.split()
    }
    assert {("sm120", "TEA001"), ("sm120", "TEA002")} <= unpatched_hazards
    patched_classes = {css_class for _, cells in tables["patched"] for css_class, _ in cells}
    assert "hazard" not in patched_classes


class RenderedDiff(HTMLParser):
    """The selection diff page's region table: per row, (header, [(class, data-hazards), ...])."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, list[tuple[str, str]]]] = []
        self._in_table = self._in_body = self._in_header = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "table" and attributes.get("data-table") == "regions":
            self._in_table = True
        elif self._in_table and tag == "tbody":
            self._in_body = True
        elif self._in_body and tag == "tr":
            self.rows.append(("", []))
        elif self._in_body and tag == "th":
            self._in_header = True
        elif self._in_body and tag == "td":
            self.rows[-1][1].append(
                (attributes.get("class") or "", attributes.get("data-hazards") or "")
            )

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_table = self._in_body = False
        elif tag == "th":
            self._in_header = False

    def handle_data(self, data):
        if self._in_header:
            header, cells = self.rows[-1]
            self.rows[-1] = (header + data, cells)


def test_the_selection_diff_page_renders_the_hazards_regions(codemod_result, tmp_path):
    from selector_patch.registry import get_hazard
    from selector_patch.selection_diff import page as diff_page

    report = codemod_result("2.17.1").selection_report
    path = tmp_path / "diff.html"
    path.write_text(diff_page.render(report), encoding="utf-8")
    assert "<td" not in path.read_text(encoding="utf-8")  # only the script makes cells

    parser = RenderedDiff()
    parser.feed(dump_dom(path, tmp_path / "profile"))
    architectures = report["grid"]["architectures"]
    assert parser.rows and all(len(cells) == len(architectures) for _, cells in parser.rows)
    marked = {
        (architectures[column], hazard)
        for _, cells in parser.rows
        for column, (css_class, hazards) in enumerate(cells)
        if "hazard" in css_class.split()
        for hazard in hazards.split()
    }
    assert {("sm120", hazard) for hazard in ("TEA001", "TEA002", "TEA003", "TEA004")} <= marked
    assert ("sm80", "TEA005") in marked
    for architecture, hazard in marked:  # each cell on one of its hazard's architectures
        assert architecture in {f"sm{10 * x + y}" for x, y in get_hazard(hazard).architectures}
