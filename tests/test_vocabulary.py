"""Every input TE's selector reads is a vocabulary input, built as `DotProductAttention` builds it.

One release per dialect (1.13.0's `attention.py`, 2.2.0's first `dot_product_attention/`, 2.10.0,
2.18.0, 2.20.2), each input shown to change the decision the way TE's own filter says, on
sm80 with FA2 2.6.3 (which every one of them accepts) and the fused backend off (`FA2`), or
flash attention off (`FUSED`). A release that has no field for an input refuses it.
"""

from __future__ import annotations

import ast

import pytest
import torch

from lint_plugin.engine.dialect import Dialect, find_selectors
from lint_plugin.engine.recipes import Meta, Recipe
from selector_patch.harness import Unrepresentable
from selector_patch.harness.params import attention_params_kwargs
from selector_patch.registry import Evidence, Hazard
from selector_patch.scenario import Condition, Scenario, expressible
from selector_patch.sources import read_text

DIALECTS = ("1.13.0", "2.2.0", "2.10.0", "2.18.0", "2.20.2")
FA2 = Scenario(
    compute_capability=(8, 0),
    flash_attn_2="2.6.3",
    flash_attn_4=None,
    env=(("NVTE_FUSED_ATTN", "0"),),
)
FUSED = Scenario(compute_capability=(8, 0), env=(("NVTE_FLASH_ATTN", "0"),))
DELAYED = {"fp8_recipe": "DelayedScaling", "fp8_dpa": True}


@pytest.fixture(scope="module", params=DIALECTS)
def te(request, load_te_selector):
    return load_te_selector(request.param).loaded


def _load(load_te_selector, version: str):
    return load_te_selector(version).loaded


def disabled(selection, *words: str) -> bool:
    """Whether a `Disabling ...` line of the selection's log holds all of `words`."""
    return any(
        line.startswith("Disabling") and all(word in line for word in words)
        for line in selection.log
    )


def kwargs(te, scenario: Scenario) -> dict:
    with te.pinned(scenario) as module:
        return attention_params_kwargs(scenario, te.params_fields, module.__dict__)


def test_the_plain_calls_pick_what_the_bases_say(te) -> None:
    assert te.select(FA2).role == "FA2"
    assert te.select(FUSED).backend == "FusedAttention"


def test_fp8_attention_with_delayed_scaling_disables_fa2(te) -> None:
    """`fp8 and fp8_meta["recipe"].fp8_dpa`: FA2 has no FP8 kernels; an autocast whose recipe
    leaves attention in high precision (`fp8_dpa=False`) keeps it."""
    selection = te.select(FA2.with_changes(DELAYED))
    assert selection.role != "FA2" and disabled(selection, "FlashAttention", "FP8")
    assert te.select(FA2.with_changes({**DELAYED, "fp8_dpa": False})).role == "FA2"
    params = kwargs(te, FA2.with_changes(DELAYED))
    assert params["fp8"] is True
    recipe = params["fp8_meta"]["recipe"]
    assert type(recipe).__name__ == "DelayedScaling" and recipe.fp8_dpa is True


@pytest.mark.parametrize(
    "version, recipe, fused_kept",
    [
        ("2.2.0", "Float8CurrentScaling", True),
        ("2.10.0", "Float8CurrentScaling", False),  # "FP8 current scaling on arch < sm100"
        ("2.10.0", "MXFP8BlockScaling", True),
        ("2.18.0", "MXFP8BlockScaling", False),  # "MXFP8 on arch < sm100"
        ("2.20.2", "MXFP8BlockScaling", False),
        ("2.20.2", "DelayedScaling", True),
    ],
)
def test_each_release_judges_its_own_recipe_classes(
    load_te_selector, version, recipe, fused_kept
) -> None:
    """On sm90, where cuDNN has FP8 fused kernels (TE's C++ answers no backend on sm80)."""
    te = _load(load_te_selector, version)
    hopper = {"compute_capability": (9, 0), "fp8_recipe": recipe, "fp8_dpa": True}
    selection = te.select(FUSED.with_changes(hopper))
    assert (selection.backend == "FusedAttention") is fused_kept
    assert disabled(selection, "FusedAttention", "sm100") is not fused_kept


