"""The changes of TE's history: each cause of each consecutive diff, as the first version with it.

A change is one cause of one diff (`selection_diff.grouping`): the line TE logs for it, its
class and reason, the regions it switched off or on with the plainest one's witness. Across the
history two more things are known than within one diff:

- a case switched on again where an earlier version's fix had switched it off (the line that
  had kept it off is that fix's line) is a **regression**, whatever the line says;
- a case switched off by a line that is an earlier fix's but for its cuDNN bounds (the fix
  widened to more cuDNN versions, #1776 -> #2185) is a **fix**, whatever the line says;
- a fix that holds on one architecture of a family and not on the others (sm120 but not sm121,
  sm100 but not sm103 / sm110) *leaves them out* where the newer version still picks, for the
  fix's witness moved to that architecture, the backend the fix switched off.

Where one version's fused answer is TE's C++ and the other's is the harness's assumption (no C++
tree for 2.6.0, 2.19.0, 2.20.2), a change about FusedAttention may be the assumption's rather
than TE's: it is classed `assumed`, with the sentence, and is neither a fix nor a regression.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, MutableMapping, Sequence

from selector_patch.selection_diff.classify import FIX, Verdict, classify, unbounded
from selector_patch.selection_diff.grouping import UNSPECIFIC, explanation_of
from selector_patch.snapshot.record import sm

if TYPE_CHECKING:
    from lint_plugin.mine.te_history import Version
    from selector_patch.snapshot import Snapshot

#: Architectures TE's filters should treat alike: Blackwell data-center, Blackwell consumer.
FAMILIES: tuple[tuple[tuple[int, int], ...], ...] = (
    ((10, 0), (10, 3), (11, 0)),
    ((12, 0), (12, 1)),
)
_PR = re.compile(r"\(#(\d+)\)")
ASSUMED = "assumed"


def _widened(line: str) -> str:
    """The key under which `fixes` holds a fix for the lines that widen it (`unbounded`)."""
    return f"widened: {unbounded(line)}"


def pull_request(subject: str | None) -> str | None:
    """`#2344` from a squash-merge subject `... (#2344)`."""
    found = _PR.findall(subject or "")
    return f"#{found[-1]}" if found else None


def left_out(
    difference: dict[str, Any], named: Sequence[str], a: "Snapshot", b: "Snapshot"
) -> list[str]:
    """The family members a fix's regions do not name where version B, asked the fix's witness
    on that member, still picks what version A picked for the witness."""
    grid = b.grid
    witness = grid.at(difference["position"])
    before = a.outcomes[difference["position"]].pick.label()
    found = []
    for family in FAMILIES:
        if not any(sm(member) in named for member in family):
            continue
        for member in family:
            if sm(member) in named or member not in grid.architectures:
                continue
            moved = grid.position(witness._replace(architecture=member))
            if b.outcomes[moved].pick.label() == before:
                found.append(sm(member))
    return found


def changes_of(
    report: dict[str, Any],
    since: "Version",
    version: "Version",
    a: "Snapshot",
    b: "Snapshot",
    fixes: MutableMapping[str, str],
) -> list[dict[str, Any]]:
    """The changes of one diff (`report`, `since` → `version`, whose snapshots are `a`, `b`);
    `fixes` (a cause's key → the fix that introduced it) is read and added to, oldest first."""
    found = []
    for cause in report["causes"]:
        differences = [report["differences"][number - 1] for number in cause["regions"]]
        first = differences[0]
        widens = fixes.get(_widened(cause["line"]))
        verdict = classify(explanation_of(cause), fixes.get(cause["cause"]), widens)
        assumption = a.fused_assumption or b.fused_assumption
        if "FusedAttention" in cause["backend"] and bool(a.fused_assumption) != bool(
            b.fused_assumption
        ):
            verdict = Verdict(ASSUMED, f"one side's {assumption}")
        named = sorted(
            {arch for d in differences for arch in d["architectures"]},
            key=lambda name: int(name[2:]),
        )
        change = {
            "version": version.name,
            "since": since.name,
            "commit": version.commit,
            "subject": version.subject,
            "pr": pull_request(version.subject),
            "class": verdict.kind,
            "reason": verdict.reason,
            "backend": cause["backend"],
            "direction": cause["direction"],
            "words": cause["line"],
            "cause": cause["cause"],
            "region": first["region"],
            "change": first["change"],
            "before": a.outcomes[first["position"]].pick.label(),
            "position": first["position"],
            "regions": len(differences),
            "configurations": cause["configurations"],
            "architectures": named,
            "witness": first["witness"],
            "hazards": cause["hazards"],
            "leaves_out": [],
        }
        if verdict.kind == FIX:
            if named:
                change["leaves_out"] = left_out(first, named, a, b)
            if cause["line"] not in UNSPECIFIC:  # a generic line would tie unrelated cases
                fixes.setdefault(cause["cause"], f"{version.name}'s fix: {cause['line']!r}")
                fixes.setdefault(_widened(cause["line"]), fixes[cause["cause"]])
        found.append(change)
    return found
