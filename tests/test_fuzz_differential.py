"""Differential fuzzing: the analyzer against the harness, and the codemod against both.

The analyzer (static, `lint_plugin.engine.analysis`) and the harness (TE's own selector run on a
virtual device, `selector_patch.verify`) are two independent judges of one question: can a
registry hazard's backend still be selected? Hypothesis mutates real selectors - TE 2.20.2 and
2.14.1 (before FA4), each as released and after `codemods.apply.transform`, so that registry
guards exist to be broken - with the operators of `mutants.py`, and asserts for every mutant:

(a) per hazard, the analyzer's `reachable` equals the harness's. A disagreement is a bug in one
    of them, except for one class, the limit of the witness grid: the analyzer decides for every
    environment (it binds only the hazard's inputs), the harness for a finite grid (two `NVTE_*`
    environments, one set of installed packages, one cuDNN answer, one value of every
    `AttentionParams` field no hazard names). Where the analyzer says reachable and the harness
    says not, the disagreement is excused only when shown to lie off the grid (`grid_limited`):
    the harness itself selects the backend for a witness changed in one input the grid holds
    fixed, or the analyzer, given the values the grid's calls hold fixed, agrees that it is not
    reachable. An analyzer that says guarded where the harness selects the backend is never
    excused;
The analyzer must also reach the same verdict whichever way it groups the witnesses: all of
them in one run first (`expect_guarded`, the codemod's self-check) or per architecture. Its
two faces, flake8's `TEA` codes and `codemods.apply --check`, must say what the harness says
on the same terms (`judges.disagreements`; `grid_limited` lives in `grid_limit`).

(b) the codemod either refuses (`PlanError`, the CLI's exit 2) or yields a selector in which the
    harness finds no reachable hazard and no control failing that did not fail in the mutant;
    and what `python -m codemods.apply` writes, parsing only the runs of statements around its
    anchors, is what the codemod writes on libcst's tree of the whole mutant, byte for byte.

Mutants whose own code raises on the virtual device (a dropped filter that also bound a name
used later) say nothing about either judge and are rejected. Failing mutants are kept in
`fuzz_regressions/` as (base, mutations) and replayed by `test_regression`.
"""

from __future__ import annotations

import ast
import collections
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from codemods.apply import transform
from codemods.plan import PlanError
from lint_plugin.engine.analysis import analyze_hazard, analyze_source
from lint_plugin.engine.dialect import find_selectors
from fuzz_bases import base, write_tally
from grid_limit import grid_limited
from judges import MutantCrashed, disagreements, harness_reports, static_verdicts, unexcused
from mutants import OPERATORS, Mutant, Mutation, mutate, named_site
from selector_patch.registry import HAZARDS
from whole_tree import whole_tree

SELECTOR = "get_attention_backend"
#: Real selectors to mutate; "+codemod" is the release after the codemod inserted its guards.
BASES = ("2.20.2", "2.20.2+codemod", "2.14.1", "2.14.1+codemod")
REGRESSIONS = Path(__file__).with_name("fuzz_regressions")
#: What happened to each mutant, reported at the end of the module.
TALLY: collections.Counter[str] = collections.Counter()


