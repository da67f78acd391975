"""One concrete call of TE's attention selector, in words that do not depend on the TE release.

A `Scenario` is what a user of `DotProductAttention` controls (mode, determinism, dropout, head
dimensions, every further input TE's selector reads in any release: dtype and FP8 recipe, layout,
mask and window, bias and ALiBi, KV cache, context parallelism, softcap, ..., and the `NVTE_*`
variables) plus what the machine answers (compute capability, cuDNN, the installed flash-attn
packages; cuDNN's fused-backend answer is TE's own C++'s unless overridden). The harness turns it
into the `AttentionParams` of a given release; the analyzer binds the same facts to the
selector's names; the codemod's self-check and the runtime patch reuse the very same objects. One
vocabulary keeps those three judges comparable.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Collection, Mapping

from selector_patch.records import Record

#: Optional features, each with the `AttentionParams` fields that carry it to the selector: a
#: plain call leaves them at the `Scenario` defaults (as `DotProductAttention` does without
#: them), and the filter-coverage rules keep them there (a split-KV filter is not a
#: compute-capability filter of the plain call). A release declaring none of an input's fields
#: cannot express a value other than its default. Kernel refusals found by the miner are keyed
#: on them.
FEATURE_FIELDS: dict[str, tuple[str, ...]] = {
    "num_splits": ("num_splits",),
    "has_score_mod": ("has_score_mod",),
    "softmax_type": ("softmax_type",),
    "qkv_type": ("qkv_type",),
    "qkv_dtype": ("qkv_dtype",),
    "nominal_dtype": ("nominal_dtype",),
    "num_tokens_q": ("num_tokens_q",),
    "num_tokens_kv": ("num_tokens_kv",),
    "window_size": ("window_size",),
    "bottom_right_diagonal": ("bottom_right_diagonal",),
    "softcap": ("softcap",),
    "alibi_slopes_shape": ("alibi_slopes_shape",),
    "core_attention_bias_type": ("core_attention_bias_type",),
    "core_attention_bias_shape": ("core_attention_bias_shape",),
    "core_attention_bias_requires_grad": ("core_attention_bias_requires_grad",),
    "pad_between_seqs": ("pad_between_seqs",),
    "cp_size": ("cp_size", "context_parallel"),
    "cp_size_a2a": ("cp_size_a2a",),
    "cp_comm_type": ("cp_comm_type",),
    "fp8_recipe": ("fp8_meta",),
    "fp8_dpa": ("fp8_meta",),
    "fp8_mha": ("fp8_meta",),
    "kv_cache": ("inference_params",),
    "kv_page_size": ("inference_params",),
    "return_max_logit": ("return_max_logit",),
    "cuda_graph": ("cuda_graph",),
    "softmax_scale": ("softmax_scale",),
    "fp8_output": ("fp8_output",),
    "checkpoint_core_attention": ("checkpoint_core_attention",),
    "has_score_mod_bprop": ("has_score_mod_bprop",),
}
#: Optional features the selector reads from its module, not its `AttentionParams`:
#: `is_in_onnx_export_mode()` (TE 1.13, 2.18+), which the virtual device answers.
MODULE_FEATURES = ("onnx_export",)
OPTIONAL_FEATURES = (*FEATURE_FIELDS, *MODULE_FEATURES)
#: Inputs the selector reads as they are, from the `AttentionParams` field of the same name
#: (the analysis binds a scenario's value to it). The others are built into TE's objects (a
#: dtype, a recipe, an `InferenceParams`, a bias shape of the release's kind) or derived as
#: `DotProductAttention` derives them (the window from the mask).
HELD_AS_IS = (
    "num_heads", "num_gqa_groups", "batch_size", "max_seqlen_q", "max_seqlen_kv", "qkv_layout",
    "attn_mask_type", "num_splits", "has_score_mod", "softmax_type", "num_tokens_q",
    "num_tokens_kv", "softcap", "core_attention_bias_type", "core_attention_bias_requires_grad",
    "pad_between_seqs", "cp_size_a2a", "cp_comm_type", "return_max_logit", "cuda_graph",
    "fp8_output", "checkpoint_core_attention", "has_score_mod_bprop",
)  # fmt: skip
#: Inputs of the user's request that are no optional feature (the plain call's own).
_REQUEST_INPUTS = (
    "deterministic", "training", "backward", "attention_dropout", "head_dim_qk", "head_dim_v",
    "batch_size", "num_heads", "num_gqa_groups", "max_seqlen_q", "max_seqlen_kv", "qkv_layout",
    "attn_mask_type",
)  # fmt: skip
#: The inputs whose product is the `bhss` trigger input.
BHSS_FIELDS = ("batch_size", "num_heads", "max_seqlen_q", "max_seqlen_kv")
#: The trigger input for the keys past whole 128-token tiles, spelt as the selector writes it.
KV_TILE_REMAINDER = "max_seqlen_kv % 128"
#: Inputs a hazard trigger may talk about, and how each is read off a scenario.
INPUTS: dict[str, Callable[["Scenario"], Any]] = {
    **{name: operator.attrgetter(name) for name in (*_REQUEST_INPUTS, *OPTIONAL_FEATURES)},
    "padded_head_dim": lambda s: s.padded_head_dim,
    "cudnn_version": operator.attrgetter("cudnn_version"),
    #: A window whose left edge is finite: TE's C++ reads `window_size_left != -1`.
    "sliding_window": lambda s: s.window_size is not None and s.window_size[0] >= 0,
    #: Multi-latent attention: the query/key and value head dims differ.
    "mla": lambda s: s.head_dim_qk != s.head_dim_v,
    #: batch x heads x query length x key length: what cuDNN's workspace grows with.
    "bhss": lambda s: math.prod(getattr(s, factor) for factor in BHSS_FIELDS),
    #: The layout's format (`bshd` for `bs3hd`), as TE derives it (`get_qkv_format`) and binds
    #: the selector's local `qkv_format`; a paged KV cache's layout by its tensors'.
    "qkv_format": lambda s: "".join(
        c for c in s.qkv_layout.removeprefix("paged_kv_").split("_")[0] if c.isalpha()
    ),
    #: Keys past a whole number of 128-token tiles: TE 2.10's C++ reads `max_seqlen_kv % 128`.
    KV_TILE_REMAINDER: lambda s: s.max_seqlen_kv % 128,
}
#: The kinds of KV cache a scenario's `kv_cache` names (None: no cache).
KV_CACHES = ("non_paged", "paged")
#: Inputs holding a torch dtype, kept by its name (`"float8_e4m3fn"`) so that a scenario stays
#: plain data; TE's own `torch.float16` is accepted and stored by its name.
DTYPE_INPUTS = ("qkv_dtype", "nominal_dtype")
#: Inputs holding a tuple (a window, a shape), which a JSON list also gives.
TUPLE_INPUTS = ("window_size", "alibi_slopes_shape", "core_attention_bias_shape")


#: Optional features that are the process's state, not a feature a release may lack: a call
#: made under CUDA graph capture is one whatever the release (TE 2.10's `DotProductAttention`
#: passes `is_graph_capturing()`); a release without the field does not read it, and selects as
#: it does outside capture.
PROCESS_STATE = ("cuda_graph",)


def expressible(name: str, fields: Collection[str]) -> bool:
    """Whether a release declaring `fields` can be asked for `name` at a non-default value."""
    return (
        name not in FEATURE_FIELDS
        or name in PROCESS_STATE
        or any(field in fields for field in FEATURE_FIELDS[name])
    )


OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "in": lambda value, collection: value in collection,
    "not in": lambda value, collection: value not in collection,
}


class Condition(Record):
    """`input op value` over a scenario, e.g. `attention_dropout > 0`."""

    input: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.input not in INPUTS:
            raise ValueError(f"unknown trigger input {self.input!r}; known: {sorted(INPUTS)}")
        if self.op not in OPERATORS:
            raise ValueError(f"unknown trigger operator {self.op!r}; known: {sorted(OPERATORS)}")

    def holds(self, scenario: "Scenario") -> bool:
        return OPERATORS[self.op](INPUTS[self.input](scenario), self.value)

    def __str__(self) -> str:
        return f"{self.input} {self.op} {self.value!r}"


def sm_name(compute_capability: tuple[int, int]) -> str:
    """An architecture as CUDA names it: (12, 0) is `sm120`."""
    major, minor = compute_capability
    return f"sm{10 * major + minor}"


class Scenario(Record):
    """Inputs of one selector call; defaults are seed 000's reproduction (BF16 BSHD, causal),
    on cuDNN 9.18.1."""

    # the (virtual) machine
    compute_capability: tuple[int, int] = (9, 0)
    #: A cuDNN that no release's C++ refuses outright (TE 2.6+ refuse F16/BF16 on 9.10.0 and
    #: 9.10.1, TE 2.14+ refuse sm120 below 9.18.1).
    cudnn_version: tuple[int, int, int] = (9, 18, 1)
    flash_attn_2: str | None = "2.8.3"
    flash_attn_3: str | None = None
    #: The flash-attention release whose `hopper/` the installed FA3 was built from (FA3 calls
    #: itself 3.0.0b1 in each of them, and their interfaces differ).
    flash_attn_3_source: str = "2.8.3"
    flash_attn_4: str | None = "4.0.0b24"
    #: The nvidia-cutlass-dsl beside flash-attn-4 (4.0.0b24 needs 4.6.2 or newer).
    cutlass_dsl: str | None = "4.6.2"
    #: An override of cuDNN's answer to TE's fused-backend query (a `FusedAttnBackend` member
    #: name); None: TE's own C++ answers, or an assumption where it is not at hand.
    fused_backend: str | None = None
    # what the user asked for
    deterministic: bool = False
    training: bool = True
    backward: bool = True
    attention_dropout: float = 0.0
    head_dim_qk: int = 128
    head_dim_v: int = 128
    batch_size: int = 2
    num_heads: int = 8
    num_gqa_groups: int = 8
    max_seqlen_q: int = 128
    max_seqlen_kv: int = 128
    qkv_layout: str = "bshd_bshd_bshd"
    attn_mask_type: str = "causal"
    # optional features (`OPTIONAL_FEATURES`), at what a call without them passes
    num_splits: int = 1
    has_score_mod: bool = False
    softmax_type: str = "vanilla"
    #: The q/k/v tensors' class, as the selector's module names it (`"Float8Tensor"`).
    qkv_type: str = "torch.Tensor"
    #: The q/k/v dtype by its torch name, FP8 (`"float8_e4m3fn"`, `"float8_e5m2"`) included.
    qkv_dtype: str = "bfloat16"
    #: The model precision of FP8 q/k/v (TE 2.20+); None: not given.
    nominal_dtype: str | None = None
    #: Total query / key-value tokens of a THD batch (TE 2.20+); 0 outside THD, as TE passes.
    num_tokens_q: int = 0
    num_tokens_kv: int = 0
    #: The module's sliding window; None: the mask's own (`check_set_window_size`).
    window_size: tuple[int, int] | None = None
    #: The module's diagonal alignment (TE 2.12+); None: the mask's own, as TE resolves it.
    bottom_right_diagonal: bool | None = None
    softcap: float = 0.0
    #: The shape of the ALiBi slopes tensor (`(num_heads,)` or `(batch, num_heads)`).
    alibi_slopes_shape: tuple[int, ...] | None = None
    core_attention_bias_type: str = "no_bias"
    #: The bias's shape by name (`"1hss"`, `"bhss"`, `"b1ss"`, `"11ss"`, `"111s"`); built into
    #: the tensor's shape tuple where the release takes that (TE 2.20+). A tuple is passed on.
    core_attention_bias_shape: str | tuple[int, ...] | None = None
    core_attention_bias_requires_grad: bool = False
    pad_between_seqs: bool = False
    #: The context-parallel group size; above 1 the call is context-parallel.
    cp_size: int = 1
    cp_size_a2a: int = 1
    cp_comm_type: str = "p2p"
    #: The FP8 recipe class of the enclosing autocast, by name (`"DelayedScaling"`,
    #: `"Float8CurrentScaling"`, `"MXFP8BlockScaling"`, ...); None: no FP8 autocast.
    fp8_recipe: str | None = None
    #: The recipe's `fp8_dpa` / `fp8_mha` options (TE's defaults: off).
    fp8_dpa: bool = False
    fp8_mha: bool = False
    #: A KV cache for inference (`"non_paged"` or `"paged"`); None: no `inference_params`.
    kv_cache: str | None = None
    #: Tokens per page of a paged KV cache.
    kv_page_size: int = 64
    return_max_logit: bool = False
    cuda_graph: bool = False
    #: None: `1/sqrt(head_dim_qk)`, `DotProductAttention`'s default.
    softmax_scale: float | None = None
    fp8_output: bool = False
    checkpoint_core_attention: bool = False
    has_score_mod_bprop: bool = False
    #: Whether the call runs inside an ONNX export (`MODULE_FEATURES`).
    onnx_export: bool = False
    #: `NVTE_*` variables set for this call, as sorted (name, value) pairs.
    env: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name in DTYPE_INPUTS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                self._set(name, str(value).removeprefix("torch."))
        for name in TUPLE_INPUTS:
            value = getattr(self, name)
            if isinstance(value, list):
                self._set(name, tuple(value))

    @property
    def padded_head_dim(self) -> int:
        """What flash-attn pads both head dims to, the quantity its kernels are chosen by."""
        return max(self.head_dim_qk, self.head_dim_v)

    @property
    def sm(self) -> str:
        return sm_name(self.compute_capability)

    def with_changes(self, changes: Mapping[str, Any]) -> "Scenario":
        """A copy with `changes` applied; `env` entries are merged, not replaced.

        The copy takes this one's attributes and then the changed ones, where `replace` would
        read all fifty fields and pass them through `__init__`: the analyzer makes a copy per
        witness and per binding (125 on TE 2.20.2's selector)."""
        unknown = changes.keys() - self._field_names
        if unknown:
            raise TypeError(f"Scenario has no input {min(unknown)!r}")
        copy = object.__new__(type(self))
        state = copy.__dict__
        state.update(self.__dict__)
        state.update(changes)
        env = dict(self.env)
        env.update(changes.get("env", {}))
        state["env"] = tuple(sorted(env.items()))
        for name in ("compute_capability", "cudnn_version"):
            if name in changes:
                state[name] = tuple(changes[name])
        copy.__post_init__()
        return copy

    def describe(self) -> dict[str, Any]:
        """Plain JSON-able inputs, for reports."""
        described = self.as_dict()
        described["env"] = dict(self.env)
        return described
