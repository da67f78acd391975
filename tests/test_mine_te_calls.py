"""The miner through TE's calls: which kernel parameters TE passes, and what that rules out.

`te_calls` reads TE's callers for the calls into each kernel; `cute.reach` says which FA4
parameters those calls fix; `cute.cases` classes a refusal no TE call can fire as unreachable
through TE (citing the calls), and one in a module TE's calls never enter as kernel-internal.
The last tests are the counts per class on the real releases.
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import pytest

from lint_plugin.mine.__main__ import main
from lint_plugin.mine.cute.cases import cases
from lint_plugin.mine.cute.extract import refusals
from lint_plugin.mine.findings import INTERNAL, UNMAPPED, UNREACHABLE
from lint_plugin.mine.te_calls import UNKNOWN, KernelCall, kernel_calls
from selector_patch.scenario import Condition
from selector_patch.sources import SelectorSource

CALLERS = "transformer_engine/pytorch/attention/dot_product_attention"

BACKENDS = """
flash_attn_func_v4 = None
try:
    from flash_attn.cute import flash_attn_func as _flash_attn_func_v4
except ImportError:
    pass
else:
    flash_attn_func_v4 = no_torch_dynamo()(_flash_attn_func_v4)
from flash_attn.flash_attn_interface import flash_attn_func


class FlashAttention:
    def forward(self, q, k, v, num_splits, softcap, use_flash_attn_4):
        if use_flash_attn_4:
            func = flash_attn_func_v4
        else:
            func = flash_attn_func
        if use_flash_attn_4:
            kwargs = {"num_splits": num_splits}
            kwargs["window_size"] = (-1, 0)
            output = func(q, k, v, causal=True, **kwargs)
        else:
            output = func(q, k, v, *thd_args, 0.0, softcap=softcap)
        return output
"""

CONTEXT_PARALLEL = """
def helper(q, k, v, flash_attn_fwd, fa_kwargs):
    return flash_attn_fwd(q, k, v, **fa_kwargs)


def forward(q, k, v, use_flash_attn_4, use_flash_attn_3, softcap):
    from transformer_engine.pytorch.attention.dot_product_attention.backends import (
        _flash_attn_func_v4,
    )

    fa_kwargs = {"softmax_scale": 0.125}
    if use_flash_attn_4:
        fa_kwargs["return_lse"] = True
    elif use_flash_attn_3:
        fa_kwargs["fa3_only"] = 1
    else:
        fa_kwargs["softcap"] = softcap
    flash_attn_fwd = _flash_attn_func_v4
    return helper(q, k, v, flash_attn_fwd, fa_kwargs)
"""


def te_tree(tmp_path: Path, context_parallel: str | None = None) -> SelectorSource:
    callers = tmp_path / CALLERS
    callers.mkdir(parents=True)
    (callers / "utils.py").write_text("def get_attention_backend(params):\n    pass\n")
    (callers / "backends.py").write_text(BACKENDS)
    if context_parallel is not None:
        (callers / "context_parallel.py").write_text(context_parallel)
    return SelectorSource(callers / "utils.py", tmp_path, None, "checkout")


def test_reads_each_backends_call_through_its_aliases_and_keyword_dicts(tmp_path):
    calls = kernel_calls(te_tree(tmp_path))
    (fa4,) = [call for call in calls if call.backend == "FA4"]
    assert fa4.function == "flash_attn_func" and fa4.site == f"{CALLERS}/backends.py:21"
    assert {name: ast.unparse(value) for name, value in fa4.keywords.items()} == {
        "causal": "True",
        "num_splits": "num_splits",
        "window_size": "(-1, 0)",
    }
    assert [ast.unparse(a) for a in fa4.positional] == ["q", "k", "v"] and not fa4.starred
    # FA2's call is in the other branch: what it passes is not FA4's.
    (fa2,) = [call for call in calls if call.backend == "FA2"]
    assert fa2.starred and set(fa2.keywords) == {"softcap"}


def test_a_dict_built_elsewhere_may_carry_any_key_outside_other_backends_branches(tmp_path):
    calls = kernel_calls(te_tree(tmp_path, CONTEXT_PARALLEL))
    (helper,) = [c for c in calls if c.backend == "FA4" and "context_parallel" in c.file]
    assert helper.function == "flash_attn_func"
    assert set(helper.keywords) == {"softmax_scale", "return_lse"}
    assert all(value is UNKNOWN for value in helper.keywords.values())


KERNEL = """
def flash_attn_func(q, k, v, softcap=0.0, num_splits=1, mask_mod=None, deterministic=False):
    return FlashAttnFunc.apply(q, k, v, softcap, num_splits, mask_mod, deterministic)


