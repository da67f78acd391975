"""The miner's verdicts for people (text) and for programs (JSON).

Text puts what needs action first - disagreements, then UNGUARDED sites with the harness's
witness and, where a case spans architectures TE treats differently, the status of each - and
ends with the declarations to paste. Every case appears, those the judges do not take with
their class and reason (unreachable through TE, citing TE's calls; kernel-internal; unmapped),
so a reader can check that nothing was dropped.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Protocol, Sequence

from lint_plugin.mine.candidates import same_hazard
from lint_plugin.mine.crosscheck import DISAGREEMENT, GUARDED, NOT_APPLICABLE, UNGUARDED, Verdict
from lint_plugin.mine.declare import hazard_tables
from lint_plugin.mine.findings import INTERNAL, UNMAPPED, UNREACHABLE, sms
from selector_patch.registry import Hazard
from selector_patch.sources import SelectorSource

ORDER = (DISAGREEMENT, UNGUARDED, GUARDED, NOT_APPLICABLE, UNREACHABLE, INTERNAL, UNMAPPED)
#: How a report names the classes of the cases the judges do not take, before the reason.
UNJUDGED = {
    UNREACHABLE: "unreachable through TE",
    INTERNAL: "kernel-internal",
    UNMAPPED: "unmapped",
}


def _key(verdict: Verdict) -> tuple | None:
    return same_hazard(verdict.hazard) if verdict.hazard is not None else None


class Kernel(Protocol):
    """What a report says about the kernel sources it read (either side's source object)."""

    version: str

    @property
    def label(self) -> str: ...

    def describe(self) -> dict[str, str]: ...


def verdict_json(verdict: Verdict, declared: Mapping[tuple, Hazard]) -> dict[str, Any]:
    case = verdict.case
    site = case.site
    declaration = declared.get(_key(verdict))
    return {
        "status": verdict.status,
        "backend": case.backend,
        "kind": site.kind,
        "file": site.file,
        "line": site.line,
        "function": site.function,
        "direction": site.direction,
        "text": site.text,
        "message": site.message,
        "condition": site.condition,
        "branch": site.branch,
        "architectures": [list(arch) for arch in case.architectures],
        "by_architecture": {sms([arch]): status for arch, status in verdict.by_arch.items()},
        "features": list(case.labels),
        "triggers": [str(t) for t in case.triggers] if case.unmapped is None else [],
        "matches": verdict.matches,
        "witness": verdict.witness.describe() if verdict.witness is not None else None,
        "detail": verdict.detail,
        "declaration": declaration.to_mapping() if declaration is not None else None,
    }


def report_json(
    kernel: Kernel,
    source: SelectorSource,
    verdicts: Sequence[Verdict],
    declared: Mapping[tuple, Hazard],
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """One kernel's verdicts against one selector, as a JSON-able mapping; `notes` say what
    the miner did not list (sources absent, checks no selector input decides)."""
    return {
        "kernel": {**kernel.describe(), "notes": list(notes)},
        "te": {"version": source.te_version, "selector": str(source.path)},
        "counts": {status: sum(v.status == status for v in verdicts) for status in ORDER},
        "verdicts": [verdict_json(v, declared) for v in verdicts],
    }


def to_text(
    kernel: Kernel,
    source: SelectorSource,
    verdicts: Sequence[Verdict],
    declared: Mapping[tuple, Hazard],
    notes: Sequence[str] = (),
) -> str:
    counts = ", ".join(
        f"{n} {status}" for status in ORDER if (n := sum(v.status == status for v in verdicts))
    )
    sites = len({(v.case.site.file, v.case.site.line) for v in verdicts})
    lines = [
        f"{kernel.label} against TE {source.te_version} ({source.path})",
        f"{sites} sites, {len(verdicts)} cases: {counts}",
        *notes,
    ]
    for status in ORDER:
        for verdict in (v for v in verdicts if v.status == status):
            lines += ["", *_verdict_lines(verdict, declared)]
    if declared:
        lines += [
            "",
            "# Declare the new UNGUARDED hazards in pyproject.toml; the lint plugin, the codemod",
            "# and the runtime patch then check and guard them:",
            "",
            hazard_tables(declared.values()),
        ]
    return "\n".join(lines)


def _verdict_lines(verdict: Verdict, declared: Mapping[tuple, Hazard]) -> list[str]:
    case = verdict.case
    site = case.site
    lines = [
        f"{verdict.status:<12} {site.file}:{site.line}  {site.function}  {case.backend}"
        f" {site.direction} {site.kind}  {sms(case.architectures)}",
        f"    {site.text}",
    ]
    if case.unmapped is not None:
        return [*lines, f"    {UNJUDGED[case.standing]}: {case.unmapped}"]
    when = " and ".join(str(t) for t in case.triggers) or "always"
    same = f"  (= {verdict.matches})" if verdict.matches else ""
    declaration = declared.get(_key(verdict))
    new = f"  (declared below as {declaration.id})" if declaration is not None else ""
    lines.append(f"    when: {when}{same}{new}")
    if len(set(verdict.by_arch.values())) > 1:
        split = "; ".join(
            f"{status} on {sms(verdict.on(status))}" for status in ORDER if verdict.on(status)
        )
        lines.append(f"    per architecture: {split}")
    if verdict.witness is not None:
        lines.append(f"    witness: {json.dumps(verdict.witness.describe())}")
    if verdict.status == DISAGREEMENT:
        lines.append(f"    judges: {verdict.detail}")
    return lines
