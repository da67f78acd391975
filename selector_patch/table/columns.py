"""The scenarios of the selection table, derived from the hazard registry.

Rows are the architectures the registry names; a column is one request a user makes of
`DotProductAttention`, asked on every row. Per hazard the columns are its witnesses (one per
witness shape) and its controls, applied to its first witness shape, except controls that only
move the architecture: the rows already show every architecture. Every column runs in the
hazard's isolating environment (its backend left as the only flash backend, fused attention off,
as in seed 000's reproduction), so a cell shows the backend TE really picks for that request,
not one hidden behind a preference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from selector_patch.registry import ISOLATING_ENV, PACKAGE_FIELD, Hazard
from selector_patch.scenario import Scenario


def architectures(hazards: Iterable[Hazard]) -> tuple[tuple[int, int], ...]:
    """The rows: every architecture a hazard names, as affected or as a control, in order."""
    named = set()
    for hazard in hazards:
        named.update(hazard.architectures)
        for control in hazard.controls:
            if "compute_capability" in control.changes:
                named.add(tuple(control.changes["compute_capability"]))
    return tuple(sorted(named))


@dataclass(frozen=True)
class Column:
    hazard: Hazard
    #: "witness" (inside the hazard on its architectures) or "control" (just outside it).
    kind: str
    label: str
    #: The request, on the hazard's first architecture; each row moves it to its own.
    scenario: Scenario

    def on(self, architecture: tuple[int, int]) -> Scenario:
        return self.scenario.with_changes({"compute_capability": architecture})


def _mode(scenario: Scenario) -> str:
    if scenario.training:
        return "training" if scenario.backward else "forward-only training"
    return "eval with backward" if scenario.backward else "eval"


def label(hazard: Hazard, scenario: Scenario) -> str:
    """The request in words, naming only the inputs the hazard's triggers talk about."""
    inputs = {condition.input for condition in hazard.triggers}
    request = _mode(scenario)
    if "deterministic" in inputs:
        request = f"{'deterministic' if scenario.deterministic else 'nondeterministic'} {request}"
    words = [request]
    if "attention_dropout" in inputs:
        dropout = scenario.attention_dropout
        words.append(f"dropout {dropout:g}" if dropout else "no dropout")
    if "padded_head_dim" in inputs:
        qk, v = scenario.head_dim_qk, scenario.head_dim_v
        words.append(f"head dim {qk}" if qk == v else f"head dim {qk}/{v}")
    if "num_splits" in inputs:
        words.append(f"num_splits {scenario.num_splits}")
    installed = getattr(scenario, PACKAGE_FIELD[hazard.backend])
    if installed != hazard.kernel_version:
        words.append(f"{hazard.evidence.package} {installed}")
    return ", ".join(words)


def hazard_columns(hazard: Hazard) -> list[Column]:
    """The hazard's witness shapes and its non-architecture controls, isolated."""
    isolating = tuple(sorted(ISOLATING_ENV[hazard.backend].items()))
    witnesses = [
        witness
        for witness in hazard.witnesses()
        if witness.env == isolating
        and witness.compute_capability == hazard.architectures[0]
        and getattr(witness, PACKAGE_FIELD[hazard.backend]) == hazard.kernel_version
    ]
    columns = [Column(hazard, "witness", label(hazard, w), w) for w in witnesses]
    for control, scenario in hazard.control_scenarios(witnesses[0]):
        if "compute_capability" not in control.changes:
            columns.append(Column(hazard, "control", label(hazard, scenario), scenario))
    return columns


def table_columns(hazards: Iterable[Hazard]) -> list[Column]:
    """Every hazard's columns, without repeating a request."""
    columns, seen = [], set()
    for hazard in hazards:
        for column in hazard_columns(hazard):
            if column.scenario not in seen:
                seen.add(column.scenario)
                columns.append(column)
    return columns
