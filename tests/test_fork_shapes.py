"""Fork-shaped selectors (`tests/fork_shapes/`, one file per shape real forks take) through the tools.

`FORK_SHAPES` holds one entry per fixture, keyed by tool. `verify`: what
`python -m selector_patch verify FILE --json` gives, run as a user runs it - its exit status,
the hazards it finds applicable and reachable, and its stderr (an exit-2 error is exactly one
line, matched by `error`; otherwise stderr is `stderr`, empty unless said). `flake8`: the
hazard codes `flake8 --select=TEA` reports (never a TEA9xx), the very hazards `verify` finds
reachable. `codemod`: its status for TEA002; an insertion must verify in the harness, and a
second run must change nothing. The tests below the table pin the
harness behaviour each shape depends on.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from codemods.apply import main as apply_main
from codemods.apply import transform
from selector_patch.__main__ import main
from selector_patch.harness import SelectionError, Unrepresentable, load_selector, logs
from selector_patch.registry import HAZARDS, get_hazard
from selector_patch.scenario import Scenario
from selector_patch.verify import verify, verify_hazard

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fork_shapes"

FORK_SHAPES: dict[str, dict[str, dict]] = {
    "dispatcher": {
        "flake8": {"hazards": {"TEA002"}},
        "codemod": {"TEA002": "inserted"},
        "verify": {"exit": 1, "applicable": {"TEA002"}, "reachable": {"TEA002"}},
    },
    "fourth_backend": {
        "flake8": {"hazards": set()},
        "codemod": {"TEA002": "already-guarded"},
        "verify": {"exit": 0, "applicable": {"TEA002"}, "reachable": set()},
    },
    "vendor_device": {
        "flake8": {"hazards": set()},
        "codemod": {"TEA002": "already-guarded"},
        "verify": {
            "exit": 2,
            "error": r"vendor_device\.py:25: get_attention_backend raised AttributeError: module"
            r" 'torch' has no attribute 'musa' \(the virtual device is a CUDA GPU: .*\)"
            r" \(on sm120, .*\)$",
        },
    },
    "debug_print": {
        "flake8": {"hazards": {"TEA002"}},
        "codemod": {"TEA002": "inserted"},
        "verify": {"exit": 1, "applicable": {"TEA002"}, "reachable": {"TEA002"}},
    },
    "bad_log_format": {
        "flake8": {"hazards": set()},
        "codemod": {"TEA002": "already-guarded"},
        "verify": {
            "exit": 0,
            "applicable": {"TEA002"},
            "reachable": set(),
            "stderr": "--- Logging error ---\n"
            "TypeError: not enough arguments for format string\n"
            "Message: 'Selected backend = %s (available: %s)'\n"
            "Arguments: ('FusedAttention',)\n",
        },
    },
    "keyword_params": {
        "flake8": {"hazards": set()},
        "codemod": {"TEA002": "already-guarded"},
        "verify": {"exit": 0, "applicable": {"TEA002"}, "reachable": set()},
    },
    "set_literal_guard": {
        "flake8": {"hazards": set()},
        "codemod": {"TEA002": "already-guarded"},
        "verify": {"exit": 0, "applicable": {"TEA002"}, "reachable": set()},
    },
}


def fixture(name: str) -> Path:
    return FIXTURES / f"{name}.py"


def bare_fork(tmp_path: Path, body: str) -> Path:
    """A selector file of the 1.9+ dialects whose `get_attention_backend` runs `body`."""
    path = tmp_path / "fork.py"
    path.write_text(
        "from dataclasses import dataclass\n"
        "@dataclass\n"
        "class AttentionParams:\n"
        "    is_training: bool = True\n"
        "def get_attention_backend(attention_params=None):\n" + body
    )
    return path


def test_every_fixture_has_expectations():
    assert sorted(path.stem for path in FIXTURES.glob("*.py")) == sorted(FORK_SHAPES)


@pytest.mark.parametrize("name", sorted(FORK_SHAPES))
def test_verify(name):
    expected = FORK_SHAPES[name]["verify"]
    path = fixture(name)
    completed = subprocess.run(
        [sys.executable, "-m", "selector_patch", "verify", str(path), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert completed.returncode == expected["exit"], completed.stderr
    if expected["exit"] == 2:
        assert completed.stdout == ""
        (line,) = completed.stderr.splitlines()
        assert line.startswith(f"{path}:")
        assert re.search(expected["error"], line), line
        return
    assert completed.stderr == expected.get("stderr", "")
    report = json.loads(completed.stdout)
    hazards = report["hazards"]
    assert {hazard["id"] for hazard in hazards if hazard["applicable"]} == expected["applicable"]
    assert {hazard["id"] for hazard in hazards if hazard["reachable"]} == expected["reachable"]
    assert [hazard["controls"]["failed"] for hazard in hazards] == [[] for _ in hazards]


def test_what_the_selector_prints_joins_its_log_and_never_stdout(capsys):
    selector = load_selector(fixture("debug_print"))
    selection = selector.select(Scenario(compute_capability=(12, 0)))
    assert capsys.readouterr() == ("", "")
    assert selection.log[0].startswith(
        "[debug] get_attention_backend on virtual sm120 GPU (sm120): AttentionParams("
    )
    assert "[debug] use_flash_attention = True" in selection.log
    assert not any("imported" in line for line in selection.log)  # import-time lines: dropped


def test_a_bad_format_string_is_reported_once_and_the_selection_carries_on(capsys, monkeypatch):
    monkeypatch.setattr(logs, "_reported", set())
    selector = load_selector(fixture("bad_log_format"))
    witness = next(get_hazard("TEA002").witnesses())  # sm86, head dim 256, dropout
    selections = [selector.select(witness), selector.select(Scenario())]
    assert [selection.backend for selection in selections] == ["FusedAttention", "FlashAttention"]
    assert selections[0].log == ("Disabling FlashAttention 2 for head_dim 256 on sm86",)
    assert selections[1].log == ()  # its one line has the bad format string
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("--- Logging error ---") == 1


def test_a_fourth_backend_is_read_by_name():
    selector = load_selector(fixture("fourth_backend"))
    flash = selector.select(Scenario(compute_capability=(9, 0)))
    assert (flash.backend, flash.role, flash.flash_version) == ("FlashAttention", "FA2", "2.8.3")
    flex = selector.select(Scenario(env=(("NVTE_FLASH_ATTN", "0"), ("NVTE_FUSED_ATTN", "0"))))
    assert (flex.backend, flex.role, flex.flash_version) == ("use_flex_attention", None, None)
    assert flex.available == (False, False, True, True)


def test_a_te_1_x_tuple_lengthened_to_six_is_not_read_as_te_2_2(tmp_path):
    """Six items, no flash version: by length this would be TE 2.2+'s tuple."""
    path = bare_fork(
        tmp_path,
        "    use_flash_attention, use_fused_attention, fused_attention_backend = False, 1, None\n"
        "    use_unfused_attention = use_sage_attention = False\n"
        "    available_backends = [False, True, True, True]\n"
        "    return (use_flash_attention, use_fused_attention, fused_attention_backend,\n"
        "            use_unfused_attention, use_sage_attention, available_backends)\n",
    )
    selection = load_selector(path).select(Scenario())
    assert (selection.backend, selection.available) == ("FusedAttention", (False, True, True, True))


