"""Assertions about what TE chose, whose failure says what was chosen, why, and what was expected.

A bare `assert result.role != "FA4"` tells a reviewer that FA4 was picked, not why. These
helpers fail with the hazard's expectation (its id, title and the line TE should log when it
filters the case), TE's choice and available backends, the request, and TE's own log lines for
the call: the reasons its filters gave.
"""

from __future__ import annotations

import pytest

from selector_patch.registry import Hazard
from selector_patch.testing.cases import WITNESS, HazardCase, find_hazard
from selector_patch.testing.selector import BackendChoice


def failure_message(result: BackendChoice, hazard: Hazard, expected: str) -> str:
    return f"{hazard.id}: {hazard.title}\nexpected: {expected}\n{result}"


def _removal(hazard: Hazard) -> str:
    return f"{hazard.backend} not selected; TE should log {hazard.message!r} and fall back"


def assert_not_selected(result: BackendChoice, hazard: str | Hazard) -> None:
    """The request is inside `hazard`: its backend must not be what TE chose."""
    __tracebackhide__ = True
    hazard = find_hazard(hazard)
    if result.role == hazard.backend:
        raise AssertionError(failure_message(result, hazard, _removal(hazard)))


def assert_selected(result: BackendChoice, hazard: str | Hazard) -> None:
    """The request is a control of `hazard`: its backend must be what TE chose."""
    __tracebackhide__ = True
    hazard = find_hazard(hazard)
    if result.role != hazard.backend:
        expected = f"{hazard.backend} selected: this request is outside the hazard"
        raise AssertionError(failure_message(result, hazard, expected))


def assert_case(result: BackendChoice, case: HazardCase) -> None:
    """Judge `result` for a case from `hazard_cases`, the way `verify` judges.

    A witness must not select the hazard's backend. A control fails only when the hazard's own
    guard removed the backend (its message is in TE's log); when another of TE's filters did,
    the test is skipped, saying which.
    """
    __tracebackhide__ = True
    from selector_patch.verify import FAILED, SKIPPED, judge_control

    hazard = case.hazard
    if case.kind == WITNESS:
        assert_not_selected(result, hazard)
        return
    verdict = judge_control(result.selection, hazard)
    if verdict == FAILED:
        expected = f"{hazard.backend} selected, but the hazard's own guard removed it"
        raise AssertionError(failure_message(result, hazard, expected))
    if verdict == SKIPPED:
        reasons = [line for line in result.log if line.startswith("Disabling")]
        pytest.skip(
            f"TE's own filters exclude {hazard.backend} here, not {hazard.id}'s guard: "
            + ("; ".join(reasons) or f"it chose {result.chosen()}")
        )