@pytest.mark.parametrize("version", ["2.18.0", "2.20.2"])
def test_an_onnx_export_lets_unfused_emulate_fp8(load_te_selector, version) -> None:
    """`is_in_onnx_export_mode()`, a module-level input: unfused emulates FP8 attention there."""
    te = _load(load_te_selector, version)
    plain = te.select(FA2.with_changes(DELAYED))
    exported = te.select(FA2.with_changes({**DELAYED, "onnx_export": True}))
    assert disabled(plain, "Unfused", "FP8") and not disabled(exported, "Unfused", "FP8")
    assert exported.backend == "UnfusedDotProductAttention"


def test_a_recipe_the_release_does_not_define_is_refused(load_te_selector) -> None:
    te = _load(load_te_selector, "1.13.0")
    with pytest.raises(Unrepresentable, match="defines no Float8CurrentScaling"):
        te.select(FUSED.with_changes({"fp8_recipe": "Float8CurrentScaling", "fp8_dpa": True}))


def test_qkv_dtype_reaches_the_dtype_filters(te) -> None:
    for base in (FA2, FUSED):
        selection = te.select(base.with_changes({"qkv_dtype": "float32"}))
        assert selection.backend == "UnfusedDotProductAttention"
    fp8_tensors = FA2.with_changes({"qkv_dtype": "float8_e4m3fn", "qkv_type": "Float8Tensor"})
    selection = te.select(fp8_tensors)
    assert selection.role != "FA2" and disabled(selection, "FlashAttention", "float8_e4m3fn")
    params = kwargs(te, fp8_tensors)
    assert params["qkv_dtype"] is torch.float8_e4m3fn
    assert params["qkv_type"] is te.module.__dict__["Float8Tensor"]


def test_a_dtype_given_as_torch_names_it() -> None:
    assert Scenario(qkv_dtype=torch.float8_e5m2).qkv_dtype == "float8_e5m2"
    assert Condition("qkv_dtype", "==", "float32").holds(Scenario(qkv_dtype=torch.float32))


def test_a_bias_of_shape_1hss_runs_on_2_20_as_its_shape_tuple(load_te_selector) -> None:
    """TE 2.20 takes the bias tensor's shape, earlier releases the shape's name."""
    bias = {"core_attention_bias_type": "post_scale_bias", "core_attention_bias_shape": "1hss"}
    new, old = (_load(load_te_selector, version) for version in ("2.20.2", "2.18.0"))
    assert new.select(FUSED.with_changes(bias)).backend == "FusedAttention"
    assert kwargs(new, FUSED.with_changes(bias))["core_attention_bias_shape"] == (1, 8, 128, 128)
    assert kwargs(old, FUSED.with_changes(bias))["core_attention_bias_shape"] == "1hss"
    assert disabled(new.select(FA2.with_changes(bias)), "FlashAttention", "post_scale_bias")


@pytest.mark.parametrize("version, fused_kept", [("2.2.0", False), ("2.18.0", True)])
def test_a_trainable_bhss_bias_meets_each_releases_dbias_filter(
    load_te_selector, version, fused_kept
) -> None:
    te = _load(load_te_selector, version)
    bias = {
        "core_attention_bias_type": "post_scale_bias",
        "core_attention_bias_shape": "bhss",
        "core_attention_bias_requires_grad": True,
    }
    selection = te.select(FUSED.with_changes(bias))
    assert (selection.backend == "FusedAttention") is fused_kept
    assert disabled(selection, "dBias") is not fused_kept


def test_alibi_slopes_pass_as_their_shape(te) -> None:
    alibi = {"core_attention_bias_type": "alibi", "alibi_slopes_shape": (2, 8)}
    assert kwargs(te, FUSED.with_changes(alibi))["alibi_slopes_shape"] == torch.Size((2, 8))
    assert kwargs(te, FUSED)["alibi_slopes_shape"] is None


@pytest.mark.parametrize(
    "version, cache, max_seqlen_kv, kept",
    [
        ("2.2.0", "paged", 128, False),  # "page size < 256"
        ("2.2.0", "paged", 512, True),
        ("2.18.0", "paged", 128, False),  # "page size not divisible by 256"
        ("2.18.0", "non_paged", 128, False),  # "max_seqlen_kv not divisible by 256"
        ("2.20.2", "non_paged", 256, True),
        ("2.20.2", "paged", 512, True),
    ],
)
def test_a_kv_cache_meets_fa2s_page_filters(
    load_te_selector, version, cache, max_seqlen_kv, kept
) -> None:
    te = _load(load_te_selector, version)
    page_size = 64 if max_seqlen_kv == 128 else 256
    scenario = FA2.with_changes(
        {
            "kv_cache": cache,
            "kv_page_size": page_size,
            "max_seqlen_q": max_seqlen_kv,  # FA2 aligns causal masks top-left only when sq == skv
            "max_seqlen_kv": max_seqlen_kv,
            "training": False,
            "backward": False,
        }
    )
    selection = te.select(scenario)
    assert (selection.role == "FA2") is kept
    assert disabled(selection, "FlashAttention 2") is not kept
    built = kwargs(te, scenario)
    assert built["inference_params"].is_paged is (cache == "paged")
    assert built["qkv_layout"].startswith("paged_kv_") is (cache == "paged")


