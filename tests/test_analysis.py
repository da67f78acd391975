"""The abstract interpreter and the hazard analysis on small synthetic selectors.

Each case is a selector body whose variable `flag` is judged at the returns: "off" when it is
definitely falsy at every reachable return, "maybe" otherwise. Inputs are bound as the analysis
binds a witness: `AttentionParams` fields by name, the compute capability through TE's hardware
query; everything else is unknown.
"""

from __future__ import annotations

import ast
import functools
import textwrap
from pathlib import Path

import pytest

from lint_plugin.engine import interpreter
from lint_plugin.engine.absint import UNKNOWN, choice_set, const, join, one_of, unknown, widen
from lint_plugin.engine.analysis import (
    HazardVerdict,
    analyze_hazard,
    analyze_hazards,
    analyze_source,
    compute_capability,
    covers,
    selector,
)
from lint_plugin.engine.anchors import find_anchor
from lint_plugin.engine.dialect import Dialect, find_selectors
from lint_plugin.engine.interpreter import AnalysisBudgetExceeded, Facts, Interpreter
from lint_plugin.engine.program import Program, descendants
from lint_plugin.engine.slicing import Slice
from lint_plugin.rule_examples import te2_example
from lint_plugin.rules import RULES
from selector_patch.registry import HAZARDS, Hazard, get_hazard
from selector_patch.scenario import Scenario

PRELUDE = """
    deterministic = attention_params.deterministic
    is_training = attention_params.is_training
    head_dim = attention_params.head_dim
    device_compute_capability = get_device_compute_capability()
    flag = int(os.environ.get("FLAG", "1"))
"""


def flag(body: str, capability=(12, 0), sliced: bool = False, **params) -> str:
    """The flag's verdict; a `set` of capabilities or of a parameter's values binds the choice
    of them, as a run of several witnesses together does."""
    source = "def get_attention_backend(attention_params):\n" + textwrap.indent(
        textwrap.dedent(PRELUDE) + textwrap.dedent(body), "    "
    )
    function = ast.parse(source).body[0]
    program = Program(function)
    capabilities = capability if isinstance(capability, set) else {capability}
    facts = Facts(
        params={
            name: one_of(value if isinstance(value, set) else {value}, frozenset((name,)))
            for name, value in params.items()
        },
        calls=compute_capability(*capabilities),
    )
    relevant = Slice(program, frozenset({"flag"})) if sliced else None
    states = Interpreter(program, facts, relevant=relevant).run()
    values = [state.vars["flag"] for state in states if "flag" in state.vars]
    if not values:
        return "off"
    return "off" if functools.reduce(join, values).truth is False else "maybe"


GUARDED = dict(deterministic=True, is_training=True)

