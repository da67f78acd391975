"""`python -m codemods.apply`: insert the missing guards into TE selectors, and prove them.

    python -m codemods.apply [SOURCE ...] [--te VERSION ...] [--check | --diff]
                             [--format text|json|sarif] [--json] [--hazard ID ...]
                             [--emit-tests DIR [--force]] [--selection-diff [--quiet]]

A SOURCE is a TE checkout, a selector file or `installed`; `--te 2.17.1` names a released
wheel (fetched into the cache). Released wheels are never modified: for them the default action
is `--diff`. Hazards and selector names come from the registry and the `[tool.te-attn-guards]`
table of the target's `pyproject.toml`. Every rewritten selector is re-analysed first; a guard
that does not verify is an error, never a write. Exit status: 0 done (or nothing to do), 1
`--check` found a missing guard, 2 bad input (one line on stderr naming the file and the cause;
the file untouched). `--emit-tests DIR` also writes `DIR/test_te_attn_guards.py`, a pytest
module for the guards this run inserted (`codemods.selector_tests`). `--selection-diff` also
runs the selector before and after on the virtual device and shows every request whose pick the
guards change, grouped into regions, beside the text diff; a change outside every hazard's
region is an error, never a write (`codemods.selection`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from codemods.files import FileError, check_writable, locked, replace_atomically
from codemods.plan import INSERTED, Plan, PlanError, plan_insertions
from lint_plugin.engine.collector import paused
from lint_plugin.engine.dialect import SELECTOR_FUNCTIONS
from selector_patch.config import (
    Config,
    ConfigError,
    load_config,
    select_hazards,
    with_te_fixes,
)
from selector_patch.fast_exit import fast_exit
from selector_patch.records import Record
from selector_patch.registry import Hazard
from selector_patch.sources import SelectorSource, SourceError, read_text, resolve

if TYPE_CHECKING:
    from lint_plugin.sarif import Result

#: `--check`'s word for a guard that would be inserted.
MISSING = "missing"


class Outcome(Record):
    """What happened (or, under `--check`, would happen) to one selector file.

    A `Record`, not a dataclass (see `Plan`)."""

    source: SelectorSource
    plan: Plan
    original: str
    patched: str
    check: bool
    #: The selection diff of the insertion (`--selection-diff`), if asked for.
    selection: dict | None = None

    @property
    def changed(self) -> bool:
        return self.patched != self.original

    @property
    def statuses(self) -> dict[str, str]:
        if not self.check:
            return self.plan.statuses
        return {h: MISSING if s == INSERTED else s for h, s in self.plan.statuses.items()}

    def report(self) -> dict:
        found = {
            "path": str(self.source.path),
            "te_version": self.source.te_version,
            "changed": self.changed,
            "hazards": [{"id": h, "status": s, **self._where(h)} for h, s in self.statuses.items()],
        }
        if self.selection is not None:
            found["selection_diff"] = self.selection
        return found

    def _where(self, hazard_id: str) -> dict:
        verdict = self.plan.missing.get(hazard_id)
        return {} if verdict is None else {"line": verdict.line, "detail": verdict.detail}

    def sarif_results(self, hazards: Sequence[Hazard]) -> list[Result]:
        """A missing guard is an error; an inserted one a note that points where it was needed."""
        from lint_plugin.rules import FIX_COMMAND
        from lint_plugin.sarif import Result

        titles = {hazard.id: hazard.title for hazard in hazards}
        return [
            Result(
                code=hazard_id,
                message=f"{titles[hazard_id]}: {verdict.detail}; run `{FIX_COMMAND} PATH`",
                path=str(self.source.path),
                line=verdict.line or 1,
                column=(verdict.col or 0) + 1,
                level="error" if self.check else "note",
            )
            for hazard_id, verdict in self.plan.missing.items()
        ]

    def diff(self) -> str:
        """A unified diff; inside a TE tree, `git apply`-able from the tree's root."""
        import difflib  # with heapq, more than --check's whole import; only diffs need it

        source = self.source
        relative = source.relative
        if relative is not None:
            before, after = f"a/{relative}", f"b/{relative}"
        else:
            before = after = str(source.path)
        return "".join(
            difflib.unified_diff(
                self.original.splitlines(keepends=True),
                self.patched.splitlines(keepends=True),
                fromfile=before,
                tofile=after,
            )
        )


