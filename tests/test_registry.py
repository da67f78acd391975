"""Each hazard's own examples against its own trigger (fixit-style VALID / INVALID).

Witnesses are the INVALID examples: inputs where the kernel fails, so `triggered_by` must hold.
Controls are the VALID ones: nearby inputs the backend must keep, so it must not.
"""

from __future__ import annotations

import itertools

import pytest

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from selector_patch.registry import HAZARDS, PACKAGE_FIELD, TE_FIXES, get_hazard

CASES = [(hazard, witness) for hazard in (*HAZARDS, *TE_FIXES) for witness in hazard.witnesses()]


def case_id(case) -> str:
    hazard, witness = case
    head_dims = f"{witness.head_dim_qk}x{witness.head_dim_v}"
    return f"{hazard.id}-{witness.sm}-hd{head_dims}-{len(witness.env)}env"


@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
def test_witness_is_inside_the_hazard(case):
    hazard, witness = case
    assert hazard.triggered_by(witness)
    assert hazard.backend not in PACKAGE_FIELD or hazard.installed(witness) is not None


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
def test_without_versions_the_witnesses_are_those_of_the_named_kernel_version(hazard):
    package = PACKAGE_FIELD[hazard.backend]
    named = [w for w in hazard.witnesses() if getattr(w, package) == hazard.kernel_version]
    assert list(hazard.witnesses(versions=False)) == named


@pytest.mark.parametrize("hazard", HAZARDS, ids=[hazard.id for hazard in HAZARDS])
def test_unaffected_kernel_is_outside_the_hazard(hazard):
    witness = next(hazard.witnesses())
    # 4.0.0b4 has no SM 12.x path at all and refuses SM 8.x in its forward already; 4.0.0b36
    # accepts FA4's split heuristic on SM 12.x
    unaffected = {
        "TEA001": "4.0.0b4",
        "TEA002": "2.7.2",
        "TEA003": "4.0.0b4",
        "TEA004": "4.0.0b36",
        "TEA005": "4.0.0b4",
        "TEA006": "4.0.0b10",
        "TEA007": "4.0.0b10",
    }[hazard.id]
    assert not hazard.triggered_by(
        witness.with_changes({PACKAGE_FIELD[hazard.backend]: unaffected})
    )


@pytest.mark.parametrize("hazard", HAZARDS, ids=[hazard.id for hazard in HAZARDS])
def test_a_guard_keeps_the_backend_from_the_release_that_fixed_the_defect(hazard):
    """`guard_fires` (what the codemod renders, what the runtime patch re-runs for) holds only
    where the kernel refuses: a release past `fixed_in` keeps the backend."""
    fixed_in = hazard.evidence.fixed_in
    for witness in hazard.witnesses():
        assert hazard.guard_fires(witness)
        if fixed_in is not None:
            fixed = witness.with_changes({PACKAGE_FIELD[hazard.backend]: fixed_in})
            assert not hazard.guard_fires(fixed) and not hazard.triggered_by(fixed)


def test_fixed_in_is_the_upper_bound_of_the_affected_releases():
    fixed = {h.id: h.evidence.fixed_in for h in HAZARDS if h.evidence.fixed_in is not None}
    assert fixed == {"TEA004": "4.0.0b36", "TEA006": "4.0.0b31", "TEA007": "4.0.0b33"}


@pytest.mark.parametrize(
    "affected",
    ["<4.0.0b36", ">=4.0.0b22, < 4.0.0b36", ">=2.7.3,<=2.8.3", "< 3 , <2.5,!=2.1", "==2.*", ">1"],
)
def test_fixed_in_reads_the_specifier_as_packaging_does(affected):
    """`fixed_in` reads `affected` without `packaging.specifiers`; it must agree with it."""
    evidence = get_hazard("TEA004").evidence.replace(affected=affected)
    bounds = [s.version for s in SpecifierSet(affected) if s.operator == "<"]
    assert evidence.fixed_in == (min(bounds, key=Version) if bounds else None)


#: Span ends and clause bounds: a one-clause specifier touches a span iff it holds at one of these.
VERSIONS = sorted(map(Version, ["2.1.1", "2.6.3", "2.7.3", "2.7.4.post1", "2.8.4", "4.0.0b5"]))


@pytest.mark.parametrize(
    "affected",
    [">=2.7.3", ">2.6.3", "<2.7.3", "<=2.6.3", "==2.7.3", ">=2.7.3,<=2.8.4", "!=2.7.3", "~=2.7"],
)
def test_affects_some_reads_the_specifier_as_packaging_does(affected):
    """`affects_some` reads `affected` without `packaging.specifiers`: it says "affected" of
    every span holding an affected version, and, for one ordered comparison or `==`, of no
    other span (other clauses it cannot exclude by, so it may say "affected" of more)."""
    evidence = get_hazard("TEA002").evidence.replace(affected=affected)
    specifier = SpecifierSet(affected, prereleases=True)
    exact = "," not in affected and affected[:2] not in ("!=", "~=")
    for lowest, highest in itertools.combinations_with_replacement(VERSIONS, 2):
        inside = [version for version in VERSIONS if lowest <= version <= highest]
        affected_inside = any(specifier.contains(version) for version in inside)
        says = evidence.affects_some(str(lowest), str(highest))
        if affected_inside or exact:
            assert says == affected_inside, (lowest, highest)


def test_te_1_13_admits_no_version_tea002_affects():
    """TE 1.13 accepts flash-attn 2.1.1 - 2.6.3; TEA002 is a defect of 2.7.3+ (TE 2.1: up to
    2.7.4.post1)."""
    evidence = get_hazard("TEA002").evidence
    assert not evidence.affects_some("2.1.1", "2.6.3")
    assert evidence.affects_some("2.1.1", "2.7.4.post1")


@pytest.mark.parametrize("hazard", HAZARDS, ids=[hazard.id for hazard in HAZARDS])
def test_spellings_cover_only_affected_releases(hazard):
    """Each release range of the evidence's other spellings lies inside `affected`."""
    whole = SpecifierSet(hazard.evidence.affected, prereleases=True)
    for spelling in hazard.evidence.spellings:
        lowest = [s.version for s in SpecifierSet(spelling.affected) if s.operator == ">="]
        assert lowest and whole.contains(Version(lowest[0]))
        assert spelling.text and spelling.line


def test_eval_with_backward_is_a_witness_of_tea001():
    witnesses = list(get_hazard("TEA001").witnesses())
    assert any(not w.training and w.backward for w in witnesses)
    controls = {c.name: c.changes for c in get_hazard("TEA001").controls}
    assert controls["forward-only eval"] == {"training": False, "backward": False}


def test_a_backward_on_sm8x_is_tea005_in_training_and_in_eval():
    """FA4's backward refuses the whole SM 8.x family; its forward runs there."""
    hazard = get_hazard("TEA005")
    witnesses = list(hazard.witnesses())
    assert {w.compute_capability for w in witnesses} >= {(8, 0), (8, 6), (8, 9)}
    assert {(w.training, w.backward) for w in witnesses} == {(True, True), (False, True)}
    controls = {c.name: c.changes for c in hazard.controls}
    assert controls["forward-only eval"] == {"training": False, "backward": False}
    assert controls["forward only"] == {"backward": False}
    assert {controls["sm90"]["compute_capability"], controls["sm100"]["compute_capability"]} == {
        (9, 0),
        (10, 0),
    }
    assert hazard.triggers == get_hazard("TEA001").triggers[1:]  # TEA001's "a backward will run"
