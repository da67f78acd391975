"""Each hazard's own examples against its own trigger (fixit-style VALID / INVALID).

Witnesses are the INVALID examples: inputs where the kernel fails, so `triggered_by` must hold.
Controls are the VALID ones: nearby inputs the backend must keep, so it must not.
"""

from __future__ import annotations

import pytest

from selector_patch.registry import HAZARDS, PACKAGE_FIELD

CASES = [(hazard, witness) for hazard in HAZARDS for witness in hazard.witnesses()]


def case_id(case) -> str:
    hazard, witness = case
    head_dims = f"{witness.head_dim_qk}x{witness.head_dim_v}"
    return f"{hazard.id}-{witness.sm}-hd{head_dims}-{len(witness.env)}env"


@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
def test_witness_is_inside_the_hazard(case):
    hazard, witness = case
    assert hazard.triggered_by(witness)
    assert getattr(witness, PACKAGE_FIELD[hazard.backend]) is not None


@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
def test_controls_are_outside_the_hazard(case):
    hazard, witness = case
    controls = list(hazard.control_scenarios(witness))
    assert [control.name for control, _ in controls] == [c.name for c in hazard.controls]
    for control, scenario in controls:
        assert not hazard.triggered_by(scenario), control.name


@pytest.mark.parametrize("hazard", HAZARDS, ids=[hazard.id for hazard in HAZARDS])
def test_witnesses_cover_every_architecture_and_kernel_version(hazard):
    witnesses = list(hazard.witnesses())
    assert {w.compute_capability for w in witnesses} == set(hazard.architectures)
    installed = {getattr(w, PACKAGE_FIELD[hazard.backend]) for w in witnesses}
    assert installed == {hazard.kernel_version, *hazard.older_kernel_versions}
    assert all(hazard.evidence.affects(version) for version in installed)


@pytest.mark.parametrize("hazard", HAZARDS, ids=[hazard.id for hazard in HAZARDS])
def test_unaffected_kernel_is_outside_the_hazard(hazard):
    witness = next(hazard.witnesses())
    unaffected = {"TEA001": "4.0.0b23", "TEA002": "2.7.2"}[hazard.id]
    assert not hazard.triggered_by(
        witness.with_changes({PACKAGE_FIELD[hazard.backend]: unaffected})
    )
