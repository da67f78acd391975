"""A diff's regions grouped by their cause, each cause classified with its reason.

Every region holds requests with one explanation (`causes.explain`; `regions.find` keeps requests
of different causes apart), so a cause is the regions whose explanation names it, in the report's
order: regressions first, then fixes, then policy, the larger first within each. Each cause
says the line that explains it (its first region's witness's, TE's own words), which side
logged it, the backends switched off or on (one rule stated per FlashAttention version is one
cause for all of them), its class and reason (`classify`), and its regions by number in the
report.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from selector_patch.selection_diff.causes import FUSED_GENERIC, SILENT, Explanation
from selector_patch.selection_diff.classify import FIX, POLICY, REGRESSION, classify

ORDER = {REGRESSION: 0, FIX: 1, POLICY: 2}


def explanation_json(explanation: Explanation) -> dict[str, str]:
    return explanation._asdict()


#: Lines that say a backend is off, not why: TE's C++ refused without a warning, or nothing.
UNSPECIFIC = (FUSED_GENERIC, SILENT)
_INPUT = re.compile(r"([a-z][a-z0-9_]*)\s*(?:!=|<=|>=|==|=|<|>| in )")


def _refined(explanation: Explanation, conditions: Sequence[str]) -> str:
    """The cause's key; for a line that does not say why, with the inputs the region states
    (`[cudnn_version]`, `[core_attention_bias_type]`): TE's C++ refuses cuDNN 9.10.0 and an
    ALiBi bias in one generic line, and they are two causes."""
    if explanation.line not in UNSPECIFIC:
        return explanation.key
    inputs = sorted({m for c in conditions for m in _INPUT.findall(c)})
    return f"{explanation.key} [{', '.join(inputs)}]" if inputs else explanation.key


def explanation_of(cause: dict[str, Any]) -> Explanation:
    """A cause's explanation, for the backends of all its regions."""
    return Explanation(
        cause["line"], cause["cause"], cause["side"], cause["direction"], cause["backend"]
    )


def group(differences: Sequence[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """(the differences in their causes' order, the causes); a difference's `explanation` is
    `explanation_json`'s, and each gains `cause`, its cause's number."""
    causes: dict[str, dict[str, Any]] = {}
    members: dict[str, list[dict[str, Any]]] = {}
    for difference in differences:
        explanation = Explanation(**difference["explanation"])
        explanation = explanation._replace(key=_refined(explanation, difference["conditions"]))
        cause = causes.get(explanation.key)
        if cause is None:
            cause = causes[explanation.key] = {
                "cause": explanation.key,
                "line": explanation.line,
                "side": explanation.side,
                "direction": explanation.direction,
                "backend": explanation.backend,
                "hazards": [],
                "configurations": 0,
            }
            members[explanation.key] = []
        members[explanation.key].append(difference)
        cause["configurations"] += difference["configurations"]
        named = cause["backend"].split(", ")
        if not any(name.startswith(explanation.backend) for name in named):
            cause["backend"] += f", {explanation.backend}"  # "FlashAttention" is FA4's too
        for hazard in difference["hazards"]:
            if hazard not in cause["hazards"]:
                cause["hazards"].append(hazard)
    for cause in causes.values():
        cause["class"], cause["reason"] = classify(explanation_of(cause))
    ordered = sorted(
        causes.values(), key=lambda c: (ORDER[c["class"]], -c["configurations"], c["cause"])
    )
    regrouped = []
    for number, cause in enumerate(ordered, 1):
        first = len(regrouped) + 1
        for difference in members[cause["cause"]]:
            regrouped.append({**difference, "cause": number})
        cause["regions"] = list(range(first, len(regrouped) + 1))
    return regrouped, ordered


def tally(causes: Sequence[dict[str, Any]]) -> str:
    """`3 causes: 1 fix, 2 policy`."""
    counts = {kind: sum(c["class"] == kind for c in causes) for kind in ORDER}
    said = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
    return f"{len(causes)} cause{'s' if len(causes) != 1 else ''}: {said}"
