"""Proof by one guard (`guard_proof`): where it decides a hazard, and where the witness runs must.

Each case is a TE 2.x-shaped selector (`te2_example`) with one determinism filter for TEA001
(FlashAttention 4, deterministic backward on SM 12.x), judged as `--check` judges a guarded
selector (`expect_guarded`). A spy on the witness runs (`analysis._enabled`) tells whether the
guard alone decided.
"""

from __future__ import annotations

import ast

import pytest

from codemods.apply import transform
from lint_plugin.engine import analysis, guard_proof, interpreter
from lint_plugin.engine.analysis import analyze_hazard, release, selector
from lint_plugin.engine.dialect import find_selectors
from lint_plugin.rule_examples import te2_example
from selector_patch.config import Config, with_te_fixes
from selector_patch.registry import get_hazard

TEA001 = get_hazard("TEA001")
TEA003 = get_hazard("TEA003")
#: The codemod's spelling: the flag, the hazard's inputs, then the architecture nested.
NESTED = """
    if use_flash_attention_4 and deterministic and requires_backward:
        if device_compute_capability[0] == 12:
            use_flash_attention_4 = False
"""
#: Seed 000's fix, keyed on training mode: eval() with a backward still reaches FA4.
ON_TRAINING = """
    if use_flash_attention_4 and deterministic and is_training:
        if device_compute_capability[0] == 12:
            use_flash_attention_4 = False
"""
#: TEA003's guard after TE's own `num_splits` filter of FA4, which may switch the flag off first.
AFTER_A_SIBLING = """
        if use_flash_attention_4 and num_splits > 1 and device_compute_capability[0] == 12:
            use_flash_attention_4 = False
"""
#: The determinism input bound again before the guard: its value there is no longer the field's.
REBOUND = "    deterministic = deterministic or is_training\n"
#: A return before the filter: the paths through it are not decided by what follows.
EARLY_RETURN = """
    if head_dim_qk == 7:
        return False, False
"""


def judged(source: str, monkeypatch, hazard=TEA001) -> tuple[bool, int]:
    """(reachable, witness runs) for `hazard` in `source`, judged as `--check` does."""
    runs = []
    enabled = analysis._enabled
    monkeypatch.setattr(
        analysis, "_enabled", lambda *args, **kw: runs.append(args) or enabled(*args, **kw)
    )
    module = ast.parse(source)
    function = find_selectors(module, ("get_attention_backend",))[0]
    try:
        verdict = analyze_hazard(module, function, hazard, expect_guarded=True)
    finally:
        release()
    return verdict.reachable, len(runs)


def test_a_nested_guard_decides_alone(monkeypatch) -> None:
    assert judged(te2_example(determinism=NESTED), monkeypatch) == (False, 0)


def test_a_guard_after_a_filter_of_its_block_decides_alone(monkeypatch) -> None:
    """The earlier filter writes only the flag, which is no condition of the guard."""
    assert judged(te2_example(num_splits=AFTER_A_SIBLING), monkeypatch, TEA003) == (False, 0)


def interpreted(source: str, monkeypatch, hazard=TEA001) -> tuple[bool, int, int]:
    """`judged`, and the interpreter runs it made in all (the guard's own included)."""
    runs = []
    run = interpreter.Interpreter.run
    monkeypatch.setattr(
        interpreter.Interpreter, "run", lambda *args, **kw: runs.append(args) or run(*args, **kw)
    )
    reachable, witness_runs = judged(source, monkeypatch, hazard)
    return reachable, witness_runs, len(runs)


def test_a_guard_on_inputs_as_bound_is_judged_without_a_run(monkeypatch) -> None:
    """Its conditions read fields bound once, straight off the argument, and the hardware
    query's answer: the facts decide them."""
    assert interpreted(te2_example(determinism=NESTED), monkeypatch) == (False, 0, 0)


def fa4_guards(source: str) -> tuple[guard_proof.Guard, ...]:
    """The FA4 guards of `source`'s selector."""
    module = ast.parse(source)
    function = find_selectors(module, ("get_attention_backend",))[0]
    try:
        return selector(module, function).guards("FA4")
    finally:
        release()