CASES = [
    ("no guard", "return flag", "maybe"),
    (
        "conjunction refines the else-branch",
        """
        if flag and deterministic and is_training and device_compute_capability[0] == 12:
            flag = False
        return flag
    """,
        "off",
    ),
    (
        "negation: else-branch knows the flag is truthy",
        """
        if not flag:
            pass
        else:
            if deterministic:
                flag = False
        return flag
    """,
        "off",
    ),
    (
        "tuple membership",
        """
        if device_compute_capability not in ((8, 0), (9, 0), (10, 0)) and deterministic:
            flag = False
        return flag
    """,
        "off",
    ),
    (
        "chained range",
        """
        if (12, 0) <= device_compute_capability < (13, 0) and is_training:
            flag = False
        return flag
    """,
        "off",
    ),
    (
        "wrong architecture",
        """
        if device_compute_capability == (10, 0) and deterministic:
            flag = False
        return flag
    """,
        "maybe",
    ),
    (
        "an unbound input keeps the guard undecided",
        """
        if deterministic and head_dim > 192:
            flag = False
        return flag
    """,
        "maybe",
    ),
    (
        "builtins fold on constants",
        """
        if max(device_compute_capability[0], 11) > 11:
            flag = False
        return flag
    """,
        "off",
    ),
    (
        "later re-enable",
        """
        if deterministic:
            flag = False
        flag = int(os.environ.get("FLAG", "1"))
        return flag
    """,
        "maybe",
    ),
    (
        "early return before the guard",
        """
        if os.environ.get("EARLY"):
            return flag
        if deterministic:
            flag = False
        return flag
    """,
        "maybe",
    ),
    (
        "a raise prunes the path",
        """
        if flag and deterministic:
            raise ValueError("unsupported")
        return flag
    """,
        "off",
    ),
    (
        "nonlocal helper",
        """
        def _disable():
            nonlocal flag
            flag = False

        if deterministic:
            _disable()
        return flag
    """,
        "off",
    ),
    (
        "helper result in a condition",
        """
        def _supported(capability):
            if capability[0] == 12:
                return False
            return True

        if not _supported(device_compute_capability):
            flag = False
        return flag
    """,
        "off",
    ),
    (
        "helper locals do not leak",
        """
        def _shadow():
            flag = False
            return flag

        _shadow()
        return flag
    """,
        "maybe",
    ),
    (
        "loop that may not run",
        """
        for item in os.environ.get("ITEMS", ""):
            flag = False
        return flag
    """,
        "maybe",
    ),
    (
        "loop with break",
        """
        while True:
            flag = False
            break
        return flag
    """,
        "off",
    ),
    (
        "counting loop reaches a fixpoint",
        """
        count = 0
        while count < int(os.environ.get("N", "3")):
            count += 1
            if count > 1:
                flag = False
        return flag
    """,
        "maybe",
    ),
    (
        "handler may start before the guard",
        """
        try:
            probe()
            flag = False
        except AssertionError:
            pass
        return flag
    """,
        "maybe",
    ),
    (
        "guard before anything can raise",
        """
        try:
            flag = False
            probe()
        except AssertionError:
            pass
        return flag
    """,
        "off",
    ),
    (
        "finally runs on every path",
        """
        try:
            probe()
        finally:
            flag = False
        return flag
    """,
        "off",
    ),
    (
        "a context manager may swallow the rest of its body",
        """
        with suppress(Exception):
            probe()
            flag = False
        return flag
    """,
        "maybe",
    ),
    (
        "match statement",
        """
        match device_compute_capability:
            case (12, _):
                flag = False
            case _:
                flag = False
        return flag
    """,
        "off",
    ),
    (
        "method call forgets a local list",
        """
        reasons = []
        if deterministic:
            reasons.append("deterministic")
        if reasons:
            flag = False
        return flag
    """,
        "maybe",
    ),
]


@pytest.mark.parametrize(("body", "expected"), [pytest.param(b, e, id=n) for n, b, e in CASES])
@pytest.mark.parametrize("sliced", [False, True], ids=["whole", "sliced"])
def test_flag_at_returns(body: str, expected: str, sliced: bool) -> None:
    assert flag(body, sliced=sliced, **GUARDED) == expected


@pytest.mark.parametrize("sliced", [False, True], ids=["whole", "sliced"])
def test_a_branch_that_leaves_early_refines_only_its_own_side(sliced: bool) -> None:
    """The `raise` leaves `is_training` true on the `deterministic` side alone: past the `if`,
    a run that is not deterministic may still be in eval mode, and keep the flag."""
    body = """
        if deterministic:
            if not is_training:
                raise ValueError("training only")
        if is_training:
            flag = False
        return flag
    """
    assert flag(body, sliced=sliced) == "maybe"
    assert flag(body, sliced=sliced, deterministic=True) == "off"


@pytest.mark.parametrize("sliced", [False, True], ids=["whole", "sliced"])
def test_each_branch_of_a_helper_test_starts_from_its_own_state(sliced: bool) -> None:
    """`_strict()` returns once, true or false: the `else` branch must not start from what the
    `then` branch did."""
    body = """
        def _strict():
            return deterministic
        if _strict():
            flag = False
        else:
            pass
        return flag
    """
    assert flag(body, sliced=sliced) == "maybe"
    assert flag(body, sliced=sliced, deterministic=True) == "off"


#: A fork's filter that switches a flash flag and the unfused flag off in one statement, then
#: sets the unfused flag anew (a statement the flash runs' slice skips), and a flash filter on it.
_BOTH_FLAGS = """
    if head_dim_qk > 512:
        use_flash_attention_4 = use_unfused_attention = False
    use_unfused_attention = int(os.environ.get("NVTE_UNFUSED_ATTN", "1"))
    if not use_unfused_attention:
        use_flash_attention_4 = False
"""


