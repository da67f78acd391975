"""The feature table: which kernel variables carry a feature, and what TE calls that feature.

A refusal under `if arch // 10 == 12:` that asserts `not is_split_kv` fires only when split-KV
is in use. To ask TE's selector about it, the miner needs three facts per feature, written down
here rather than guessed from spellings: the kernel variables that carry it, the values they
hold when it is on and off (so a test's polarity is evaluated, not pattern-matched), and the
selector inputs that turn it on (`selector_patch.scenario.INPUTS`). A feature that the scenario
vocabulary cannot express has no triggers and says why: refusals that need it are reported as
unmapped with that reason, never dropped. A row is only consulted where TE's calls leave its
variables free (`lint_plugin.mine.cute.reach`): the kernel parameters TE never passes (`mask_mod`,
block sparsity, `qv`, `gather_kv_indices`, `page_table` in every release so far) are fixed by
those calls, and refusals on them are unreachable through TE; their rows speak where TE's calls
are not known (a selector file outside a TE tree) or a release starts passing them.

Kernel variables absent from the table stay unknown. On a path that only means "some call
takes it" (`if compile_key not in cache:`); in a refusal's own test it means the table cannot
decide the refusal, which is then unmapped, naming the variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from selector_patch.scenario import Condition


class _Passed:
    """What an optional tensor or callable argument holds when the caller passed one."""

    def __repr__(self) -> str:
        return "<passed>"


PASSED = _Passed()


@dataclass(frozen=True, eq=False)  # rows are compared by identity: each is one feature
class Feature:
    #: How messages name it: "Disabling FlashAttention 4 for {label} ...".
    label: str
    #: Kernel variable -> (its value when the feature is on, its value when off).
    values: Mapping[str, tuple[Any, Any]]
    #: Selector inputs that turn it on; empty when TE cannot, or the vocabulary cannot say so.
    triggers: tuple[Condition, ...]
    #: Why the row is what it is; for an unmapped row, why TE's side is missing.
    why: str
    #: Where a guard on it belongs (`Hazard.section`).
    section: str = "head_dim"

    @property
    def mapped(self) -> bool:
        return bool(self.triggers)

    def bindings(self, on: bool) -> dict[str, Any]:
        return {name: pair[0] if on else pair[1] for name, pair in self.values.items()}


FEATURES: tuple[Feature, ...] = (
    Feature(
        "deterministic",
        {"deterministic": (True, False)},
        (Condition("deterministic", "==", True),),
        # TE passes `deterministic=self.deterministic` to FA4 (backends.py, the FA4 call and the
        # backward's saved args); `AttentionParams.deterministic` is the same flag.
        "TE forwards DotProductAttention's determinism request to FA4",
        section="determinism",  # the registry's section for determinism filters (TEA001)
    ),
    Feature(
        "split-KV",
        # `num_splits` is FA4's argument; `is_split_kv` is what it derives from it (> 1).
        {"num_splits": (2, 1), "is_split_kv": (True, False)},
        (Condition("num_splits", ">", 1),),
        "TE forwards AttentionParams.num_splits to FA4",
        section="num_splits",  # beside TE's own FA4 split-KV filter (TEA003)
    ),
    Feature(
        "the split heuristic",
        # num_splits < 1 asks FA4 to choose; some releases refuse that on SM 12.x outright.
        {"num_splits": (0, 1)},
        (Condition("num_splits", "<", 1),),
        "TE forwards AttentionParams.num_splits to FA4, 0 included",
        section="num_splits",  # TEA004
    ),
    Feature(
        "score_mod",
        {"score_mod": (PASSED, None), "score_mod_bwd": (PASSED, None)},
        (Condition("has_score_mod", "==", True),),
        # `AttentionParams.has_score_mod` says a score_mod callback was given (TE 2.20+).
        "TE exposes score_mod as AttentionParams.has_score_mod",
    ),
    Feature(
        "learnable softmax sink",
        {"learnable_sink": (PASSED, None)},
        (Condition("softmax_type", "==", "learnable"),),
        # TE's learnable sink is `softmax_type="learnable"`; the sink tensor is FA4's
        # `learnable_sink` argument.
        "TE exposes the learnable sink as softmax_type='learnable'",
    ),
    Feature(
        "per-sequence lengths (seqused)",
        {"seqused_q": (PASSED, None), "seqused_k": (PASSED, None)},
        (Condition("pad_between_seqs", "==", True),),
        # TE 2.19+ pass `seqused_q`/`seqused_k` (the unpadded lengths) to FA4's varlen entry
        # point whenever `pad_between_seqs` (backends.py, the FA4 call): THD inputs, or BSHD /
        # SBHD with a padding mask; DotProductAttention infers it for THD only.
        "TE passes seqused_q/seqused_k to FA4 whenever pad_between_seqs",
    ),
    Feature(
        "paged KV cache",
        {"page_table": (PASSED, None)},
        (),
        # Paged KV is TE's `inference_params` (an InferenceParams object with a page table);
        # the scenario vocabulary has no KV-cache input, so the harness cannot build one.
        "the scenario vocabulary has no KV-cache (inference_params) input",
    ),
    Feature(
        "mask_mod",
        {"mask_mod": (PASSED, None)},
        (),
        "the scenario vocabulary has no mask_mod input",
    ),
    Feature(
        "block sparsity",
        {"block_sparse_tensors": (PASSED, None), "use_block_sparsity": (True, False)},
        (),
        "the scenario vocabulary has no block-sparsity input",
    ),
    Feature(
        "qv (absorbed MLA)",
        {"qv": (PASSED, None)},
        (),
        "the scenario vocabulary has no qv input",
    ),
    Feature(
        "gathered KV (sparse MLA)",
        {"gather_kv_indices": (PASSED, None)},
        (),
        "the scenario vocabulary has no gather_kv_indices input",
    ),
    Feature(
        "FP8 inputs",
        {"is_fp8": (True, False)},
        (Condition("qkv_dtype", "==", "float8_e4m3fn"),),
        # FA4 derives `is_fp8` from `v.dtype`; TE passes its q/k/v as they are, of
        # `AttentionParams.qkv_dtype` (FP8 attention: `fp8_dpa` with an FP8 recipe).
        "TE passes FP8 q/k/v (qkv_dtype float8_e4m3fn) to FA4 as they are",
    ),
)

#: Kernel variables holding the head dims (q/k, v): not a feature turned on or off, but a
#: dimension each refusal reading them is judged along (`lint_plugin.mine.head_dims`).
HEAD_DIM_VARIABLES = ("head_dim", "head_dim_v")
#: Bytes per element of the plain call's dtype (`qkv_dtype` bfloat16): FA4 derives its head-dim
#: `alignment = 16 // v.element_size()` from it.
PLAIN_ELEMENT_SIZE = 2


def head_dim_bindings(head_dim: int) -> dict[str, Any]:
    """Kernel variables for a call with q/k and v of one head dim, in the plain call's dtype."""
    return {
        **{name: head_dim for name in HEAD_DIM_VARIABLES},
        "alignment": 16 // PLAIN_ELEMENT_SIZE,
    }
