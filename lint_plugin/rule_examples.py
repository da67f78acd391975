"""The example selectors of the `TEA` rules (`lint_plugin.rules`): fixit-style VALID / INVALID
selectors for every hazard and coverage rule, which `tests/test_rules.py` runs the plugin on (an
INVALID one must be reported with the rule's code, a VALID one must not) and the rule pages show.

They are the rules' own, kept in a module of their own so that flake8, which only reports, never
builds them: the selectors are written out from templates, some forty of them, which cost a
flake8 run more than the rest of the rules together. `Rule.valid` and `Rule.invalid` load
them here when first asked.
"""

from __future__ import annotations

# Small selectors in the shape of TE 2.x (`use_flash_attention_2/4`, `FlashAttentionUtils`).
# `{compute_capability}`, `{head_dim}`, `{dropout}`, `{determinism}` and `{late}` are where
# each example puts its own filters; `{fa4_below}` is the bound of TE's own FA4 architecture
# filter (TE 2.19 on: sm90; 2.15 - 2.18: sm80); the rest stays TE's.

_TE2 = """
import os

from packaging.version import Version as PkgVersion


class FlashAttentionUtils:
    is_installed = False
    v4_is_installed = False
    fa4_version = PkgVersion("0")


def get_attention_backend(attention_params=None):
    head_dim_qk = attention_params.head_dim_qk
    head_dim_v = attention_params.head_dim_v
    attention_dropout = attention_params.attention_dropout
    deterministic = attention_params.deterministic
    is_training = attention_params.is_training
{backward}    num_splits = attention_params.num_splits
    qkv_layout = attention_params.qkv_layout
    pad_between_seqs = attention_params.pad_between_seqs
    device_compute_capability = get_device_compute_capability()

    use_flash_attention = int(os.environ.get("NVTE_FLASH_ATTN", "1"))
    use_flash_attention_2 = use_flash_attention and int(os.environ.get("NVTE_FLASH_ATTN_V2", "1"))
    use_flash_attention_4 = use_flash_attention and int(os.environ.get("NVTE_FLASH_ATTN_V4", "1"))
    use_unfused_attention = int(os.environ.get("NVTE_UNFUSED_ATTN", "1"))

    # Filter: Compute capability
    if device_compute_capability < {fa4_below}:
        use_flash_attention_4 = False
{compute_capability}
    # Filter: num_splits
    if num_splits != 1:
        if use_flash_attention_2:
            use_flash_attention_2 = False
        if use_flash_attention_4 and device_compute_capability < (10, 0):
            use_flash_attention_4 = False
{num_splits}
    # Filter: Head dimension
    fa2_padded_head_dim = max(head_dim_qk, head_dim_v)
    if use_flash_attention_2 and (
        fa2_padded_head_dim > 256
        or (
            fa2_padded_head_dim > 192
            and device_compute_capability not in ((8, 0), (9, 0), (10, 0), (12, 0))
        )
    ):
        use_flash_attention_2 = False
{head_dim}
    # Filter: Dropout
    if attention_dropout != 0.0:
        if use_flash_attention_4 and FlashAttentionUtils.v4_is_installed:
            use_flash_attention_4 = False
{dropout}
    # Filter: Determinism
{determinism}
    use_flash_attention_2 = use_flash_attention and use_flash_attention_2
    use_flash_attention_4 = use_flash_attention and use_flash_attention_4
{late}
    use_flash_attention = use_flash_attention_2 or use_flash_attention_4
    return use_flash_attention, use_unfused_attention
"""
#: The selector's read of the backward signal (TE upstream's `requires_backward`).
_BACKWARD_READ = "    requires_backward = attention_params.requires_backward\n"


def te2_example(backward: bool = True, fa4_below: tuple[int, int] = (9, 0), **filters: str) -> str:
    """A TE 2.x-shaped selector with `filters` in their slots (also for tests of such shapes);
    with `backward`, it reads `requires_backward` as TE upstream does; FA4 is switched off
    below `fa4_below`."""
    slots = ("compute_capability", "num_splits", "head_dim", "dropout", "determinism", "late")
    return _TE2.format(
        backward=_BACKWARD_READ if backward else "",
        fa4_below=fa4_below,
        **{slot: filters.get(slot, "") for slot in slots},
    )


