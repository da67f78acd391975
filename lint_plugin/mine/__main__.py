"""`python -m lint_plugin.mine`: find the next hazard in the kernel libraries' own sources.

    python -m lint_plugin.mine --te SOURCE
        (--flash-attn-4 VERSION | --flash-attn VERSION [VERSION ...] | --kernel-source PATH)
        [--json] [--skip-hazard ID ...] [--quiet]
    python -m lint_plugin.mine --te-history [RELEASE ...] ...   (TE's own history: see
        `lint_plugin.mine.te_history_command`)

`--flash-attn-4` reads flash-attn-4's `flash_attn/cute/` Python (a released wheel, fetched into
the cache) for architecture-conditioned `assert` / `raise`. `--flash-attn` reads a flash-attn
release's sdist (fetched into the cache, never built) for flash-attn 2's C++ dispatch, and
flash-attn 3's where the tree has it: every `TORCH_CHECK` and every path that launches no
kernel, for some architecture or input. `--kernel-source` takes either kind of tree: a
directory holding `flash_attn/cute/` (with its dist-info), or a flash-attention source tree
(an unpacked sdist or a checkout, `csrc/flash_attn/` and `hopper/`).

Each finding is mapped onto TE's selector inputs and judged per architecture by the analyzer
and the harness against TE's selector (SOURCE, as `python -m selector_patch verify` takes it).
Candidates are derived from the kernel alone; one that says what a registry or configured
hazard says is marked `= TEA0NN`, and `--skip-hazard` switches such an entry off (the miner
then declares the candidate afresh). Several `--flash-attn` versions give one report each and
then what changed from each release to the next.

Mining several releases shows progress on stderr when it is a terminal (one step per kernel
release mined), not with `--quiet`; stdout is only the report.

Exit status: 0 no UNGUARDED case, 1 some, 2 bad input (one line on stderr), 3 the two judges
disagree (a bug in this project, reported rather than settled).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from selector_patch.extras import exit_without_harness

# The judges run TE's selector: say what is missing before importing them.
exit_without_harness("python -m lint_plugin.mine")

from lint_plugin.mine import history
from lint_plugin.mine.crosscheck import DISAGREEMENT, UNGUARDED, Judges, Verdict, crosscheck
from lint_plugin.mine.declare import declarations
from lint_plugin.mine.findings import Case
from lint_plugin.mine.report import Kernel, report_json, to_text
from lint_plugin.mine.te_calls import KernelCall, kernel_calls
from selector_patch.config import ConfigError, load_config
from selector_patch.fast_exit import fast_exit
from selector_patch.harness import LoadError
from selector_patch.memory import BudgetExceeded, budget
from selector_patch.progress import progress
from selector_patch.registry import HAZARDS
from selector_patch.sources import SourceError, resolve
from selector_patch.te_cxx import OPTION_HELP, CxxError, name_trees

EXIT_OK, EXIT_UNGUARDED, EXIT_ERROR, EXIT_DISAGREEMENT = 0, 1, 2, 3


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lint_plugin.mine",
        description="Mine the kernel libraries' refusals and launch-less paths and check that"
        " TE's attention selector filters each one.",
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
        "--flash-attn",
        metavar="VERSION",
        nargs="+",
        help="released flash-attn 2.x versions (their sdists); several give a cross-version report",
    )
    kernel.add_argument(
        "--kernel-source",
        metavar="PATH",
        type=Path,
        help="a directory holding flash_attn/cute/ (flash-attn-4), or a flash-attention source"
        " tree holding csrc/flash_attn/ or hopper/ (flash-attn 2 / 3)",
    )
    parser.add_argument("--json", action="store_true", help="print every verdict as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--skip-hazard",
        action="append",
        default=[],
        metavar="ID",
        help="switch a registry or configured hazard off (repeatable)",
    )
    parser.add_argument("--te-cxx", metavar="DIR", help=OPTION_HELP)
    parser.add_argument(
        "--te-version",
        metavar="VERSION",
        help="the release a selector file alone came from (else its `te-version` key, else the"
        " release it matches): its `backends.py` calls and tree run beside the file",
    )
    return parser.parse_args(argv)


def _sources(
    args: argparse.Namespace, calls: Sequence[KernelCall]
) -> list[Callable[[], tuple[Kernel, Sequence[Case], tuple]]]:
    """One loader per kernel tree to mine; each returns the tree, its cases and its notes.
    flash-attn-4's refusals are asked through TE's `calls` into it.

    The C++ side is imported only when asked for: it needs tree-sitter.
    """
    if args.flash_attn_4 is not None:
        return [lambda: _cute(_cute_kernel().from_release(args.flash_attn_4), calls)]
    if args.flash_attn is not None:
        return [
            lambda v=version: _cuda(_cuda_source().from_release(v)) for version in args.flash_attn
        ]
    path = args.kernel_source
    if _is_cuda_tree(path):
        return [lambda: _cuda(_cuda_source().from_directory(path))]
    return [lambda: _cute(_either_kernel(path), calls)]


def _either_kernel(path: Path):
    """A flash-attn-4 tree; failing that, say what either kind of tree would hold."""
    try:
        return _cute_kernel().from_directory(path)
    except SourceError as error:
        if "flash_attn/cute/" not in str(error):
            raise
        raise SourceError(
            path,
            "no flash_attn/cute/ here, nor a flash_api.cpp under csrc/flash_attn/ or hopper/"
            " (give the directory holding one)",
        ) from None


def _is_cuda_tree(path: Path) -> bool:
    root = path.expanduser()
    return any((root / d / "flash_api.cpp").is_file() for d in ("csrc/flash_attn", "hopper"))


def _cute_kernel():
    from lint_plugin.mine.cute import kernel

    return kernel


def _cuda_source():
    from lint_plugin.mine.cuda import source

    return source


def _cute(kernel, calls: Sequence[KernelCall]):
    from lint_plugin.mine.cute import mine

    return kernel, mine(kernel, calls), ()


def _cuda(source):
    from lint_plugin.mine.cuda import mine

    mined = mine(source)
    return source, mined.cases, mined.notes


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if any(arg.startswith("--te-history") for arg in given):
        from lint_plugin.mine.te_history_command import main as te_history

        return te_history(given)
    args = parse_args(argv)
    try:
        with budget(f"python -m lint_plugin.mine --te {args.te}"):
            return _mine(args)
    except BudgetExceeded as error:
        print(error, file=sys.stderr)
        return EXIT_ERROR


def _mine(args: argparse.Namespace) -> int:
    results: list[tuple[Kernel, list[Verdict], dict, tuple]] = []
    try:
        if args.te_cxx is not None:
            name_trees(args.te_cxx)
        source = resolve(args.te, args.te_version)
        loaders = _sources(args, kernel_calls(source))
        config = load_config(source.path)
        configured = {hazard.id for hazard in config.hazards}
        unknown = [hazard_id for hazard_id in args.skip_hazard if hazard_id not in configured]
        if unknown:
            raise ConfigError(f"--skip-hazard {unknown[0]}: no such hazard")
        known = [hazard for hazard in config.hazards if hazard.id not in args.skip_hazard]
        judges = Judges(source, function_names=config.selector_functions)
        with progress(len(loaders), "mining", quiet=args.quiet or len(loaders) == 1) as bar:
            for load in loaders:
                kernel, found, notes = load()
                bar.relabel(f"mining {kernel.version}")
                verdicts = crosscheck(found, judges, known)
                declared = declarations(verdicts, taken=configured | {h.id for h in HAZARDS})
                results.append((kernel, verdicts, declared, notes))
                bar.advance()
    except (SourceError, LoadError, ConfigError, CxxError) as error:
        print(f"python -m lint_plugin.mine: {error}", file=sys.stderr)
        return EXIT_ERROR
    if source.assumption:  # what the verdicts rest on, once they are in
        print(f"{source.path}: {source.assumption}", file=sys.stderr)
    releases = [history.Release(kernel.version, verdicts) for kernel, verdicts, _, _ in results]
    if args.json:
        reports: list[dict[str, Any]] = [
            report_json(kernel, source, verdicts, declared, notes)
            for kernel, verdicts, declared, notes in results
        ]
        output: Any = (
            reports[0]
            if len(reports) == 1
            else {
                "releases": reports,
                "changes": history.changes(releases),
                "table": history.table(releases),
            }
        )
        print(json.dumps(output, indent=2))
    else:
        texts = [to_text(k, source, v, d, n) for k, v, d, n in results]
        if len(results) > 1:
            texts.append(history.to_text(releases))
        print("\n\n".join(texts))
    statuses = {verdict.status for _, verdicts, _, _ in results for verdict in verdicts}
    if DISAGREEMENT in statuses:
        return EXIT_DISAGREEMENT
    return EXIT_UNGUARDED if UNGUARDED in statuses else EXIT_OK


if __name__ == "__main__":
    fast_exit(main())
