"""Across kernel releases: which findings appear, disappear or move between architectures.

A finding is identified across releases by what it is, not where it is (lines move): its
backend, direction, kind and the kernel's own words (a refusal's message, else the statement)
in its function. Grouped by the selector inputs they fire for, the same rows also show a case
changing kind: flash-attn 2.7.2.post1 *refuses* head dim > 192 with dropout in the backward on
sm86 / sm89 (a `TORCH_CHECK` in `mha_bwd`), and from 2.7.3 the same inputs reach
`run_mha_bwd_hdim256`, which launches nothing on those GPUs (seed 001).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from lint_plugin.mine.crosscheck import Verdict
from lint_plugin.mine.findings import sms


@dataclass(frozen=True)
class Release:
    version: str
    verdicts: Sequence[Verdict]


def identity(verdict: Verdict) -> tuple:
    case = verdict.case
    site = case.site
    return (case.backend, site.direction, site.kind, site.function, site.message or site.text)


def inputs(verdict: Verdict) -> tuple:
    """What a row of the table is about: backend, direction and the triggers (or the reason)."""
    case = verdict.case
    when = " and ".join(str(t) for t in case.triggers) or "always"
    return (case.backend, case.site.direction, case.unmapped or when)


def _present(release: Release) -> dict[tuple, tuple]:
    found: dict[tuple, tuple] = {}
    for verdict in release.verdicts:
        archs, statuses = found.get(identity(verdict), ((), ()))
        found[identity(verdict)] = (
            tuple(dict.fromkeys((*archs, *verdict.case.architectures))),
            tuple(dict.fromkeys((*statuses, verdict.status))),
        )
    return found


def changes(releases: Sequence[Release]) -> list[dict[str, Any]]:
    """From each release to the next: findings that appear, disappear or change architectures."""
    found = []
    for before, after in zip(releases, releases[1:]):
        old, new = _present(before), _present(after)
        for key in [*new, *(k for k in old if k not in new)]:
            if key in new and key not in old:
                change = "appears"
            elif key in old and key not in new:
                change = "disappears"
            elif set(old[key][0]) != set(new[key][0]):
                change = "changes architectures"
            else:
                continue
            backend, direction, kind, function, words = key
            found.append(
                {
                    "version": after.version,
                    "since": before.version,
                    "change": change,
                    "backend": backend,
                    "direction": direction,
                    "kind": kind,
                    "function": function,
                    "words": words,
                    "before": sms(old[key][0]) if key in old else "",
                    "after": sms(new[key][0]) if key in new else "",
                }
            )
    return found


def table(releases: Sequence[Release]) -> list[dict[str, Any]]:
    """Per selector-input row, what each release does there: kind, function, architectures."""
    rows: dict[tuple, dict[str, list[str]]] = {}
    for release in releases:
        for verdict in release.verdicts:
            case = verdict.case
            cell = (
                f"{case.site.kind} {case.site.function} on {sms(case.architectures)}:"
                f" {verdict.status}"
            )
            column = rows.setdefault(inputs(verdict), {}).setdefault(release.version, [])
            if cell not in column:
                column.append(cell)
    return [
        {"backend": b, "direction": d, "inputs": when, "releases": cells}
        for (b, d, when), cells in rows.items()
    ]


def to_text(releases: Sequence[Release]) -> str:
    versions = [release.version for release in releases]
    lines = [f"# Across releases {', '.join(versions)}", ""]
    for change in changes(releases):
        where = change["after"] or change["before"]
        moved = (
            f" ({change['before']} -> {change['after']})"
            if change["before"] and change["after"]
            else ""
        )
        lines.append(
            f"{change['version']}: {change['change']:<22} {change['backend']} {change['direction']}"
            f" {change['kind']} in {change['function']} on {where}{moved}: {change['words']}"
        )
    lines += ["", "## By selector inputs (rows that differ between releases)"]
    for row in table(releases):
        cells = row["releases"]
        if len({tuple(cells.get(v, [])) for v in versions}) == 1:
            continue
        lines += ["", f"{row['backend']} {row['direction']} when {row['inputs']}:"]
        for version in versions:
            for cell in cells.get(version, ["nothing"]):
                lines.append(f"    {version:<12} {cell}")
    return "\n".join(lines)