_SEED_000_GUARD = """
    if use_flash_attention_4 and deterministic and is_training:
        if device_compute_capability[0] == 12:
            use_flash_attention_4 = False
"""


def with_module_code(code: str, selector: str) -> str:
    """`selector` with module-level definitions of a fork's own placed before the selector."""
    head, marker, tail = selector.partition("\n\ndef get_attention_backend")
    return f"{head}\n\n{code.strip()}\n{marker}{tail}"


#: A guard's condition moved into a module-level predicate, called with any spelling.
_PREDICATE = """
def _in_family(capability, major):
    return capability[0] == major


def _fa4_cannot_run_deterministic(capability, deterministic):
    return deterministic and (12, 0) <= capability < (13, 0)
"""

FA4_VALID = (
    # TE upstream's guard: the whole 12.x family, keyed on the backward
    te2_example(
        determinism="""
    if use_flash_attention_4 and deterministic and requires_backward:
        if device_compute_capability[0] == 12:
            use_flash_attention_4 = False
"""
    ),
    # the whole 12.x family as a tuple
    te2_example(
        determinism="""
    if (
        use_flash_attention_4
        and deterministic
        and requires_backward
        and device_compute_capability in ((12, 0), (12, 1))
    ):
        use_flash_attention_4 = False
"""
    ),
    # a range over versions, conditions in another order
    te2_example(
        determinism="""
    if (12, 0) <= device_compute_capability < (13, 0) and requires_backward and deterministic:
        use_flash_attention_4 = False
"""
    ),
    # nested ifs, behind the installed check TE uses for logging
    te2_example(
        determinism="""
    if deterministic:
        if requires_backward:
            if device_compute_capability[0] == 12:
                if FlashAttentionUtils.v4_is_installed:
                    print("Disabling FlashAttention 4 for deterministic backward on sm120")
                use_flash_attention_4 = False
"""
    ),
    # a local helper that switches the flag off
    te2_example(
        determinism="""
    def _disable_flash_attention_4():
        nonlocal use_flash_attention_4
        use_flash_attention_4 = False

    if deterministic and requires_backward and device_compute_capability[0] == 12:
        _disable_flash_attention_4()
"""
    ),
    # placed in another section: still off at the return
    te2_example(
        compute_capability="""
    if device_compute_capability[0] == 12 and deterministic and requires_backward:
        use_flash_attention_4 = False
"""
    ),
    # switching off every flash backend through the shared flag counts too
    te2_example(
        determinism="""
    if deterministic and requires_backward and device_compute_capability[0] == 12:
        use_flash_attention = False
"""
    ),
    # a fork that asks autograd itself
    te2_example(
        backward=False,
        determinism="""
    if deterministic and torch.is_grad_enabled() and device_compute_capability[0] == 12:
        use_flash_attention_4 = False
""",
    ),
    # over-broad, but safe: every deterministic call on 12.x
    te2_example(
        backward=False,
        determinism="""
    if deterministic and device_compute_capability[0] == 12:
        use_flash_attention_4 = False
""",
    ),
    # the condition in a module-level predicate, positional arguments
    with_module_code(
        _PREDICATE,
        te2_example(
            determinism="""
    if use_flash_attention_4 and requires_backward and _fa4_cannot_run_deterministic(
        device_compute_capability, deterministic
    ):
        use_flash_attention_4 = False
"""
        ),
    ),
    # keyword arguments, and a predicate inside `and` / `not` with a nested call
    with_module_code(
        _PREDICATE,
        te2_example(
            determinism="""
    if use_flash_attention_4 and requires_backward and not (
        not deterministic or not _in_family(major=12, capability=device_compute_capability)
    ):
        use_flash_attention_4 = False
"""
        ),
    ),
)

