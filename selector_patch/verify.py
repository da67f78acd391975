"""`verify`: run every registry hazard's witnesses and controls through a real selector.

Per hazard it answers three questions against TE's own code on the virtual device:

- applicable: does the selector have the hazard's backend at all (one of the role's flag names
  occurs in its source), can its `AttentionParams` ask for the optional features the hazard
  triggers on (`num_splits`, ...), and does the release's own code make the request at all
  (`Hazard.never_made`: TE 2.8 - 2.14's `DotProductAttention` refuses an MXFP8 recipe's
  `fp8_dpa` before its selector runs, which the selector alone would answer)?
- reachable: does any witness (an input inside the hazard) select that backend? Every witness
  is listed with its answer, the first that reaches the backend named; the witnesses include the
  default environment (nothing disabled, the packages installed, cuDNN's answer TE's own C++'s
  where it is at hand), so a hazard users hit without setting anything shows there.
- controls: for each witness and each of the hazard's controls (inputs just outside it), is the
  backend still selected (passed)? A control *fails* only when the backend was not selected and
  TE's log for that call carries the hazard's own message, i.e. the hazard's guard removed it;
  when another of TE's filters excluded it, the control says nothing and is skipped. Controls the
  release cannot express (MLA head dims on TE 1.9) are skipped too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from selector_patch.harness import LoadedSelector, Selection, Unrepresentable
from selector_patch.registry import HAZARDS, Hazard
from selector_patch.scenario import Scenario, expressible


@dataclass
class ControlReport:
    passed: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0


@dataclass
class HazardReport:
    id: str
    applicable: bool
    #: Every witness the release can express, and whether it selected the hazard's backend.
    witnesses: list[tuple[Scenario, bool]]
    controls: ControlReport
    #: How many witnesses selected FusedAttention only on an assumed fused answer (no C++ for
    #: the release, or TE 2.20+'s query leaving the request to cuDNN's own support check).
    assumed: int = 0
    #: Why the release's own code never makes the request (no witness is run); "" otherwise.
    never_made: str = ""

    @property
    def witness(self) -> Scenario | None:
        """The first witness that selects the hazard's backend; None when none does."""
        return next((witness for witness, reached in self.witnesses if reached), None)

    @property
    def reachable(self) -> bool:
        return self.witness is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "applicable": self.applicable,
            "reachable": self.reachable,
            "witness": self.witness.describe() if self.witness is not None else None,
            "reached_on_assumed_fused_answer": self.assumed,
            "never_made": self.never_made or None,
            "witnesses": [
                {"inputs": witness.describe(), "reached": reached}
                for witness, reached in self.witnesses
            ],
            "controls": {
                "passed": self.controls.passed,
                "failed": self.controls.failed,
                "skipped": self.controls.skipped,
            },
        }

    def summary(self) -> str:
        """One line for humans."""
        if self.witness is not None:
            reached = sum(reached for _, reached in self.witnesses)
            verdict = (
                f"REACHABLE on {self.witness.sm} ({reached} of {len(self.witnesses)} witnesses"
                f"{self._resting(reached)})"
            )
        else:
            verdict = "not reachable" if self.applicable else "not applicable"
            if self.never_made:
                verdict += f": {self.never_made}"
        failed = ", ".join(sorted({control["name"] for control in self.controls.failed}))
        return (
            f"{self.id} {verdict}; controls: {self.controls.passed} passed, "
            f"{len(self.controls.failed)} failed{f' ({failed})' if failed else ''}, "
            f"{self.controls.skipped} skipped"
        )

    def _resting(self, reached: int) -> str:
        if not self.assumed:
            return ""
        which = "each" if self.assumed == reached else f"{self.assumed} of them"
        return f", {which} on an assumed fused answer"

    @property
    def ok(self) -> bool:
        return not self.reachable and not self.controls.failed


def applicable(selector: LoadedSelector, hazard: Hazard) -> bool:
    """Whether the selector's source names one of the hazard backend's flags, and its
    `AttentionParams` can ask for every optional feature the hazard triggers on."""
    fields = selector.params_fields
    return all(expressible(c.input, fields) for c in hazard.triggers) and any(
        re.search(rf"\b{re.escape(flag)}\b", selector.text) for flag in hazard.role.flags
    )


def _try_select(selector: LoadedSelector, scenario: Scenario) -> Selection | None:
    try:
        return selector.select(scenario)
    except Unrepresentable:
        return None


def _mentions(selection: Selection, message: str) -> bool:
    return any(message in line for line in selection.log)


#: What one control's selection says about a hazard's guard (`judge_control`).
PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


def judge_control(selection: Selection, hazard: Hazard) -> str:
    """PASSED when the backend stayed selected; FAILED when the hazard's own guard removed it
    (its message is in TE's log); SKIPPED when another of TE's filters did, which says nothing
    about this hazard. Shared by `verify` and the pytest plugin's `assert_case`."""
    if selection.role == hazard.backend:
        return PASSED
    return FAILED if _mentions(selection, hazard.message) else SKIPPED


def verify_hazard(selector: LoadedSelector, hazard: Hazard) -> HazardReport:
    never = hazard.never_made(selector.te_version)
    if never:
        return HazardReport(hazard.id, False, [], ControlReport(), never_made=never)
    witnesses = list(hazard.witnesses())
    selections = [(witness, _try_select(selector, witness)) for witness in witnesses]
    answered = [
        (w, selection.role == hazard.backend)
        for w, selection in selections
        if selection is not None
    ]
    assumed = sum(  # where FusedAttention itself is the assumed answer
        1
        for _, selection in selections
        if selection is not None
        and selection.role == hazard.backend == "FUSED"
        and selector.assumption_of(selection) is not None
    )
    controls = ControlReport()
    seen: set[Scenario] = set()
    for witness in witnesses:
        for control, scenario in hazard.control_scenarios(witness):
            if scenario in seen:
                continue
            seen.add(scenario)
            selection = _try_select(selector, scenario)
            verdict = SKIPPED if selection is None else judge_control(selection, hazard)
            if verdict == PASSED:
                controls.passed += 1
            elif verdict == FAILED:
                controls.failed.append({"name": control.name, "inputs": scenario.describe()})
            else:
                controls.skipped += 1
    return HazardReport(
        id=hazard.id,
        applicable=applicable(selector, hazard),
        witnesses=answered,
        controls=controls,
        assumed=assumed,
    )


def verify(selector: LoadedSelector, hazards: Iterable[Hazard] = HAZARDS) -> list[HazardReport]:
    return [verify_hazard(selector, hazard) for hazard in hazards]
