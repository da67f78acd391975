"""Extraction of architecture-conditioned refusals from small synthetic kernel modules.

Each snippet is a kernel function written the way flash-attn-4 writes them (`arch` is
`major * 10 + minor`); the test states the architectures on which the refusal can fire.
"""

from __future__ import annotations

import textwrap

import pytest

from lint_plugin.mine.devices import ARCHITECTURES
from lint_plugin.mine.cute.extract import refusals

INTERFACE = "flash_attn/cute/interface.py"


def extract(code: str, file: str = INTERFACE):
    return refusals(textwrap.dedent(code), file)


def only(code: str, file: str = INTERFACE):
    (refusal,) = extract(code, file)
    return refusal


def archs(*majors: int) -> tuple[tuple[int, int], ...]:
    return tuple(arch for arch in ARCHITECTURES if arch[0] in majors)


BRANCHES = [
    (
        "equality on the major",
        """
        if arch // 10 == 12:
            assert not is_split_kv, "SplitKV not supported on SM 12.0"
        """,
        archs(12),
    ),
    (
        "membership",
        """
        if arch // 10 in [10, 11]:
            assert head_dim == 128
        """,
        archs(10, 11),
    ),
    (
        "non-membership",
        """
        if arch // 10 not in [8, 12]:
            assert head_dim == 128
        """,
        archs(7, 9, 10, 11),
    ),
    (
        "inequality",
        """
        if arch // 10 != 9:
            raise ValueError("only SM90")
        """,
        archs(7, 8, 10, 11, 12),
    ),
    (
        "the full arch number, and its minor",
        """
        if arch // 10 == 10 and arch % 10 >= 3:
            raise NotImplementedError("not on SM103")
        """,
        ((10, 3),),
    ),
    (
        "the else of an elif chain",
        """
        if arch // 10 == 8:
            pass
        elif arch // 10 == 9:
            pass
        elif arch // 10 in [10, 11]:
            pass
        else:
            raise ValueError(f"Unsupported compute capability: {arch}")
        """,
        archs(7, 12),
    ),
    (
        "an elif arm",
        """
        if arch // 10 == 8:
            pass
        elif arch // 10 >= 10:
            assert not deterministic, "no"
        """,
        archs(10, 11, 12),
    ),
    (
        "nested branches",
        """
        if arch // 10 >= 10:
            if x:
                if arch // 10 != 11:
                    assert not deterministic
        """,
        archs(10, 12),
    ),
    (
        "an assert whose own test constrains the arch",
        """
        assert arch // 10 in [9, 10, 11, 12], "Unsupported compute capability"
        """,
        archs(7, 8),
    ),
    (
        "an early exit narrows what follows",
        """
        if arch // 10 < 9:
            return None
        assert arch // 10 in [9, 10], "no"
        """,
        archs(11, 12),
    ),
]


@pytest.mark.parametrize("code, expected", [c[1:] for c in BRANCHES], ids=[c[0] for c in BRANCHES])
def test_arch_set(code, expected):
    body = textwrap.indent(textwrap.dedent(code), "    ")
    found = extract(f"def _flash_attn_fwd(q, arch):\n{body}")
    assert found[0].architectures == expected


def test_narrowing_assert_leaves_only_the_family_it_excludes():
    found = extract(
        """
        def _flash_attn_bwd(arch, learnable_sink, lse):
            assert arch // 10 in [9, 10, 11, 12], "Unsupported compute capability"
            if learnable_sink is not None:
                assert arch // 10 in [9, 10, 11], "Learnable sink: SM90 and SM100/SM110"
                assert lse is not None, "learnable_sink backward requires LSE"
        """
    )
    # The LSE check follows an arch assert but is not about the arch: not listed.
    assert [(r.line, r.architectures) for r in found] == [(3, archs(7, 8)), (5, archs(12))]


def test_checks_that_do_not_depend_on_the_arch_are_not_refusals():
    assert (
        extract(
            """
            def _flash_attn_fwd(q, arch):
                assert q is not None, "q is required"
                if arch // 10 in [7, 8, 9, 10, 11, 12, 13]:
                    raise ValueError("every architecture")
                if head_dim > 256:
                    raise ValueError("head dim")
            """
        )
        == []
    )


