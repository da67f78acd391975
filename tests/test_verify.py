"""`python -m selector_patch verify`: verdicts, JSON report and exit codes on real selectors."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from guarded_selectors import overbroad, patched

from conftest import NO_TE_CXX
from selector_patch.__main__ import main
from selector_patch.registry import HAZARDS, SM12X, TE_FIXES
from selector_patch.verify import verify_hazard

REPO = Path(__file__).resolve().parent.parent


def patched_tree(release_source, tmp_path: Path, edit) -> Path:
    """A copy of the release's TE package with its selector text passed through `edit`."""
    tree = tmp_path / "te"
    shutil.copytree(release_source.root / "transformer_engine", tree / "transformer_engine")
    path = tree / release_source.path.relative_to(release_source.root)
    path.write_text(edit(path.read_text()))
    return tree


def run_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["verify", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_unpatched_2_20_2_reports_every_hazard_on_sm120(release):
    """The issue's acceptance command, as a user runs it."""
    release("2.20.2")
    completed = subprocess.run(
        [sys.executable, "-m", "selector_patch", "verify", "2.20.2", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert completed.returncode == 1, completed.stderr
    report = json.loads(completed.stdout)
    assert report["te_version"] == "2.20.2"
    assert report["source"].endswith("pytorch/attention/dot_product_attention/utils.py")
    by_id = {hazard["id"]: hazard for hazard in report["hazards"]}
    assert list(by_id) == [hazard.id for hazard in HAZARDS]
    for hazard in by_id.values():
        assert hazard["applicable"]
        assert hazard["controls"]["failed"] == [] and hazard["controls"]["passed"] > 0
    sm8x_backward = by_id.pop("TEA005")  # 2.19 switches FA4 off below sm90 itself
    assert not sm8x_backward["reachable"] and sm8x_backward["witness"] is None
    for hazard_id in ("TEA006", "TEA007"):  # 2.19 passes seqused to FA4 for THD with padding
        hd256 = by_id.pop(hazard_id)
        assert hd256["reachable"] and hd256["witness"]["compute_capability"] == [10, 0]
    for hazard in by_id.values():
        assert hazard["reachable"] and hazard["witness"]["compute_capability"] == [12, 0]
    assert set(by_id["TEA001"]["controls"]) == {"passed", "failed", "skipped"}


def test_release_without_reachable_hazards_exits_0(release, capsys):
    release("1.13.0")
    code, report = run_json(capsys, "1.13.0")
    assert code == 0
    assert [(h["id"], h["applicable"], h["reachable"]) for h in report["hazards"]] == [
        ("TEA001", False, False),
        ("TEA002", True, False),
        ("TEA003", False, False),
        ("TEA004", False, False),
        ("TEA005", False, False),
        ("TEA006", False, False),
        ("TEA007", False, False),
    ]


def test_guarded_selector_passes_its_controls(release, tmp_path, capsys):
    tree = patched_tree(release("2.20.2"), tmp_path, patched)
    code, report = run_json(capsys, str(tree))
    assert code == 0
    for hazard in report["hazards"]:
        assert (hazard["reachable"], hazard["witness"], hazard["controls"]["failed"]) == (
            False,
            None,
            [],
        )
        assert hazard["controls"]["passed"] > 0


def test_overbroad_guard_fails_the_other_architectures(release, tmp_path, capsys):
    tree = patched_tree(release("2.20.2"), tmp_path, overbroad)
    code, report = run_json(capsys, str(tree), "--hazard", "TEA001")
    assert code == 1
    (hazard,) = report["hazards"]
    assert not hazard["reachable"]
    failed = {
        (control["name"], tuple(control["inputs"]["compute_capability"]))
        for control in hazard["controls"]["failed"]
    }
    assert failed == {
        *((name, arch) for name in ("forward-only eval", "forward only") for arch in SM12X),
        ("sm90", (9, 0)),
        ("sm100", (10, 0)),
    }


def test_human_output_is_one_line_per_hazard(release, capsys):
    release("2.20.2")
    assert main(["verify", "2.20.2"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("(TE 2.20.2)")
    assert lines[1] == (  # the suite uses no library of 2.20.2 (conftest's LIBRARY_RELEASES)
        "  fused answer assumed: F16_arbitrary_seqlen"
        " (no TE C++ for 2.20.2: not among TE_ATTN_GUARDS_LIBRARIES)"
    )
    for line, hazard in zip(lines[2:], HAZARDS, strict=True):
        sm = "sm100" if hazard.id in ("TEA006", "TEA007") else "sm120"
        verdict = (
            "not reachable"
            if hazard.id == "TEA005"
            else rf"REACHABLE on {sm} \(\d+ of \d+ witnesses\)"
        )
        assert re.match(rf"  {hazard.id} {verdict}; controls: ", line), line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["no/such/path"],
            "no/such/path: no such file or directory, and not `installed` or a TE version",
        ),
        (
            ["2.20.2", "--hazard", "TEA999"],
            "2.20.2: unknown hazard 'TEA999'; known:"
            f" {[hazard.id for hazard in (*HAZARDS, *TE_FIXES)]}",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(release, capsys, args, expected):
    release("2.20.2")
    assert main(["verify", *args]) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", expected + "\n")


def test_unloadable_selector_is_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "utils.py"
    path.write_text("def get_attention_backend(:\n")
    assert main(["verify", str(path)]) == 2
    assert capsys.readouterr().err == f"{path}: syntax error on line 1: invalid syntax\n"


@pytest.mark.skipif(NO_TE_CXX is not None, reason=NO_TE_CXX or "")
def test_a_fused_witness_reached_on_an_assumed_answer_says_so(load_te_selector):
    """TEA050 (#2344, TE 2.10's C++): TE 2.9.0's own C++ selects FusedAttention for it; 2.20.2,
    with no C++ here, selects it only because the fused answer is assumed, and says so."""
    hazard = next(h for h in TE_FIXES if h.id == "TEA050")
    own = verify_hazard(load_te_selector("2.9.0").loaded, hazard)
    assumed = verify_hazard(load_te_selector("2.20.2").loaded, hazard)
    assert own.reachable and own.assumed == 0 and "assumed" not in own.summary()
    reached = sum(reached for _, reached in assumed.witnesses)
    assert assumed.assumed == reached > 0 and "each on an assumed fused answer" in assumed.summary()
    assert assumed.to_json()["reached_on_assumed_fused_answer"] == reached


@pytest.mark.skipif(NO_TE_CXX is not None, reason=NO_TE_CXX or "")
def test_a_te_fix_whose_request_the_release_never_makes_is_not_applicable(release, capsys):
    """TEA075 (#3173: MXFP8 attention on cuDNN 9.23.0/9.23.1): TE 2.16.1 makes the request and
    its own selector and C++ pick FusedAttention; TE 2.14.1's selector alone would too, but its
    `DotProductAttention` refuses the recipe first, so `verify` runs no witness there and says
    why, as the analysis does."""
    release("2.16.1")
    release("2.14.1")
    code, made = run_json(capsys, "2.16.1", "--te-fixes", "--hazard", "TEA075")
    assert code == 1
    (report,) = made["hazards"]
    assert report["applicable"] and report["reachable"] and report["never_made"] is None
    assert report["reached_on_assumed_fused_answer"] == 0
    code, refused = run_json(capsys, "2.14.1", "--te-fixes", "--hazard", "TEA075")
    assert code == 0
    (report,) = refused["hazards"]
    assert not report["applicable"] and not report["reachable"] and report["witnesses"] == []
    assert report["never_made"] == "TE 2.14.1's own code never makes this request (TE >=2.15 does)"
