"""`python -m selector_patch verify SOURCE [--json] [--hazard ID]`,
`python -m selector_patch table SOURCE [--patched] [--format markdown|html] [--output FILE]` and
`python -m selector_patch run SCRIPT [ARGS ...]`.

`verify` exits 0 when no hazard is reachable and no control fails, 1 otherwise, 2 when the source
cannot be resolved or loaded, or its selector fails while running (one line `path: cause` on
stderr; never a traceback). `table` prints (or writes) the selection table and exits 0, or 2 like
`verify`. `run` runs a script with the runtime patch installed on TE's import; its exit status is
the script's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from selector_patch.registry import HAZARDS, get_hazard
from selector_patch.sources import SourceError, resolve
from selector_patch.te_cxx import OPTION_HELP, CxxError, name_trees

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SOURCE_HELP = "TE checkout, selector .py file, `installed`, or a release such as 2.17.1"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m selector_patch")
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser(
        "verify", help="run every hazard's witnesses and controls through a real TE selector"
    )
    verify.add_argument("source", help=SOURCE_HELP)
    verify.add_argument("--json", action="store_true", help="print a JSON report")
    verify.add_argument("--hazard", metavar="ID", help="check only this hazard (e.g. TEA001)")
    verify.add_argument("--te-cxx", metavar="DIR", help=OPTION_HELP)
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
        hazards = (get_hazard(args.hazard),) if args.hazard else HAZARDS
        source = resolve(args.source)
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
            "hazards": [hazard_report.to_json() for hazard_report in reports],
        }
        print(json.dumps(report, indent=2))
    else:
        print(f"{source.path} (TE {source.te_version or 'unknown version'})")
        if selector.fused_assumption:
            print(f"  {selector.fused_assumption}")
        for hazard_report in reports:
            print(f"  {hazard_report.summary()}")
    return EXIT_OK if all(hazard_report.ok for hazard_report in reports) else EXIT_FINDINGS


def table_command(args: argparse.Namespace) -> int:
    from selector_patch.harness import LoadError
    from selector_patch.table import RENDERERS, build

    try:
        source = resolve(args.source)
        text = RENDERERS[args.format](build(source, patched=args.patched))
    except (SourceError, LoadError) as error:
        return _error(str(error))
    if args.output is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as error:
        return _error(f"{args.output}: {error.strerror}")
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
    if getattr(args, "te_cxx", None) is not None:
        try:
            name_trees(args.te_cxx)
        except CxxError as error:
            return _error(str(error))
    commands = {"verify": verify_command, "table": table_command, "run": run_command}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