def test_a_guard_on_a_rebound_input_is_judged_by_a_run(monkeypatch) -> None:
    source = te2_example(determinism=REBOUND + NESTED)
    guard = fa4_guards(source)[-1]
    assert "deterministic" in map(ast.unparse, guard.conditions) and guard.pinned is None
    reachable, witness_runs, runs = interpreted(source, monkeypatch)
    assert (reachable, witness_runs) == (False, 0) and runs >= 1


@pytest.mark.parametrize(
    "elsewhere",
    [
        "    attention_params.deterministic = True\n",  # the field itself, which the local read
        "    attention_params = None\n",  # the argument
    ],
    ids=["field", "argument"],
)
def test_a_guard_on_a_field_written_elsewhere_is_judged_by_a_run(elsewhere) -> None:
    guard = fa4_guards(te2_example(determinism=NESTED, late=elsewhere))[-1]
    assert "deterministic" in map(ast.unparse, guard.conditions) and guard.pinned is None


def test_a_guard_whose_condition_may_be_false_leaves_it_to_the_runs(monkeypatch) -> None:
    reachable, runs = judged(te2_example(determinism=ON_TRAINING), monkeypatch)
    assert reachable and runs >= 1


def test_a_flag_switched_on_again_later_leaves_it_to_the_runs(monkeypatch) -> None:
    source = te2_example(determinism=NESTED, late="    use_flash_attention_4 = True\n")
    reachable, runs = judged(source, monkeypatch)
    assert reachable and runs >= 1


@pytest.mark.parametrize("spelling", [NESTED, ON_TRAINING])
def test_no_guard_after_a_return(spelling: str) -> None:
    found = fa4_guards(te2_example(determinism=EARLY_RETURN + spelling))
    spelt = {ast.unparse(condition) for guard in found for condition in guard.conditions}
    assert found and "deterministic" not in spelt  # the filters before the return only


def test_guards_are_the_ifs_that_switch_the_flag_off_in_the_settled_part() -> None:
    """TE 2.x's FA4 filters before the recombination: the dropout one nests its `if` under the
    dropout test; the architecture filter at the top comes before the settled part."""
    found = fa4_guards(te2_example(determinism=NESTED))
    spelt = [" and ".join(map(ast.unparse, guard.conditions)) for guard in found]
    assert spelt[-1] == "deterministic and requires_backward and device_compute_capability[0] == 12"
    assert "attention_dropout != 0.0 and FlashAttentionUtils.v4_is_installed" in spelt
    assert all(isinstance(guard, guard_proof.Guard) for guard in found)


@pytest.mark.parametrize("hazard_id", ["TEA001", "TEA007", "TEA057", "TEA058", "TEA061"])
def test_the_codemods_guards_on_te_2_20_2_decide_alone(hazard_id, release, monkeypatch) -> None:
    """FA4, which TE 2.20.2 dispatches by the flash version it returns, and FusedAttention,
    whose flag at a return is the selection: each guard the codemod inserts proves its hazard
    without a run, its conditions read inputs as bound and the version returned still `None`
    there."""
    text = release("2.20.2").path.read_text(encoding="utf-8")
    patched = transform(text, with_te_fixes(Config()), te_version="2.20.2")[0]
    assert interpreted(patched, monkeypatch, get_hazard(hazard_id)) == (False, 0, 0)


def test_a_version_bound_before_the_guard_leaves_it_to_a_run(release, monkeypatch) -> None:
    """Where the returned version may hold a flash version at the guard, only runs tell whether
    a witness run would stop there."""
    text = release("2.20.2").path.read_text(encoding="utf-8")
    patched = transform(text, with_te_fixes(Config()), te_version="2.20.2")[0]
    bound = "    flash_attention_backend = FlashAttentionUtils.version if is_training else None\n"
    patched = patched.replace("    flash_attention_backend = None\n", bound, 1)
    assert bound in patched
    reachable, _, runs = interpreted(patched, monkeypatch)
    assert not reachable and runs >= 1
