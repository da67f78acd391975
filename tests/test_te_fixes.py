"""TE's own later fixes, shown on TE's own code: each hazard of `te_fixes` is reachable on the
last release lacking the fix (its selector, and its fused-attention query from `../shared/te-cxx`
or the release's compiled library) and not on the first release with it, where every control
keeps the backend. Then every mode that guards them: the runtime patch, the codemod with
`--te-fixes` (its guard proven by TE's code and laid out as black would), flake8 with `te-fixes
= true`, `verify --te-fixes`, the pytest plugin's cases and the rule pages.

An sm121 entry has no release with the fix: TE's sm120 filters leave sm121 out through 2.20.2,
so it is shown on the newest release whose own fused answer the suite runs.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
import types
from pathlib import Path

import black
import pytest

import selector_patch
from codemods.apply import transform
from codemods.plan import ALREADY_GUARDED, INSERTED, NOT_APPLICABLE, plan_insertions
from conftest import NO_TE_CXX
from lint_plugin.docs import DOCS, TE_FIX_RULES
from lint_plugin.engine.analysis import analyze_hazards
from lint_plugin.engine.dialect import find_selectors
from selector_patch.__main__ import main as selector_patch_cli
from selector_patch.config import Config, with_te_fixes
from selector_patch.harness import load_selector
from selector_patch.registry import HAZARDS, TE_FIXES, Hazard, TeFix, get_hazard
from selector_patch.testing import assert_case, hazard_cases
from selector_patch.verify import verify_hazard

pytestmark = pytest.mark.skipif(NO_TE_CXX is not None, reason=NO_TE_CXX or "")
#: #2344's illegal memory access under CUDA graph capture (TE 2.10's `cuda_graph` field).
FUSED_CUDA_GRAPH = get_hazard("TEA081")
#: What the runtime patch guards by default, and the codemod with `--te-fixes`.
GUARDED = (*HAZARDS, *TE_FIXES)


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
        assert fix.failure and (f"#{fix.pr}" in fix.cites() or not fix.te_fixed_in)


def test_sm121_gaps_name_the_sm120_fix_they_fall_outside():
    gaps = [hazard for hazard in TE_FIXES if not hazard.evidence.te_fixed_in]
    assert gaps and all(hazard.architectures == ((12, 1),) for hazard in gaps)
    assert all("leaves sm121 out" in hazard.evidence.reference for hazard in gaps)


def assert_controls_kept(guarded, unpatched, hazard) -> None:
    """Every control of `hazard` selects on `guarded` what it selects on `unpatched`, unless it
    lies inside a hazard that is guarded too: then not that one's backend."""
    for witness in hazard.witnesses():
        for control, scenario in hazard.control_scenarios(witness):
            got = guarded.select(scenario)
            others = {other.backend for other in GUARDED if other.triggered_by(scenario)}
            if others:
                assert got.role not in others, control.name
            else:
                assert got == unpatched.select(scenario), control.name


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
    control inside another hazard (sm120 below cuDNN 9.18.1, FA4's backward on sm8x) loses
    that one's backend."""
    version = hazard.evidence.te_last_lacking
    report = verify_hazard(patched(version), hazard)
    assert report.witnesses and not report.reachable, report.summary()
    assert_controls_kept(patched(version), load_te_selector(version).loaded, hazard)


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


#: TE fixes a selector's code can be asked about: all of them, FP8 recipes' included.
STATIC = TE_FIXES


@pytest.fixture(scope="module")
def codemod_of(release):
    """`codemod_of(version)`: the release's selector after the codemod with TE's fixes, each
    hazard's status, and the harness on the result."""
    results = {}

    def get(version: str):
        if version not in results:
            source = release(version)
            original = source.path.read_text(encoding="utf-8")
            hazards = with_te_fixes(Config())
            patched, statuses = transform(original, hazards, te_version=source.te_version)
            results[version] = (patched, statuses, load_selector(source, text=patched))
        return results[version]

    return get


@functools.lru_cache(maxsize=None)
def black_formatted(text: str) -> str:
    """`text` as black lays it out, once per text: TE's fixes share their last release lacking
    the fix (seven of them 2.19.0), so the codemod's result too, and black takes a second or two
    on a whole selector."""
    return black.format_str(text, mode=black.Mode(line_length=100))


@pytest.mark.parametrize("hazard", STATIC, ids=[hazard.id for hazard in STATIC])
def test_after_the_codemod_the_last_release_lacking_the_fix_filters_it(
    hazard, codemod_of, load_te_selector
):
    """The guard in TE's idiom, after TE's fused query for a cuDNN fix, proven by the
    codemod's own analysis and by TE's code: no witness selects the backend, every control
    selects what the unpatched release selects (or, inside another fix's region, not that
    one's backend), and black leaves the result as it is."""
    version = hazard.evidence.te_last_lacking
    patched, statuses, selector = codemod_of(version)
    assert statuses[hazard.id] == INSERTED
    report = verify_hazard(selector, hazard)
    assert report.witnesses and not report.reachable, report.summary()
    assert_controls_kept(selector, load_te_selector(version).loaded, hazard)
    assert black_formatted(patched) == patched


#: #2432's FA3 filter (TE 2.15), which TE 1.11 - 2.1 need on their module global.
FA3_DETERMINISTIC_HD256 = get_hazard("TEA067")


@pytest.mark.parametrize("version", ["1.11.0", "1.12.0", "2.1.0"])
def test_te_1_x_fa3_global_is_guarded_where_te_runs_fa3(
    version, codemod_of, release, load_te_selector
):
    """TE 1.11 - 2.1 hold FlashAttention 3 in the module global `_use_flash_attn_3` (TE runs
    FA3 where the selector returns `use_flash_attention` and the global is still set): TE's own
    code selects FA3 for a witness, the guard switches the global off as TE's own FA3 filters
    there do, and no witness selects FA3 after it, nor with the runtime patch (FA2 instead)."""
    hazard = FA3_DETERMINISTIC_HD256
    assert verify_hazard(load_te_selector(version).loaded, hazard).reachable
    text, statuses, selector = codemod_of(version)
    assert statuses[hazard.id] == INSERTED
    assert "        _use_flash_attn_3 = False\n" in text
    report = verify_hazard(selector, hazard)
    assert report.witnesses and not report.reachable, report.summary()
    assert_controls_kept(selector, load_te_selector(version).loaded, hazard)
    unpatched, runtime = load_te_selector(version).loaded, load_selector(release(version))
    reached = [w for w in hazard.witnesses() if unpatched.select(w).role == "FA3"]
    for witness in reached:  # TE 1.x import per machine: the patch goes on the witness's module
        with runtime.pinned(witness) as module:
            selector_patch.install(module)
        assert runtime.select(witness).role == "FA2"  # the global off: TE runs FA2 instead
        selector_patch.uninstall(module)
    assert reached


#: The fixes on FP8 recipe state, and releases of each way of reading it: 1.9 (`fp8_meta`
#: alone), 2.2 (recipes with `float8_current_scaling()` the selector never calls), 2.14 (the
#: selector calls it; sm121 outside TE's sm120 filter).
FP8_FIXES = [h for h in TE_FIXES if {c.input for c in h.triggers} & {"fp8_dpa", "fp8_recipe"}]


@pytest.mark.parametrize("version", ["1.9.0.post1", "2.2.0", "2.14.0"])
def test_after_the_codemod_no_fp8_fix_is_reachable(version, codemod_of):
    """Beyond the last release lacking each fix: every release, however its selector reads the
    recipe, keeps no witness of the FP8 fixes after the codemod, as TE's own code runs it."""
    _, statuses, selector = codemod_of(version)
    for hazard in FP8_FIXES:
        report = verify_hazard(selector, hazard)
        assert not report.reachable, (statuses[hazard.id], report.summary())


FIXED_STATIC = [hazard for hazard in STATIC if hazard.evidence.te_fixed_in]


@pytest.mark.parametrize("hazard", FIXED_STATIC, ids=[hazard.id for hazard in FIXED_STATIC])
def test_the_first_release_with_the_fix_is_already_guarded(hazard, release):
    """In TE's selector (the analysis runs) or its C++ (the release it records says so)."""
    source = release(hazard.evidence.te_fixed_in)
    code = source.path.read_text(encoding="utf-8")
    plan = plan_insertions(code, [hazard], te_version=source.te_version)
    assert plan.statuses[hazard.id] == ALREADY_GUARDED


FP8_CURRENT_SCALING = next(h for h in TE_FIXES if h.id == "TEA069")


@pytest.mark.parametrize("version", ["2.2.0", "2.8.0"])
def test_an_fp8_recipe_class_is_asked_with_the_recipes_own_predicate(version, release):
    """TE 2.2's recipes define `float8_current_scaling()` and its selector never calls it: the
    release the tree records says the guard can ask it; TE 2.8's selector calls it itself."""
    source = release(version)
    code = source.path.read_text(encoding="utf-8")
    plan = plan_insertions(code, [FP8_CURRENT_SCALING], te_version=source.te_version)
    assert plan.statuses["TEA069"] == INSERTED
    assert 'fp8_meta["recipe"].float8_current_scaling()' in plan.insertions[0].source


def test_an_fp8_recipe_class_no_release_defines_a_predicate_for_is_unguardable(release):
    """A copy of TE 2.2's selector alone (no recorded release, no call of the predicate) cannot
    tell whether its recipes have `float8_current_scaling()`: unguardable there, saying why;
    never a guard without the recipe's class."""
    code = release("2.2.0").path.read_text(encoding="utf-8")
    assert plan_insertions(code, [FP8_CURRENT_SCALING]).statuses["TEA069"] == NOT_APPLICABLE
    module = ast.parse(code)
    verdict = analyze_hazards(module, find_selectors(module)[0], [FP8_CURRENT_SCALING])[0]
    assert "unguardable here" in verdict.detail and "float8_current_scaling()" in verdict.detail


@pytest.mark.parametrize(
    "hazard_id, version",
    [("TEA074", "1.13.0"), ("TEA069", "2.5.0"), ("TEA075", "2.14.1"), ("TEA075", "2.2.0")],
)
def test_a_release_that_never_makes_the_request_needs_no_guard(
    hazard_id, version, release, load_te_selector
):
    """TE 1.13's C++ offers FP8 fused attention no head dim but 64 and 128; TE 2.5's
    `Float8CurrentScaling` refuses `fp8_dpa`; MXFP8 attention came in TE 2.15 (2.14's
    `DotProductAttention` refuses the recipe, whose selector alone would pick FusedAttention):
    `verify` and the analysis, told the release, say so rather than asking for a guard."""
    hazard = next(h for h in TE_FIXES if h.id == hazard_id)
    assert not hazard.evidence.makes(version) and hazard.evidence.makes(
        hazard.evidence.te_last_lacking
    )
    report = verify_hazard(load_te_selector(version).loaded, hazard)
    assert not report.reachable and not report.applicable
    assert "never makes this request" in report.summary()
    source = release(version)
    code = source.path.read_text(encoding="utf-8")
    plan = plan_insertions(code, [hazard], te_version=source.te_version)
    assert plan.statuses[hazard_id] == NOT_APPLICABLE
    module = ast.parse(code)
    verdict = analyze_hazards(
        module, find_selectors(module)[0], [hazard], te_version=source.te_version
    )[0]
    assert "never makes this request" in verdict.detail


def test_a_witness_bound_by_the_cudnn_version_alone_says_it(release):
    """TEA059's only trigger is the cuDNN version, a call's answer rather than a field: the
    finding on 2.20.2 names the version its witness ran with, not an empty list of inputs."""
    source = release("2.20.2")
    module = ast.parse(source.path.read_text(encoding="utf-8"))
    hazard = get_hazard("TEA059")
    (verdict,) = analyze_hazards(
        module, find_selectors(module)[0], [hazard], te_version=source.te_version
    )
    assert verdict.reachable
    assert "stays selectable on sm121 with cuDNN 9.17.0: enabled at line" in verdict.detail


def _tree(tmp_path, release, version: str) -> Path:
    """A fork's tree holding TE `version`'s selector and its recorded release, with TE's
    fixes switched on for the linter (`te-fixes = true`)."""
    source = release(version)
    selector = tmp_path / version / source.path.relative_to(source.root)
    selector.parent.mkdir(parents=True)
    selector.write_bytes(source.path.read_bytes())
    metadata = tmp_path / version / f"transformer_engine-{version}.dist-info" / "METADATA"
    metadata.parent.mkdir()
    metadata.write_text(f"Metadata-Version: 2.1\nName: transformer_engine\nVersion: {version}\n")
    (tmp_path / version / "pyproject.toml").write_text("[tool.te-attn-guards]\nte-fixes = true\n")
    return selector


@pytest.mark.parametrize(
    "code, lacking, fixed, words",
    [("TEA050", "2.9.0", "2.10.0", "cuDNN 9.14.0"), ("TEA062", "2.8.0", "2.9.0", "fp8_dpa")],
)
def test_flake8_flags_a_fix_before_its_release_and_not_from_it(
    code, lacking, fixed, words, tmp_path, release
):
    """TEA050 (#2344, TE 2.10's C++): reported on 2.9.0's selector, silent on 2.10.0's, told
    apart by the release each tree records, with no C++ parsed; TEA062 (#2320, TE 2.9's
    selector, on FP8 recipe state): told apart by the analysis of each selector."""
    found = {}
    for version in (lacking, fixed):
        lint = subprocess.run(
            [
                sys.executable,
                "-m",
                "flake8",
                f"--select={code}",
                str(_tree(tmp_path, release, version)),
            ],
            capture_output=True,
            text=True,
        )
        found[version] = lint.stdout
    assert code in found[lacking] and words in found[lacking]
    assert found[fixed] == ""


#: The releases each side of TEA075's `te_reachable` (">=2.15").
MXFP8_REFUSED, MXFP8_MADE = "2.14.1", "2.15.0"


def test_mxfp8_attention_is_refused_before_2_15_by_te_own_dot_product_attention(release):
    """TEA075's `te_reachable` rests on TE's module beside the selector: 2.14's
    `init_fp8_metadata` asserts against `fp8_dpa` for every recipe but per-tensor scaling
    (MXFP8BlockScaling's included); 2.15 (#2719) takes MXFP8 there, and its selector has the
    MXFP8 filters (#3173's among them, from 2.17)."""
    refused, made = (
        (release(version).path.parent / "dot_product_attention.py").read_text(encoding="utf-8")
        for version in (MXFP8_REFUSED, MXFP8_MADE)
    )
    refusal = "does not support {fp8_recipe_dpa.__class__.__name__} recipe"
    assert "if not fp8_recipe_dpa.float8_per_tensor_scaling():" in refused and refusal in refused
    assert refusal not in made and "fp8_recipe.mxfp8()" in made
    hazard = get_hazard("TEA075")
    assert not hazard.evidence.makes(MXFP8_REFUSED) and hazard.evidence.makes(MXFP8_MADE)


def test_every_te_fix_has_a_rule_page_citing_its_upstream_fix():
    for hazard in TE_FIXES:
        rule = TE_FIX_RULES[hazard.id]
        assert rule.summary == hazard.title and hazard.evidence.failure in rule.why
        page = (DOCS / f"{hazard.id}.md").read_text(encoding="utf-8")
        assert f"TE #{hazard.evidence.pr}" in page and hazard.evidence.commit in page


def test_verify_runs_te_fixes_when_asked(capsys):
    """`verify 2.9.0 --te-fixes`: TE 2.9.0 still selects FusedAttention for #2344's case."""
    assert selector_patch_cli(["verify", "2.9.0", "--te-fixes", "--json"]) == 1
    reports = {report["id"]: report for report in json.loads(capsys.readouterr().out)["hazards"]}
    assert reports["TEA050"]["reachable"] and not reports["TEA052"]["reachable"]
    assert set(reports) >= {hazard.id for hazard in TE_FIXES}


def test_a_recipe_the_release_refuses_is_not_expressible_there(load_te_selector):
    """TE 2.4's `Float8CurrentScaling` asserts against FP8 attention when it is built: the
    request is one that release cannot express, skipped as such, never a traceback."""
    with pytest.raises(pytest.skip.Exception, match="Float8CurrentScaling"):
        load_te_selector("2.4.0").select(fp8_recipe="Float8CurrentScaling", fp8_dpa=True)


def test_a_te_fix_reads_back_from_its_toml_form():
    for hazard in TE_FIXES:
        assert Hazard.from_mapping(hazard.to_mapping()) == hazard, hazard.id


def test_the_capture_signal_tells_a_call_under_capture_apart(monkeypatch, release):
    """Before TE 2.10 the params say nothing of CUDA graph capture, so TE's backend cache would
    reuse a selection made outside capture (TEA081, #2344). The runtime patch gives them TE
    2.10's `cuda_graph` field, asked of TE's own `is_graph_capturing()` as they are built, and
    the params then differ (the cache reselects); the codemod writes the same field."""
    capturing = {"now": False}
    graph = types.ModuleType("transformer_engine.pytorch.graph")
    graph.is_graph_capturing = lambda: capturing["now"]
    monkeypatch.setitem(sys.modules, graph.__name__, graph)
    module = load_selector(release("2.9.0")).module
    selector_patch.install(module)
    try:
        outside = module.AttentionParams()
        capturing["now"] = True
        inside = module.AttentionParams()
        assert (outside.cuda_graph, inside.cuda_graph) == (False, True) and outside != inside
    finally:
        selector_patch.uninstall(module)
    patched, _ = transform(release("2.9.0").path.read_text(encoding="utf-8"), [FUSED_CUDA_GRAPH])
    assert "cuda_graph = attention_params.cuda_graph" in patched
    assert "default_factory=lambda: te.pytorch.graph.is_graph_capturing()" in patched


def test_a_selector_without_te_at_hand_cannot_take_the_capture_signal_and_says_why(release):
    code = release("2.9.0").path.read_text(encoding="utf-8")
    code = code.replace("import transformer_engine as te\n", "")
    assert plan_insertions(code, [FUSED_CUDA_GRAPH]).statuses["TEA081"] == NOT_APPLICABLE
    module = ast.parse(code)
    verdict = analyze_hazards(module, find_selectors(module)[0], [FUSED_CUDA_GRAPH])[0]
    assert "unguardable here" in verdict.detail and "`cuda_graph`" in verdict.detail
