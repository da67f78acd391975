"""`python -m lint_plugin.mine`: find the next hazard in flash-attn-4's own refusals.

    python -m lint_plugin.mine --te SOURCE (--flash-attn-4 VERSION | --kernel-source PATH)
                               [--json] [--skip-hazard ID ...]

Reads flash-attn-4's `flash_attn/cute/` sources (a released wheel, fetched into the cache, or a
directory), extracts every architecture-conditioned `assert` / `raise`, maps each onto TE's
selector inputs and asks the analyzer and the harness whether TE's selector (SOURCE, as
`python -m selector_patch verify` takes it) can still pick FA4 there. Candidates are derived
from the kernel alone; a candidate that says what a registry or configured hazard says is
marked `= TEA0NN`, and `--skip-hazard` switches such an entry off (the miner then declares the
candidate afresh).

Exit status: 0 no UNGUARDED refusal, 1 some, 2 bad input (one line on stderr), 3 the two
judges disagree (a bug in this project, reported rather than settled).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from lint_plugin.mine.crosscheck import DISAGREEMENT, UNGUARDED, Judges, crosscheck, mine
from lint_plugin.mine.declare import declarations
from lint_plugin.mine.kernel import KernelSource, from_directory, from_release
from lint_plugin.mine.report import to_json, to_text
from selector_patch.config import ConfigError, load_config
from selector_patch.harness import LoadError
from selector_patch.registry import HAZARDS
from selector_patch.sources import SourceError, resolve

EXIT_OK, EXIT_UNGUARDED, EXIT_ERROR, EXIT_DISAGREEMENT = 0, 1, 2, 3


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lint_plugin.mine",
        description="Mine flash-attn-4's architecture-conditioned refusals and check that TE's"
        " attention selector filters each one.",
    )
    parser.add_argument(
        "--te",
        required=True,
        metavar="SOURCE",
        help="TE checkout, selector .py file, `installed`, or a release such as 2.20.2",
    )
    kernel = parser.add_mutually_exclusive_group(required=True)
    kernel.add_argument("--flash-attn-4", metavar="VERSION", help="a released flash-attn-4")
    kernel.add_argument(
        "--kernel-source",
        metavar="PATH",
        type=Path,
        help="a directory holding flash_attn/cute/ (an installed copy or an unpacked wheel)",
    )
    parser.add_argument("--json", action="store_true", help="print every verdict as JSON")
    parser.add_argument(
        "--skip-hazard",
        action="append",
        default=[],
        metavar="ID",
        help="switch a registry or configured hazard off (repeatable)",
    )
    return parser.parse_args(argv)


def _kernel(args: argparse.Namespace) -> KernelSource:
    if args.flash_attn_4 is not None:
        return from_release(args.flash_attn_4)
    return from_directory(args.kernel_source)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        kernel = _kernel(args)
        source = resolve(args.te)
        config = load_config(source.path)
        configured = {hazard.id for hazard in config.hazards}
        unknown = [hazard_id for hazard_id in args.skip_hazard if hazard_id not in configured]
        if unknown:
            raise ConfigError(f"--skip-hazard {unknown[0]}: no such hazard")
        known = [hazard for hazard in config.hazards if hazard.id not in args.skip_hazard]
        judges = Judges(source, function_names=config.selector_functions)
        verdicts = crosscheck(kernel, mine(kernel), judges, known)
        declared = declarations(verdicts, taken=configured | {hazard.id for hazard in HAZARDS})
    except (SourceError, LoadError, ConfigError) as error:
        print(f"python -m lint_plugin.mine: {error}", file=sys.stderr)
        return EXIT_ERROR
    render = to_json if args.json else to_text
    print(render(kernel, source, verdicts, declared))
    statuses = {verdict.status for verdict in verdicts}
    if DISAGREEMENT in statuses:
        return EXIT_DISAGREEMENT
    return EXIT_UNGUARDED if UNGUARDED in statuses else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
