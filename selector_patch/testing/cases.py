"""A hazard's witnesses and controls as `pytest.param`s, with ids that say what each case is.

The cases are the registry's own (`Hazard.witnesses()`, `Hazard.control_scenarios()`), the same
`verify`, the analyzer and the codemod's self-check use. An id names what sets a case apart from
the hazard's other cases and nothing else: `TEA002-witness-sm120-hdim224-fa2_2.8.3-fa2_only`,
`TEA002-control-no_dropout-sm120-hdim224-fa2_2.8.3-fa2_only` (a control's id starts with the
control's name and leaves out the inputs the control changes). Hazards are named by id: the
registry's, or ones declared in the `[tool.te-attn-guards]` table of the nearest
`pyproject.toml` above the working directory (the rule the runtime patch follows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import pytest

from selector_patch.config import load_config
from selector_patch.registry import HAZARDS, ISOLATING_ENV, PACKAGE_FIELD, Control, Hazard
from selector_patch.scenario import BHSS_FIELDS, KV_TILE_REMAINDER, Scenario
from selector_patch.testing.inputs import keyword_inputs

WITNESS, CONTROL = "witness", "control"
HEAD_DIMS = ("head_dim_qk", "head_dim_v")
#: Trigger inputs derived from other inputs, by the scenario fields a case spells out for them.
SPELT_AS = {
    "padded_head_dim": HEAD_DIMS,
    "mla": HEAD_DIMS,
    "sliding_window": ("window_size",),
    "bhss": BHSS_FIELDS,
    "qkv_format": ("qkv_layout",),
    KV_TILE_REMAINDER: ("max_seqlen_kv",),
}
#: How an id says a boolean input, true and false.
BOOL_WORDS = {
    "training": ("training", "eval"),
    "backward": ("backward", "forward_only"),
    "deterministic": ("deterministic", "nondeterministic"),
}


def find_hazard(hazard: str | Hazard) -> Hazard:
    """`hazard` itself, or the configured (else registry) hazard with that id."""
    if isinstance(hazard, Hazard):
        return hazard
    config = load_config(Path.cwd())
    known = {h.id: h for h in (*HAZARDS, *config.hazards, *config.te_fixes)}
    if hazard not in known:
        raise ValueError(f"unknown hazard {hazard!r}; known: {', '.join(known)}")
    return known[hazard]


def hazard_inputs(hazard: Hazard) -> tuple[str, ...]:
    """The inputs a case of `hazard` always spells out, default or not: the architecture, the
    backend's package version and every input a trigger reads."""
    names = ["compute_capability"]
    names += [PACKAGE_FIELD[hazard.backend]] if hazard.backend in PACKAGE_FIELD else []
    for condition in hazard.triggers:
        names += SPELT_AS.get(condition.input, [condition.input])
    return tuple(dict.fromkeys(names))


def _word(name: str, scenario: Scenario, hazard: Hazard) -> str:
    """One fact of `scenario` in an id: `sm120`, `hdim192_256`, `fa2_2.8.3`, `fa2_only`."""
    if name == "compute_capability":
        return scenario.sm
    if name == "head_dims":
        qk, v = scenario.head_dim_qk, scenario.head_dim_v
        return f"hdim{qk}" if qk == v else f"hdim{qk}_{v}"
    value = getattr(scenario, name)
    if name in PACKAGE_FIELD.values():
        return f"fa{name[-1]}_{value or 'none'}"
    if name == "env":
        env = dict(value)
        if env == ISOLATING_ENV[hazard.backend]:
            return f"{hazard.backend.lower()}_only"
        return "-".join(f"{key}={env[key]}" for key in sorted(env)) or "default_env"
    if name == "cudnn_version":
        return "cudnn" + ".".join(map(str, value))
    if isinstance(value, tuple):
        return f"{name}_{'_'.join(map(str, value))}"
    if isinstance(value, bool):
        true, false = BOOL_WORDS.get(name, (name, f"no_{name}"))
        return true if value else false
    return f"{name}_{value}"


