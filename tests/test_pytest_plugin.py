"""The pytest plugin and `selector_patch.testing`: keyword requests, answers, cases, assertions.

Inner sessions run in process (`pytester`), with the plugin found through its entry point as in
any project that installed the package; the selector is the real TE 2.20.2 release.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from lint_plugin.mine.declare import hazard_tables
from selector_patch.harness import Selection
from selector_patch.registry import HAZARDS, TE_FIXES, get_hazard
from selector_patch.scenario import Scenario
from selector_patch.sources import CACHE_VARIABLE, cache_dir
from selector_patch.testing import (
    BackendChoice,
    assert_case,
    assert_not_selected,
    assert_selected,
    hazard_cases,
)
from selector_patch.testing.cases import cases
from selector_patch.testing.inputs import keyword_inputs, request_of

TEA001, TEA002 = get_hazard("TEA001"), get_hazard("TEA002")
REPO = Path(__file__).resolve().parent.parent
#: `pytester` gives inner sessions a HOME of their own; they read the same release cache.
CACHE = cache_dir()
SEED_000 = dict(
    compute_capability=(12, 0),
    deterministic=True,
    flash_attn_2=None,
    NVTE_FLASH_ATTN_V2="0",
    NVTE_FLASH_ATTN_V3="0",
    NVTE_FUSED_ATTN="0",
)
FIELDS = ("is_training", "requires_backward", "head_dim", "qkv_dtype", "window_size", "fp8")


@pytest.fixture(scope="module")
def te(load_te_selector):
    return load_te_selector("2.20.2")


def test_te_words_become_a_scenario_and_extra_fields() -> None:
    scenario, params = request_of(
        {
            "compute_capability": [12, 1],
            "is_training": False,
            "requires_backward": False,
            "head_dim": 256,
            "head_dim_qk": 192,
            "NVTE_FUSED_ATTN": 0,
            "env": {"NVTE_FLASH_ATTN": "1"},
            "qkv_dtype": torch.float16,
            "fp8": True,
        },
        FIELDS,
    )
    assert scenario == Scenario(
        compute_capability=(12, 1),
        training=False,
        backward=False,
        head_dim_qk=192,
        head_dim_v=256,
        qkv_dtype="float16",
        env=(("NVTE_FLASH_ATTN", "1"), ("NVTE_FUSED_ATTN", "0")),
    )
    assert params == {"fp8": True}


@pytest.mark.parametrize(
    "inputs, cause",
    [
        ({"determinstic": True}, "unknown input 'determinstic'"),
        ({"training": True, "is_training": False}, "training is given twice"),
        ({"env": {"CUDA_VISIBLE_DEVICES": "0"}}, "not an NVTE_* variable"),
        ({"NVTE_FUSED_ATTN": False}, "must be a string"),
        ({"compute_capability": "sm120"}, "must be a tuple of 2 integers"),
    ],
)
def test_bad_inputs_are_named(inputs, cause) -> None:
    with pytest.raises(TypeError, match=re.escape(cause)):
        request_of(inputs, FIELDS)


@pytest.mark.parametrize("hazard", HAZARDS, ids=lambda h: h.id)
def test_every_case_round_trips_through_its_keywords(hazard) -> None:
    for case in cases(hazard):
        assert request_of(case.inputs, ()) == (case.scenario, {})
        assert request_of(keyword_inputs(case.scenario), ()) == (case.scenario, {})


def test_ids_say_what_sets_each_case_apart() -> None:
    ids = [param.id for param in hazard_cases()]
    assert len(ids) == len(set(ids))
    assert "TEA001-witness-sm120-fa4_4.0.0b24-eval-fa4_only" in ids
    assert "TEA001-control-nondeterministic-sm121-fa4_4.0.0b36-training-default_env" in ids
    assert "TEA002-witness-sm120-fa2_2.7.4.post1-hdim192_256-fa2_only" in ids
    assert "TEA003-witness-sm120-fa4_4.0.0b24-eval-forward_only-fa4_only" in ids
    # A control's id leaves out what the control changes: "sm90" sets the architecture, and
    # "forward-only eval" both training and backward.
    assert "TEA002-control-sm90-fa2_2.8.3-hdim256-fa2_only" in ids
    assert "TEA001-control-forward_only_eval-sm120-fa4_4.0.0b24-fa4_only" in ids
    assert [p.id for p in hazard_cases(TEA002, kinds=("witness",))][:3] == [
        "TEA002-witness-sm86-fa2_2.8.3-hdim256-default_env",
        "TEA002-witness-sm86-fa2_2.8.3-hdim256-fa2_only",
        "TEA002-witness-sm86-fa2_2.8.3-hdim224-default_env",
    ]


def test_declared_hazards_come_from_the_working_directory_pyproject(tmp_path, monkeypatch):
    declared = TEA001.replace(id="TEA010", architectures=((10, 0),))
    (tmp_path / "pyproject.toml").write_text(hazard_tables([declared]))
    monkeypatch.chdir(tmp_path)
    ids = [param.id for param in hazard_cases("TEA010", kinds=("witness",))]
    assert ids[:2] == [
        "TEA010-witness-fa4_4.0.0b24-training-default_env",
        "TEA010-witness-fa4_4.0.0b24-training-fa4_only",
    ]
    known = ", ".join([*(hazard.id for hazard in HAZARDS), "TEA010", *(h.id for h in TE_FIXES)])
    with pytest.raises(ValueError, match=f"unknown hazard 'TEA099'; known: {known}$"):
        hazard_cases("TEA099")


def test_select_answers_in_te_words(te) -> None:
    result = te.select(**SEED_000)
    assert (result.backend, result.role, result.version) == ("FlashAttention", "FA4", "4.0.0b24")
    assert result.available == ("FlashAttention", "UnfusedDotProductAttention")
    assert "Selected backend = FlashAttention (4.0.0b24)." in result.log
    assert repr(result) == (
        "BackendChoice(backend='FlashAttention', role='FA4', version='4.0.0b24',"
        " available=('FlashAttention', 'UnfusedDotProductAttention'))"
    )
    assert str(result).splitlines()[:2] == [
        "TE 2.20.2 on sm120 chose FlashAttention (FA4 4.0.0b24); available: FlashAttention,"
        " UnfusedDotProductAttention",
        "request: compute_capability=(12, 0), flash_attn_2=None, deterministic=True,"
        " NVTE_FLASH_ATTN_V2='0', NVTE_FLASH_ATTN_V3='0', NVTE_FUSED_ATTN='0'",
    ]
    assert te.select(Scenario(compute_capability=(12, 0)), **SEED_000).log == result.log


def test_any_attention_params_field_reaches_te(te) -> None:
    """`qkv_dtype` given as TE's own dtype is the vocabulary's input, held by its name; TE's
    own dtype filter answers it."""
    result = te.select(**SEED_000, qkv_dtype=torch.float32)
    assert result.backend == "UnfusedDotProductAttention"
    assert any("torch.float32" in line for line in result.log if line.startswith("Disabling"))
    assert "qkv_dtype='float32'" in str(result)
    with pytest.raises(TypeError, match="unknown input 'requires_grad_mode'"):
        te.select(requires_grad_mode=True)


def _choice(role: str, backend: str, lines: tuple[str, ...]) -> BackendChoice:
    entries = tuple(("DEBUG", line, ()) for line in lines)
    selection = Selection(backend, role, None, (False, False, True), entries=entries)
    return BackendChoice(selection, Scenario(), {}, "2.20.2")


def test_assertions_say_what_was_chosen_why_and_what_the_hazard_expected(te) -> None:
    result = te.select(**SEED_000)
    assert_selected(result, "TEA001")
    with pytest.raises(AssertionError) as failure:
        assert_not_selected(result, "TEA001")
    message = str(failure.value)
    assert message.startswith(f"TEA001: {TEA001.title}\nexpected: FA4 not selected; TE should log")
    assert TEA001.message in message
    assert "chose FlashAttention (FA4 4.0.0b24)" in message
    assert "  Disabling FusedAttention due to NVTE_FUSED_ATTN=0" in message
    assert "  Selected backend = FlashAttention (4.0.0b24)." in message
    with pytest.raises(AssertionError, match="expected: FA2 selected: this request is outside"):
        assert_selected(result, TEA002)


def test_assert_case_judges_controls_as_verify_does() -> None:
    witness = next(c for c in cases(TEA001) if c.kind == "witness")
    control = next(c for c in cases(TEA001) if c.kind == "control")
    removed = _choice("UNFUSED", "UnfusedDotProductAttention", (TEA001.message,))
    assert_case(removed, witness)
    with pytest.raises(AssertionError, match="FA4 selected, but the hazard's own guard removed it"):
        assert_case(removed, control)
    other = _choice("UNFUSED", "UnfusedDotProductAttention", ("Disabling FlashAttention 4 as ...",))
    with pytest.raises(pytest.skip.Exception, match="TE's own filters exclude FA4 here"):
        assert_case(other, control)


EXAMPLE = """
import pytest

