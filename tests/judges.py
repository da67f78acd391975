"""The harness and the two static judges side by side, on one selector text.

Whether a registry hazard's backend can still be selected is decided three times: by the
harness (`selector_patch.verify`: TE's own selector run on a virtual device), by flake8 (the
plugin's `TEA` codes, run in-process through the plugin class flake8 calls) and by
`python -m codemods.apply --check` (`codemods.apply.check`, the function the CLI runs: exit 1
iff a guard is missing). `disagreements` lists, per hazard and static judge, where one says
other than the harness; the only excusable ones are those off the witness grid
(`grid_limit.grid_limited`), and only where the static judge says reachable.
"""

from __future__ import annotations

import ast
import traceback
from typing import NamedTuple

from grid_limit import grid_limited

from codemods.apply import MISSING, check
from codemods.plan import PlanError
from lint_plugin.plugin import TeaChecker
from selector_patch.config import load_config
from selector_patch.harness import LoadedSelector, SelectionError, load_selector
from selector_patch.registry import HAZARDS, get_hazard
from selector_patch.sources import SelectorSource
from selector_patch.verify import HazardReport, verify_hazard


class MutantCrashed(Exception):
    """The selector's own code (a mutant's, a fork's) raised on the virtual device."""


def harness_reports(
    source: SelectorSource, text: str
) -> tuple[LoadedSelector, dict[str, HazardReport]]:
    """The harness's report per hazard; `MutantCrashed` if the selector's own code raises, or
    CPython would not compile it (a `nonlocal` whose binding a mutation removed)."""
    try:
        selector = load_selector(source, text=text)
    except SyntaxError as error:
        raise MutantCrashed(f"SyntaxError: {error.msg}") from error
    try:
        return selector, {hazard.id: verify_hazard(selector, hazard) for hazard in HAZARDS}
    except SelectionError as error:  # the harness's one line, raised from what TE raised
        raised = error.__cause__ or error
        innermost = traceback.extract_tb(raised.__traceback__)[-1]
        if innermost.filename == str(source.path):
            raise MutantCrashed(f"{type(raised).__name__}: {raised}") from error
        raise


class Disagreement(NamedTuple):
    hazard_id: str
    #: "flake8" or "--check".
    judge: str
    #: What the static judge says; the harness says the opposite.
    reachable: bool
    #: Why it lies off the witness grid (`grid_limited`); None: a bug in one of the judges.
    excuse: str | None

    def __str__(self) -> str:
        said = "reachable" if self.reachable else "guarded"
        return f"{self.hazard_id}: {self.judge} says {said}, the harness the opposite"


def flake8_codes(path: str, text: str) -> list[str]:
    """The codes flake8's run of the plugin reports for `text` as the file `path`."""
    checker = TeaChecker(ast.parse(text), path, text.splitlines(keepends=True))
    return [message.split()[0] for _, _, message, _ in checker.run()]


class StaticVerdicts(NamedTuple):
    """What the two static judges say of one selector text."""

    #: The codes flake8's run of the plugin reports.
    codes: list[str]
    #: `--check`'s status per hazard; None where it refuses the selector (`PlanError`, the
    #: CLI's exit 2: it names no missing guard).
    statuses: dict[str, str] | None

    def reachable(self) -> dict[str, dict[str, bool]]:
        """Per static judge, per registry hazard: reachable?"""
        hazard_ids = [hazard.id for hazard in HAZARDS]
        judged = {"flake8": {hazard_id: hazard_id in self.codes for hazard_id in hazard_ids}}
        if self.statuses is not None:
            judged["--check"] = {h: status == MISSING for h, status in self.statuses.items()}
        return judged


def static_verdicts(source: SelectorSource, text: str) -> StaticVerdicts:
    """flake8 and `--check` on `text` as the file of `source`; an internal failure of flake8's
    analysis (a `TEA9xx` row) is an assertion error here."""
    codes = flake8_codes(str(source.path), text)
    failures = [code for code in codes if code.startswith("TEA9")]
    assert not failures, f"the flake8 plugin failed: {failures}"
    try:
        statuses = check(source, text, load_config(source.path)).statuses
    except PlanError:
        statuses = None
    return StaticVerdicts(codes, statuses)


def disagreements(
    text: str,
    selector: LoadedSelector,
    reports: dict[str, HazardReport],
    static: StaticVerdicts,
) -> list[Disagreement]:
    """Every hazard on which flake8 or `--check` (`static`) says other than the harness's
    `reports` (from `selector`, loaded from `text`), each with its excuse, if any."""
    excuses: dict[str, str | None] = {}  # per hazard: one look off the grid serves both judges
    found = []
    for judge, verdicts in static.reachable().items():
        for hazard_id, reachable in verdicts.items():
            if reachable == reports[hazard_id].reachable:
                continue
            if reachable and hazard_id not in excuses:
                excuses[hazard_id] = grid_limited(text, selector, get_hazard(hazard_id))
            excuse = excuses[hazard_id] if reachable else None
            found.append(Disagreement(hazard_id, judge, reachable, excuse))
    return found


def unexcused(found: list[Disagreement]) -> list[str]:
    """The disagreements no excuse covers, in words."""
    return [str(disagreement) for disagreement in found if disagreement.excuse is None]