class FlashAttnFunc:
    @staticmethod
    def forward(ctx, q, k, v, softcap, num_splits, mask_mod, deterministic):
        ctx.save_for_backward(q, k, v, mask_mod)
        return _flash_attn_fwd(q, k, v, softcap=softcap, num_splits=num_splits, mask_mod=mask_mod)

    @staticmethod
    def backward(ctx, dout):
        q, k, v, mask_mod = ctx.saved_tensors
        if mask_mod is not None:
            return _bwd_masked(q, mask_mod)
        return None


def _flash_attn_fwd(q, k, v, softcap=None, num_splits=1, mask_mod=None, page_table=None):
    arch = _get_device_arch()
    if softcap == 0.0:
        softcap = None
    use_mask = mask_mod is not None
    if arch // 10 == 12:
        assert not use_mask, "mask_mod not supported on SM 12.0"
        assert page_table is None, "paged KV not supported on SM 12.0"
        assert softcap is None, "softcap not supported on SM 12.0"
        assert num_splits <= 1, "split-KV not supported on SM 12.0"


def _bwd_masked(q, mask_mod):
    arch = _get_device_arch()
    assert arch // 10 in [9, 10], "masked backward on 9.x and 10.x only"
"""

TE_CALL = KernelCall(
    "FA4",
    "flash_attn_func",
    f"{CALLERS}/backends.py",
    21,
    {"causal": ast.Constant(True), "num_splits": ast.Name("num_splits")},
    (ast.Name("q"), ast.Name("k"), ast.Name("v")),
    False,
)


def mined(source: str, calls=(TE_CALL,), file: str = "flash_attn/cute/interface.py"):
    """Message -> its cases, for every refusal of `source` asked through `calls`."""
    return {
        refusal.message: cases(refusal, "4.0.0b36")
        for refusal in refusals(textwrap.dedent(source), file, calls)
    }


def test_refusals_on_parameters_te_never_passes_are_unreachable_citing_the_call():
    found = mined(KERNEL)
    for message, name in [
        ("mask_mod not supported on SM 12.0", "mask_mod"),  # through the local `use_mask`
        ("masked backward on 9.x and 10.x only", "mask_mod"),  # what the forward saved
    ]:
        (case,) = found[message]
        assert case.standing == UNREACHABLE, message
        assert case.unmapped == (
            f"`{name}` is None (TE never passes it), on every TE call into flash-attn-4 that"
            f" reaches it ({CALLERS}/backends.py:21)"
        )
    # No entry point takes `page_table`: what the kernel passes there is its own business.
    (case,) = found["paged KV not supported on SM 12.0"]
    assert case.standing == UNMAPPED


def test_a_default_is_judged_after_the_kernel_normalizes_it():
    (case,) = mined(KERNEL)["softcap not supported on SM 12.0"]
    assert case.standing == UNREACHABLE
    assert case.unmapped.startswith(
        "`softcap` is None (TE never passes it: 0.0, which the kernel turns into None)"
    )


def test_a_parameter_te_passes_from_its_inputs_is_still_judged():
    (case,) = mined(KERNEL)["split-KV not supported on SM 12.0"]
    assert case.unmapped is None and case.triggers == (Condition("num_splits", ">", 1),)


def test_a_constant_te_passes_decides_the_refusal():
    passing = KernelCall(**{**TE_CALL.__dict__, "keywords": {"num_splits": ast.Constant(1)}})
    (case,) = mined(KERNEL, calls=(passing,))["split-KV not supported on SM 12.0"]
    assert case.standing == UNREACHABLE
    assert case.unmapped.startswith("`num_splits` is 1 (TE passes it)")


def test_without_te_calls_nothing_is_fixed():
    (case,) = mined(KERNEL, calls=())["mask_mod not supported on SM 12.0"]
    assert case.standing == UNMAPPED
    assert case.unmapped == "needs mask_mod: the scenario vocabulary has no mask_mod input"


def test_a_reassigned_parameter_is_not_fixed():
    source = KERNEL.replace(
        "    use_mask = mask_mod", "    mask_mod = pick()\n    use_mask = mask_mod"
    )
    (case,) = mined(source)["mask_mod not supported on SM 12.0"]
    assert case.standing == UNMAPPED


AUTOGRAD_GATE = """
def flash_attn_func(q, k, v, return_lse=False):
    return FlashAttnFunc.apply(q, k, v, return_lse)