def test_the_keyword_dialect_is_called_with_keyword_arguments():
    path = fixture("keyword_params")
    selector = load_selector(path)
    assert selector.params_fields[:3] == ("qkv_type", "qkv_dtype", "qkv_layout")
    assert "head_dim" in selector.params_fields and "is_training" not in selector.params_fields
    sm80 = Scenario(compute_capability=(8, 0), head_dim_qk=256, head_dim_v=256)
    assert selector.select(sm80).role == "FA2"
    with pytest.raises(Unrepresentable, match="single `head_dim`"):
        selector.select(Scenario(head_dim_qk=192, head_dim_v=256))
    hazard = get_hazard("TEA002")
    assert not verify_hazard(selector, hazard).reachable
    admitting_sm120 = path.read_text().replace("((8, 0), (9, 0))", "((8, 0), (9, 0), (12, 0))")
    report = verify_hazard(load_selector(path, text=admitting_sm120), hazard)
    assert report.witness is not None and report.witness.compute_capability == (12, 0)


def test_a_dispatchers_callee_state_is_restored_between_calls():
    selector = load_selector(fixture("dispatcher"))
    deterministic = Scenario(deterministic=True)
    logs_of_two_calls = [selector.select(deterministic).log for _ in range(2)]
    assert all("Deterministic attention requested" in log for log in logs_of_two_calls)


def test_every_command_reports_a_selector_that_cannot_run_in_one_line(capsys):
    path = fixture("vendor_device")
    for command in (["verify", str(path)], ["table", str(path)]):
        assert main(command) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        (line,) = captured.err.splitlines()
        assert line.startswith(f"{path}:25: get_attention_backend raised AttributeError")


def test_an_unreadable_result_is_one_line(tmp_path):
    path = bare_fork(tmp_path, "    return None\n")
    with pytest.raises(SelectionError) as raised:
        load_selector(path).select(Scenario())
    assert str(raised.value) == f"{path}: get_attention_backend returned NoneType, not TE's tuple"


@pytest.mark.parametrize("name", sorted(FORK_SHAPES))
def test_flake8(name):
    expected = FORK_SHAPES[name]
    completed = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=TEA", str(fixture(name))],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert not completed.stderr
    codes = {row.split(":", 3)[3].split()[0] for row in completed.stdout.splitlines()}
    assert not {code for code in codes if code.startswith("TEA9")}, completed.stdout
    assert {code for code in codes if code.startswith("TEA0")} == expected["flake8"]["hazards"]
    if expected["verify"]["exit"] != 2:  # the same verdict as TE's own code in the harness
        assert expected["flake8"]["hazards"] == expected["verify"]["reachable"]


@pytest.mark.parametrize("name", sorted(FORK_SHAPES))
def test_codemod(name, tmp_path):
    expected = FORK_SHAPES[name]["codemod"]
    path = tmp_path / fixture(name).name
    path.write_text(fixture(name).read_text())
    original = path.read_text()
    assert apply_main([str(path), "--json"]) == 0
    patched = path.read_text()
    assert transform(patched, HAZARDS)[0] == patched  # a second run changes nothing
    statuses = transform(original, HAZARDS)[1]
    assert {h: statuses[h] for h in expected} == expected
    if "inserted" in statuses.values():
        assert patched.count(get_hazard("TEA002").message[:50]) == 1  # no duplicate guard
        if FORK_SHAPES[name]["verify"]["exit"] != 2:
            reports = verify(load_selector(path), HAZARDS)
            assert all(not r.reachable and not r.controls.failed for r in reports), reports
            assert len(reports) == len(HAZARDS)
    else:
        assert patched == original
