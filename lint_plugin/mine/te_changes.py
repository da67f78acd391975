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

Where one version's fused answer is TE's C++ and the other's is the harness's assumption, a
change about FusedAttention may be the assumption's rather than TE's: it is classed `assumed`,
with the sentence, and is neither a fix nor a regression. A release with no C++ at all (2.6.0:
no tree, and its wheel's library ships no headers) is assumed everywhere; TE 2.20+'s compiled
query only where a request reached cuDNN's own support check, which needs a GPU (its log says
so), and only a change whose regions hold such a request is `assumed` there. Across a release
assumed everywhere, the changes are judged between the nearest releases on each side that have
TE's own answer (`bridged`: 2.5.0 -> 2.6.0.post1), each reported at the first release known to
have it, saying which release's C++ is unknown.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, MutableMapping, Sequence

from selector_patch.harness.config_fields import VERDICT_ASSUMED
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


def release_wide(snapshot: "Snapshot") -> str | None:
    """The snapshot's assumption where every fused answer is one (no TE C++ for the release),
    else None (TE's own answer, or TE 2.20+'s with cuDNN's verdict assumed request by request)."""
    note = snapshot.fused_assumption
    return note if note and not note.startswith(VERDICT_ASSUMED) else None


def _assumed(snapshot: "Snapshot", differences: Sequence[dict[str, Any]]) -> str | None:
    """What the snapshot's fused answers in `differences` rest on: its release-wide assumption,
    or cuDNN's verdict where one of them reached cuDNN's own check, else None."""
    if not snapshot.fused_assumption:
        return None
    return release_wide(snapshot) or next(
        (
            line
            for difference in differences
            for line in snapshot.outcomes[difference["position"]].log
            if line.startswith(VERDICT_ASSUMED)
        ),
        None,
    )


def bridged(
    across: Sequence[dict[str, Any]],
    held: Sequence[dict[str, Any]],
    unknown: Sequence[tuple["Version", "Snapshot"]],
) -> list[dict[str, Any]]:
    """The changes from the last release with TE's own fused answer to the next one, with the
    releases between them assumed everywhere (`unknown`, in order): `held`, the consecutive
    pairs' changes, less those classed `assumed`; then each change of `across` (the direct
    diff's) that no kept one explains, at the first release between them whose own selector
    already logs its line and picks anew for its witness (Python TE's, not the C++), else at
    the release after them. Each of `across`'s says whose C++ is unknown."""
    kept = [change for change in held if change["class"] != ASSUMED]
    explained = {(change["cause"], change["direction"]) for change in kept}
    names = ", ".join(version.name for version, _snapshot in unknown)
    for change in across:
        if (change["cause"], change["direction"]) in explained:
            continue
        judged = f"judged {change['since']} -> {change['version']}: {names}'s C++ unknown"
        for version, snapshot in unknown:
            outcome = snapshot.outcomes[change["position"]]
            if (
                change["words"] not in UNSPECIFIC
                and outcome.pick.label() != change["before"]
                and any(change["words"] in line for line in outcome.log)
            ):
                change["version"] = version.name
                break
        change["unknown_cxx"] = names
        change["reason"] += f"; {judged}"
        kept.append(change)
    order = [version.name for version, _snapshot in unknown]
    return sorted(
        kept,
        key=lambda change: (
            order.index(change["version"]) if change["version"] in order else len(order)
        ),
    )


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
        assumptions = (_assumed(a, differences), _assumed(b, differences))
        if "FusedAttention" in cause["backend"] and bool(assumptions[0]) != bool(assumptions[1]):
            verdict = Verdict(ASSUMED, f"one side's {assumptions[0] or assumptions[1]}")
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
            "unknown_cxx": None,
        }
        if verdict.kind == FIX:
            if named:
                change["leaves_out"] = left_out(first, named, a, b)
            if cause["line"] not in UNSPECIFIC:  # a generic line would tie unrelated cases
                fixes.setdefault(cause["cause"], f"{version.name}'s fix: {cause['line']!r}")
                fixes.setdefault(_widened(cause["line"]), fixes[cause["cause"]])
        found.append(change)
    return found