class FlashAttnFunc:
    @staticmethod
    def forward(ctx, q, k, v, return_lse):
        ctx.return_lse = return_lse
        return q

    @staticmethod
    def backward(ctx, dout, dlse):
        if not ctx.return_lse:
            dlse = None
        return _flash_attn_bwd(dout, dlse=dlse)


def _flash_attn_bwd(dout, dlse=None):
    arch = _get_device_arch()
    if arch // 10 == 10:
        assert dlse is None, "no dlse on SM100"
"""


def test_a_gradient_the_backward_drops_under_a_ctx_flag_te_leaves_off_is_none():
    """`dlse` comes from autograd, not from TE; the backward drops it unless the forward was
    asked for the LSE, which TE never asks for."""
    (case,) = mined(AUTOGRAD_GATE)["no dlse on SM100"]
    assert case.standing == UNREACHABLE
    assert case.unmapped.startswith(
        "`dlse` is None (backward sets it to None: `ctx.return_lse` holds `return_lse`, which is"
        " False (TE never passes it))"
    )
    asking = KernelCall(**{**TE_CALL.__dict__, "keywords": {"return_lse": ast.Name("lse")}})
    (case,) = mined(AUTOGRAD_GATE, calls=(asking,))["no dlse on SM100"]
    assert case.standing == UNMAPPED


def test_single_assignment_locals_are_followed_to_the_parameters():
    body = """
    def _flash_attn_fwd(arch, num_splits):
        splits = num_splits
        if arch // 10 == 12:
            assert splits <= 1, "no split-KV"
    """
    (case,) = mined(body, calls=())["no split-KV"]
    assert case.labels == ("split-KV",) and case.triggers == (Condition("num_splits", ">", 1),)
    twice = """
    def _flash_attn_fwd(arch, num_splits):
        splits = num_splits
        if more:
            splits = 1
        if arch // 10 == 12:
            assert splits <= 1, "no split-KV"
    """
    (case,) = mined(twice, calls=())["no split-KV"]
    assert case.unmapped == "its test reads `splits`, which the feature table does not cover"


def test_a_test_in_a_module_te_never_enters_is_kernel_internal():
    postprocess = """
    class Postprocess:
        def _setup(self, arch):
            if arch // 10 == 10:
                assert self.num_threads == 128, "threads"
    """
    (case,) = mined(postprocess, file="flash_attn/cute/flash_bwd_postprocess.py")["threads"]
    assert case.standing == INTERNAL
    assert case.unmapped.startswith("no parameter reaches this test: its test reads")
    assert f"flash_attn_func ({CALLERS}/backends.py:21)" in case.unmapped
    # Without TE's calls, nothing says that TE does not enter it.
    (case,) = mined(postprocess, calls=(), file="flash_attn/cute/flash_bwd_postprocess.py")[
        "threads"
    ]
    assert case.standing == UNMAPPED


#: Counts per class on the real releases (`--json`'s `counts`).
RELEASE_COUNTS = [
    (["--flash-attn-4", "4.0.0b36"], "2.20.2", (3, 11, 15, 5, 0)),
    (["--flash-attn-4", "4.0.0b24"], "2.20.2", (6, 11, 16, 5, 0)),
    (["--flash-attn-4", "4.0.0b36"], "2.18.0", (4, 10, 15, 5, 0)),
    (["--flash-attn-4", "4.0.0b24"], "2.18.0", (5, 10, 18, 5, 0)),
    (["--flash-attn", "2.8.3"], "2.20.2", (1, 12, 0, 0, 0)),
]


@pytest.mark.parametrize("kernel, te, expected", RELEASE_COUNTS)
def test_counts_per_class_on_the_releases(kernel, te, expected, capsys):
    main(["--te", te, *kernel, "--json", "--quiet"])
    counts = json.loads(capsys.readouterr().out)["counts"]
    classes = ("UNGUARDED", "guarded", "unreachable", "internal", "unmapped")
    assert tuple(counts[name] for name in classes) == expected
    assert counts["disagreement"] == counts["not-applicable"] == 0
