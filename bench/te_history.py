"""What mining TE's history costs, against one release's snapshot, in one run.

    python bench/te_history.py [RELEASE | FIRST..LAST ...] [--workers N]

The issue's budget: `python -m lint_plugin.mine --te-history` over all 29 releases in under 15
minutes on this machine (each release's selection computed once, both cores used). Both
commands run as a user runs them (a fresh interpreter, output to a file, `--quiet`). Baseline:
`python -m selector_patch snapshot 2.20.2` (one release asked its own grid), so the ratio says
how many snapshots the whole history costs, whatever the machine's load; the budget's share is
printed beside it, and the load average, since other work on the machine slows both.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET = 15 * 60.0


def seconds(*command: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", *command], capture_output=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="*", help="as --te-history takes them (default: all)")
    parser.add_argument("--workers", default="2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        baseline = seconds("selector_patch", "snapshot", "2.20.2", "-o", str(out), "--quiet")
        print(f"{'snapshot 2.20.2 (baseline)':<34} {baseline:7.1f} s")
        mined = seconds(
            "lint_plugin.mine", "--te-history", *args.releases, "--workers", args.workers,
            "--quiet", "--report", str(out),
        )  # fmt: skip
        changes = len(out.read_text().splitlines())
        print(
            f"{'--te-history':<34} {mined:7.1f} s  {mined / BUDGET:4.0%} of {BUDGET:.0f} s"
            f"  ratio {mined / baseline:5.1f}  {changes} changes"
            f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )


if __name__ == "__main__":
    main()