from selector_patch.testing import assert_case, assert_not_selected, hazard_cases

SEED_000 = {seed_000!r}


def test_seed_000(te_selector):
    assert_not_selected(te_selector.select(**SEED_000), "TEA001")


def test_score_mod_before_te_2_16(load_te_selector):
    load_te_selector("2.15.0").select(has_score_mod=True)


@pytest.mark.parametrize("case", hazard_cases("TEA001"))
def test_tea001(te_selector, case):
    assert_case(te_selector.select(**case.inputs), case)
"""


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch) -> pytest.Pytester:
    monkeypatch.setenv(CACHE_VARIABLE, str(CACHE))
    return pytester


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in result.parseoutcomes().items() if k in ("passed", "failed", "skipped")}


def test_te_selector_from_the_command_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(EXAMPLE.format(seed_000=SEED_000))
    result = pytester.runpytest("--te-selector", "2.20.2", "-rfs")
    result.stdout.fnmatch_lines(
        [
            "te-attn-guards: te_selector = 2.20.2",
            "*AssertionError: TEA001: FlashAttention 4 chosen for deterministic backward*",
        ]
    )
    # The unpatched release: seed 000 and TEA001's FA4-only witnesses fail (elsewhere TE's
    # fused preference already keeps FA4 out).
    output = result.stdout.str()
    failed = set(re.findall(r"^FAILED \S+::(\S+)", output, re.M))
    witnesses = hazard_cases(TEA001, kinds=("witness",))
    assert failed == {"test_seed_000"} | {
        f"test_tea001[{p.id}]" for p in witnesses if p.id.endswith("-fa4_only")
    }
    # Skips say why: what the release cannot express, and controls TE's own filters decide.
    reasons = set(re.findall(r"^SKIPPED \[\d+\] \S+\.py:\d+: (.*)$", output, re.M))
    assert reasons == {
        "TE 2.15.0 cannot express this request: has_score_mod=True: this release has no"
        " `has_score_mod` input",
        "TE's own filters exclude FA4 here, not TEA001's guard: Disabling FlashAttention to give"
        " FusedAttention preference on Hopper+ for performance reasons",
    }


def test_te_selector_from_the_ini_file(pytester: pytest.Pytester, release) -> None:
    checkout = pytester.path / "TransformerEngine"
    checkout.mkdir()
    (checkout / "transformer_engine").symlink_to(release("2.20.2").root / "transformer_engine")
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\nte_selector = "TransformerEngine"\n')
    pytester.makepyfile(
        """
        def test_it(te_selector):
            assert te_selector.source.origin == "checkout"
            assert te_selector.select(compute_capability=(12, 0)).backend == "FusedAttention"
        """
    )
    subdirectory = pytester.mkdir("elsewhere")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(subdirectory)
        result = pytester.runpytest(pytester.path)
    assert _outcomes(result) == {"passed": 1}


@pytest.mark.parametrize(
    "args, cause",
    [
        ((), "te_selector: no TE selector configured; pass --te-selector SOURCE"),
        (("--te-selector", "no/such/place"), "no/such/place: no such file or directory"),
    ],
)
def test_a_missing_or_bad_source_is_one_line(pytester: pytest.Pytester, args, cause) -> None:
    pytester.makepyfile("def test_it(te_selector):\n    pass\n")
    result = pytester.runpytest(*args)
    assert _outcomes(result) == {}
    result.stdout.fnmatch_lines(["*ERROR at setup of test_it*", f"{cause}*"])
    assert "Traceback" not in result.stdout.str()


def test_a_selector_whose_code_fails_fails_the_test_in_one_line(pytester: pytest.Pytester):
    """The synthetic pair's selector returns four values, which TE's caller cannot unpack."""
    selector = pytester.path / "utils.py"
    selector.write_text((REPO / "tests" / "codemod_pairs" / "te2_fa4.before.py").read_text())
    pytester.makepyfile(test_it="def test_it(te_selector):\n    te_selector.select()\n")
    result = pytester.runpytest("--te-selector", str(selector))
    assert _outcomes(result) == {"failed": 1}
    result.stdout.fnmatch_lines([f"{selector}: get_attention_backend returned 4 items*"])
    assert "Traceback" not in result.stdout.str()


def test_fixtures_are_listed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures")
    result.stdout.fnmatch_lines(["*fixtures defined from selector_patch.pytest_plugin*"])
    for fixture, docstring in (
        ("load_te_selector [[]session scope[]]*", "*Load any TE selector once per session*"),
        ("te_selector [[]session scope[]]*", "*The selector under test*"),
        ("te_selection_snapshot -- *", "*against its committed selection snapshot*"),
    ):
        result.stdout.fnmatch_lines([fixture, docstring])


def test_load_te_selector_loads_each_selector_once(load_te_selector, release) -> None:
    source = release("2.20.2")
    assert load_te_selector("2.20.2") is load_te_selector(source)
    assert load_te_selector(source.root) is load_te_selector(str(source.root))
