"""`python -m selector_patch table`: the selection matrix of a real selector, as markdown.

On TE 2.20.2 the unpatched table must show the seeds' hazards where they are (FA4 for
deterministic training and FA2 for dropout at head dim > 192, on sm120), the patched table none,
and the patch must leave every control cell as TE ships it.
"""

from __future__ import annotations

import json

import pytest

from selector_patch.__main__ import main
from selector_patch.registry import HAZARDS, get_hazard
from selector_patch.table import build, markdown, page
from selector_patch.table.columns import table_columns

HAZARD_MARK = "**⚠"


def parse_markdown(text: str) -> dict[str, dict]:
    """{section title: {"header": [...], "rows": {architecture: [cell, ...]}}}."""
    sections: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = sections[line[3:]] = {"header": None, "rows": {}}
        elif current is not None and line.startswith("| "):
            cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            if current["header"] is None:
                current["header"] = cells[1:]
            elif cells[0] != "---":
                current["rows"][cells[0]] = cells[1:]
    return sections


@pytest.fixture(scope="module")
def tables(release) -> tuple[dict, dict]:
    """The unpatched and patched markdown tables of TE 2.20.2, parsed."""
    unpatched, patched = parse_markdown(
        markdown.render(build(release("2.20.2"), patched=True))
    ).values()
    return unpatched, patched


def table_text(capsys, *args: str) -> tuple[int, str]:
    code = main(["table", *args])
    return code, capsys.readouterr().out


def hazard_cells(section: dict) -> set[tuple[str, str, str]]:
    """(architecture, column header, hazard ids) of every marked cell."""
    return {
        (architecture, section["header"][index], cell.split("(")[-1].rstrip(")*"))
        for architecture, cells in section["rows"].items()
        for index, cell in enumerate(cells)
        if cell.startswith(HAZARD_MARK)
    }


def test_2_20_2_marks_the_seed_hazards_unpatched_and_none_patched(tables):
    unpatched, patched = tables
    marked = hazard_cells(unpatched)
    for hazard_id in ("TEA001", "TEA002"):
        at_sm120 = {cell for cell in marked if cell[0] == "sm120" and cell[2] == hazard_id}
        assert at_sm120, f"{hazard_id}: no hazard cell at sm120"
        assert all(header.startswith(f"{hazard_id} witness<br>") for _, header, _ in at_sm120)
    hazard_archs = {f"sm{10 * a + b}" for h in HAZARDS for a, b in h.architectures}
    assert {architecture for architecture, _, _ in marked} <= hazard_archs
    assert hazard_cells(patched) == set()
    assert "⚠" not in "".join(cell for cells in patched["rows"].values() for cell in cells)


def test_seed_000_cell_falls_back_to_unfused_when_patched(tables):
    unpatched, patched = tables
    column = unpatched["header"].index("TEA001 witness<br>deterministic training")
    assert unpatched["rows"]["sm120"][column] == "**⚠ FlashAttention (4.0.0b24) (TEA001)**"
    assert patched["rows"]["sm120"][column] == "UnfusedDotProductAttention"


def test_patch_leaves_control_columns_as_shipped(tables):
    unpatched, patched = tables
    controls = [i for i, header in enumerate(unpatched["header"]) if " control<br>" in header]
    assert controls
    for architecture, cells in unpatched["rows"].items():
        assert [cells[i] for i in controls] == [patched["rows"][architecture][i] for i in controls]


def test_command_without_patched_prints_one_table_of_the_architectures(release, capsys):
    release("2.20.2")
    code, text = table_text(capsys, "2.20.2")
    (only,) = parse_markdown(text).values()
    assert code == 0
    assert list(only["rows"]) == [
        "sm80", "sm86", "sm87", "sm89", "sm90", "sm100", "sm103", "sm110", "sm120", "sm121"
    ]  # fmt: skip
    tea001 = get_hazard("TEA001")
    assert f"- TEA001, {tea001.title}. Its columns run with NVTE_FLASH_ATTN_V2=0" in text


def test_witness_columns_trigger_their_hazard_and_controls_do_not():
    for column in table_columns(HAZARDS):
        for architecture in column.hazard.architectures:
            triggered = column.hazard.triggered_by(column.on(architecture))
            assert triggered == (column.kind == "witness"), column.label


def test_eval_with_backward_and_forward_only_are_columns_of_their_own():
    labels = {column.label for column in table_columns(HAZARDS) if column.hazard.id == "TEA001"}
    assert {"deterministic training", "deterministic eval with backward"} <= labels
    assert {"deterministic eval", "deterministic forward-only training"} <= labels


def test_output_file_and_html_format(release, tmp_path, capsys):
    release("2.20.2")
    target = tmp_path / "table.html"
    code, printed = table_text(capsys, "2.20.2", "--format", "html", "--output", str(target))
    assert (code, printed) == (0, "")
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_unknown_source_is_one_line_and_exit_2(capsys):
    assert main(["table", "no-such-te"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("no-such-te: ")


def test_embedded_data_cannot_end_its_script_element():
    data = {
        "source": "</script><b>x</b>",
        "te_version": None,
        "fused_assumption": None,
        "hazard_cell": "",
        "columns": [],
        "variants": [],
    }
    text = page.render(data)
    start = text.index('id="table-data">') + len('id="table-data">')
    embedded = text[start : text.index("</script>", start)]
    assert json.loads(embedded) == data