def check(name: str, mutations: list[Mutation]) -> Mutant:
    """Assert properties (a) and (b) for one mutant of base `name`, and return it.

    Raises `MutantCrashed` for a mutant whose own code raises; rejects (hypothesis) one for
    which an operator has no site.
    """
    source, module = base(name)
    mutant = mutate(module, SELECTOR, mutations)
    if mutant is None:
        reject()
    compile(mutant.text, str(source.path), "exec")  # the operators write valid Python
    where = f"{name} {list(mutant.descriptions)}"
    selector, reports = harness_reports(source, mutant.text)
    TALLY["mutants"] += 1
    parsed = ast.parse(mutant.text)
    function = find_selectors(parsed)[0]
    for verdict in analyze_source(mutant.text):
        hazard = next(h for h in HAZARDS if h.id == verdict.hazard_id)
        together = analyze_hazard(parsed, function, hazard, expect_guarded=True)
        assert together == verdict, f"{where}: {hazard.id} depends on how witnesses are grouped"
        report = reports[verdict.hazard_id]
        if verdict.reachable == report.reachable:
            continue
        excuse = grid_limited(mutant.text, selector, hazard) if verdict.reachable else None
        assert excuse is not None, (
            f"{where}: {hazard.id} analyzer reachable={verdict.reachable}, harness"
            f" reachable={report.reachable}; analyzer: {verdict.detail}"
        )
        TALLY[f"excused, {excuse}"] += 1
    found = disagreements(mutant.text, selector, reports, static_verdicts(source, mutant.text))
    assert not unexcused(found), f"{where}: {unexcused(found)}"
    TALLY.update(f"flake8/--check excused, {d.excuse}" for d in found)
    try:
        patched, _ = transform(mutant.text, HAZARDS)
    except PlanError:
        TALLY["codemod refused (exit 2)"] += 1
        return mutant
    if patched != mutant.text:
        assert patched == whole_tree(mutant.text), f"{where}: the runs wrote another text"
    after = reports if patched == mutant.text else harness_reports(source, patched)[1]
    for hazard_id, report in after.items():
        assert not report.reachable, f"{where}: codemod left {report.summary()}"
        before = {json.dumps(c, sort_keys=True) for c in reports[hazard_id].controls.failed}
        broken = [c for c in report.controls.failed if json.dumps(c, sort_keys=True) not in before]
        assert not broken, f"{where}: codemod broke {hazard_id} controls {broken}"
    TALLY["codemod proved safe"] += 1
    return mutant


mutations = st.lists(
    st.builds(Mutation, st.sampled_from(sorted(OPERATORS)), st.integers(0, 2**16)),
    min_size=1,
    max_size=2,
)


# One test per base, so that the workers share them; the profile's count is split among them.
@pytest.mark.parametrize("name", BASES)
@settings(max_examples=max(1, settings().max_examples // len(BASES)))
@given(mutations=mutations)
def test_analyzer_harness_and_codemod_agree_on_mutants(name, mutations) -> None:
    try:
        check(name, mutations)
    except MutantCrashed:
        TALLY["rejected: the mutant itself raises"] += 1
        reject()


def test_a_mutant_that_raises_is_told_apart() -> None:
    """A mutant whose own code raises says nothing of the judges (the fuzz test rejects it):
    the FP8 filter negated, so that a request without FP8 reads `fp8_meta["recipe"]`."""
    name, operator = "2.20.2+codemod", "negate"
    _, module = base(name)
    site = named_site(module, SELECTOR, operator, "fp8_meta['recipe']")
    with pytest.raises(MutantCrashed, match="KeyError: 'recipe'"):
        check(name, [Mutation(operator, site)])


def _regressions() -> list[Path]:
    return sorted(REGRESSIONS.glob("*.json"))


def _unnumbered(descriptions) -> list[str]:
    """Descriptions without their line numbers, which move whenever the codemod's guard does."""
    return [re.sub(r"line \d+", "line N", description) for description in descriptions]


@pytest.mark.parametrize("path", _regressions(), ids=lambda p: p.stem)
def test_regression(path: Path) -> None:
    """A kept mutant still builds to what it was, and both properties hold for it."""
    case = json.loads(path.read_text())
    mutations = [Mutation(operator, site) for operator, site in case["mutations"]]
    mutant = check(case["base"], mutations)
    assert _unnumbered(mutant.descriptions) == _unnumbered(
        case["descriptions"]
    ), f"{path.name} no longer builds the mutant it kept; find its sites again"


@pytest.fixture(scope="module", autouse=True)
def report_tally(request):
    yield
    write_tally(request, "differential fuzzing", TALLY)