def test_const_expr_wrappers_and_self_arch():
    refusal = only(
        """
        class FlashAttentionBackwardPostprocess:
            def _setup(self):
                if cutlass.const_expr(self.arch // 10 in [8, 12]):
                    assert self.num_threads == 128
        """,
        "flash_attn/cute/flash_bwd_postprocess.py",
    )
    assert refusal.architectures == archs(8, 12)
    assert refusal.function == "FlashAttentionBackwardPostprocess._setup"


def test_a_parameter_every_call_passes_the_arch_to_is_the_arch():
    refusal = only(
        """
        def _validate_head_dims(head_dim, compute_capability):
            if compute_capability == 9:
                assert head_dim <= 256, "not supported on SM90"

        def _flash_attn_fwd(q, arch, head_dim):
            if arch // 10 not in [8, 12]:
                _validate_head_dims(head_dim, arch // 10)
        """
    )
    assert refusal.architectures == archs(9)


@pytest.mark.parametrize(
    "file, function, backward",
    [
        (INTERFACE, "_flash_attn_bwd", True),
        (INTERFACE, "_tile_size_bwd_sm90", True),
        (INTERFACE, "_flash_attn_fwd", False),
        ("flash_attn/cute/flash_bwd_sm120.py", "setup", True),
    ],
)
def test_backward_is_told_by_the_function_or_module(file, function, backward):
    refusal = only(
        f"""
        def {function}(arch):
            if arch // 10 == 12:
                raise NotImplementedError("no")
        """,
        file,
    )
    assert refusal.backward is backward


def test_backward_method_of_an_autograd_function():
    refusal = only(
        """
        class FlashAttnFunc:
            @staticmethod
            def backward(ctx, dout):
                if ctx.arch // 10 == 12:
                    raise NotImplementedError("no")
                arch = ctx.arch
                if arch // 10 == 8:
                    raise NotImplementedError("no")
        """
    )
    # `ctx.arch` is not one of FA4's arch names; the local `arch` is.
    assert (refusal.function, refusal.backward, refusal.line) == ("FlashAttnFunc.backward", True, 9)


def test_text_message_and_conditions():
    assert_refusal, raise_refusal = extract(
        """
        def _flash_attn_bwd(arch, deterministic, needs_2cta, use_2cta_instrs):
            if compile_key not in cache:
                if arch // 10 == 12:
                    assert deterministic is False, (
                        "deterministic backward not supported on SM 12.0"
                    )
                elif arch // 10 in [10, 11]:
                    if needs_2cta is not None and not use_2cta_instrs:
                        raise ValueError(f"{needs_2cta} requires 2CTA")
        """
    )
    assert assert_refusal.text == (
        'assert deterministic is False, ( "deterministic backward not supported on SM 12.0" )'
    )
    assert assert_refusal.message == "deterministic backward not supported on SM 12.0"
    assert assert_refusal.condition == "deterministic is False"
    assert assert_refusal.branch == "arch // 10 == 12"
    assert raise_refusal.message == "f'{needs_2cta} requires 2CTA'"
    # A raise's own condition: the branches inside the arch branch, not the cache test outside.
    assert raise_refusal.condition == "needs_2cta is not None and (not use_2cta_instrs)"
    assert raise_refusal.branch == "arch // 10 in [10, 11]"


def test_private_function_is_entered_through_its_calls():
    sparse, public = extract(
        """
        def _flash_attn_bwd_sparse_mla(arch):
            assert arch // 10 in [10, 11], "Supported: 10.x, 11.x"

        def flash_attn_combine(arch):
            assert arch // 10 in [10, 11], "Supported: 10.x, 11.x"

        class FlashAttnFunc:
            def backward(ctx, qv):
                if qv is not None:
                    _flash_attn_bwd_sparse_mla(ctx.arch)
                flash_attn_combine(ctx.arch)
        """
    )
    assert "qv" in sparse.reads() and len(sparse.callers) == 1
    assert sparse.reachable((12, 0), {"qv": None}) is False
    assert sparse.reachable((12, 0), {}) is None
    assert public.callers == () and "qv" not in public.reads()
