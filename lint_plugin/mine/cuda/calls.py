"""What TE passes to flash-attn 2 and 3, in the kernels' own parameter names, and what TE calls it.

The C++ entry points take what flash-attn's Python wrappers pass, which is what TE passes
(`transformer_engine/pytorch/attention/dot_product_attention/backends.py`, `FlashAttention`):
`dropout_p = attention_dropout if training else 0.0`, `causal = "causal" in attn_mask_type`,
`window_size` from the mask type (`(-1, 0)` causal, `(-1, -1)` otherwise), `deterministic`,
`num_splits` (FA3), no ALiBi slopes without an ALiBi bias, no softcap, no KV cache, no
`return_softmax`. These facts are written down here, per parameter name, rather than guessed:
a parameter TE fixes gets its value, one that carries a selector input gets a symbol, and
every other one (sequence lengths, strides, varlen offsets) stays unknown.

Each symbol is a *feature*: its values, the value a plain call passes, and the selector
conditions that put it at each other value (`selector_patch.scenario.INPUTS`). A value TE
cannot be asked for through that vocabulary has no conditions, and says why: cases that need
it are reported unmapped with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from lint_plugin.mine.cuda.values import Optional, Sym, Tensor
from lint_plugin.mine.devices import ARCHITECTURES
from lint_plugin.mine.head_dims import HEAD_DIMS
from selector_patch.scenario import Condition

ARCH = "arch"
HEAD_DIM = "head_dim"


@dataclass(frozen=True)
class Feature:
    symbol: str
    #: How messages name it when it is at `values[1]` (its non-plain value).
    label: str
    #: Its values; the first is the plain call's.
    values: tuple
    #: Per value: the selector conditions that select it, or why none can.
    conditions: Mapping[Any, tuple[Condition, ...] | str]
    #: Where a guard on it belongs.
    section: str = "head_dim"

    @property
    def plain(self) -> Any:
        return self.values[0]


DROPOUT = Feature(
    "dropout",
    "dropout",
    (0.0, 0.1),
    {
        0.0: "needs dropout off (attention_dropout == 0 or eval), which one conjunction of"
        " triggers cannot state",
        0.1: (Condition("attention_dropout", ">", 0.0), Condition("training", "==", True)),
    },
)
CAUSAL = Feature(
    "causal",
    "no causal mask",
    (True, False),
    {
        True: "needs a causal mask: the scenario vocabulary has no attn_mask_type input",
        False: "needs a non-causal mask: the scenario vocabulary has no attn_mask_type input",
    },
)
DETERMINISTIC = Feature(
    "deterministic",
    "deterministic",
    (False, True),
    {
        False: (Condition("deterministic", "==", False),),
        True: (Condition("deterministic", "==", True),),
    },
    section="determinism",
)
DTYPE = Feature(
    "dtype",
    "FP16 inputs",
    ("bf16", "fp16", "fp8_e4m3"),
    {
        # `qkv_dtype` holds the dtype by its torch name (`selector_patch.scenario`).
        "bf16": (Condition("qkv_dtype", "==", "bfloat16"),),
        "fp16": (Condition("qkv_dtype", "==", "float16"),),
        "fp8_e4m3": (Condition("qkv_dtype", "==", "float8_e4m3fn"),),
    },
)
SPLITS = Feature(
    "splits",
    "split-KV",
    (1, 2),
    {1: (Condition("num_splits", "<=", 1),), 2: (Condition("num_splits", ">", 1),)},
)
FEATURES = {feature.symbol: feature for feature in (DROPOUT, CAUSAL, DETERMINISTIC, DTYPE, SPLITS)}
#: Labels of the non-plain values beyond the first (dtype has two).
VALUE_LABELS = {("dtype", "fp8_e4m3"): "FP8 inputs", ("causal", True): "causal mask"}


def label(feature: Feature, value: Any) -> str:
    return VALUE_LABELS.get((feature.symbol, value), feature.label)


_NONE = Optional(None)
_PASSED = Optional(Tensor(Sym("dtype")))
#: `window_size_right`: 0 for a causal mask, -1 (no limit) otherwise.
_WINDOW_RIGHT = Sym("causal", ("pick", ((True, 0), (False, -1)), ("x",)))

#: Per parameter name, what TE's call passes (both flash-attn 2 and 3 spell them so).
ARGUMENTS: dict[str, Any] = {
    "p_dropout": Sym("dropout"),
    "is_causal": Sym("causal"),
    "window_size_left": -1,
    "window_size_right": _WINDOW_RIGHT,
    "softcap": 0.0,
    "return_softmax": False,
    "deterministic": Sym("deterministic"),
    "num_splits": Sym("splits"),
    "zero_tensors": False,
    "attention_chunk": 0,
    "sm_margin": 0,
    # optional tensors TE leaves at flash-attn's default (None) in a training call
    **{
        name: _NONE
        for name in (
            "alibi_slopes_", "out_", "gen_", "seqused_k", "leftpad_k_", "block_table_",
            "k_new_", "v_new_", "q_v_", "cu_seqlens_k_new_", "page_table_", "kv_batch_idx_",
            "rotary_cos_", "rotary_sin_", "seqlens_rotary_", "q_descale_", "k_descale_",
            "v_descale_", "scheduler_metadata_", "pack_gqa_",
        )
    },  # fmt: skip
    **{name: _PASSED for name in ("dq_", "dk_", "dv_")},
    "rng_state": Optional(Tensor("int64")),
}
#: The attention tensors: their dtype is the call's.
ATTENTION_TENSORS = frozenset({"q", "k", "v", "out", "dout"})
#: Local names holding the head dim, whatever tensor shape they are read from: TE passes q, k
#: and v with one padded head dim (flash-attn 2 pads both to `max(head_dim_qk, head_dim_v)`;
#: for flash-attn 3 the miner only models equal head dims).
PINNED = {"head_size": Sym(HEAD_DIM), "head_size_og": Sym(HEAD_DIM), "head_size_v": Sym(HEAD_DIM)}


@dataclass(frozen=True)
class Backend:
    role: str
    #: The pip distribution evidence names.
    distribution: str
    #: Library directories, relative to the source tree's root.
    directories: tuple[str, ...]
    #: Registered entry points TE's calls reach (the Python names).
    entries: tuple[str, ...]
    #: Whether TE pads q, k and v to one head dim for it (MLA shapes reach one kernel).
    pads_head_dims: bool


BACKENDS = (
    # TE calls flash_attn_func / flash_attn_varlen_func and their backward (fwd, varlen_fwd,
    # bwd, varlen_bwd); inference uses varlen_fwd with a block table, never fwd_kvcache.
    Backend(
        "FA2",
        "flash-attn",
        ("csrc/flash_attn", "csrc/flash_attn/src"),
        ("fwd", "varlen_fwd", "bwd", "varlen_bwd"),
        True,
    ),
    # TE calls flash_attn_interface's functions, which reach `fwd` and `bwd`.
    Backend("FA3", "flash-attn-3", ("hopper", "hopper/instantiations"), ("fwd", "bwd"), False),
)


def domains(symbols) -> dict[str, frozenset]:
    """The domain of each symbol an entry's arguments use, plus the arch and the head dim."""
    found = {ARCH: frozenset(ARCHITECTURES), HEAD_DIM: frozenset(HEAD_DIMS)}
    for symbol in symbols:
        if symbol in FEATURES:
            found[symbol] = frozenset(FEATURES[symbol].values)
    return found
