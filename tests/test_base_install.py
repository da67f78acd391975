"""Without the harness extra (no torch, no numpy), every harness command says so in one line.

A base install has the linter and the codemod; the commands that run TE's selector need
`te-attn-guards[harness]`. Each runs here in a fresh interpreter in which torch and numpy
cannot be imported (blocked in `sys.modules`, as an uninstalled module fails), and must print
one line naming the extra, exit 2, and show no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKED = """
import runpy, sys
sys.modules["torch"] = sys.modules["numpy"] = None
sys.argv = sys.argv[1:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""
COMMANDS = {
    "verify": ["selector_patch", "verify", "2.18.0"],
    "table": ["selector_patch", "table", "2.18.0"],
    "snapshot": ["selector_patch", "snapshot", "2.18.0"],
    "diff": ["selector_patch", "diff", "2.18.0", "2.19.0"],
    "miner": ["lint_plugin.mine", "--te", "2.18.0", "--flash-attn-4", "4.0.0b24"],
    "pytest plugin": ["pytest", "-p", "no:cacheprovider", "--te-selector", "2.18.0", "--co"],
    "selection diff": ["codemods.apply", "--te", "2.18.0", "--diff", "--selection-diff"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_one_line_naming_the_extra_and_exit_2(command, tmp_path):
    completed = subprocess.run(
        [sys.executable, "-c", BLOCKED, *COMMANDS[command]],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
        timeout=120,
    )
    output = completed.stderr + completed.stdout
    assert completed.returncode == 2, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and "te-attn-guards[harness]" in lines[0], output
    assert "Traceback" not in output
