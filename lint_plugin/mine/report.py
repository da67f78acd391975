"""The miner's verdicts for people (text) and for programs (JSON).

Text puts what needs action first - disagreements, then UNGUARDED refusals with the harness's
witness - and ends with the declarations to paste. Every refusal appears, the unmapped ones
with the reason, so a reader can check that nothing was dropped.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from lint_plugin.mine.candidates import same_hazard
from lint_plugin.mine.crosscheck import (
    DISAGREEMENT,
    GUARDED,
    NOT_APPLICABLE,
    UNGUARDED,
    UNMAPPED,
    Verdict,
)
from lint_plugin.mine.declare import hazard_tables
from lint_plugin.mine.kernel import DISTRIBUTION, KernelSource
from selector_patch.registry import Hazard
from selector_patch.scenario import Scenario
from selector_patch.sources import SelectorSource

ORDER = (DISAGREEMENT, UNGUARDED, GUARDED, NOT_APPLICABLE, UNMAPPED)


def _key(verdict: Verdict) -> tuple | None:
    return same_hazard(verdict.hazard) if verdict.hazard is not None else None


def _sms(architectures) -> str:
    return ", ".join(Scenario(compute_capability=arch).sm for arch in architectures)


def verdict_json(verdict: Verdict, declared: Mapping[tuple, Hazard]) -> dict[str, Any]:
    case = verdict.case
    refusal = case.refusal
    declaration = declared.get(_key(verdict))
    return {
        "status": verdict.status,
        "file": refusal.file,
        "line": refusal.line,
        "function": refusal.function,
        "direction": "backward" if refusal.backward else "forward",
        "text": refusal.text,
        "message": refusal.message,
        "condition": refusal.condition,
        "branch": refusal.branch,
        "architectures": [list(arch) for arch in case.architectures],
        "features": [feature.label for feature in case.features],
        "triggers": [str(t) for t in case.triggers] if case.unmapped is None else [],
        "matches": verdict.matches,
        "witness": verdict.witness.describe() if verdict.witness is not None else None,
        "detail": verdict.detail,
        "declaration": declaration.to_mapping() if declaration is not None else None,
    }


def to_json(
    kernel: KernelSource,
    source: SelectorSource,
    verdicts: Sequence[Verdict],
    declared: Mapping[tuple, Hazard],
) -> str:
    report = {
        "kernel": {"package": DISTRIBUTION, "version": kernel.version, "root": str(kernel.root)},
        "te": {"version": source.te_version, "selector": str(source.path)},
        "counts": {status: sum(v.status == status for v in verdicts) for status in ORDER},
        "verdicts": [verdict_json(v, declared) for v in verdicts],
    }
    return json.dumps(report, indent=2)


def to_text(
    kernel: KernelSource,
    source: SelectorSource,
    verdicts: Sequence[Verdict],
    declared: Mapping[tuple, Hazard],
) -> str:
    counts = ", ".join(
        f"{n} {status}" for status in ORDER if (n := sum(v.status == status for v in verdicts))
    )
    refusals = len({(v.case.refusal.file, v.case.refusal.line) for v in verdicts})
    lines = [
        f"{DISTRIBUTION} {kernel.version} ({kernel.package}) against TE {source.te_version}"
        f" ({source.path})",
        f"{refusals} architecture-conditioned refusals, {len(verdicts)} cases: {counts}",
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
    refusal = case.refusal
    direction = "backward" if refusal.backward else "forward"
    lines = [
        f"{verdict.status:<12} {refusal.file}:{refusal.line}  {refusal.function}  {direction}"
        f"  {_sms(case.architectures)}",
        f"    {refusal.text}",
    ]
    if case.unmapped is not None:
        return [*lines, f"    unmapped: {case.unmapped}"]
    when = " and ".join(str(t) for t in case.triggers) or "always"
    same = f"  (= {verdict.matches})" if verdict.matches else ""
    declaration = declared.get(_key(verdict))
    new = f"  (declared below as {declaration.id})" if declaration is not None else ""
    lines.append(f"    when: {when}{same}{new}")
    if verdict.witness is not None:
        lines.append(f"    witness: {json.dumps(verdict.witness.describe())}")
    if verdict.status == DISAGREEMENT:
        lines.append(f"    judges: {verdict.detail}")
    return lines