def _transform(code: str, config: Config, te_version: str | None = None) -> tuple[str, Plan]:
    """Plan on `ast` first: a selector that needs no guard is never parsed by libcst, and the
    analysis does not run while libcst's tree is alive (some 54,000 objects on TE 2.20.2's
    selector, each one more for the garbage collector to walk). `te_version`: the release the
    tree records, whose C++ may already filter a TE fix (`lint_plugin.engine.te_release`)."""
    plan = plan_insertions(code, config.hazards, config.selector_functions, te_version=te_version)
    if not plan.insertions:
        return code, plan
    # libcst loads only for a selector that gets a guard: `--check` and a second run never pay
    # for it (nor, ever, for libcst's codemod framework: `codemods.command` is libcst's runner's).
    from codemods.insert import insert_into_text

    return insert_into_text(code, plan, config.selector_functions), plan


def transform(
    code: str,
    hazards: Sequence[Hazard],
    function_names: Sequence[str] = SELECTOR_FUNCTIONS,
    te_version: str | None = None,
) -> tuple[str, dict[str, str]]:
    """Insert the missing guards; return the new code and each hazard's status. `te_version`:
    the release the code comes from, whose C++ may already filter a TE fix."""
    config = Config(hazards=tuple(hazards), selector_functions=tuple(function_names))
    patched, plan = _transform(code, config, te_version)
    return patched, plan.statuses


def check(source: SelectorSource, code: str, config: Config) -> Outcome:
    """`--check` on `code` (the text of `source`): what would be inserted, writing nothing.

    The pre-commit hook's case: a fork that applied the codemod, whose guards one run per
    hazard proves (`expect_guarded`: the same verdicts, found in the fewest runs).
    """
    plan = plan_insertions(
        code,
        config.hazards,
        config.selector_functions,
        expect_guarded=True,
        te_version=source.te_version,
    )
    return Outcome(source, plan, code, code, check=True)


def run_one(
    source: SelectorSource,
    config: Config,
    mode: str,
    *,
    emit_tests: Path | None = None,
    force: bool = False,
    selection: bool = False,
    quiet: bool = False,
) -> Outcome:
    """Check, diff or rewrite one selector ("check" | "diff" | "write"); a rewrite with
    `emit_tests` also writes the test module for its guards there (`force`: over other text).
    With `selection`, the selection diff of the insertion is taken first and must lie inside
    the hazards' regions (`codemods.selection`; `quiet`: no progress shown)."""
    path = source.path
    if mode == "write":
        check_writable(path)
    with locked(path) if mode == "write" else contextlib.nullcontext():
        original = read_text(path)
        if mode == "check":
            return check(source, original, config)
        patched, plan = _transform(original, config, source.te_version)
        outcome = Outcome(source, plan, original, patched, check=False)
        if selection and outcome.changed:
            from codemods.selection import outside, selection_report

            outcome = outcome.replace(
                selection=selection_report(source, original, patched, config.hazards, quiet=quiet)
            )
            refusal = outside(outcome.selection)
            if refusal is not None:
                raise SelectionOutside(f"{path}: {refusal}", outcome)
        if outcome.changed and mode == "write":
            if emit_tests is not None:  # first: a test file it may not replace stops the write
                from codemods.selector_tests import emit

                emit(emit_tests, source, original, patched, plan, force=force)
            replace_atomically(path, patched.encode("utf-8"))
    return outcome


class SelectionOutside(Exception):
    """The guards change a request outside every hazard's region; carries the outcome, whose
    selection diff says where."""

    def __init__(self, message: str, outcome: Outcome) -> None:
        super().__init__(message)
        self.outcome = outcome


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's own layout, at a width read without `shutil`: argparse makes a formatter for
    every `add_argument`, and its default one imports `shutil` (with zlib, bz2 and lzma) to
    ask the terminal's width, 7 M instructions of a `--check` that prints no help."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)  # argparse keeps two columns free