def test_a_flash_run_skips_what_only_the_other_backends_need_and_never_trusts_them() -> None:
    """A run about FA4 reads the unfused flag as unknown and skips its own assignment; the
    statement that also switched it off leaves no value of it behind, since one would rule out
    the branch where the unfused flag is on again (and FA4 with it). Sliced or not, FA4 stays
    selectable on sm120 for a deterministic backward."""
    module = ast.parse(te2_example(compute_capability=_BOTH_FLAGS))
    function = find_selectors(module)[0]
    prepared = selector(module, function)
    hazard = get_hazard("TEA001")
    facts = prepared.facts(hazard, prepared.witnesses(hazard)[:1])
    flash_slice, cut = prepared.run_slice("FA4", facts)
    assert cut.unbound == cut.opaque == {"use_unfused_attention"}
    skipped = [s for s in function.body if not flash_slice.needed(s)]
    assert "use_unfused_attention = int(" in "\n".join(map(ast.unparse, skipped))
    for relevant, known in ((None, facts), (prepared.relevant, facts), (flash_slice, cut)):
        states = Interpreter(prepared.program, known, relevant=relevant).run()
        assert any(s.vars["use_flash_attention_4"].truth is not False for s in states)
    assert analyze_hazard(module, function, hazard).reachable


def test_descendants_are_what_ast_walk_yields_but_the_singletons() -> None:
    """Every node but `Load`, `Add`, `Eq`, ... (which hold nothing), on a real selector."""
    module = ast.parse(te2_example())
    singletons = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
    walked = [node for node in ast.walk(module) if not isinstance(node, singletons)]
    found = list(descendants(module))
    assert len(found) == len(walked) and set(map(id, found)) == set(map(id, walked))


_RAISING = """
def get_attention_backend(attention_params):
    def _off():
        nonlocal flag
        flag = False
    flag = True
    if attention_params.a:
        if attention_params.b:
            assert attention_params.c
    if attention_params.d:
        def _never_called():
            raise ValueError("a definition raises where it is called, not where it stands")
        _off()
    if attention_params.e:
        _off()
    return flag
"""


@pytest.mark.parametrize("helper_raises", [False, True])
def test_a_statement_raises_where_a_raise_or_a_helper_that_raises_is_in_it(helper_raises) -> None:
    """`Program.raises`, which decides whether a slice keeps an `if` whose test reads a live
    name: a nested `assert` counts, a `raise` in a nested definition does not, and a call
    counts where the helper raises."""
    source = _RAISING.replace("flag = False", "raise ValueError") if helper_raises else _RAISING
    function = ast.parse(source).body[0]
    program = Program(function)
    nested, defining, calling = function.body[2:5]
    assert program.raises(nested) and program.raises(nested.body[0])
    assert not program.raises(defining.body[0])
    assert program.raises(defining) is helper_raises
    assert program.raises(calling) is helper_raises


def test_refinement_is_per_witness() -> None:
    guard = """
        if deterministic and device_compute_capability in ((12, 0), (12, 1)):
            flag = False
        return flag
    """
    assert flag(guard, capability=(12, 1), **GUARDED) == "off"
    assert flag(guard, capability=(9, 0), **GUARDED) == "maybe"
    assert flag(guard, capability=(12, 0), deterministic=False, is_training=True) == "maybe"


def test_a_branch_no_state_reaches_is_neither_planned_nor_compiled() -> None:
    """What a run cannot reach costs it nothing: TE's filters for other architectures."""
    source = "def get_attention_backend(attention_params):\n" + textwrap.indent(
        textwrap.dedent(PRELUDE)
        + "if device_compute_capability == (9, 0):\n    flag = deterministic and is_training\n"
        + "return flag\n",
        "    ",
    )
    function = ast.parse(source).body[0]
    program = Program(function)
    Interpreter(program, Facts(calls=compute_capability((12, 0)))).run()
    branch = function.body[-2]
    assert branch in program.executors
    assert branch.body[0] not in program.executors
    assert branch.body[0].value not in program.evaluators


