"""Every command runs within a memory budget, and refuses a grid too large to ask.

A selector can make the harness grow without end (its own loop, a loop over what a module the
virtual device does not load returns); a command then stops at its budget with one line and
exit status 2, never a `MemoryError` traceback and never the OOM killer.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap

import pytest

from selector_patch.harness import load_selector
from selector_patch.memory import VARIABLE, BudgetExceeded, budget
from selector_patch.snapshot import grid_for
from selector_patch.snapshot.grid import refusal

SELECTOR = textwrap.dedent(
    """
    from dataclasses import dataclass
    @dataclass
    class AttentionParams:
        is_training: bool = True
        head_dim_qk: int = 64
        attention_dropout: float = 0.0
    def get_attention_backend(attention_params=None):
        if attention_params.head_dim_qk > 192 and attention_params.attention_dropout > 0.0:
            {grow}
        return False, False, None, True, [False, False, True]
    """
)


def write(tmp_path, grow: str = "pass"):
    path = tmp_path / "upstream.py"
    path.write_text(SELECTOR.format(grow=grow))
    return path


def test_a_selector_that_grows_without_end_stops_at_the_budget(tmp_path):
    path = write(tmp_path, "chunks = []\n        while True: chunks.append(bytearray(1 << 20))")
    command = [sys.executable, "-m", "selector_patch", "snapshot", str(path), "--quiet"]
    done = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, VARIABLE: "1024"}, timeout=300
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"snapshot {path}: ran past its memory budget of 1024 MiB ({VARIABLE} sets it)\n"
    )
    assert done.stdout == ""


def test_the_limit_is_put_back_and_a_bad_budget_is_one_line():
    before = resource.getrlimit(resource.RLIMIT_AS)
    with budget("verify x", {VARIABLE: "64"}) as mb:
        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        assert mb == 64 and soft != resource.RLIM_INFINITY
        with pytest.raises(BudgetExceeded, match=r"^verify x: ran past its memory budget of 64"):
            with budget("verify x", {VARIABLE: "64"}):
                bytearray(128 << 20)
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    for bad in ("lots", "0", "-5"):
        with pytest.raises(BudgetExceeded, match=rf"^{VARIABLE}='{bad}': not a positive number"):
            with budget("verify x", {VARIABLE: bad}):
                pass


def test_a_grid_over_its_budget_is_refused_saying_where_it_comes_from(tmp_path):
    grid = grid_for([load_selector(write(tmp_path))])
    assert refusal(grid) is None
    assert refusal(grid, budget=len(grid)) is None
    refused = refusal(grid, budget=len(grid) - 1)
    assert refused.startswith(f"its grid holds {len(grid):,} requests, over the budget of ")
    assert "the largest share: attention_dropout x head_dim_qk (line 9, " in refused