FA4_INVALID = (
    # TE 2.15 - 2.20: no FA4 filter for determinism at all
    te2_example(backward=False),
    # seed 000's guard keys on training mode: a backward of a module in eval() still asserts
    te2_example(backward=False, determinism=_SEED_000_GUARD),
    # the same, in a selector that could have asked for the backward
    te2_example(determinism=_SEED_000_GUARD),
    # a guard that a later statement undoes
    te2_example(
        determinism="""
    if use_flash_attention_4 and deterministic and device_compute_capability[0] == 12:
        use_flash_attention_4 = False
""",
        late="""
    if not use_flash_attention_4:
        use_flash_attention_4 = int(os.environ.get("NVTE_FLASH_ATTN_V4", "1"))
""",
    ),
    # a guard on the wrong architecture
    te2_example(
        determinism="""
    if use_flash_attention_4 and deterministic and device_compute_capability == (10, 0):
        use_flash_attention_4 = False
"""
    ),
    # a guard for sm120 only: sm121 has the same kernel
    te2_example(
        determinism="""
    if use_flash_attention_4 and deterministic and device_compute_capability == (12, 0):
        use_flash_attention_4 = False
"""
    ),
    # a guard after the flags are recombined, on the master flag: too late to matter
    te2_example(
        late="""
    if deterministic and device_compute_capability[0] == 12:
        use_flash_attention = False
"""
    ),
    # a predicate for the wrong family: sm120 still picks FA4
    with_module_code(
        "def _fa4_cannot_run_deterministic(capability, deterministic):\n"
        "    return deterministic and (11, 0) <= capability < (12, 0)\n",
        te2_example(
            determinism="""
    if use_flash_attention_4 and _fa4_cannot_run_deterministic(
        device_compute_capability, deterministic
    ):
        use_flash_attention_4 = False
"""
        ),
    ),
)

# Guards beside TE's own FA4 split-KV filter, inside `if num_splits != 1:`.
_SPLIT_KV_GUARD = """
        if use_flash_attention_4 and num_splits > 1 and device_compute_capability[0] == 12:
            use_flash_attention_4 = False
"""
_SPLIT_HEURISTIC_GUARD = """
        if (
            use_flash_attention_4
            and num_splits < 1
            and FlashAttentionUtils.fa4_version < PkgVersion("4.0.0b36")
            and device_compute_capability[0] == 12
        ):
            use_flash_attention_4 = False
"""
#: Every num_splits but 1 refused on 12.x, whatever the FA4 release accepts.
_ALL_SPLITS_GUARD = """
        if use_flash_attention_4 and device_compute_capability[0] == 12:
            use_flash_attention_4 = False
"""

SPLIT_KV_VALID = (
    te2_example(num_splits=_SPLIT_KV_GUARD),
    # safe, if over-broad
    te2_example(num_splits=_ALL_SPLITS_GUARD),
)

SPLIT_KV_INVALID = (
    # TE 2.15 - 2.20: FA4 split-KV is refused below SM 10.0 only
    te2_example(),
    # refused on sm120 only: sm121 runs the same kernel
    te2_example(num_splits=_SPLIT_KV_GUARD.replace("[0] == 12", " == (12, 0)")),
)

SPLIT_HEURISTIC_VALID = (
    # refused only by the releases that refuse it
    te2_example(num_splits=_SPLIT_HEURISTIC_GUARD),
    # safe, if over-broad: also refused where 4.0.0b36 would accept it
    te2_example(num_splits=_ALL_SPLITS_GUARD),
)

SPLIT_HEURISTIC_INVALID = (
    # TE 2.15 - 2.20: FA4 split-KV is refused below SM 10.0 only
    te2_example(),
    # split-KV refused, the heuristic (num_splits < 1) let through
    te2_example(num_splits=_SPLIT_KV_GUARD),
    # the version test the wrong way round: refused only by the release that accepts it
    te2_example(num_splits=_SPLIT_HEURISTIC_GUARD.replace("fa4_version <", "fa4_version >=")),
)

