"""`python -m selector_patch diff`: the requests whose pick a selector change changes, in regions.

Fork-style changes to a real selector (TE 2.10.0) each give exactly what the change must give,
judged by an oracle independent of the diff: the deleted filter's own log line in side A, the
added filter's condition on the request and side A's pick. A print, a new debug line and a
reformat change nothing. `diff X X` finds nothing on every release; the CLI's exit codes, formats
and one-line errors (on TE 2.2.0: the same dropout filter, half the grid) are those of the other
commands.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from selector_patch.__main__ import main
from selector_patch.harness import load_selector
from selector_patch.selection_diff import RENDERERS, Side, diff
from selector_patch.selection_diff.compare import compare
from selector_patch.selection_diff.report import build, scenario_of
from selector_patch.snapshot import parse, read, take
from selector_patch.sources import resolve

BASE = "2.10.0"
#: The CLI tests' release: BASE's dropout filter, on a grid of half the requests.
CLI_BASE = "2.2.0"
DROPOUT_FILTER = (
    "    # Filter: Dropout\n"
    "    if attention_dropout != 0.0 and use_flash_attention_3:\n"
    '        logger.debug("Disabling FlashAttention 3 for dropout")\n'
    "        use_flash_attention_3 = False\n"
)
ANCHOR = "    # Filter: Softmax type\n"
#: TE's line when its filters left FA2 (flash-attn 2.8.3) as the flash backend.
FA2_LEFT = "Available backends = {FlashAttention=True (2.8.3)"
ADDED_FILTER = (
    "    if use_flash_attention_2 and head_dim_qk > 168:\n"
    '        logger.debug("Disabling FlashAttention 2 for head_dim_qk > 168 in this fork")\n'
    "        use_flash_attention_2 = False\n"
)


@pytest.fixture(scope="module")
def base(release):
    source = release(BASE)
    text = source.path.read_text()
    assert DROPOUT_FILTER in text and ANCHOR in text
    return source, text


def fork_of(source, text: str, where) -> str:
    """A copy of the release's tree whose selector holds `text`, as a fork's checkout would."""
    root = where / "TransformerEngine"
    shutil.copytree(source.root, root)
    (root / source.path.relative_to(source.root)).write_text(text)
    return str(root)


@pytest.fixture(scope="module")
def recorded(release, tmp_path_factory) -> dict[str, str]:
    """`CLI_BASE` and its fork without the dropout filter, each as a checkout (`fork`) and as
    the snapshot of its selection (`base.json`, `fork.json`), made once: asking a grid is what
    a diff costs, and the CLI tests below need each answer only once."""
    source = release(CLI_BASE)
    text = source.path.read_text()
    assert DROPOUT_FILTER in text
    where = tmp_path_factory.mktemp("recorded")
    fork = fork_of(source, text.replace(DROPOUT_FILTER, ""), where)
    for name, recorded_source in (("base.json", source), ("fork.json", resolve(fork))):
        take(load_selector(recorded_source)).write(where / name)
    return {
        "fork": fork,
        "base.json": str(where / "base.json"),
        "fork.json": str(where / "fork.json"),
    }


def compared(source, original: str, changed: str):
    a = Side.of_selector(load_selector(source, text=original), "A")
    b = Side.of_selector(load_selector(source, text=changed), "B")
    return a, b, compare(a, b)


def differing(result) -> dict[int, tuple]:
    """Position -> (keywords, A's outcome, B's outcome) of every request whose pick differs."""
    grid = result.grid
    return {
        position: (grid.keywords(grid.at(position)), one, other)
        for position, (one, other) in enumerate(zip(result.a, result.b))
        if result.compared >> position & 1 and one.pick != other.pick
    }


def test_a_deleted_filter_changes_exactly_the_requests_it_filtered(base) -> None:
    source, text = base
    a, b, result = compared(source, text, text.replace(DROPOUT_FILTER, ""))
    changed = differing(result)
    filtered = {
        position
        for position, outcome in enumerate(result.a)
        if "Disabling FlashAttention 3 for dropout" in outcome.log
        and "Selected backend = FlashAttention (3.0.0b1)" in result.b[position].log
    }
    assert changed and set(changed) == filtered
    assert all(other.pick.role == "FA3" for _, _, other in changed.values())
    report = build(a, b, result, ())
    for difference in report["differences"]:
        assert difference["architectures"] == ["sm90"]
        assert difference["change"].endswith("→ FlashAttention 3")
        assert difference["witness"]["attention_dropout"] > 0
    largest = max(report["differences"], key=lambda difference: difference["configurations"])
    assert "attention_dropout > 0.0" in largest["conditions"]


def test_an_added_filter_changes_exactly_the_requests_it_matches(base) -> None:
    source, text = base
    a, b, result = compared(source, text, text.replace(ANCHOR, ADDED_FILTER + ANCHOR))
    changed = differing(result)
    grid = result.grid
    # FA2 is what side A's filters left of flash attention, and the request's qk is above 168
    expected = {
        position
        for position, outcome in enumerate(result.a)
        if any(line.startswith(FA2_LEFT) for line in outcome.log)
        and scenario_of(grid.keywords(grid.at(position))).head_dim_qk > 168
    }
    assert changed and set(changed) == expected
    # the fork's threshold is in the grid, on both sides: 168 itself, and the cell (168, 192]
    factor = next(factor for factor in grid.factors if factor.keyword == "head_dim_qk")
    assert 168 in (factor.default, *factor.levels)
    head_dims = {scenario_of(keywords).head_dim_qk for keywords, _, _ in changed.values()}
    assert any(168 < value <= 192 for value in head_dims)
    report = build(a, b, result, ())
    assert report["differences"]
    for difference in report["differences"]:
        change = difference["change"]
        assert change.startswith("FlashAttention 2 → ") or "(available: -FlashAttention" in change
        assert "Disabling FlashAttention 2 for head_dim_qk > 168 in this fork" in (
            difference["b"]["log"]
        )
    largest = max(report["differences"], key=lambda difference: difference["configurations"])
    assert any("168 <" in condition or "> 168" in condition for condition in largest["conditions"])


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda text: text.replace(ANCHOR, '    print("selecting")\n' + ANCHOR), id="print"
        ),
        pytest.param(
            lambda text: text.replace(
                ANCHOR, '    logger.debug("fork: %s", qkv_layout)\n' + ANCHOR
            ),
            id="debug-line",
        ),
        pytest.param(
            lambda text: text.replace(
                DROPOUT_FILTER, DROPOUT_FILTER.replace(" != ", "!=") + "\n\n"
            ),
            id="reformat",
        ),
    ],
)
def test_log_only_changes_are_no_difference(base, change) -> None:
    source, text = base
    changed = change(text)
    assert changed != text
    a, b, result = compared(source, text, changed)
    assert differing(result) == {}
    report = build(a, b, result, ())
    assert report["differences"] == [] and report["compared"] == report["configurations"]


#: One release per selector dialect and switch layout (all 29 pass; the newest three cost a
#: minute and more each on a shared machine).
DIALECTS = ("1.9.0.post1", "1.12.0", "2.1.0", "2.2.0", "2.14.1", "2.17.1", "2.20.2")


@pytest.mark.parametrize("version", DIALECTS)
def test_a_release_against_itself_differs_nowhere(version, own_selection) -> None:
    """Two loads, two runs (the snapshots `own_selection` takes: the release's and its selector
    file alone's, which `test_snapshot` and `test_loose_file` judge too on 2.20.2), the grid of
    a selector beside itself being its own."""
    a, b = (Side.of_snapshot(parse(text, version), version) for text in own_selection(version))
    report = diff(a, b)
    assert report["differences"] == [] and report["differing"] == 0
    assert report["compared"] == report["configurations"] > 0


def test_a_snapshot_against_its_selector_and_against_a_changed_one(recorded) -> None:
    assert main(["diff", recorded["base.json"], CLI_BASE, "--quiet"]) == 0
    assert (
        main(["diff", recorded["base.json"], recorded["fork"], "--format", "json", "--quiet"]) == 1
    )


def test_formats_and_exit_codes(recorded, tmp_path, capsys) -> None:
    """The two selectors once, as JSON; each other format renders the same change between
    their snapshots (the renderers read only the report)."""
    fork = recorded["fork"]
    assert main(["diff", CLI_BASE, fork, "--format", "json"]) == 1
    out = capsys.readouterr()
    assert out.err == ""  # not a terminal: no progress
    report = json.loads(out.out)
    difference = report["differences"][0]
    assert set(difference) >= {"region", "witness", "a", "b", "hazards", "configurations"}
    assert {"backend", "log"} <= set(difference["a"]) and {"backend", "log"} <= set(difference["b"])
    assert difference["witness"]["compute_capability"] == [9, 0]
    for output_format in ("text", "markdown", "html"):
        snapshots = [recorded["base.json"], recorded["fork.json"]]
        assert main(["diff", *snapshots, "--format", output_format]) == 1
        rendered = capsys.readouterr().out
        assert "attention_dropout > 0.0" in rendered
    assert main(["diff", CLI_BASE, str(tmp_path / "nothing.json")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "nothing.json" in error
    (tmp_path / "bad.json").write_text("[]")
    assert main(["diff", str(tmp_path / "bad.json"), CLI_BASE]) == 2
    assert "bad.json: not a selection snapshot" in capsys.readouterr().err


def test_the_fused_assumption_is_said_once_at_the_top(recorded) -> None:
    """The base against itself, as snapshots: where the text says it is all this asks."""
    snapshot = read(Path(recorded["base.json"]))
    a, b = Side.of_snapshot(snapshot, "A"), Side.of_snapshot(snapshot, "B")
    a.fused_assumption = "fused answer assumed: F16_arbitrary_seqlen (no TE C++ for 2.2.0)"
    b.fused_assumption = None  # as recorded with TE's C++ at hand (without it, B assumes too)
    report = diff(a, b)
    text = RENDERERS["text"](report)
    assert text.count("fused answer assumed") == 1
    assert text.splitlines()[2] == f"A: {a.fused_assumption}"