def test_budget(monkeypatch) -> None:
    monkeypatch.setattr(interpreter, "STATEMENT_BUDGET", 5)
    with pytest.raises(AnalysisBudgetExceeded):
        flag("x = 1\nx = 2\nx = 3\nreturn flag")


SELECTOR = """
import os


def get_attention_backend(attention_params):
    deterministic = attention_params.deterministic
    is_training = attention_params.is_training
    device_compute_capability = get_device_compute_capability()
    use_flash_attention_4 = int(os.environ.get("NVTE_FLASH_ATTN_V4", "1"))
{guard}
    return use_flash_attention_4
"""


def test_verdict_fields() -> None:
    tea001, not_applicable, *_ = analyze_source(SELECTOR.format(guard=""))
    reachable = tea001
    assert isinstance(reachable, HazardVerdict)
    assert (reachable.hazard_id, reachable.function) == ("TEA001", "get_attention_backend")
    assert reachable.applicable and reachable.reachable
    assert reachable.witness in set(get_hazard("TEA001").witnesses())
    assert (reachable.line, reachable.col) == (9, 4)  # the enable line
    assert "deterministic=True" in reachable.detail and "sm120" in reachable.detail
    assert not not_applicable.applicable and not not_applicable.reachable
    assert not_applicable.witness is None and not_applicable.line is None


def test_guarded_verdict() -> None:
    guard = """
    if deterministic and torch.is_grad_enabled() and device_compute_capability[0] == 12:
        use_flash_attention_4 = False"""
    verdict = analyze_source(SELECTOR.format(guard=guard), hazards=[get_hazard("TEA001")])[0]
    assert verdict.applicable and not verdict.reachable
    assert verdict.witness is None and verdict.line is None


def test_a_guard_on_training_mode_misses_eval_with_backward() -> None:
    """Seed 000's fix keys on `is_training`: a module in eval() whose call autograd records
    still reaches FA4, and the finding names that witness."""
    guard = """
    if deterministic and is_training and device_compute_capability[0] == 12:
        use_flash_attention_4 = False"""
    verdict = analyze_source(SELECTOR.format(guard=guard), hazards=[get_hazard("TEA001")])[0]
    assert verdict.reachable and not verdict.witness.training and verdict.witness.backward
    assert "is_training=False and a backward to run" in verdict.detail
    assert "it reads no `requires_backward`" in verdict.detail


def test_a_version_gated_guard_is_decided_on_the_pinned_release() -> None:
    """TEA004 holds below flash-attn-4 4.0.0b36 only; its witnesses pin the release, and the
    module's packaging `Version` folds, so the version test is decided."""
    source = """
from packaging.version import Version as PkgVersion


class FlashAttentionUtils:
    fa4_version = PkgVersion("0")


def get_attention_backend(attention_params):
    num_splits = attention_params.num_splits
    device_compute_capability = get_device_compute_capability()
    use_flash_attention_4 = int(os.environ.get("NVTE_FLASH_ATTN_V4", "1"))
    if num_splits < 1 and FlashAttentionUtils.fa4_version {op} PkgVersion("4.0.0b36"):
        use_flash_attention_4 = False
    return use_flash_attention_4
"""
    hazard = get_hazard("TEA004")
    assert not analyze_source(source.format(op="<"), hazards=[hazard])[0].reachable
    wrong = analyze_source(source.format(op=">="), hazards=[hazard])[0]
    assert wrong.reachable and "flash-attn-4 4.0.0b24" in wrong.detail


def test_wrong_architecture_points_at_the_guard() -> None:
    guard = """
    if deterministic and is_training and device_compute_capability == (10, 0):
        use_flash_attention_4 = False"""
    verdict = analyze_source(SELECTOR.format(guard=guard), hazards=[get_hazard("TEA001")])[0]
    assert verdict.reachable and verdict.line == 11
    assert "(10, 0)" in verdict.detail


def test_requires_backward_dialect_binds_requires_backward() -> None:
    source = SELECTOR.replace(
        "    is_training = attention_params.is_training",
        "    requires_backward = attention_params.requires_backward",
    ).format(
        guard="""
    if use_flash_attention_4 and deterministic and requires_backward:
        if device_compute_capability[0] == 12:
            use_flash_attention_4 = False"""
    )
    assert not analyze_source(source, hazards=[get_hazard("TEA001")])[0].reachable