# TE 2.15 - 2.18 switch FA4 off below sm80 only: its backward refuses all of SM 8.x.
_TE_2_18 = (8, 0)
_SM8X_BACKWARD_GUARD = """
    if use_flash_attention_4 and requires_backward and device_compute_capability[0] == 8:
        use_flash_attention_4 = False
"""

SM8X_BACKWARD_VALID = (
    # the backward only, on the whole 8.x family, beside TE 2.18's sm80 filter
    te2_example(fa4_below=_TE_2_18, compute_capability=_SM8X_BACKWARD_GUARD),
    # TE 2.19's own filter: FA4 off below sm90, forward-only calls too
    te2_example(),
    # the family as a range, conditions in another order, in the determinism section
    te2_example(
        fa4_below=_TE_2_18,
        determinism="""
    if requires_backward and (8, 0) <= device_compute_capability < (9, 0):
        use_flash_attention_4 = False
""",
    ),
    # every architecture TE runs FA4 on, listed
    te2_example(
        fa4_below=_TE_2_18,
        compute_capability="""
    if requires_backward and device_compute_capability in ((8, 0), (8, 6), (8, 7), (8, 9)):
        use_flash_attention_4 = False
""",
    ),
    # a fork that asks autograd itself
    te2_example(
        backward=False,
        fa4_below=_TE_2_18,
        compute_capability="""
    if torch.is_grad_enabled() and device_compute_capability < (9, 0):
        use_flash_attention_4 = False
""",
    ),
)

SM8X_BACKWARD_INVALID = (
    # TE 2.15 - 2.18: FA4 switched off below sm80 only
    te2_example(fa4_below=_TE_2_18),
    # keyed on training mode: a backward of a module in eval() still reaches FA4
    te2_example(
        fa4_below=_TE_2_18,
        compute_capability=_SM8X_BACKWARD_GUARD.replace("requires_backward", "is_training"),
    ),
    # A100 only: RTX 30xx / 40xx (sm86, sm89) run the same backward
    te2_example(
        fa4_below=_TE_2_18,
        compute_capability=_SM8X_BACKWARD_GUARD.replace("[0] == 8", " == (8, 0)"),
    ),
    # inside TE's split-KV filter: a plain call never gets there
    te2_example(
        fa4_below=_TE_2_18,
        num_splits=_SM8X_BACKWARD_GUARD.replace("\n    ", "\n        "),
    ),
)

#: Both head-dim-256 seqused guards, TE 2.19+ passing seqused to FA4 (TEA006 the forward's,
#: TEA007 the backward's: `requires_backward` too).
_HD256_SEQUSED_GUARD = """
    if (
        use_flash_attention_4
        and head_dim_qk == 256
        and head_dim_v == 256
        and pad_between_seqs
        and (10, 0) <= device_compute_capability < (12, 0)
    ):
        use_flash_attention_4 = False
"""
#: TE 2.15 - 2.18: FA4 (and FA2) off for packed sequences with padding between them, the
#: format read through TE's own module-level `get_qkv_format` (run where it is called).
_TE_2_18_THD_FILTER = """
    qkv_format, q_format, kv_format = get_qkv_format(qkv_layout, None)
    if qkv_format == "thd" and pad_between_seqs:
        use_flash_attention_2 = False
        use_flash_attention_4 = False
"""
_GET_QKV_FORMAT = """
def get_qkv_format(qkv_layout="bshd_bshd_bshd", inference_params=None):
    splited = qkv_layout.replace("paged_kv_", "").split("_")
    if inference_params is not None:
        q_format = "".join([i for i in splited[0] if i.isalpha()])
        kv_format = "".join([i for i in splited[1] if i.isalpha()])
        qkv_format = q_format + "_2" + kv_format if q_format != kv_format else q_format
    else:
        qkv_format = "".join([i for i in splited[0] if i.isalpha()])
        q_format = qkv_format
        kv_format = qkv_format
    return qkv_format, q_format, kv_format
"""


