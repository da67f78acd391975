"""`python -m lint_plugin.mine --te-history`: every change TE made to what its selector picks.

    python -m lint_plugin.mine --te-history [RELEASE | FIRST..LAST ...]
        [--te-history-git GIT_DIR REV_RANGE] [--fork SOURCE] [--te-cxx DIR]
        [--json] [--report FILE] [--workers N] [--quiet]

Over PyPI releases (default: all 29, 1.9.0.post1 - 2.20.2) or a git repository's commits
(`--te-history-git`: each commit in the range that touches the selector or the fused query,
with its subject and PR), each consecutive pair's diff read as its causes: the first version
with each change, its class (fix / regression / policy) and reason, the region switched off or
on with a witness, TE's words for it, and for a fix the family members it leaves out.
`--fork SOURCE` then asks a fork each fix's witness: a fork that still picks what the version
before the fix picked lacks the fix. `--report FILE` writes one line per change (first version,
class, backend, region, words). Progress goes to stderr when it is a terminal.

Exit status: 0 done (and a fork lacks no fix), 1 a fork lacks a fix, 2 bad input (one line).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable, Sequence

from lint_plugin.mine.te_changes import ASSUMED, bridged, changes_of, release_wide
from lint_plugin.mine.te_history import WORKERS, Version, releases, selections, shared_grid
from selector_patch.selection_diff.classify import FIX, REGRESSION
from selector_patch.selection_diff.grouping import UNSPECIFIC
from selector_patch.sources import CORPUS_RELEASES
from selector_patch.te_cxx import OPTION_HELP

EXIT_OK, EXIT_LACKS, EXIT_ERROR = 0, 1, 2
PROG = "python -m lint_plugin.mine --te-history"


class BadInput(Exception):
    """A one-line error for the user."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument(
        "--te-history",
        nargs="*",
        metavar="RELEASE",
        default=[],
        help="TE releases, or ranges FIRST..LAST of them (default: all 29 on PyPI)",
    )
    parser.add_argument(
        "--te-history-git",
        nargs=2,
        metavar=("GIT_DIR", "REV_RANGE"),
        help="a TE git repository (bare or not) and a revision range, e.g. v2.9..v2.10",
    )
    parser.add_argument("--fork", metavar="SOURCE", help="which upstream fixes this fork lacks")
    parser.add_argument("--json", action="store_true", help="print the changes as JSON")
    parser.add_argument("--report", metavar="FILE", help="also write one line per change here")
    parser.add_argument("--workers", type=int, default=WORKERS, help="processes (default 2)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--te-cxx", metavar="DIR", help=OPTION_HELP)
    return parser.parse_args(argv)


def release_names(specs: Sequence[str]) -> list[str]:
    """The releases named: each a release, or `FIRST..LAST` of the 29 studied (`..LAST`,
    `FIRST..` open); none: all of them."""
    if not specs:
        return list(CORPUS_RELEASES)
    names: list[str] = []
    for spec in specs:
        if ".." in spec:
            first, last = spec.split("..", 1)
            for end in (first, last):
                if end and end not in CORPUS_RELEASES:
                    raise BadInput(f"{spec}: {end} is not one of the releases studied")
            start = CORPUS_RELEASES.index(first) if first else 0
            stop = CORPUS_RELEASES.index(last) + 1 if last else len(CORPUS_RELEASES)
            names += CORPUS_RELEASES[start:stop]
        else:
            names.append(spec)
    names = list(dict.fromkeys(names))
    if len(names) < 2:
        raise BadInput(f"{' '.join(specs)}: a history needs two versions at least")
    return names


def mine(
    versions: Sequence[Version],
    te_cxx: str | None,
    workers: int,
    quiet: bool,
    found: Callable[[list[dict[str, Any]]], None] = lambda _changes: None,
) -> tuple[dict[str, Any], Any]:
    """Every version's selection on one grid, and the changes between consecutive ones;
    `found(changes)` with each pair's as soon as they are known (a long run's partial result)."""
    from selector_patch.progress import progress
    from selector_patch.selection_diff import Side, diff

    started = time.monotonic()
    grid = shared_grid(versions, te_cxx)
    changes: list[dict[str, Any]] = []
    fixes: dict[str, str] = {}
    assumed: dict[str, str] = {}
    previous = known = None  # the last version, and the last with TE's own fused answer
    held: list[dict[str, Any]] = []  # the changes since `known`
    unknown: list[tuple[Version, Any]] = []  # the versions since `known`, assumed everywhere

    def compared(since: Version, before: Any, version: Version, snapshot: Any) -> list:
        a, b = Side.of_snapshot(before, since.name), Side.of_snapshot(snapshot, version.name)
        report = diff(a, b)
        return changes_of(report, since, version, before, snapshot, fixes)

    with progress(len(versions), "asking", quiet=quiet) as bar:
        taken = selections(
            versions, grid, te_cxx, workers, lambda v: bar.relabel(f"asked {v.name}")
        )
        for version, snapshot in zip(versions, taken):
            bar.advance()
            snapshot.grid = grid  # one grid: the diff then takes the outcomes as they are
            if snapshot.fused_assumption:
                assumed[version.name] = snapshot.fused_assumption
            if previous is not None:
                held += compared(*previous, version, snapshot)
            previous = (version, snapshot)
            if release_wide(snapshot):
                unknown.append(previous)
                continue
            if unknown and known is not None:
                held = bridged(compared(*known, version, snapshot), held, unknown)
            found(held)
            changes += held
            held, unknown, known = [], [], previous
    found(held)
    changes += held
    return {
        "versions": [v._asdict() for v in versions],
        "grid": len(grid),
        "seconds": round(time.monotonic() - started, 1),
        "fused_assumption": assumed,
        "changes": changes,
    }, grid


