"""`python -m selector_patch snapshot`: what a real selector picks over the grid derived from it.

A snapshot is the harness's own answers (each configuration's pick is what `select()` answers for
its keywords), written as stable JSON (the same text however taken, and read back to the same
snapshot), with its derivation (each input's comparisons, lines and values) and small enough to
commit. A new filter's threshold is in the grid of the selector that has it.
"""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from selector_patch.__main__ import main
from selector_patch.harness import load_selector
from selector_patch.snapshot import SnapshotError, grid_for, parse
from selector_patch.snapshot.grid import MODES
from selector_patch.snapshot.outcome import Reader
from selector_patch.snapshot.runner import resolve
from selector_patch.testing.inputs import request_of

#: A few MB at most: what the issue allows a committed snapshot.
MOST_BYTES = 3_000_000


@pytest.fixture(scope="module")
def newest(load_te_selector, own_selection):
    """The session's 2.20.2 and its snapshot (`own_selection`: read back from its text)."""
    text, _ = own_selection("2.20.2")
    return load_te_selector("2.20.2").loaded, parse(text, "snapshot")


def test_the_grid_is_derived_from_the_selectors_own_comparisons(newest) -> None:
    loaded, snapshot = newest
    grid = snapshot.grid
    factors = {factor.keyword: factor for factor in grid.factors}
    # TE 2.20.2 tests the padded head dim against 192 and 256: both sides of each are asked
    values = {factors["head_dim_qk"].default, *factors["head_dim_qk"].levels}
    for constant in (192, 256):
        assert any(v <= constant for v in values) and any(v > constant for v in values)
    assert any("head_dim_qk > 192 (line" in text for text in factors["head_dim_qk"].compared)
    # architectures: a GPU on each side of the selector's sm80 / sm90 / sm100 / sm120 tests
    assert {(7, 0), (8, 0), (8, 9), (9, 0), (10, 0), (12, 0), (12, 1)} <= set(grid.architectures)
    assert grid.modes == tuple(MODES)
    assert [switch.name for switch in grid.switches] == [
        "NVTE_FLASH_ATTN", "NVTE_FLASH_ATTN_V2", "NVTE_FLASH_ATTN_V3", "NVTE_FLASH_ATTN_V4",
        "NVTE_FUSED_ATTN", "NVTE_UNFUSED_ATTN",
    ]  # fmt: skip
    # a value the selector cannot take alone is dropped, saying why
    assert factors["fp8"].levels == () and "KeyError: 'recipe'" in factors["fp8"].dropped[0][1]
    assert ("head_dim_qk", "head_dim_v") in {pair for pair, _line in grid.pairs}
    assert len(snapshot.outcomes) == len(grid)


def test_each_pick_is_what_select_answers(newest) -> None:
    """Requests answered by their twin (a switch the twin never read) included: the snapshot
    holds what a run of `select()` on the request gives, pick and log alike."""
    loaded, snapshot = newest
    grid = snapshot.grid
    namespace = loaded.module.__dict__
    reader = Reader()
    for position in random.Random(24).sample(range(len(grid)), 300):
        configuration = grid.at(position)
        keywords = {k: resolve(v, namespace) for k, v in grid.keywords(configuration).items()}
        scenario, params = request_of(keywords, loaded.params_fields)
        asked = reader.outcome(loaded.select(scenario, params))
        assert snapshot.outcomes[position] == asked, keywords
        if asked.pick.backend == "FusedAttention":  # whatever cuDNN's answer, as TE returned it
            assert asked.pick.fused is not None


def test_the_file_is_stable_sorted_and_small(newest, own_selection) -> None:
    _, snapshot = newest
    text, alone = own_selection("2.20.2")
    assert len(text.encode()) < MOST_BYTES
    # another load (the file alone), another run: the same bytes, the file's name apart
    again = parse(alone, "alone")
    assert again.selector == "upstream.py"
    assert dataclasses.replace(again, selector=snapshot.selector).to_text() == text
    assert parse(text, "snapshot").to_text() == text
    data = json.loads(text)
    assert data["log"] == sorted(data["log"])
    written = lambda pick: json.dumps(pick, separators=(", ", ": "), ensure_ascii=False)  # noqa
    assert data["outcomes"] == sorted(data["outcomes"], key=lambda e: (written(e[0]), e[1]))
    assert data["selector"] == "transformer_engine/pytorch/attention/dot_product_attention/utils.py"
    assert "Running with config" not in text  # TE's echo of the request is no reason
    # one configuration a line: the lines holding one outcome index
    outcome_lines = [line for line in text.splitlines() if line.rstrip(",").isdigit()]
    assert len(outcome_lines) == len(snapshot.grid)


def test_a_new_filters_threshold_is_in_the_grid_of_the_selector_that_has_it(release) -> None:
    source = release("2.10.0")
    text = source.path.read_text()
    anchor = "    # Filter: Execution type\n"
    assert anchor in text
    fork = text.replace(
        anchor,
        "    if attention_params.head_dim_qk > 168:\n        use_flash_attention = False\n"
        + anchor,
    )
    plain = grid_for([load_selector(source)])
    forked = grid_for([load_selector(source, text=fork)])

    def head_dims(grid) -> set:
        factor = next(f for f in grid.factors if f.keyword == "head_dim_qk")
        return {factor.default, *factor.levels}

    assert not any(160 < value <= 168 for value in head_dims(plain) - {168})
    assert 168 in head_dims(forked) and any(value > 168 for value in head_dims(forked))


def test_cli_writes_the_snapshot_and_refuses_bad_input(tmp_path, capsys) -> None:
    out = tmp_path / "snapshot.json"
    assert main(["snapshot", "2.10.0", "-o", str(out), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""  # not a terminal: no progress
    assert parse(out.read_text(), out).te_version == "2.10.0"
    assert main(["snapshot", "1.9.0.post1"]) == 0
    assert parse(capsys.readouterr().out, "stdout").te_version == "1.9.0.post1"  # only the result
    assert main(["snapshot", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    with pytest.raises(SnapshotError, match="not a selection snapshot"):
        parse("{}", "x.json")
    with pytest.raises(SnapshotError, match="x.json: not JSON"):
        parse("{", "x.json")
