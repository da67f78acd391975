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
    _rule(
        r"cuDNN\s*(<=?|>=?|==|!=)\s*\d",
        FIX,
        POLICY,
        "TE keeps the backend off a cuDNN version range (a cuDNN that fails there)",
    ),
)
#: A version bound in a line (`and cuDNN < 9.11`): what a widened filter's line loses.
_BOUND = re.compile(r"\s*(\band\b|\bwith\b|,)?\s*cuDNN\s*(<=?|>=?|==|!=)\s*[\d.]+", re.IGNORECASE)
#: The class of a line no rule matches, by direction.
UNMATCHED = {OFF: (POLICY, "no failure named"), "on": (POLICY, "support widened")}


class Verdict(NamedTuple):
    kind: str
    reason: str


def unbounded(line: str) -> str:
    """A line without its cuDNN version bounds: TE widens a filter by moving or dropping the
    bound (#1776 -> #2185: "... for sm89 and cuDNN < 9.11" up to "... for sm89"), and the
    lines of one filter's releases then read alike."""
    return _BOUND.sub("", line).strip()


def classify(
    explanation: Explanation, reopens: str | None = None, widens: str | None = None
) -> Verdict:
    """The class of a change explained by `explanation`; `reopens` names the earlier fix a
    switched-on case had (a release and its line), which makes it a regression whatever the
    line says; `widens` the earlier fix whose line, bounds aside (`unbounded`), is this
    switched-off case's: the same filter on more cases, a fix as that one was."""
    if explanation.direction != OFF and reopens is not None:
        return Verdict(REGRESSION, f"re-opens {reopens}")
    if explanation.direction == OFF and widens is not None:
        return Verdict(FIX, f"widens {widens}")
    if explanation.line == SILENT:
        return Verdict(POLICY, "silent: no line ties it to a failure")
    for rule in RULES:
        if rule.pattern.search(explanation.line):
            kind = rule.when_off if explanation.direction == OFF else rule.when_on
            side = "switched off" if explanation.direction == OFF else "switched on"
            return Verdict(kind, f"{explanation.backend} {side}: {rule.reason}")
    kind, reason = UNMATCHED[explanation.direction]
    return Verdict(kind, f"{explanation.backend}: {reason}")