def test_configurable_function_names() -> None:
    source = SELECTOR.format(guard="").replace("get_attention_backend", "pick_backend")
    assert analyze_source(source) == []
    assert len(analyze_source(source, function_names=["pick_backend"])) == len(HAZARDS)


def test_same_verdict_for_every_environment_of_a_point() -> None:
    """Witnesses differ in `NVTE_*` variables the analysis leaves unknown: one run covers them."""
    module = ast.parse(SELECTOR.format(guard=""))
    function = find_selectors(module)[0]
    verdict = analyze_hazard(module, function, get_hazard("TEA001"))
    assert verdict.witness.env == Scenario().env


#: Several witnesses in one run: (name, body, capabilities, parameters, verdict).
CHOICE_CASES = [
    (
        "membership holds for every choice",
        """
        if deterministic and device_compute_capability in ((12, 0), (12, 1)):
            flag = False
        return flag
    """,
        {(12, 0), (12, 1)},
        GUARDED,
        "off",
    ),
    (
        "membership that holds for some choices only",
        """
        if deterministic and device_compute_capability in ((12, 0), (12, 1)):
            flag = False
        return flag
    """,
        {(12, 0), (9, 0)},
        GUARDED,
        "maybe",
    ),
    (
        "arithmetic and builtins fold over the choices",
        """
        padded = max(head_dim, 128) + 8
        if padded > 200 and device_compute_capability[0] == 12:
            flag = False
        return flag
    """,
        {(12, 0), (12, 1)},
        dict(head_dim={256, 224}),
        "off",
    ),
    (
        "a branch narrows the choices of what it compares",
        """
        if head_dim < 200:
            flag = False
        elif head_dim > 192 and device_compute_capability[0] == 12:
            flag = False
        return flag
    """,
        {(12, 0), (12, 1)},
        dict(head_dim={256, 128}),
        "off",
    ),
    (
        "branches that narrowed a choice join back to both values",
        """
        if device_compute_capability == (12, 0):
            pass
        if device_compute_capability in ((12, 0), (12, 1)):
            flag = False
        return flag
    """,
        {(12, 0), (12, 1)},
        {},
        "off",
    ),
    (
        "inputs are not tied to each other: the run covers pairs no witness has",
        """
        if head_dim > 192 and device_compute_capability == (12, 0):
            flag = False
        if head_dim <= 192 and device_compute_capability == (12, 1):
            flag = False
        return flag
    """,
        {(12, 0), (12, 1)},
        dict(head_dim={256, 128}),
        "maybe",
    ),
]


@pytest.mark.parametrize(
    ("body", "capabilities", "params", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in CHOICE_CASES],
)
def test_choices(body, capabilities, params, expected) -> None:
    assert flag(body, capability=capabilities, **params) == expected


def test_join_and_widen_of_choices() -> None:
    sm120, sm121 = const((12, 0)), one_of({(12, 1)})
    assert one_of({(12, 1)}).known  # a single value is simply known
    joined = join(sm120, one_of({(12, 1), (9, 0)}))
    assert joined.const is UNKNOWN and joined.choices == {(12, 0), (12, 1), (9, 0)}
    assert join(sm120, sm121).choices is None  # two known values: no choice was made
    assert widen(one_of({1, 2}), one_of({2, 3})).choices is None  # growing choices stop
    assert choice_set([1, True]) is None  # equal, yet not the same constant
    assert choice_set([[1]]) is None and choice_set(range(1000)) is None


#: FA2's MLA filter: it decides the (192, 256) witness only in that witness's own run.
MLA = """
    if use_flash_attention_2 and head_dim_qk != head_dim_v:
        use_flash_attention_2 = False
"""
#: TEA002 guards, and whether the hazard stays reachable (first on sm120, which the example's
#: head-dim allowlist lets through).
GROUPED_GUARDS = {
    "unguarded": ("", True),
    "guarded": (
        """
    if use_flash_attention_2 and head_dim_qk > 192 and attention_dropout > 0 and is_training:
        use_flash_attention_2 = False
""",
        False,
    ),
    "guarded on sm8x only": (
        """
    if use_flash_attention_2 and head_dim_qk > 192 and device_compute_capability[0] == 8:
        use_flash_attention_2 = False
""",
        True,
    ),
}


