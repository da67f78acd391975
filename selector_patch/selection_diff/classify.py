"""Fix, regression or policy: what a change in the selection is, with the reason.

- **fix**: a backend switched off where it fails (TE's line names a failure, or says the kernel
  or cuDNN cannot run the request);
- **regression**: a case re-opened or widened into a failure (a backend switched on where the
  line that had kept it off names a failure, or where an earlier release's fix switched it off:
  `reopens`);
- **policy**: a preference, a switch the user sets, a new feature's own filter, support widened.

The rules are data (`RULES`): the first whose pattern the explaining line matches decides, by
the change's direction, and its reason is printed beside the class. A silent change (no line)
is policy: TE says nothing that would tie it to a failure.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from selector_patch.selection_diff.causes import OFF, SILENT, Explanation

FIX, REGRESSION, POLICY = "fix", "regression", "policy"


class Rule(NamedTuple):
    """A kind of explaining line: its pattern, its class when the backend is switched off and
    when it is switched on, and why."""

    pattern: re.Pattern[str]
    when_off: str
    when_on: str
    reason: str


def _rule(pattern: str, when_off: str, when_on: str, reason: str) -> Rule:
    return Rule(re.compile(pattern, re.IGNORECASE), when_off, when_on, reason)


RULES: tuple[Rule, ...] = (
    _rule(r"due to NVTE_\w+|NVTE_\w+=\d", POLICY, POLICY, "an NVTE_* switch the user sets"),
    _rule(r"prefer|preference|performance", POLICY, POLICY, "a preference between backends"),
    _rule(
        r"known (issue|bug|problem)s?|\bbugs?\b|\bNaNs?\b|illegal memory|\bIMA\b"
        r"|non-?determinis|wrong result|incorrect|numerical|accuracy|upgrade your cudnn",
        FIX,
        REGRESSION,
        "TE names a failure",
    ),
    _rule(
        r"not supported|does not support|unsupported|only supports?|requires?|is supported by"
        r"|compute capability|no backend supports|not yet|cannot|can't|for (dropout|determinis)",
        FIX,
        POLICY,
        "TE says the backend cannot run the request",
    ),
)
#: The class of a line no rule matches, by direction.
UNMATCHED = {OFF: (POLICY, "no failure named"), "on": (POLICY, "support widened")}


class Verdict(NamedTuple):
    kind: str
    reason: str


def classify(explanation: Explanation, reopens: str | None = None) -> Verdict:
    """The class of a change explained by `explanation`; `reopens` names the earlier fix a
    switched-on case had (a release and its line), which makes it a regression whatever the
    line says."""
    if explanation.direction != OFF and reopens is not None:
        return Verdict(REGRESSION, f"re-opens {reopens}")
    if explanation.line == SILENT:
        return Verdict(POLICY, "silent: no line ties it to a failure")
    for rule in RULES:
        if rule.pattern.search(explanation.line):
            kind = rule.when_off if explanation.direction == OFF else rule.when_on
            side = "switched off" if explanation.direction == OFF else "switched on"
            return Verdict(kind, f"{explanation.backend} {side}: {rule.reason}")
    kind, reason = UNMATCHED[explanation.direction]
    return Verdict(kind, f"{explanation.backend}: {reason}")
