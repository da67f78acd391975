"""TE's own later fixes, shown on TE's own code: each hazard of `te_fixes` is reachable on the
last release lacking the fix (its selector and its C++ fused-attention query, compiled from
`../shared/te-cxx`) and not on the first release with it, where every control keeps the backend.

An sm121 entry has no release with the fix: TE's sm120 filters leave sm121 out through 2.20.2,
so it is reachable on the newest release whose C++ is at hand.
"""

from __future__ import annotations

import pytest

import selector_patch
from conftest import NO_TE_CXX
from selector_patch.harness import load_selector
from selector_patch.registry import TE_FIXES, TeFix
from selector_patch.testing import assert_case, hazard_cases
from selector_patch.verify import verify_hazard

pytestmark = pytest.mark.skipif(NO_TE_CXX is not None, reason=NO_TE_CXX or "")


@pytest.mark.parametrize("hazard", TE_FIXES, ids=[hazard.id for hazard in TE_FIXES])
def test_the_last_release_lacking_the_fix_selects_the_backend(hazard, load_te_selector):
    report = verify_hazard(load_te_selector(hazard.evidence.te_last_lacking).loaded, hazard)
    assert report.reachable, report.summary()
    assert not report.controls.failed


FIXED = [hazard for hazard in TE_FIXES if hazard.evidence.te_fixed_in]


@pytest.mark.parametrize("hazard", FIXED, ids=[hazard.id for hazard in FIXED])
def test_the_first_release_with_the_fix_filters_it_and_keeps_the_controls(hazard, load_te_selector):
    report = verify_hazard(load_te_selector(hazard.evidence.te_fixed_in).loaded, hazard)
    assert report.applicable and not report.reachable, report.summary()
    assert report.controls.passed and not report.controls.failed


def test_every_te_fix_cites_its_commit_pr_and_failure():
    for hazard in TE_FIXES:
        fix = hazard.evidence
        assert isinstance(fix, TeFix)
        assert len(fix.commit) >= 9 and fix.pr > 0 and fix.failure, hazard.id
        assert fix.layer in ("python", "c++"), hazard.id
        assert f"#{fix.pr}" in fix.cites()


def test_sm121_gaps_name_the_sm120_fix_they_fall_outside():
    gaps = [hazard for hazard in TE_FIXES if not hazard.evidence.te_fixed_in]
    assert gaps and all(hazard.architectures == ((12, 1),) for hazard in gaps)
    assert all("leaves sm121 out" in hazard.evidence.reference for hazard in gaps)


@pytest.fixture(scope="module")
def patched(release):
    """`patched(version)`: a fresh load of the release with `install()`'s defaults applied."""
    selectors = {}

    def get(version: str):
        if version not in selectors:
            selectors[version] = load_selector(release(version))
            selector_patch.install(selectors[version].module)
        return selectors[version]

    yield get
    for selector in selectors.values():
        selector_patch.uninstall(selector.module)


@pytest.mark.parametrize("hazard", TE_FIXES, ids=[hazard.id for hazard in TE_FIXES])
def test_the_runtime_patch_filters_the_witnesses_and_keeps_the_controls(
    hazard, patched, load_te_selector
):
    """With `install()`, TE's own selector of the last release lacking the fix re-runs with the
    backend switched off for each witness, and answers every control as it did unpatched; a
    control inside another fix's hazard (sm120 below cuDNN 9.18.1) loses that one's backend."""
    version = hazard.evidence.te_last_lacking
    report = verify_hazard(patched(version), hazard)
    assert report.witnesses and not report.reachable, report.summary()
    unpatched = load_te_selector(version).loaded
    for witness in hazard.witnesses():
        for control, scenario in hazard.control_scenarios(witness):
            got = patched(version).select(scenario)
            others = {other.backend for other in TE_FIXES if other.triggered_by(scenario)}
            if others:
                assert got.role not in others, control.name
            else:
                assert got == unpatched.select(scenario), control.name


@pytest.mark.parametrize("hazard", FIXED, ids=[hazard.id for hazard in FIXED])
def test_the_pytest_plugins_cases_pass_on_the_first_release_with_the_fix(hazard, load_te_selector):
    """`hazard_cases` of a TE fix, as a fork's suite writes them, hold where TE has the fix."""
    cases = hazard_cases(hazard.id)
    assert len({case.id for case in cases}) == len(cases)
    selector = load_te_selector(hazard.evidence.te_fixed_in)
    judged = 0
    for case in cases:
        try:
            assert_case(selector.select(**case.values[0].inputs), case.values[0])
        except pytest.skip.Exception:  # a control TE's other filters exclude, as verify says
            continue
        judged += 1
    assert judged >= len(cases) // 2