def report_line(change: dict[str, Any]) -> str:
    """`2.10.0  fix  FusedAttention  sm90, ...: FusedAttention → ...  "Warning: ..."`: one
    change on one line, for `--report`."""
    where = change["version"] + (f" {change['pr']}" if change["pr"] else "")
    more = f" (+{change['regions'] - 1} regions)" if change["regions"] > 1 else ""
    gaps = f" [leaves out {', '.join(change['leaves_out'])}]" if change["leaves_out"] else ""
    words = change["words"]
    if words in UNSPECIFIC and change["cause"] != words:
        words = change["cause"]  # the generic line, and the inputs that tell its causes apart
    return (
        f"{where} | {change['class']} | {change['backend']} {change['direction']} |"
        f" {change['region']}{more}{gaps} | {words} | {change['reason']}"
    )


def to_text(result: dict[str, Any], lacking: list[dict[str, Any]] | None) -> str:
    from selector_patch.selection_diff.text import witness_call

    versions = [v["name"] for v in result["versions"]]
    changes = result["changes"]
    counts = {
        kind: sum(c["class"] == kind for c in changes)
        for kind in (FIX, REGRESSION, "policy", ASSUMED)
    }
    lines = [
        f"TE's history over {len(versions)} versions, {versions[0]} - {versions[-1]}:"
        f" one grid of {result['grid']} requests, each version asked once"
        f" ({result['seconds']} s)",
        *(f"{name}: {why}" for name, why in result["fused_assumption"].items()),
        f"{len(changes)} changes: " + ", ".join(f"{n} {kind}" for kind, n in counts.items()),
    ]
    for change in changes:
        lines += ["", report_line(change)]
        if change["subject"]:
            lines.append(f"    commit {change['commit']}: {change['subject']}")
        lines.append(f"    witness: {witness_call(change['witness'])}  ({change['change']})")
    if lacking is not None:
        lines += ["", f"the fork lacks {len(lacking)} of the fixes:"]
        lines += [f"    {report_line(change)}" for change in lacking]
    return "\n".join(lines) + "\n"


def fork_lacks(
    fork: str, grid: Any, changes: Sequence[dict[str, Any]], te_cxx: str | None
) -> list[dict[str, Any]]:
    """The fixes whose witness the fork still answers with what the version before the fix
    picked."""
    from selector_patch.harness import load_selector
    from selector_patch.snapshot.runner import Asker

    asker = Asker(load_selector(fork, te_cxx=te_cxx), grid)
    lacking = []
    for change in changes:
        if change["class"] != FIX:
            continue
        outcome, _read = asker.ask(grid.at(change["position"]))
        if outcome.pick.label() == change["before"]:
            lacking.append(change)
    return lacking


class _ReportFile:
    """`--report FILE`, written as the changes are found: a reader sees the oldest pairs' while
    the newer ones are mined."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        if path is not None:
            open(path, "w", encoding="utf-8").close()

    def add(self, changes: list[dict[str, Any]]) -> None:
        if self.path is not None and changes:
            with open(self.path, "a", encoding="utf-8") as out:
                out.write("".join(report_line(change) + "\n" for change in changes))


def main(argv: Sequence[str] | None = None) -> int:
    from selector_patch.harness import LoadError
    from selector_patch.sources import SourceError, resolve
    from selector_patch.te_cxx import CxxError, name_trees

    args = parse_args(argv)
    try:
        if args.te_cxx is not None:
            name_trees(args.te_cxx)
        if args.fork is not None:
            resolve(args.fork)  # a bad fork is said before the history is mined
        if args.te_history_git is not None:
            from lint_plugin.mine.te_git import commits

            versions = commits(*args.te_history_git)
        else:
            versions = releases(release_names(args.te_history))
        written = _ReportFile(args.report)
        result, grid = mine(versions, args.te_cxx, max(args.workers, 1), args.quiet, written.add)
        lacking = None
        if args.fork is not None:
            lacking = fork_lacks(args.fork, grid, result["changes"], args.te_cxx)
    except (BadInput, SourceError, LoadError, CxxError, OSError) as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        output = {**result, **({"fork_lacks": lacking} if lacking is not None else {})}
        print(json.dumps(output, indent=1, ensure_ascii=False))
    else:
        sys.stdout.write(to_text(result, lacking))
    return EXIT_LACKS if lacking else EXIT_OK
