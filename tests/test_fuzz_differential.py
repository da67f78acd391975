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
them in one run first (`expect_guarded`, the codemod's self-check) or per architecture.

(b) the codemod either refuses (`PlanError`, the CLI's exit 2) or yields a selector in which the
    harness finds no reachable hazard and no control failing that did not fail in the mutant.

Mutants whose own code raises on the virtual device (a dropped filter that also bound a name
used later) say nothing about either judge and are rejected. Failing mutants are kept in
`fuzz_regressions/` as (base, mutations) and replayed by `test_regression`.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import dataclasses
import json
import re
import traceback
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import example, given, reject
from hypothesis import strategies as st

from codemods.apply import transform
from codemods.plan import PlanError
from lint_plugin.engine.absint import const
from lint_plugin.engine.analysis import analyze_hazard, analyze_source
from lint_plugin.engine.dialect import find_selectors
from lint_plugin.engine.interpreter import Facts
from lint_plugin.engine.program import function_index
from fuzz_bases import base, write_tally
from mutants import OPERATORS, Mutant, Mutation, mutate
from selector_patch.harness import LoadedSelector, SelectionError, Unrepresentable, load_selector
from selector_patch.harness.params import attention_params_kwargs
from selector_patch.registry import HAZARDS, ISOLATING_ENV, PACKAGE_FIELD, Hazard
from selector_patch.roles import ROLES
from selector_patch.sources import SelectorSource
from selector_patch.verify import HazardReport, verify_hazard

SELECTOR = "get_attention_backend"
#: Real selectors to mutate; "+codemod" is the release after the codemod inserted its guards.
BASES = ("2.20.2", "2.20.2+codemod", "2.14.1", "2.14.1+codemod")
REGRESSIONS = Path(__file__).with_name("fuzz_regressions")
#: What happened to each mutant, reported at the end of the module.
TALLY: collections.Counter[str] = collections.Counter()


class MutantCrashed(Exception):
    """The mutant's own code raised on the virtual device."""


def _verify(source: SelectorSource, text: str) -> tuple[LoadedSelector, dict[str, HazardReport]]:
    """The harness's report per hazard; `MutantCrashed` if TE's (mutated) code raises."""
    selector = load_selector(source, text=text)
    try:
        return selector, {hazard.id: verify_hazard(selector, hazard) for hazard in HAZARDS}
    except SelectionError as error:  # the harness's one line, raised from what TE raised
        raised = error.__cause__ or error
        innermost = traceback.extract_tb(raised.__traceback__)[-1]
        if innermost.filename == str(source.path):
            raise MutantCrashed(f"{type(raised).__name__}: {raised}") from error
        raise


def _perturbations(hazard: Hazard) -> list[dict]:
    """Single changes of inputs the witness grid holds fixed (none of them a hazard input)."""
    switches = {s for role in ROLES.values() for s in role.switches}
    others = [field for role, field in PACKAGE_FIELD.items() if role != hazard.backend]
    return [
        *({"env": {name: "0"}} for name in sorted(switches)),
        *({"env": env} for role, env in ISOLATING_ENV.items() if role != hazard.backend),
        *({field: None} for field in others),
        {"flash_attn_3": "3.0.0b1"},
        {"fused_backend": "No_Backend"},
        *({"attn_mask_type": mask} for mask in ("no_mask", "padding", "causal_bottom_right")),
        {"qkv_layout": "sbhd_sbhd_sbhd"},
        {"max_seqlen_kv": 256},
        {"cudnn_version": (8, 9, 7)},
    ]


def beyond_grid(selector: LoadedSelector, hazard: Hazard) -> dict[str, Any] | None:
    """A witness, changed in one input the grid never varies, on which TE selects the backend."""
    for witness in hazard.witnesses():
        for changes in _perturbations(hazard):
            scenario = witness.with_changes(changes)
            if not hazard.triggered_by(scenario):
                continue
            try:
                selected = selector.select(scenario).role == hazard.backend
            except Unrepresentable:
                continue
            if selected:
                return scenario.describe()
    return None


def plain_call(selector: LoadedSelector, function: ast.FunctionDef, hazard: Hazard) -> Facts:
    """What every witness's call holds alike, as analyzer facts.

    The `AttentionParams` values the harness passes (else the dataclass defaults) that are the
    same in every witness, and, so that the analyzer can compare the objects among them
    (`torch.bfloat16`, `torch.Tensor`), every name the selector reads that the loaded module
    resolves to a type or a dtype.
    """
    namespace = selector.module.__dict__
    defaults = {
        field.name: field.default
        for field in dataclasses.fields(namespace["AttentionParams"])
        if field.default is not dataclasses.MISSING
    }
    calls = []
    for witness in hazard.witnesses():
        with contextlib.suppress(Unrepresentable):
            calls.append(
                {**defaults, **attention_params_kwargs(witness, selector.params_fields, namespace)}
            )
    params = {
        name: const(value, frozenset((name,)))
        for name, value in calls[0].items()
        if all(call.get(name) == value for call in calls)
    }
    names = {}
    for dotted in function_index(function).text_names:
        head, _, attribute = dotted.partition(".")
        value = namespace.get(head)
        if attribute:
            value = getattr(value, attribute, None)
        if isinstance(value, (type, torch.dtype)):
            names[dotted] = const(value)
    return Facts(params=params, names=names)


def grid_limited(mutant: Mutant, selector: LoadedSelector, hazard: Hazard) -> str | None:
    """Why an analyzer "reachable" that the harness does not see is the witness grid's limit.

    Either the harness itself selects the backend for a witness changed in one input the grid
    holds fixed, or the analyzer, given what the grid's calls hold fixed, agrees that it is not
    reachable; None when neither holds.
    """
    if beyond_grid(selector, hazard) is not None:
        return "reachable beyond the witness grid"
    module = ast.parse(mutant.text)
    function = find_selectors(module)[0]
    if not analyze_hazard(
        module, function, hazard, plain_call(selector, function, hazard)
    ).reachable:
        return "reachable only for inputs the witness grid's calls hold fixed"
    return None


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
    selector, reports = _verify(source, mutant.text)
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
        excuse = grid_limited(mutant, selector, hazard) if verdict.reachable else None
        assert excuse is not None, (
            f"{where}: {hazard.id} analyzer reachable={verdict.reachable}, harness"
            f" reachable={report.reachable}; analyzer: {verdict.detail}"
        )
        TALLY[f"excused, {excuse}"] += 1
    try:
        patched, _ = transform(mutant.text, HAZARDS)
    except PlanError:
        TALLY["codemod refused (exit 2)"] += 1
        return mutant
    after = reports if patched == mutant.text else _verify(source, patched)[1]
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


@given(name=st.sampled_from(BASES), mutations=mutations)
# A mutant whose own code raises (it reads `fp8_meta["recipe"]`): rejected, not a failure.
@example("2.20.2+codemod", [Mutation("negate", 14)])
def test_analyzer_harness_and_codemod_agree_on_mutants(name, mutations) -> None:
    try:
        check(name, mutations)
    except MutantCrashed:
        TALLY["rejected: the mutant itself raises"] += 1
        reject()


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