def test_a_kv_cache_is_refused_before_inference_params(load_te_selector) -> None:
    with pytest.raises(Unrepresentable, match="kv_cache"):
        _load(load_te_selector, "1.13.0").select(FA2.with_changes({"kv_cache": "paged"}))


@pytest.mark.parametrize(
    "version, fused_kept",
    [("1.13.0", False), ("2.2.0", False), ("2.10.0", False), ("2.18.0", True), ("2.20.2", True)],
)
def test_a_sliding_window_without_a_causal_mask_meets_fuseds_window_filter(
    load_te_selector, version, fused_kept
) -> None:
    """Before TE 2.18 the fused backend takes a window only as `(left, 0)`."""
    te = _load(load_te_selector, version)
    window = {"attn_mask_type": "no_mask", "window_size": (64, 64)}
    selection = te.select(FUSED.with_changes(window))
    assert (selection.backend == "FusedAttention") is fused_kept
    assert disabled(selection, "sliding window") is not fused_kept


def test_the_window_is_the_masks_unless_given(te) -> None:
    assert kwargs(te, FUSED)["window_size"] == (-1, 0)  # the causal mask's own
    assert kwargs(te, FUSED.with_changes({"window_size": (64, 0)}))["window_size"] == (64, 0)
    with pytest.raises(Unrepresentable, match="window_size"):
        te.select(FUSED.with_changes({"window_size": (-2, 0)}))  # TE asserts against it


def test_context_parallelism_disables_unfused(te) -> None:
    selection = te.select(FA2.with_changes({"cp_size": 2}))
    assert selection.role == "FA2" and disabled(selection, "Unfused", "context parallelism")
    assert kwargs(te, FA2.with_changes({"cp_size": 2}))["context_parallel"] is True


@pytest.mark.parametrize("version", ["2.18.0", "2.20.2"])
def test_all_to_all_context_parallelism_needs_even_head_counts_in_fused(
    load_te_selector, version
) -> None:
    """TE 2.20's fused query is asked per context-parallel step (`cp_per_step_configs`)."""
    te = _load(load_te_selector, version)
    odd = {"compute_capability": (9, 0), "num_heads": 9, "num_gqa_groups": 9, "cp_size": 2}
    assert te.select(FUSED.with_changes(odd)).backend == "FusedAttention"
    selection = te.select(FUSED.with_changes({**odd, "cp_comm_type": "a2a"}))
    assert selection.backend != "FusedAttention"
    assert disabled(selection, "FusedAttention", "cp_comm_type = a2a")


@pytest.mark.parametrize("version", ["1.13.0", "2.2.0"])
def test_a_cp_comm_type_is_refused_before_the_field(load_te_selector, version) -> None:
    with pytest.raises(Unrepresentable, match="cp_comm_type"):
        _load(load_te_selector, version).select(
            FA2.with_changes({"cp_size": 2, "cp_comm_type": "a2a"})
        )


def test_padding_between_thd_sequences_disables_fa2(te) -> None:
    thd = {"qkv_layout": "thd_thd_thd", "attn_mask_type": "padding_causal"}
    assert te.select(FA2.with_changes(thd)).role == "FA2"
    selection = te.select(FA2.with_changes({**thd, "pad_between_seqs": True}))
    assert selection.role != "FA2" and disabled(selection, "FlashAttention", "padding between")


def test_softcap_and_token_counts_are_2_20_inputs(load_te_selector) -> None:
    new = _load(load_te_selector, "2.20.2")
    selection = new.select(FUSED.with_changes({"softcap": 30.0}))
    assert selection.backend != "FusedAttention" and disabled(selection, "softcap")
    thd = {"qkv_layout": "thd_thd_thd", "attn_mask_type": "padding_causal"}
    tokens = FUSED.with_changes({**thd, "num_tokens_q": 200, "num_tokens_kv": 300})
    assert (kwargs(new, tokens)["num_tokens_q"], kwargs(new, tokens)["num_tokens_kv"]) == (200, 300)
    old = _load(load_te_selector, "2.18.0")
    for refused in ({"softcap": 30.0}, {"num_tokens_q": 200}):
        with pytest.raises(Unrepresentable, match=next(iter(refused))):
            old.select(FUSED.with_changes(refused))


