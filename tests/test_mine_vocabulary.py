"""The selector inputs the miner added (num_splits, has_score_mod, softmax_type), end to end.

Each must reach all three judges the same way: the harness's `AttentionParams`, the analyzer's
bindings and the codemod's rendering; and stay out of the filter-coverage rules' plain call.
Also the analyzer idiom their candidates reach: TE 2.20's score_mod filter tests a local
helper (`if _any_flash_attention_enabled():`) before switching every flash backend off.
"""

from __future__ import annotations

import ast
import functools
import textwrap

import pytest

from lint_plugin.engine.absint import const, join
from lint_plugin.engine.analysis import plain_call_facts
from lint_plugin.engine.dialect import Dialect, find_selectors
from lint_plugin.engine.interpreter import Facts, Interpreter
from lint_plugin.engine.program import Program
from selector_patch.harness import Unrepresentable
from selector_patch.registry import Evidence, Hazard
from selector_patch.scenario import Condition, Scenario
from selector_patch.sources import read_text


@pytest.fixture(scope="module")
def dialect(release):
    module = ast.parse(read_text(release("2.20.2").path))
    return Dialect(find_selectors(module)[0], module)


@pytest.mark.parametrize(
    "condition, source",
    [
        (Condition("num_splits", ">", 1), "num_splits > 1"),
        (Condition("has_score_mod", "==", True), "has_score_mod"),
        (Condition("softmax_type", "==", "learnable"), 'softmax_type == "learnable"'),
        (Condition("qkv_dtype", "==", "float8_e4m3fn"), "qkv_dtype == torch.float8_e4m3fn"),
    ],
)
def test_guard_conditions_render_in_the_selectors_names_and_blacks_quotes(
    dialect, condition, source
):
    assert dialect.condition_source(condition) == source


def test_the_analyzer_reads_torch_dtypes_as_the_names_a_scenario_holds(dialect):
    """`qkv_dtype` binds to the witness's dtype name and `torch.bfloat16` reads as "bfloat16",
    so TE's dtype filters decide an FP8 witness (no KeyError, no unknown)."""
    assert dialect.input_expression("qkv_dtype") == "qkv_dtype"
    assert dialect.bindings("qkv_dtype", Scenario(qkv_dtype="float8_e4m3fn")) == {
        "qkv_dtype": "float8_e4m3fn"
    }
    assert {"torch.bfloat16", "torch.float16"} <= set(dialect.torch_dtypes)
    assert dialect.torch_dtypes["torch.bfloat16"].const == "bfloat16"


def test_witnesses_of_a_lower_bound_exceed_it():
    hazard = Hazard(
        id="TEA050",
        backend="FA4",
        title="t",
        architectures=((12, 0),),
        triggers=(Condition("num_splits", ">", 1),),
        message="m",
        section="head_dim",
        evidence=Evidence("flash-attn-4", "f", "t", ">=4.0.0b36"),
        kernel_version="4.0.0b36",
    )
    assert {witness.num_splits for witness in hazard.witnesses()} == {2}


def test_the_plain_call_keeps_optional_features_at_their_defaults(dialect):
    params = plain_call_facts(dialect).params
    assert {name: params[name].const for name in ("num_splits", "has_score_mod")} == {
        "num_splits": 1,
        "has_score_mod": False,
    }


def test_the_harness_passes_them_and_refuses_what_a_release_cannot_say(load_te_selector):
    selection = load_te_selector("2.20.2").loaded.select(Scenario(has_score_mod=True))
    assert selection.role != "FA4"
    assert any("score_mod" in line for line in selection.log)
    with pytest.raises(Unrepresentable, match="has_score_mod=True"):
        load_te_selector("2.15.0").loaded.select(Scenario(has_score_mod=True))


def test_a_local_one_line_helper_refines_like_its_expression():
    source = textwrap.dedent(
        """
        def get_attention_backend(attention_params):
            has_score_mod = attention_params.has_score_mod
            use_flash_attention = int(os.environ.get("NVTE_FLASH_ATTN", "1"))
            flag = use_flash_attention and int(os.environ.get("NVTE_FLASH_ATTN_V4", "1"))

            def _any_flash_attention_enabled():
                return bool(use_flash_attention or flag)

            def _disable_all_flash_attention():
                nonlocal use_flash_attention
                use_flash_attention = False

            if has_score_mod:
                if _any_flash_attention_enabled():
                    _disable_all_flash_attention()
            flag = use_flash_attention and flag
            return flag
        """
    )
    function = ast.parse(source).body[0]
    facts = Facts(params={"has_score_mod": const(True, frozenset(("has_score_mod",)))})
    states = Interpreter(Program(function), facts).run()
    flag = functools.reduce(join, [state.vars["flag"] for state in states])
    assert flag.truth is False
