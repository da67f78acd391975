"""What `codemods.apply` costs, against libcst parsing and regenerating the same file, in one run.

    python bench/codemod.py [SOURCE] [--repeat N] [--no-sweep] [--te-fixes] [--instructions]

Baseline: `libcst.parse_module(text).code` on the selector (what any libcst codemod pays at
least). Measured: the command's whole work on that file short of the disk write, i.e. planning
(analysis of every hazard), the libcst transform and the self-check of the result
(`run_one(..., "diff")`). Target: at most 2x the baseline. Then the 29-release sweep: every
corpus release through the same path, total wall time. Medians of `--repeat` runs. With
`--te-fixes` the command is also timed guarding TE's own later fixes (`codemods.apply
--te-fixes`), in the same run as the baseline, and then as whole processes, as a user runs
them, with and without `--te-fixes` (`processes.codemod_processes`): `--check` on an
already-guarded copy against an `ast.parse` process (target: at most 2x), `codemods.apply FILE`
against a libcst parse + codegen process (target: at most 1x), at least 7 interleaved rounds;
with `--instructions` each of those processes is also counted under valgrind's callgrind
(`processes.counted`), which this shared machine's load does not move.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import libcst as cst

from codemods.apply import run_one
from selector_patch.config import Config, with_te_fixes
from selector_patch.sources import CORPUS_RELEASES, read_text, resolve
from processes import codemod_processes  # bench/processes.py, beside this script
from timing import median_seconds  # bench/timing.py, beside this script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", default="2.20.2")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-sweep", action="store_true")
    parser.add_argument("--te-fixes", action="store_true", help="also with TE's own fixes")
    parser.add_argument(
        "--instructions", action="store_true", help="count the processes too (valgrind)"
    )
    args = parser.parse_args()

    source = resolve(args.source)
    text = read_text(source.path)
    config = Config()
    baseline = median_seconds(lambda: cst.parse_module(text).code, args.repeat)
    command = median_seconds(lambda: run_one(source, config, "diff"), args.repeat)
    lines = text.count("\n")
    print(f"selector: {source.path} ({lines} lines)")
    print(f"  libcst parse + codegen (baseline): {baseline * 1000:8.1f} ms")
    print(f"  codemods.apply (plan, transform, self-check): {command * 1000:8.1f} ms")
    print(f"  ratio: {command / baseline:.2f}x (target <= 2x)")
    if args.te_fixes:
        fixes = Config()._replace(hazards=with_te_fixes(Config()))
        guarded = median_seconds(lambda: run_one(source, fixes, "diff"), args.repeat)
        print(f"  codemods.apply --te-fixes: {guarded * 1000:8.1f} ms")
        print(f"  ratio: {guarded / baseline:.2f}x (target <= 2x)")
        here = Path(__file__).resolve().parent.parent
        with tempfile.TemporaryDirectory() as scratch:
            codemod_processes(
                source,
                max(args.repeat, 7),
                here,
                Path(scratch),
                te_fixes=True,
                instructions=args.instructions,
            )

    if not args.no_sweep:
        sources = [resolve(version) for version in CORPUS_RELEASES]
        start = time.perf_counter()
        inserted = sum(run_one(release, config, "diff").changed for release in sources)
        sweep = time.perf_counter() - start
        print(
            f"sweep: {len(sources)} releases in {sweep:.1f} s"
            f" ({sweep / len(sources) * 1000:.0f} ms each), {inserted} patched"
        )


if __name__ == "__main__":
    main()