@pytest.mark.parametrize("version", ["2.10.0", "2.18.0", "2.20.2"])
def test_returning_the_max_logit_disables_flash(load_te_selector, version) -> None:
    selection = _load(load_te_selector, version).select(
        FA2.with_changes({"return_max_logit": True})
    )
    assert selection.role != "FA2" and disabled(selection, "FlashAttention", "max_logit")


def test_returning_the_max_logit_is_refused_before_the_field(load_te_selector) -> None:
    with pytest.raises(Unrepresentable, match="return_max_logit"):
        _load(load_te_selector, "2.2.0").select(FA2.with_changes({"return_max_logit": True}))


@pytest.mark.parametrize("version", ["2.18.0", "2.20.2"])
def test_a_score_mod_backward_disables_flash_and_unfused(load_te_selector, version) -> None:
    te = _load(load_te_selector, version)
    selection = te.select(FA2.with_changes({"has_score_mod": True, "has_score_mod_bprop": True}))
    assert selection.backend == "NoBackend" and disabled(selection, "FlashAttention", "score_mod")


def test_the_further_flags_pass_as_given(load_te_selector) -> None:
    te = _load(load_te_selector, "2.20.2")
    flags = {"cuda_graph": True, "fp8_output": True, "checkpoint_core_attention": True}
    built = kwargs(te, FA2.with_changes({**flags, "softmax_scale": 0.5}))
    assert {name: built[name] for name in flags} == flags and built["softmax_scale"] == 0.5
    assert kwargs(te, FA2)["softmax_scale"] == pytest.approx(128**-0.5)


def test_select_takes_every_input_by_keyword(load_te_selector) -> None:
    te = load_te_selector("2.20.2")
    choice = te.select(FA2, **DELAYED)
    assert choice.backend == "NoBackend"
    assert "fp8_recipe='DelayedScaling'" in str(choice)


@pytest.fixture(scope="module")
def dialect(release):
    module = ast.parse(read_text(release("2.20.2").path))
    return Dialect(find_selectors(module)[0], module)


def test_the_analysis_binds_and_renders_an_input_te_reads_as_is(dialect) -> None:
    softcapped = Condition("softcap", ">", 0.0)
    assert dialect.condition_source(softcapped) == "softcap > 0.0"
    assert dialect.bindings("softcap", Scenario(softcap=30.0)) == {"softcap": 30.0}
    assert dialect.sees("cp_comm_type") and dialect.sees("pad_between_seqs")
    # a dtype is bound as the torch dtype the field holds (`torch.float8_e4m3fn`); a recipe as
    # the `fp8` and `fp8_meta` fields TE reads it from, and tested as TE's FP8 filters test it
    assert dialect.sees("qkv_dtype")
    assert dialect.bindings("fp8_recipe", FA2) == {"fp8": False, "fp8_meta": Meta(None)}
    bound = dialect.bindings("fp8_dpa", FA2.with_changes(DELAYED))
    assert bound == {"fp8": True, "fp8_meta": Meta(Recipe("DelayedScaling", True, False))}
    assert dialect.condition_source(Condition("fp8_dpa", "==", True)) == (
        'fp8 and fp8_meta["recipe"].fp8_dpa'
    )
    current = Condition("fp8_recipe", "==", "Float8CurrentScaling")
    assert dialect.condition_source(current) == (
        'fp8 and fp8_meta["recipe"].float8_current_scaling()'
    )
    assert not dialect.asks(Condition("fp8_recipe", "==", "NoSuchScaling"))


def test_a_trigger_on_any_input_has_witnesses_and_is_refused_where_inexpressible(
    load_te_selector,
) -> None:
    hazard = Hazard(
        id="TEA050",
        backend="FA2",
        title="t",
        architectures=((8, 0),),
        triggers=(Condition("softcap", ">", 0.0),),
        message="m",
        section="softcap",
        evidence=Evidence("flash-attn", "f", "t", ">=2.6"),
        kernel_version="2.6.3",
    )
    assert all(witness.softcap > 0.0 for witness in hazard.witnesses())
    fields = {version: _load(load_te_selector, version).params_fields for version in DIALECTS}
    assert [expressible("softcap", fields[version]) for version in DIALECTS] == [
        False, False, False, False, True,
    ]  # fmt: skip
    assert all(expressible("cp_size", fields[version]) for version in DIALECTS)