def _hd256_seqused_examples(backward: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """VALID and INVALID selectors for TEA006 (`backward` False) and TEA007."""
    backward_guard = _HD256_SEQUSED_GUARD.replace(
        "and pad_between_seqs", "and pad_between_seqs\n        and requires_backward"
    )
    guard = backward_guard if backward else _HD256_SEQUSED_GUARD
    valid = (
        te2_example(compute_capability=guard),
        # TE 2.15 - 2.18 switch FA4 off for THD with padding between sequences
        with_module_code(_GET_QKV_FORMAT, te2_example(compute_capability=_TE_2_18_THD_FILTER)),
        # the family tested as TE's own FA4 filters test it, in the head-dim section
        te2_example(
            head_dim=guard.replace(
                "(10, 0) <= device_compute_capability < (12, 0)",
                "device_compute_capability[0] in (10, 11)",
            )
        ),
    )
    invalid = (
        # TE 2.19 - 2.20.2: seqused passed to FA4, nothing filters head dim 256
        te2_example(),
        # sm100 only: sm103 and sm110 run the same dedicated kernels
        te2_example(
            compute_capability=guard.replace(
                "(10, 0) <= device_compute_capability < (12, 0)",
                "device_compute_capability == (10, 0)",
            )
        ),
        # TE 2.18's filter with the format misread: `qkv_layout` is never "thd"
        te2_example(
            compute_capability=_TE_2_18_THD_FILTER.replace(
                "    qkv_format, q_format, kv_format = get_qkv_format(qkv_layout, None)\n", ""
            ).replace("qkv_format ==", "qkv_layout ==")
        ),
    )
    if not backward:
        # keyed on the backward: a forward-only call still asserts in the forward
        invalid += (te2_example(compute_capability=backward_guard),)
    return valid, invalid


_FA2_GUARD = """
    if (
        use_flash_attention_2
        and fa2_padded_head_dim > 192
        and attention_dropout > 0.0
        and is_training
        and device_compute_capability in ((8, 6), (8, 9), (12, 0), (12, 1))
    ):
        use_flash_attention_2 = False
"""

#: The FA2 dropout guard testing a module-level constant (`_SMEM_99KB`) for its architectures.
_CONSTANT_GUARD = te2_example(
    dropout="""
    if attention_dropout > 0.0 and is_training and fa2_padded_head_dim > 192:
        if device_compute_capability in _SMEM_99KB:
            use_flash_attention_2 = False
"""
)

FA2_VALID = (
    # seed 001's guard, right after the head-dim check
    te2_example(head_dim=_FA2_GUARD),
    # spelt with the major version and an unpadded max, in the dropout section
    te2_example(
        dropout="""
    if attention_dropout != 0.0 and is_training and max(head_dim_qk, head_dim_v) > 192:
        if device_compute_capability[0] == 12 or device_compute_capability in ((8, 6), (8, 9)):
            use_flash_attention_2 = False
"""
    ),
    # nested ifs inside the dropout filter
    te2_example(
        dropout="""
    if attention_dropout > 0.0:
        if is_training and fa2_padded_head_dim > 192:
            if device_compute_capability[0] == 12:
                use_flash_attention_2 = False
"""
    ),
    # the architectures in a module-level constant built by a call, or by a comprehension
    with_module_code(
        "_SMEM_99KB = frozenset({(8, 6), (8, 9), (12, 0), (12, 1)})\n",
        _CONSTANT_GUARD,
    ),
    with_module_code(
        "_SMEM_99KB = tuple(cc for cc in ((8, 6), (8, 9), (12, 0), (12, 1)) if cc != (9, 0))\n",
        _CONSTANT_GUARD,
    ),
)

FA2_INVALID = (
    # TE 2.1 - 2.20: the allowlist admits sm120 for head dim > 192, nothing filters dropout
    te2_example(),
    # a dropout guard on the wrong backend
    te2_example(
        dropout="""
    if attention_dropout > 0.0 and is_training and device_compute_capability[0] == 12:
        use_flash_attention_4 = False
"""
    ),
    # the guard, undone by a later re-enable
    te2_example(
        head_dim=_FA2_GUARD,
        late="""
    use_flash_attention_2 = int(os.environ.get("NVTE_FLASH_ATTN_V2", "1"))
""",
    ),
    # a constant that leaves SM 12.x out
    with_module_code(
        "_SMEM_99KB = frozenset({(8, 6), (8, 9)})\n",
        _CONSTANT_GUARD,
    ),
)


# One backend beside the reference: `{filters}` are FA4's own.
_ONE_BACKEND = """
import os


def get_attention_backend(attention_params=None):
    attention_dropout = attention_params.attention_dropout
    deterministic = attention_params.deterministic
    softcap = attention_params.softcap
    device_compute_capability = get_device_compute_capability()

    use_flash_attention_4 = int(os.environ.get("NVTE_FLASH_ATTN_V4", "1"))
    use_unfused_attention = int(os.environ.get("NVTE_UNFUSED_ATTN", "1"))
{filters}
    return use_flash_attention_4, use_unfused_attention


class AttentionParams:
    attention_dropout: float = 0.0
    deterministic: bool = False
    softcap: float = 0.0
"""

_ARCH = """
    if device_compute_capability < (9, 0):
        use_flash_attention_4 = False
"""
_DROPOUT = """
    if attention_dropout != 0.0:
        use_flash_attention_4 = False
"""
_DETERMINISM = """
    if deterministic and device_compute_capability[0] == 12:
        use_flash_attention_4 = False
"""


def _one_backend(*filters: str) -> str:
    return _ONE_BACKEND.format(filters="".join(filters))


# FusedAttention that delegates dropout and determinism to cuDNN's backend query.
_DELEGATING = """
import os


def get_attention_backend(attention_params=None):
    attention_dropout = attention_params.attention_dropout
    deterministic = attention_params.deterministic
    device_compute_capability = get_device_compute_capability()

    use_fused_attention = int(os.environ.get("NVTE_FUSED_ATTN", "1"))
    use_unfused_attention = int(os.environ.get("NVTE_UNFUSED_ATTN", "1"))
    if device_compute_capability < (8, 0):
        use_fused_attention = False
    if use_fused_attention:
        kwargs = {"dropout": attention_dropout, "deterministic": deterministic}
        fused_attention_backend = _get_fused_attn_backend(**kwargs)
        if fused_attention_backend == FusedAttnBackend.No_Backend:
            use_fused_attention = False
    return use_fused_attention, use_unfused_attention
"""


#: Per rule code: its VALID and its INVALID example selectors.
EXAMPLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "TEA001": (FA4_VALID, FA4_INVALID),
    "TEA002": (FA2_VALID, FA2_INVALID),
    "TEA003": (SPLIT_KV_VALID, SPLIT_KV_INVALID),
    "TEA004": (SPLIT_HEURISTIC_VALID, SPLIT_HEURISTIC_INVALID),
    "TEA005": (SM8X_BACKWARD_VALID, SM8X_BACKWARD_INVALID),
    "TEA006": _hd256_seqused_examples(backward=False),
    "TEA007": _hd256_seqused_examples(backward=True),
    "TEA101": (
        (_one_backend(_ARCH, _DROPOUT, _DETERMINISM), _DELEGATING),
        (_one_backend(_ARCH, _DROPOUT),),
    ),
    "TEA102": (
        (_one_backend(_ARCH, _DROPOUT, _DETERMINISM), _DELEGATING),
        (
            _one_backend(_ARCH, _DETERMINISM),
            # TE 2.20's FA2: its only dropout filter sits behind softcap
            _one_backend(
                _ARCH,
                _DETERMINISM,
                """
    if softcap != 0.0:
        if attention_dropout != 0.0:
            use_flash_attention_4 = False
""",
            ),
        ),
    ),
    "TEA103": (
        (_one_backend(_ARCH, _DROPOUT, _DETERMINISM), _DELEGATING),
        (
            _one_backend(
                _DROPOUT, "\n    if deterministic:\n        use_flash_attention_4 = False\n"
            ),
        ),
    ),
}