@pytest.mark.parametrize(("guard", "reachable"), GROUPED_GUARDS.values(), ids=GROUPED_GUARDS)
@pytest.mark.parametrize("expect_guarded", [False, True])
def test_witnesses_run_together_where_that_decides(guard, reachable, expect_guarded) -> None:
    """Witnesses run together first (per architecture; all of them with `expect_guarded`).
    Where that run is too coarse - it cannot tie `head_dim_qk` to `head_dim_v`, which the MLA
    filter needs for the (192, 256) witness - they run one by one: the verdict, and the
    witness reported, are those of the first witness that reaches the backend."""
    module = ast.parse(te2_example(head_dim=MLA + guard))
    function = find_selectors(module)[0]
    hazard = get_hazard("TEA002")
    verdict = analyze_hazard(module, function, hazard, expect_guarded=expect_guarded)
    assert verdict.reachable is reachable
    first = next(w for w in hazard.witnesses() if w.compute_capability == (12, 0))
    assert verdict.witness == (first if reachable else None)


KEYWORD_INPUTS = (
    Path(__file__).parent / "codemod_pairs" / "te18_keyword_inputs.before.py"
).read_text()


def test_keyword_inputs_are_bound_from_the_parameters() -> None:
    """TE before 1.9 takes its inputs as keyword parameters: the analysis binds them by name,
    so an allowlist of sm80/sm90 alone (as TE had it) excludes every 99 KB GPU."""
    sm80_sm90 = KEYWORD_INPUTS.replace("((8, 0), (9, 0), (12, 0))", "((8, 0), (9, 0))")
    (verdict,) = analyze_source(sm80_sm90, hazards=[get_hazard("TEA002")])
    assert verdict.applicable and not verdict.reachable
    (verdict,) = analyze_source(KEYWORD_INPUTS, hazards=[get_hazard("TEA002")])
    assert verdict.reachable and "head_dim=256, attention_dropout=0.1" in verdict.detail
    assert verdict.line == 40  # the allowlist that lets sm120 through


def test_keyword_inputs_have_their_parameter_defaults() -> None:
    module = ast.parse(KEYWORD_INPUTS)
    dialect = Dialect(find_selectors(module)[0], module)
    assert dialect.param_defaults == {
        "head_dim": 64,
        "attention_dropout": 0.0,
        "deterministic": False,
    }
    assert dialect.params_class is None and dialect.head_dim_fields == ("head_dim",)
    assert not dialect.sees("training") and dialect.sees("backward")


def moved(hazard_id: str, arch: tuple[int, int], number: int) -> Hazard:
    """A registry hazard on another architecture, as a hazard of its own (`TEA0nn`)."""
    return get_hazard(hazard_id).replace(id=f"TEA{number:03d}", architectures=(arch,))


#: FA4 hazards on sm86, where the example's first filter switches FA4 off for any input.
ON_SM86 = [moved("TEA001", (8, 6), 10), moved("TEA003", (8, 6), 11), moved("TEA004", (8, 6), 12)]
#: A fork that lets FA4 back in on sm86 after every filter.
REENABLED = """
    if device_compute_capability == (8, 6):
        use_flash_attention_4 = True
"""


@pytest.mark.parametrize("late", ["", REENABLED], ids=["arch-filtered", "re-enabled"])
def test_an_architecture_filter_decides_every_hazard_of_its_backend_in_one_run(
    late, monkeypatch
) -> None:
    """Where a filter on the architecture alone switches a backend off, one run with nothing
    but the architecture bound judges every hazard of that backend there. The filter is only
    the reason to try that run: a fork that switches the backend on again afterwards makes it
    fail, and each hazard is then judged by its own witnesses."""
    runs = []
    run = Interpreter.run
    monkeypatch.setattr(
        Interpreter, "run", lambda self, *a, **k: runs.append(1) or run(self, *a, **k)
    )
    module = ast.parse(te2_example(late=late))
    verdicts = analyze_hazards(module, find_selectors(module)[0], ON_SM86)
    assert [verdict.reachable for verdict in verdicts] == [bool(late)] * len(ON_SM86)
    assert all(verdict.applicable for verdict in verdicts)
    if not late:
        assert len(runs) == 1


