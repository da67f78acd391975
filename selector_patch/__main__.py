"""`python -m selector_patch verify SOURCE [--json] [--hazard ID] [--te-fixes]`,
`python -m selector_patch table SOURCE [--patched] [--format markdown|html] [--output FILE]`,
`python -m selector_patch snapshot SOURCE [-o FILE] [--quiet]`,
`python -m selector_patch diff A B [--format text|markdown|json|html] [--output FILE] [--quiet]`
and `python -m selector_patch run SCRIPT [ARGS ...]`.

`verify` exits 0 when no hazard is reachable and no control fails, 1 otherwise, 2 when the source
cannot be resolved or loaded, or its selector fails while running (one line `path: cause` on
stderr; never a traceback). `table` prints (or writes) the selection table and exits 0, or 2 like
`verify`. `snapshot` writes what the selector picks over its grid (stdout, or FILE) and exits 0,
or 2. `diff` compares two selectors or snapshots (a `.json` file is a snapshot): 0 when no
request's pick differs, 1 when some do, 2 on bad input. `snapshot` and `diff` show progress on
stderr when it is a terminal (not with `--quiet`); stdout is only the result. `run` runs a script
with the runtime patch installed on TE's import; its exit status is the script's.
Every command but `run` runs under the memory budget of `selector_patch.memory`: past it, one
line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from selector_patch.config import load_config
from selector_patch.extras import without_harness
from selector_patch.fast_exit import fast_exit
from selector_patch.memory import BudgetExceeded, budget
from selector_patch.project import ConfigError
from selector_patch.registry import HAZARDS, TE_FIXES, get_hazard
from selector_patch.sources import SourceError, resolve
from selector_patch.te_cxx import OPTION_HELP, CxxError, name_trees

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SOURCE_HELP = "TE checkout, selector .py file, `installed`, or a release such as 2.17.1"
TE_VERSION_HELP = (
    "the release a selector file alone came from (else its `te-version` key, else the release"
    " it matches): its tree's kernel wiring, modules and C++ run beside the file"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m selector_patch")
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser(
        "verify", help="run every hazard's witnesses and controls through a real TE selector"
    )
    verify.add_argument("source", help=SOURCE_HELP)
    verify.add_argument("--json", action="store_true", help="print a JSON report")
    verify.add_argument("--hazard", metavar="ID", help="check only this hazard (e.g. TEA001)")
    verify.add_argument(
        "--te-fixes",
        action="store_true",
        help="also run TE's own later fixes (TEA050 onward): does this TE select what a later"
        " release filters?",
    )
    verify.add_argument("--te-cxx", metavar="DIR", help=OPTION_HELP)
    verify.add_argument("--te-version", metavar="VERSION", help=TE_VERSION_HELP)
    table = commands.add_parser(
        "table", help="what the real selector picks per architecture and request, hazards marked"
    )
    table.add_argument("source", help=SOURCE_HELP)
    table.add_argument(
        "--patched", action="store_true", help="show the runtime-patched selector beside it"
    )
    table.add_argument("--format", choices=("markdown", "html"), default="markdown")
    table.add_argument("--output", metavar="FILE", help="write here instead of standard output")
    table.add_argument("--te-cxx", metavar="DIR", help=OPTION_HELP)
    table.add_argument("--te-version", metavar="VERSION", help=TE_VERSION_HELP)
    snapshot = commands.add_parser(
        "snapshot", help="what the real selector picks over a grid derived from its comparisons"
    )
    snapshot.add_argument("source", help=SOURCE_HELP)
    snapshot.add_argument("-o", "--output", metavar="FILE", help="write here, not to stdout")
    snapshot.add_argument("--quiet", action="store_true", help="no progress on stderr")
    snapshot.add_argument("--te-cxx", metavar="DIR", help=OPTION_HELP)
    snapshot.add_argument("--te-version", metavar="VERSION", help=TE_VERSION_HELP)
    diff = commands.add_parser(
        "diff", help="every request whose pick differs between two selectors or snapshots"
    )
    diff.add_argument("a", help=f"{SOURCE_HELP}, or a snapshot .json")
    diff.add_argument("b", help=f"{SOURCE_HELP}, or a snapshot .json")
    diff.add_argument("--format", choices=("text", "markdown", "json", "html"), default="text")
    diff.add_argument("--output", metavar="FILE", help="write here instead of standard output")
    diff.add_argument("--quiet", action="store_true", help="no progress on stderr")
    diff.add_argument("--te-cxx", metavar="DIR", help=OPTION_HELP)
    diff.add_argument("--te-version", metavar="VERSION", help=f"for A and B: {TE_VERSION_HELP}")
    run = commands.add_parser(
        "run", help="run a Python script with the runtime patch installed when TE is imported"
    )
    run.add_argument("script", help="the script to run as __main__")
    run.add_argument("arguments", nargs=argparse.REMAINDER, help="the script's own arguments")
    return parser


def verify_command(args: argparse.Namespace) -> int:
    from selector_patch.harness import LoadError, load_selector
    from selector_patch.verify import verify

    try:
        hazards = (
            (get_hazard(args.hazard),)
            if args.hazard
            else (*HAZARDS, *TE_FIXES) if args.te_fixes else HAZARDS
        )
        source = resolve(args.source, args.te_version)
        selector = load_selector(source)
    except KeyError as error:
        return _error(f"{args.source}: {error.args[0]}")
    except (SourceError, LoadError) as error:
        return _error(str(error))
    try:
        reports = verify(selector, hazards)
    except LoadError as error:
        return _error(str(error))
    if args.json:
        report = {
            "source": str(source.path),
            "te_version": source.te_version,
            "fused_assumption": selector.fused_assumption,
            "tree_assumption": source.assumption,
            "hazards": [hazard_report.to_json() for hazard_report in reports],
        }
        print(json.dumps(report, indent=2))
    else:
        print(f"{source.path} (TE {source.te_version or 'unknown version'})")
        for assumption in filter(None, (source.assumption, selector.fused_assumption)):
            print(f"  {assumption}")
        for hazard_report in reports:
            print(f"  {hazard_report.summary()}")
    return EXIT_OK if all(hazard_report.ok for hazard_report in reports) else EXIT_FINDINGS


def table_command(args: argparse.Namespace) -> int:
    from selector_patch.harness import LoadError
    from selector_patch.table import RENDERERS, build

    try:
        source = resolve(args.source, args.te_version)
        text = RENDERERS[args.format](build(source, patched=args.patched))
    except (SourceError, LoadError) as error:
        return _error(str(error))
    _state(source)
    return _emit(text, args.output)


def snapshot_command(args: argparse.Namespace) -> int:
    from selector_patch.harness import LoadError, load_selector
    from selector_patch.progress import progress
    from selector_patch.snapshot import grid_for, take

    try:
        source = resolve(args.source, args.te_version)
        selector = load_selector(source)
        grid = grid_for([selector], load_config(source.path).hazards)
        with progress(len(grid), f"snapshot {args.source}", quiet=args.quiet) as bar:
            snapshot = take(selector, grid, bar.advance)
    except (SourceError, LoadError, ConfigError) as error:
        return _error(str(error))
    _state(source)
    return _emit(snapshot.to_text(), args.output)


def diff_command(args: argparse.Namespace) -> int:
    from selector_patch.harness import LoadError
    from selector_patch.progress import progress
    from selector_patch.selection_diff import RENDERERS, diff, open_side
    from selector_patch.snapshot import SnapshotError

    try:
        a, b = open_side(args.a, args.te_version), open_side(args.b, args.te_version)
        hazards = _hazards_for(a, b)
        with progress(0, "diff", quiet=args.quiet) as bar:
            report = diff(a, b, hazards, bar)
    except (SourceError, LoadError, SnapshotError, ConfigError) as error:
        return _error(str(error))
    status = _emit(RENDERERS[args.format](report), args.output)
    if status != EXIT_OK:
        return status
    return EXIT_FINDINGS if report["differences"] else EXIT_OK


def _state(source) -> None:
    """What a file alone's answers rest on, on stderr (stdout is the result alone), once the
    command has answered (a failure is one line)."""
    if source.assumption:
        print(f"{source.path}: {source.assumption}", file=sys.stderr)


def _hazards_for(*sides):
    """The hazards that name regions: from B's (else A's) `[tool.te-attn-guards]`."""
    for side in reversed(sides):
        if side.loaded is not None:
            return load_config(side.loaded.path).hazards
    return HAZARDS


def _emit(text: str, output: str | None) -> int:
    if output is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as error:
        return _error(f"{output}: {error.strerror}")
    return EXIT_OK


def run_command(args: argparse.Namespace) -> int:
    from selector_patch.launcher import run

    if not Path(args.script).is_file():
        return _error(f"{args.script}: no such file")
    run(args.script, args.arguments)
    return EXIT_OK


def _error(line: str) -> int:
    print(line, file=sys.stderr)
    return EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command != "run":  # `run` patches the script's own TE, with its own torch
        missing = without_harness(f"python -m selector_patch {args.command}")
        if missing is not None:
            return _error(missing)
    if getattr(args, "te_cxx", None) is not None:
        try:
            name_trees(args.te_cxx)
        except CxxError as error:
            return _error(str(error))
    commands = {
        "verify": verify_command,
        "table": table_command,
        "snapshot": snapshot_command,
        "diff": diff_command,
    }
    if args.command == "run":  # the user's own script: its memory is its own business
        return run_command(args)
    operands = " ".join(getattr(args, name) for name in ("source", "a", "b") if hasattr(args, name))
    try:
        with budget(f"{args.command} {operands}"):
            return commands[args.command](args)
    except BudgetExceeded as error:
        return _error(str(error))


if __name__ == "__main__":
    status = main()
    if sys.argv[1:2] == ["run"]:  # the user's script: a normal exit waits for threads it left
        sys.exit(status)
    fast_exit(status)
