"""`python -m codemods.apply`: insert the missing guards into TE selectors, and prove them.

    python -m codemods.apply [SOURCE ...] [--te VERSION ...] [--check | --diff] [--json]
                             [--hazard ID ...]

A SOURCE is a TE checkout, a selector file or `installed`; `--te 2.17.1` names a released
wheel (fetched into the cache). Released wheels are never modified: for them the default action
is `--diff`. Every rewritten selector is re-analysed first; a guard that does not verify is an
error, never a write. Exit status: 0 done (or nothing to do), 1 `--check` found a missing
guard, 2 bad input (one line on stderr naming the file and the cause; the file untouched).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import sys
from dataclasses import dataclass, field, replace
from typing import Sequence

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile

from codemods.command import InsertSelectorGuards
from codemods.files import FileError, check_writable, locked, replace_atomically
from codemods.plan import INSERTED, PlanError, plan_insertions
from lint_plugin.dialect import SELECTOR_FUNCTIONS
from selector_patch.config import Config, ConfigError, load_config, select_hazards
from selector_patch.registry import Hazard
from selector_patch.sources import SelectorSource, SourceError, read_text, resolve

MISSING = "missing"


@dataclass
class Outcome:
    """What happened to one selector file."""

    source: SelectorSource
    statuses: dict[str, str] = field(default_factory=dict)
    original: str = ""
    patched: str = ""

    @property
    def changed(self) -> bool:
        return self.patched != self.original

    def report(self) -> dict:
        return {
            "path": str(self.source.path),
            "te_version": self.source.te_version,
            "changed": self.changed,
            "hazards": [{"id": h, "status": s} for h, s in self.statuses.items()],
        }

    def diff(self) -> str:
        name = str(self.source.path)
        return "".join(
            difflib.unified_diff(
                self.original.splitlines(keepends=True),
                self.patched.splitlines(keepends=True),
                fromfile=name,
                tofile=name,
            )
        )


def transform(
    code: str, hazards: Sequence[Hazard], function_names: Sequence[str] = SELECTOR_FUNCTIONS
) -> tuple[str, dict[str, str]]:
    """Insert the missing guards; return the new code and each hazard's status."""
    config = Config(hazards=tuple(hazards), selector_functions=tuple(function_names))
    command = InsertSelectorGuards(CodemodContext(), config=config, code=code)
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError as error:
        raise PlanError(f"syntax error at line {error.raw_line}: {error.message}") from None
    try:
        # The libcst driver's metadata wrapper would deep-copy the tree; the command needs none.
        patched = command.transform_module_impl(module).code
    except SkipFile:
        patched = code
    return patched, command.statuses


def self_check(patched: str, inserted: Sequence[Hazard], function_names: Sequence[str]) -> None:
    """The analyzer must find every inserted guard effective in the result.

    Hazards that were already guarded need no second look: a guard only ever switches a flag
    off, so inserting one cannot make another hazard reachable.
    """
    statuses = plan_insertions(patched, inserted, function_names).statuses
    unguarded = [h for h, s in statuses.items() if s == INSERTED]
    if unguarded:
        raise PlanError(f"inserted guard for {', '.join(unguarded)} does not verify; not written")


def run_one(source: SelectorSource, config: Config, mode: str) -> Outcome:
    """Check, diff or rewrite one selector ("check" | "diff" | "write")."""
    hazards, functions = config.hazards, config.selector_functions
    path = source.path
    if mode == "write":
        check_writable(path)
    with locked(path) if mode == "write" else contextlib.nullcontext():
        outcome = Outcome(source, original=read_text(path))
        if mode == "check":
            statuses = plan_insertions(outcome.original, hazards, functions).statuses
            outcome.statuses = {h: MISSING if s == INSERTED else s for h, s in statuses.items()}
            outcome.patched = outcome.original
            return outcome
        outcome.patched, outcome.statuses = transform(outcome.original, hazards, functions)
        if outcome.changed:
            inserted = [h for h in hazards if outcome.statuses[h.id] == INSERTED]
            self_check(outcome.patched, inserted, functions)
            if mode == "write":
                replace_atomically(path, outcome.patched.encode("utf-8"))
    return outcome


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m codemods.apply",
        description="Insert te-attn-guards' hazard guards into TE attention selectors.",
    )
    parser.add_argument(
        "sources",
        nargs="*",
        metavar="SOURCE",
        help="TE checkout, selector file, or 'installed' (default: .)",
    )
    parser.add_argument(
        "--te",
        action="append",
        default=[],
        metavar="VERSION",
        help="a released TE version, e.g. 2.17.1 (never modified; implies --diff)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when a guard is missing"
    )
    mode.add_argument(
        "--diff", action="store_true", help="write nothing; print a unified diff of the insertions"
    )
    parser.add_argument(
        "--json", action="store_true", help="print a JSON report per selector on stdout"
    )
    parser.add_argument(
        "--hazard",
        action="append",
        default=[],
        metavar="ID",
        help="limit the run to this hazard (repeatable)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    specs = [*args.sources, *args.te] or ["."]
    reports, failed, missing = [], False, False
    for spec in specs:
        try:
            source = resolve(spec)
            config = load_config(source.path)
            config = replace(config, hazards=select_hazards(config, args.hazard))
            mode = _mode(args, source)
            outcome = run_one(source, config, mode)
        except (SourceError, FileError) as error:
            print(error, file=sys.stderr)
            failed = True
            continue
        except (PlanError, ConfigError) as error:
            print(f"{source.path}: {error}", file=sys.stderr)
            failed = True
            continue
        missing |= MISSING in outcome.statuses.values()
        reports.append(outcome.report())
        if mode == "diff" and not args.json:
            sys.stdout.write(outcome.diff())
        if not args.json:
            statuses = ", ".join(f"{h} {s}" for h, s in outcome.statuses.items())
            print(f"{source.path}: {statuses}", file=sys.stderr)
    if args.json:
        json.dump(reports, sys.stdout, indent=2)
        sys.stdout.write("\n")
    if failed:
        return 2
    return 1 if args.check and missing else 0


def _mode(args: argparse.Namespace, source: SelectorSource) -> str:
    if args.check:
        return "check"
    if args.diff or source.origin == "release":
        return "diff"
    return "write"


if __name__ == "__main__":
    sys.exit(main())
