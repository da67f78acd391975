"""`python -m codemods.apply` on good and hostile input: exit codes, messages, untouched bytes."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from codemods.apply import main
from codemods.plan import plan_insertions
from lint_plugin.engine import analysis
from selector_patch.registry import HAZARDS, get_hazard

PAIRS = Path(__file__).parent / "codemod_pairs"
BEFORE = (PAIRS / "te2_fa4.before.py").read_text()
AFTER = (PAIRS / "te2_fa4.after.py").read_text()
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def selector(tmp_path: Path) -> Path:
    path = tmp_path / "utils.py"
    path.write_text(BEFORE)
    return path


def run(*args: str) -> tuple[int, str, str]:
    """The command in a real process, as users and pre-commit run it."""
    completed = subprocess.run(
        [sys.executable, "-m", "codemods.apply", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    return completed.returncode, completed.stdout, completed.stderr


def test_a_plan_keeps_no_prepared_selector() -> None:
    """Every plan parses anew, so what its analysis kept goes when it is done."""
    plan = plan_insertions(BEFORE, HAZARDS)
    assert plan.insertions  # it did analyse, and its plan still has what insertion needs
    assert analysis.selector.cache_info().currsize == 0


def test_writes_guards_then_check_passes(selector: Path) -> None:
    assert run(str(selector), "--check")[0] == 1
    assert run(str(selector))[0] == 0
    assert selector.read_text() == AFTER
    assert run(str(selector), "--check")[0] == 0


def test_second_run_changes_no_byte(selector: Path, capsys) -> None:
    assert main([str(selector)]) == 0
    first = selector.read_bytes()
    assert main([str(selector)]) == 0
    assert selector.read_bytes() == first
    assert "TEA001 already-guarded, TEA002 already-guarded" in capsys.readouterr().err


def test_json_report(selector: Path, capsys) -> None:
    assert main([str(selector), "--check", "--json"]) == 1
    (report,) = json.loads(capsys.readouterr().out)
    assert report["path"] == str(selector)
    # the selector reads no `pad_between_seqs`: the head-dim-256 seqused hazards cannot apply
    seqused = ("TEA006", "TEA007")
    assert [(h["id"], h["status"]) for h in report["hazards"]] == [
        (hazard.id, "not-applicable" if hazard.id in seqused else "missing") for hazard in HAZARDS
    ]
    lines = BEFORE.splitlines()
    tea001, tea002, tea003, _, tea005 = (
        lines[hazard["line"] - 1] for hazard in report["hazards"] if hazard["id"] not in seqused
    )
    assert "use_flash_attention_4 = use_flash_attention and" in tea001
    assert "use_flash_attention_4 = use_flash_attention and" in tea005  # nothing filters sm80
    assert "device_compute_capability not in" in tea002
    assert "device_compute_capability < (10, 0)" in tea003  # TE's own FA4 split-KV filter
    assert main([str(selector), "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert [h["status"] for h in report["hazards"]] == ["inserted"] * 5 + ["not-applicable"] * 2
    assert report["changed"] is True


def test_diff_writes_nothing(selector: Path, capsys) -> None:
    assert main([str(selector), "--diff"]) == 0
    diff = capsys.readouterr().out
    assert selector.read_text() == BEFORE
    added = [line for line in diff.splitlines() if line.startswith("+") and line[1:2] != "+"]
    removed = [line for line in diff.splitlines() if line.startswith("-") and line[1:2] != "-"]
    assert added and not removed


def test_hazard_option_limits_the_run(selector: Path, capsys) -> None:
    assert main([str(selector), "--hazard", "TEA002"]) == 0
    assert get_hazard("TEA001").message.split(":")[0] not in selector.read_text()
    assert main([str(selector), "--check", "--json"]) == 1
    (report,) = json.loads(capsys.readouterr().out)
    assert (report["hazards"][0]["id"], report["hazards"][0]["status"]) == ("TEA001", "missing")
    assert main([str(selector), "--hazard", "TEA999"]) == 2


def test_crlf_is_preserved(selector: Path) -> None:
    selector.write_bytes(BEFORE.replace("\n", "\r\n").encode())
    assert main([str(selector)]) == 0
    assert selector.read_bytes() == AFTER.replace("\n", "\r\n").encode()


def test_symlink_is_written_through_and_kept(selector: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.py"
    link.symlink_to(selector)
    assert main([str(link)]) == 0
    assert link.is_symlink()
    assert selector.read_text() == AFTER


def test_mode_is_kept(selector: Path) -> None:
    selector.chmod(0o640)
    assert main([str(selector)]) == 0
    assert stat.S_IMODE(selector.stat().st_mode) == 0o640


BAD_CONTENT = {
    "syntax error": (b"def get_attention_backend(:\n    pass\n", "syntax error"),
    "no selector": (b"def something_else():\n    return 1\n", "no get_attention_backend"),
    "empty file": (b"", "no get_attention_backend"),
    "not utf-8": (BEFORE.encode().replace(b"# Filter: Dropout", b"# Filter: \xff"), "not UTF-8"),
    "binary": (b"\x7fELF\x02\x01\x01\x00\x00" * 8, "binary file"),
    "refactored": (
        BEFORE.replace("    # use_flash_attention may have been set above\n", "")
        .replace("    use_flash_attention_2 = use_flash_attention and use_flash_attention_2\n", "")
        .replace("    use_flash_attention_4 = use_flash_attention and use_flash_attention_4\n", "")
        .replace(
            "use_flash_attention = use_flash_attention_2 or use_flash_attention_4",
            "use_flash_attention = use_flash_attention and (use_flash_attention_2 or"
            " use_flash_attention_4)",
        )
        .replace("if use_flash_attention_2 and deterministic:", "if False:")
        .replace("if use_fused_attention and deterministic:", "if False:")
        .encode(),
        "cannot place TEA001",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CONTENT))
def test_bad_content_is_refused_untouched(case: str, selector: Path) -> None:
    content, cause = BAD_CONTENT[case]
    selector.write_bytes(content)
    code, out, err = run(str(selector))
    assert code == 2
    assert err.count("\n") == 1 and str(selector) in err and cause in err, err
    assert "Traceback" not in err
    assert selector.read_bytes() == content


def test_not_a_te_tree(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path))
    assert code == 2
    assert err.count("\n") == 1 and str(tmp_path) in err


def test_read_only_file_is_refused(selector: Path) -> None:
    selector.chmod(0o444)
    code, _, err = run(str(selector))
    assert code == 2 and "read-only" in err and str(selector) in err
    assert selector.read_text() == BEFORE
    assert stat.S_IMODE(selector.stat().st_mode) == 0o444


def test_unwritable_directory_leaves_the_file_untouched(selector: Path, monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    assert main([str(selector)]) == 2
    err = capsys.readouterr().err
    assert "cannot create a temporary file" in err and str(selector) in err
    assert selector.read_text() == BEFORE
    assert os.listdir(selector.parent) == [selector.name]


def test_concurrent_runs_make_what_one_run_makes(selector: Path) -> None:
    command = [sys.executable, "-m", "codemods.apply", str(selector)]
    processes = [subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE) for _ in range(4)]
    assert [p.wait() for p in processes] == [0, 0, 0, 0]
    assert selector.read_text() == AFTER


def test_runs_as_a_libcst_codemod_command(selector: Path) -> None:
    """`python -m libcst.tool codemod` finds the command through `.libcst.codemod.yaml`."""
    command = ["-m", "libcst.tool", "codemod", "command.InsertSelectorGuards", str(selector)]
    completed = subprocess.run([sys.executable, *command], cwd=REPO, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert selector.read_text() == AFTER
    completed = subprocess.run([sys.executable, *command], cwd=REPO, capture_output=True, text=True)
    assert "Skipped 1 files" in completed.stderr
    assert selector.read_text() == AFTER


def test_release_is_never_written_and_its_diff_applies_to_a_checkout(release, tmp_path: Path):
    source = release("2.20.2")
    before = source.path.read_bytes()
    code, diff, _ = run("--te", "2.20.2")
    assert code == 0 and source.path.read_bytes() == before
    checkout = tmp_path / "TransformerEngine"
    shutil.copytree(source.root / "transformer_engine", checkout / "transformer_engine")
    (tmp_path / "fix.patch").write_text(diff)
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    subprocess.run(["git", "apply", str(tmp_path / "fix.patch")], cwd=checkout, check=True)
    assert run(str(checkout), "--check")[0] == 0
