"""`snapshot` and `diff` of a selector file alone against the same selector named as a release.

A reviewer's `git show REV:path > upstream.py` holds the very selector of the release, with no
tree around it; a command on it must stay within the budgets the release form keeps (issue 45:
at most twice the release form's time, under 2 GB of peak memory). Each command runs as a user
runs it (a fresh interpreter, output to a file, `--quiet`); per command its wall time and peak
resident memory (the kernel's count for that process alone), and the loose form's ratios to the
release form measured in the same run, release and loose file interleaved round by round so
both see the same machine load.

Usage: python bench/loose_file.py [--version V] [--against A] [--repeat N]
(`snapshot V`, and `diff A V`, each with both selectors as releases and as files alone.)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import seconds_and_peak  # bench/timing.py, beside this script

from selector_patch.sources import resolve

TIME_RATIO_BUDGET = 2.0
PEAK_BUDGET = 2e9


def loose_copy(version: str, directory: Path) -> Path:
    """The release's selector as `upstream.py` alone in an empty directory."""
    directory.mkdir(parents=True)
    return Path(shutil.copyfile(resolve(version).path, directory / "upstream.py"))


def measure(arguments: list[str], out: Path) -> tuple[float, int]:
    command = [sys.executable, "-m", "selector_patch", *arguments, "--quiet"]
    with out.open("w") as sink:
        seconds, peak, status = seconds_and_peak(command, stdout=sink, stderr=subprocess.PIPE)
    if status not in (0, 1):
        raise SystemExit(f"{' '.join(arguments)}: exit status {status}")
    return seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", default="2.20.2")
    parser.add_argument("--against", default="2.18.0")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        files = {v: str(loose_copy(v, root / v)) for v in (args.version, args.against)}
        out = root / "out"
        cases = {
            f"snapshot {args.version}": (
                ["snapshot", args.version],
                ["snapshot", files[args.version]],
            ),
            f"diff {args.against} {args.version}": (
                ["diff", args.against, args.version],
                ["diff", files[args.against], files[args.version]],
            ),
        }
        print(f"{'command':<24} {'form':<8} {'time':>8} {'peak':>8}   loose / release")
        for name, (release, loose) in cases.items():
            runs: dict[str, list[tuple[float, int]]] = {"release": [], "loose": []}
            for round_ in range(args.repeat):
                order = ("release", "loose") if round_ % 2 == 0 else ("loose", "release")
                for form in order:
                    runs[form].append(measure(release if form == "release" else loose, out))
            medians = {
                form: (statistics.median(s for s, _ in r), statistics.median(p for _, p in r))
                for form, r in runs.items()
            }
            for form, (seconds, peak) in medians.items():
                print(f"{name:<24} {form:<8} {seconds:7.1f}s {peak / 1e6:6.0f}MB", end="")
                if form == "loose":
                    time_ratio = seconds / medians["release"][0]
                    print(
                        f"   time {time_ratio:4.2f}x (budget {TIME_RATIO_BUDGET:.0f}x),"
                        f" memory {peak / medians['release'][1]:4.2f}x,"
                        f" peak {peak / PEAK_BUDGET:4.0%} of {PEAK_BUDGET / 1e9:.0f} GB",
                        end="",
                    )
                print()


if __name__ == "__main__":
    main()
