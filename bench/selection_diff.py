"""Benchmark `python -m selector_patch snapshot` and `diff` against their budgets and a baseline.

The issue's budgets: `snapshot 2.20.2` in at most 60 s, `diff` of two releases in at most
2 minutes, on this machine. Each command runs as a user runs it (a fresh interpreter, output to
a file, `--quiet`), so import, load, grid derivation, the selections and the rendering are all
in the time. Printed beside each: the budget, its share of it, the grid's size, and the ratio to
the baseline measured in the same run, `python -m selector_patch verify 2.20.2` (every hazard's
witnesses and controls through the same harness: a fixed amount of selector work, so the ratio
says how many of those one snapshot or diff costs, whatever the machine's load).

Usage: python bench/selection_diff.py [--repeat N] [--pair A B ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import median_seconds  # bench/timing.py, beside this script

from selector_patch.sources import resolve

SNAPSHOT_BUDGET, DIFF_BUDGET = 60.0, 120.0
PAIRS = (("2.17.1", "2.18.0"), ("2.18.0", "2.20.2"))


def command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "selector_patch", *args], capture_output=True, text=True
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--pair", nargs=2, action="append", metavar=("A", "B"))
    args = parser.parse_args()
    pairs = args.pair or PAIRS
    for version in {"2.20.2", *(v for pair in pairs for v in pair)}:
        resolve(version)  # fetch outside timing
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        baseline = median_seconds(lambda: command("verify", "2.20.2"), args.repeat)
        print(f"{'verify 2.20.2 (baseline)':<34} {baseline:7.1f} s")
        seconds = median_seconds(
            lambda: command("snapshot", "2.20.2", "-o", str(out), "--quiet"), args.repeat
        )
        size = out.stat().st_size
        print(
            f"{'snapshot 2.20.2':<34} {seconds:7.1f} s  {seconds / SNAPSHOT_BUDGET:4.0%} of"
            f" {SNAPSHOT_BUDGET:.0f} s  ratio {seconds / baseline:5.1f}  file {size / 1e6:.1f} MB"
        )
        for a, b in pairs:
            seconds = median_seconds(
                lambda: command("diff", a, b, "--format", "json", "--output", str(out), "--quiet"),
                args.repeat,
            )
            report = json.loads(out.read_text())
            print(
                f"{f'diff {a} {b}':<34} {seconds:7.1f} s  {seconds / DIFF_BUDGET:4.0%} of"
                f" {DIFF_BUDGET:.0f} s  ratio {seconds / baseline:5.1f}"
                f"  {report['configurations']} requests, {len(report['differences'])} regions"
            )


if __name__ == "__main__":
    main()