def _facts(scenario: Scenario) -> dict[str, Any]:
    """The scenario's fields in order, its two head dims as one fact."""
    facts = {}
    for name, value in vars(scenario).items():
        if name == HEAD_DIMS[0]:
            facts["head_dims"] = (scenario.head_dim_qk, scenario.head_dim_v)
        elif name != HEAD_DIMS[1]:
            facts[name] = value
    return facts


class CaseLabels:
    """Labels for one hazard's cases, from the facts its witnesses differ in."""

    def __init__(self, hazard: Hazard, witnesses: Sequence[Scenario]) -> None:
        self.hazard = hazard
        facts = [_facts(witness) for witness in witnesses]
        #: Facts that vary across the witnesses, in `Scenario`'s order.
        self.varying = [name for name in facts[0] if len({repr(f[name]) for f in facts}) > 1]

    def label(self, scenario: Scenario, control: Control | None = None) -> str:
        changed = set(control.changes) if control is not None else set()
        if changed & set(HEAD_DIMS):
            changed.add("head_dims")
        words = [re.sub(r"[^\w.]+", "_", control.name)] if control is not None else []
        words += [
            _word(name, scenario, self.hazard) for name in self.varying if name not in changed
        ]
        return "-".join(words) or WITNESS


@dataclass(frozen=True, repr=False)
class HazardCase:
    """One witness (the backend must not be chosen) or control (it must stay) of a hazard."""

    hazard: Hazard
    kind: str
    scenario: Scenario
    #: The control this case is, for controls.
    control: Control | None
    #: What sets it apart from the hazard's other cases of its kind.
    label: str

    @property
    def id(self) -> str:
        return f"{self.hazard.id}-{self.kind}-{self.label}"

    def __repr__(self) -> str:
        return f"<HazardCase {self.id}>"

    @property
    def inputs(self) -> dict[str, Any]:
        """The request as keywords for `te_selector.select(**case.inputs)`."""
        return keyword_inputs(self.scenario, hazard_inputs(self.hazard))


def cases(
    hazard: Hazard,
    kinds: Iterable[str] = (WITNESS, CONTROL),
    witnesses: Sequence[Scenario] | None = None,
) -> list[HazardCase]:
    """The witnesses, then every distinct control scenario of them, of `hazard`: all its
    witnesses, or those given (a case's label does not depend on which are given)."""
    kinds = tuple(kinds)
    labels = CaseLabels(hazard, list(hazard.witnesses()))
    witnesses = list(hazard.witnesses()) if witnesses is None else list(witnesses)
    found: dict[Scenario, HazardCase] = {}
    if WITNESS in kinds:
        for witness in witnesses:
            found.setdefault(
                witness, HazardCase(hazard, WITNESS, witness, None, labels.label(witness))
            )
    if CONTROL in kinds:
        for witness in witnesses:
            for control, scenario in hazard.control_scenarios(witness):
                label = labels.label(scenario, control)
                found.setdefault(scenario, HazardCase(hazard, CONTROL, scenario, control, label))
    result = list(found.values())
    ids = [case.id for case in result]
    if len(set(ids)) != len(ids):
        duplicate = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"{hazard.id}: two different cases would both be called {duplicate!r}")
    return result


def hazard_cases(*hazards: str | Hazard, kinds: Iterable[str] = (WITNESS, CONTROL)) -> list[Any]:
    """`pytest.param(HazardCase, id=...)` for each witness and control of `hazards` (by id or
    `Hazard`; all configured hazards when none is named), for `@pytest.mark.parametrize`."""
    chosen = [find_hazard(h) for h in hazards] or list(load_config(Path.cwd()).hazards)
    return [pytest.param(case, id=case.id) for hazard in chosen for case in cases(hazard, kinds)]
