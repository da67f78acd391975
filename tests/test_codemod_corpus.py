"""The codemod on every TE release 1.9.0.post1 - 2.20.2, judged by TE's own code in the harness.

Per release: only guard blocks are added; a second run changes no byte; black's verdict does not
get worse; the harness finds no reachable hazard and no failed control in the result, and the
selection diff of the result against the release lies inside the inserted hazards' regions,
each region named by its hazard (`codemods.selection`, over the union of both selectors' grids:
every control, and every other request, keeps its pick outside them); the analyzer agrees.
"""

from __future__ import annotations

import ast
import difflib

import black
import pytest
from packaging.version import Version

from codemods.apply import transform
from codemods.plan import plan_insertions
from lint_plugin.engine.analysis import analyze_source, guarded_together
from lint_plugin.engine.dialect import find_selectors
from selector_patch.config import Config, with_te_fixes
from selector_patch.registry import HAZARDS
from selector_patch.sources import CORPUS_RELEASES, read_text, resolve
from selector_patch.verify import verify
from whole_tree import whole_tree

BLACK = black.Mode(line_length=100)


def expected_statuses(version: str) -> dict[str, str]:
    """TEA001/003/004 exist with FA4 (2.15+); TEA002 is reachable once sm120 is in FA2's > 192
    list (2.1+); TEA005 until TE's own FA4 filter moves from below sm80 to below sm90 (2.19);
    TEA006/007 once TE keeps FA4 for THD with padding between sequences (2.19)."""
    fa4 = "inserted" if Version(version) >= Version("2.15") else "not-applicable"
    seqs = "already-guarded" if fa4 == "inserted" else fa4
    return {
        "TEA001": fa4,
        "TEA002": "inserted" if Version(version) >= Version("2.1") else "already-guarded",
        "TEA003": fa4,
        "TEA004": fa4,
        "TEA005": "already-guarded" if Version(version) >= Version("2.19") else fa4,
        **dict.fromkeys(("TEA006", "TEA007"), fa4 if Version(version) >= Version("2.19") else seqs),
    }


def black_clean(code: str) -> bool:
    try:
        black.format_file_contents(code, fast=True, mode=BLACK)
    except black.NothingChanged:
        return True
    return False


def _units(code: str) -> tuple[list[str], list[tuple[int, int]]]:
    """The module's top-level statements, each with the blank lines and comments before it (the
    text after the last one is a unit of its own), and each unit's (first line of its
    statement, end line) as line indices: every character of `code` is in exactly one unit."""
    lines = code.splitlines(True)
    spans, end = [], 0
    for node in ast.parse(code).body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
        spans.append((first - 1, node.end_lineno))
    spans.append((len(lines), len(lines)))
    units = []
    for first, last in spans:
        units.append("".join(lines[end:last]))
        end = last
    return units, spans


def changed_windows(original: str, result: str) -> list[tuple[str, str]]:
    """(original, result) text of each stretch of top-level statements that differs, from the
    unchanged statement before it to the unchanged one after it: each a module of its own, whose
    joints to its neighbours black judges as in the whole file. black lays out a top-level
    statement from its own text and the line before it, so the result is black-clean where the
    original was if every window is where its original was; a release the codemod leaves alone
    has none."""
    if original == result:
        return []
    (before, spans_a), (after, spans_b) = _units(original), _units(result)
    lines_a, lines_b = original.splitlines(True), result.splitlines(True)

    def window(lines, spans, start: int, stop: int) -> str:
        first = spans[start - 1][0] if start > 0 else 0
        return "".join(lines[first : spans[min(stop, len(spans) - 1)][1]])

    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return [
        (window(lines_a, spans_a, i1, i2), window(lines_b, spans_b, j1, j2))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


@pytest.fixture
def patched(codemod_result):
    def get(version: str) -> tuple[str, str, dict[str, str]]:
        result = codemod_result(version)
        return result.original, result.result, result.statuses

    return get


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_inserts_only_guards_and_is_idempotent(version, patched) -> None:
    """Only the planned statements are added (the guards, and where a guard asks for a
    backward, the backward signal), each in one piece; nothing else moves."""
    original, result, statuses = patched(version)
    assert statuses == expected_statuses(version)
    matcher = difflib.SequenceMatcher(
        None, original.splitlines(True), result.splitlines(True), autojunk=False
    )
    inserted = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    assert all(tag == "insert" for tag, *_ in inserted)
    added = "".join("".join(result.splitlines(True)[j1:j2]) for _, _, _, j1, j2 in inserted)
    planned = plan_insertions(original, HAZARDS).insertions
    assert sorted(added.splitlines()) == sorted(
        line for insertion in planned for line in insertion.source.splitlines()
    )
    signal = [insertion for insertion in planned if insertion.hazard is None]
    assert len(signal) == (3 if statuses["TEA002"] == "inserted" else 0)
    assert transform(result, HAZARDS)[0] == result
    for before, after in changed_windows(original, result):
        # black's verdict does not get worse: a stretch black reformats was so before (the
        # original is asked only then; TE's releases are black-clean, so it seldom is).
        if not black_clean(after):
            stretch = after.splitlines()[0]
            assert not black_clean(before), f"black reformats the stretch from {stretch!r}"


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_harness_proves_the_result(version, patched, codemod_result) -> None:
    original, result, statuses = patched(version)
    for report in verify(codemod_result(version).selector):
        assert report.ok, report.summary()
    inserted = {hazard for hazard, status in statuses.items() if status == "inserted"}
    if not inserted:
        assert result == original
        return
    report = codemod_result(version).selection_report
    assert report["outside_hazards"] == 0, [d["region"] for d in report["differences"]]
    assert report["differences"], "the guards change no request of the grid"
    for difference in report["differences"]:
        assert difference["hazards"], difference["region"]
        assert set(difference["hazards"]) <= inserted, difference["region"]


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_analyzer_finds_no_hazard_left(version, patched) -> None:
    _, result, _ = patched(version)
    assert [v.hazard_id for v in analyze_source(result) if v.reachable] == []


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_one_run_proves_each_inserted_guard(version, patched) -> None:
    """The self-check's first try, all witnesses in one run, settles every guard it inserted:
    the codemod's speed rests on it (each witness on its own would be the fallback)."""
    _, result, statuses = patched(version)
    module = ast.parse(result)
    function = find_selectors(module)[0]
    inserted = [h for h in HAZARDS if statuses[h.id] == "inserted"]
    assert [h.id for h in inserted if not guarded_together(module, function, h)] == []


#: Releases of each selector dialect (TE 1.x's, the 2.x FA3 gate, the flash dispatch of 2.2+,
#: FA4's), where `codemods.apply` parses only the runs around its anchors.
RUN_RELEASES = ("1.9.0.post1", "1.13.0", "2.1.0", "2.8.0", "2.14.1", "2.20.2")


@pytest.mark.parametrize("te_fixes", [False, True], ids=["registry", "te-fixes"])
@pytest.mark.parametrize("version", RUN_RELEASES)
def test_text_runs_write_what_the_whole_tree_does(version, te_fixes) -> None:
    """`transform` (libcst parses each anchor's run of statements) writes what the codemod
    writes on libcst's tree of the whole module, byte for byte, TE's fixes' guards included."""
    hazards = with_te_fixes(Config()) if te_fixes else HAZARDS
    original = read_text(resolve(version).path)
    assert transform(original, hazards)[0] == whole_tree(original, hazards)