def facts(**params) -> Facts:
    """Facts binding `params`, a set binding the choice of its values."""
    return Facts(
        params={
            name: one_of(value if isinstance(value, set) else {value}, frozenset((name,)))
            for name, value in params.items()
        }
    )


VALIDATOR = "FlashAttentionUtils.v4_validate_head_dims"
TRUTHY_VALIDATOR = Facts(names={VALIDATOR: unknown(truth=True)})


@pytest.mark.parametrize(
    ("wide", "narrow", "covered"),
    [
        (facts(), facts(num_splits=2), True),  # binding nothing covers everything
        (facts(num_splits={0, 2}), facts(num_splits=2), True),
        (facts(num_splits={0, 2}), facts(num_splits=2, deterministic=True), True),
        (facts(num_splits={0, 2}), facts(num_splits={0, 2}), True),
        (facts(num_splits={0, 2}), facts(num_splits=3), False),
        (facts(num_splits={0, 2}), facts(num_splits={2, 3}), False),
        (facts(num_splits=1), facts(num_splits=True), False),  # 1 == True, yet not the same
        (facts(num_splits=2), facts(), False),  # narrow leaves it unknown
        (Facts(params={"num_splits": unknown(truth=True)}), facts(num_splits=2), False),
        # one unknown but truthy fact, made anew for each: the same fact (FA4's installed
        # head-dim validator, bound in every FA4 run)
        (TRUTHY_VALIDATOR, Facts(names={VALIDATOR: unknown(truth=True)}), True),
        (TRUTHY_VALIDATOR, Facts(names={VALIDATOR: unknown(truth=None)}), False),
        (TRUTHY_VALIDATOR, Facts(), False),
    ],
)
def test_a_proof_covers_the_runs_it_over_approximates(wide, narrow, covered) -> None:
    """A kept proof covers a witness where every fact it binds holds there too."""
    assert covers(wide, narrow) is covered


def test_a_witness_a_kept_proof_covers_needs_no_run(monkeypatch) -> None:
    """A hazard declared on sm86 with TEA002's inputs is covered by the run that proved
    TEA002 guarded on sm86 and sm89: judging it costs nothing more."""
    module = ast.parse(te2_example(backward=True))
    function = find_selectors(module)[0]
    runs = []
    run = Interpreter.run
    monkeypatch.setattr(
        Interpreter, "run", lambda self, *a, **k: runs.append(1) or run(self, *a, **k)
    )
    analyze_hazards(module, function, [get_hazard("TEA002")])  # prepares the selector
    before = len(runs)
    (alone,) = analyze_hazards(module, function, [get_hazard("TEA002")])
    count = len(runs) - before
    both = analyze_hazards(module, function, [get_hazard("TEA002"), moved("TEA002", (8, 6), 10)])
    assert [verdict.reachable for verdict in both] == [alone.reachable, False]
    assert len(runs) - before == 2 * count


def compute_capability_anchor(source: str, role: str) -> tuple[str, str]:
    module = ast.parse(source)
    anchor = find_anchor(selector(module, find_selectors(module)[0]), "compute_capability", role)
    return anchor.position, ast.unparse(anchor.statement.test)


def test_a_compute_capability_guard_goes_after_the_backends_own_architecture_filter() -> None:
    """After TE 2.18's `< (8, 0)` for FA4; for a backend without one (the example's FA2), after
    the last architecture filter of any backend; with none at all, where a determinism guard
    goes (TEA103's flagged example: after its determinism filter)."""
    te2_18 = te2_example(fa4_below=(8, 0))
    assert compute_capability_anchor(te2_18, "FA4") == (
        "after",
        "device_compute_capability < (8, 0)",
    )
    assert compute_capability_anchor(te2_18, "FA2") == (
        "after",
        "device_compute_capability < (8, 0)",
    )
    (no_architecture_filter,) = RULES["TEA103"].invalid
    assert compute_capability_anchor(no_architecture_filter, "FA4") == ("after", "deterministic")
