"""What the miner costs on one flash-attn release, against tree-sitter parsing its C++, in one run.

    python bench/mine.py [--flash-attn VERSION] [--te SOURCE] [--repeat N]

Baseline: parsing every C++ file of flash-attn 2's library directories with tree-sitter (what
any reader of these sources pays at least). Measured: the CUDA side's whole extraction
(`lint_plugin.mine.cuda.mine`: indexing, running every entry point TE calls for all
architectures and inputs, stating the cases), then the whole command's work - extraction and
the judging of every case per architecture by the analyzer and the harness against TE's
selector. Target: the whole command under 30 s. The release is fetched into the cache first
and not timed. Medians of `--repeat` runs.
"""

from __future__ import annotations

import argparse

from lint_plugin.mine.crosscheck import Judges, crosscheck
from lint_plugin.mine.cuda import mine
from lint_plugin.mine.cuda.calls import BACKENDS
from lint_plugin.mine.cuda.source import from_release
from lint_plugin.mine.cuda.syntax import SOURCE_SUFFIXES, parse
from selector_patch.sources import read_text, resolve
from timing import median_seconds  # bench/timing.py, beside this script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flash-attn", default="2.8.3")
    parser.add_argument("--te", default="2.20.2")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    source = from_release(args.flash_attn)
    texts = [
        read_text(path)
        for backend in BACKENDS
        for directory in backend.directories
        for path in sorted((source.root / directory).glob("*"))
        if path.suffix in SOURCE_SUFFIXES
    ]
    selector = resolve(args.te)

    def command() -> None:
        crosscheck(mine(source).cases, Judges(selector), known=())

    baseline = median_seconds(lambda: [parse(text) for text in texts], args.repeat)
    extraction = median_seconds(lambda: mine(source), args.repeat)
    whole = median_seconds(command, args.repeat)
    print(f"flash-attn {args.flash_attn}: {len(texts)} C++ files; TE {args.te}")
    print(f"  tree-sitter parse (baseline):        {baseline * 1000:8.1f} ms")
    print(f"  extraction (lint_plugin.mine.cuda):  {extraction * 1000:8.1f} ms"
          f"  ({extraction / baseline:.1f}x the baseline)")  # fmt: skip
    print(f"  extraction + judging (the command):  {whole:8.1f} s  (target < 30 s)")


if __name__ == "__main__":
    main()