def _columns() -> int:
    """The terminal's width as `shutil.get_terminal_size` reads it: `COLUMNS`, else standard
    output's terminal, else 80."""
    with contextlib.suppress(KeyError, ValueError):
        if int(os.environ["COLUMNS"]) > 0:
            return int(os.environ["COLUMNS"])
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m codemods.apply",
        description="Insert te-attn-guards' hazard guards into TE attention selectors.",
        formatter_class=_HelpFormatter,
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
        "--format",
        choices=("text", "json", "sarif"),
        default="text",
        help="report on stdout: text (diffs under --diff), json, or sarif (for code scanning)",
    )
    parser.add_argument(
        "--json", dest="format", action="store_const", const="json", help="same as --format json"
    )
    parser.add_argument(
        "--hazard",
        action="append",
        default=[],
        metavar="ID",
        help="limit the run to this hazard (repeatable)",
    )
    parser.add_argument(
        "--te-fixes",
        action="store_true",
        help="also guard TE's own later fixes (TEA050 onward), as `te-fixes = true` in"
        " [tool.te-attn-guards] does",
    )
    parser.add_argument(
        "--emit-tests",
        metavar="DIR",
        type=Path,
        help="also write DIR/test_te_attn_guards.py, a pytest module for the inserted guards"
        " (one SOURCE; not with --check / --diff)",
    )
    parser.add_argument(
        "--force", action="store_true", help="let --emit-tests replace a file with other content"
    )
    parser.add_argument(
        "--te-cxx",
        metavar="DIR",
        help="for --emit-tests: the directory of per-release TE C++ trees that answer cuDNN's"
        " fused-attention query (default $TE_ATTN_GUARDS_TE_CXX)",
    )
    parser.add_argument(
        "--selection-diff",
        action="store_true",
        help="also show what the guards change in the selection (needs the harness extra); a"
        " change outside every hazard's region is an error (not with --check)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress on stderr for --selection-diff"
    )
    args = parser.parse_args(argv)
    if args.selection_diff and args.check:
        parser.error(
            "--selection-diff runs the selector on the guards it inserts: not with --check"
        )
    if args.emit_tests is not None and (args.check or args.diff):
        parser.error(
            "--emit-tests writes tests beside the guards it writes: not with --check/--diff"
        )
    if args.emit_tests is not None and len(args.sources) + len(args.te) > 1:
        parser.error("--emit-tests takes one SOURCE")
    return args


def _mode(args: argparse.Namespace, source: SelectorSource) -> str:
    if args.check:
        return "check"
    if args.diff or source.origin == "release":
        return "diff"
    return "write"


def _print_selection(outcome: Outcome, output_format: str) -> None:
    """The selection diff, in text, ahead of the unified diff: `git apply` skips what precedes
    a patch's first header."""
    if outcome.selection is None or output_format != "text":
        return
    from selector_patch.selection_diff.text import render_text

    sys.stdout.write(render_text(outcome.selection) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.te_cxx is not None:
        from selector_patch.te_cxx import CxxError, name_trees  # not on the pre-commit path

        try:
            name_trees(args.te_cxx)
        except CxxError as error:
            print(error, file=sys.stderr)
            return 2
    outcomes: list[tuple[Outcome, Config]] = []
    failed = False
    for spec in [*args.sources, *args.te] or ["."]:
        try:
            source = resolve(spec)
            config = load_config(source.path)
            if args.te_fixes:
                config = config._replace(hazards=with_te_fixes(config))
            config = config._replace(hazards=select_hazards(config, args.hazard))
            mode = _mode(args, source)
            if args.emit_tests is not None and mode != "write":
                raise FileError(
                    f"{spec}: --emit-tests needs a checkout or file to write, not a release"
                )
            outcome = run_one(
                source,
                config,
                mode,
                emit_tests=args.emit_tests,
                force=args.force,
                selection=args.selection_diff,
                quiet=args.quiet,
            )
        except SelectionOutside as error:
            _print_selection(error.outcome, args.format)
            print(error, file=sys.stderr)
            failed = True
            continue
        except (SourceError, FileError) as error:
            print(error, file=sys.stderr)
            failed = True
            continue
        except (PlanError, ConfigError) as error:
            print(f"{source.path}: {error}", file=sys.stderr)
            failed = True
            continue
        outcomes.append((outcome, config))
        if args.format == "text":
            _print_selection(outcome, args.format)
            if _mode(args, source) == "diff":
                sys.stdout.write(outcome.diff())
            statuses = ", ".join(f"{h} {s}" for h, s in outcome.statuses.items())
            print(f"{source.path}: {statuses}", file=sys.stderr)
    if args.format != "text":
        import json
    if args.format == "json":
        json.dump([outcome.report() for outcome, _ in outcomes], sys.stdout, indent=2)
    elif args.format == "sarif":
        from lint_plugin.rules import hazard_rule
        from lint_plugin.sarif import sarif_log

        results = [r for outcome, config in outcomes for r in outcome.sarif_results(config.hazards)]
        rules = {h.id: hazard_rule(h) for _, config in outcomes for h in config.hazards}
        json.dump(sarif_log(results, rules), sys.stdout, indent=2)
    if args.format != "text":
        sys.stdout.write("\n")
    if failed:
        return 2
    missing = any(MISSING in outcome.statuses.values() for outcome, _ in outcomes)
    return 1 if args.check and missing else 0


if __name__ == "__main__":
    with paused():  # a run allocates much and makes few cycles (`engine.collector`)
        status = main()
    fast_exit(status)
