"""Hazards whose evidence is TE's own later fix: TE switched the backend off, in its selector or
in its C++ fused-attention query (`nvte_get_fused_attn_backend`), because it failed there.

Every release before the fix, and every fork of one, still has the hazard. Each entry cites the
commit and the PR, the first release whose own code filters the case, and the failure in TE's
words; `te_last_lacking` is the newest release whose own code, the C++ included, still selects
the backend for a witness (`tests/test_te_fixes.py` runs both releases to show it).

TE's sm120 filters test exactly `(12, 0)` in Python and `sm_arch_ == 120` in C++, in every
release through 2.20.2. Where the failure is the SM 12.x family's (cuDNN's or the kernel's
limit, not one chip's), sm121 (GB10, DGX Spark) still has the hazard on the newest release: each
such gap is an entry of its own, "left out" by TE's fix, with no release that filters it.

Their ids are TEA050 onward, so that the codes below stay free for kernel refusals and for the
hazards users declare in `pyproject.toml` (the README's example is TEA010).
"""

from __future__ import annotations

from selector_patch.registry.kernel_refusals import SM8X, SM10X_SM11X, SM12X
from selector_patch.registry.model import Control, Hazard, TeFix
from selector_patch.scenario import KV_TILE_REMAINDER, Condition

#: Every architecture TE's fused attention runs on (cuDNN's arbitrary-seqlen kernels: sm80+).
SM80_ON = (*SM8X, (9, 0), *SM10X_SM11X, *SM12X)
#: The masks with a causal diagonal and no padding, which TE 2.10's cuDNN 9.14.0 filter spares.
CAUSAL_MASKS = ("causal", "causal_bottom_right")
#: The calls autograd does not record, in inference: where a KV cache is used.
INFERENCE = {"training": False, "backward": False}
#: A KV cache's inference call as `DotProductAttention` makes it.
KV_CACHE_CALL = {**INFERENCE, "kv_cache": "non_paged"}
#: A KV cache's call with more cached keys than queries, as flash-attn takes it (its causal
#: diagonal is the bottom-right one) and a paged cache's 256-token pages divide.
KV_CACHE_DECODE = {**KV_CACHE_CALL, "max_seqlen_kv": 512, "attn_mask_type": "causal_bottom_right"}
#: TE's sm120 KV-cache filters (2.14: `device_compute_capability in ((8, 9), (12, 0))` for
#: FusedAttention, `== (12, 0)` for FlashAttention), from a PR whose title is a feature's.
KV_CACHE_SM120_FIX = TeFix(
    commit="487d68c02",
    pr=2693,
    te_fixed_in="2.14.0",
    layer="python",
    failure=(
        "Temporarily disabling fused attention for kv caching for sm89/sm120 irrespective of"
        " cuDNN version until the cuDNN bug is resolved."
    ),
    te_last_lacking="2.13.0",
    reference="[PyT] [Common] Enable sm120 support for fused attn if cuDNN is 9.18.1+",
)
#: TE's first sm120 pass (#2320; in the 2.9.0 wheel, while TE main's tags have it from 2.10):
#: FP8 and MLA's backward switched off there.
SM120_BACKENDS_FIX = TeFix(
    commit="490a5f41a",
    pr=2320,
    te_fixed_in="2.9.0",
    layer="python",
    failure="Disabling FusedAttention as FP8 is not supported for compute capability = sm120",
    te_last_lacking="2.8.0",
    reference="[PyTorch] Fix attention backend and tests for `sm120`",
)
#: TE 2.10's two C++ filters of #2344 (the NaN and the illegal memory access); each entry
#: quotes its own warning.
KNOWN_IMA_AND_NANS_FIX = TeFix(
    commit="26aad6b0f",
    pr=2344,
    te_fixed_in="2.10.0",
    layer="c++",
    failure="",
    te_last_lacking="2.9.0",
    reference="Disable cuDNN attention for known IMA and NaNs",
)
#: The last release of TE's first fused query (`nvte_get_fused_attn_backend`). TE 2.20's v2 query
#: runs its own rules, then cuDNN frontend's checks, then cuDNN's support check: on TE 2.20.2's
#: compiled library, TEA050/057/060/061/068's witnesses pass the first two (the frontend's own
#: 9.14.0 window check needs a window without a right bound, which TE 2.20 never passes; its
#: Blackwell determinism check names sm100/sm103, not sm110), so TE's own code no longer filters
#: them; the codemod guards them in the selector there.
V1_QUERY_LAST = "2.19.0"
#: An FP8 attention call: the recipe's `fp8_dpa` under a `DelayedScaling` autocast.
FP8_DPA = {"fp8_recipe": "DelayedScaling", "fp8_dpa": True}


#: The newest release whose own fused-attention answer the suite runs (its compiled library):
#: where an sm121 gap is shown reachable. On 2.20.2 six of the seven are too (T3HD/TH3D is
#: not), with TE's v2 query answering and cuDNN's own support check assumed.
NEWEST_ANSWERED = "2.19.0"


def _family_gap(fix: TeFix, why: str) -> TeFix:
    """The sm121 side of an sm120 fix: TE's test names (12, 0) alone, so no release filters it."""
    return fix.replace(
        te_fixed_in="",
        te_last_lacking=NEWEST_ANSWERED,
        reference=(
            f"TE's fix (#{fix.pr}, first in {fix.te_fixed_in}) tests exactly sm120 and leaves"
            f" sm121 out in every release through 2.20.2; {why}"
        ),
    )


FUSED_CUDNN_9_14_SLIDING_WINDOW_NAN = Hazard(
    id="TEA050",
    backend="FUSED",
    title=(
        "FusedAttention chosen on cuDNN 9.14.0 for a sliding window with a non-causal mask and"
        " max_seqlen_kv > 1024 (NaN)"
    ),
    architectures=SM80_ON,
    triggers=(
        Condition("cudnn_version", "==", (9, 14, 0)),
        Condition("sliding_window", "==", True),
        Condition("attn_mask_type", "not in", CAUSAL_MASKS),
        Condition("max_seqlen_kv", ">", 1024),
    ),
    message=(
        "Disabling FusedAttention for a sliding window with a non-causal mask and max_seqlen_kv >"
        " 1024 on cuDNN 9.14.0: it gives NaN."
    ),
    section="fused_backend",
    evidence=KNOWN_IMA_AND_NANS_FIX.replace(
        failure=(
            "Warning: Given combination of attention mask (non-causal) and max_seqlen_kv (> 1024)"
            " does not support fused attention for cuDNN 9.14.0."
        ),
        cxx_until=V1_QUERY_LAST,
    ),
    kernel_version="",
    witness_shapes=(
        {
            "cudnn_version": (9, 14, 0),
            "window_size": (128, 0),
            "attn_mask_type": "padding_causal",
            "max_seqlen_q": 2048,
            "max_seqlen_kv": 2048,
        },
    ),
    controls=(
        Control("cuDNN 9.15.0", {"cudnn_version": (9, 15, 0)}),
        Control("max_seqlen_kv 1024", {"max_seqlen_q": 1024, "max_seqlen_kv": 1024}),
        Control("no sliding window", {"window_size": None}),
    ),
    te_releases="every release with sliding-window fused attention before 2.10.0",
)

FUSED_CUDNN_9_10_F16 = Hazard(
    id="TEA051",
    backend="FUSED",
    title="FusedAttention chosen for FP16/BF16 on cuDNN 9.10.0 or 9.10.1 (known SDPA bugs)",
    architectures=SM80_ON,
    triggers=(
        Condition("cudnn_version", "in", ((9, 10, 0), (9, 10, 1))),
        Condition("qkv_dtype", "in", ("bfloat16", "float16")),
        #: FP8 attention casts BF16/FP16 inputs to FP8 before TE's C++ sees them (TEA071).
        Condition("fp8_dpa", "==", False),
    ),
    message="Disabling FusedAttention for FP16/BF16 on cuDNN 9.10.0/9.10.1: known SDPA bugs.",
    section="fused_backend",
    evidence=TeFix(
        commit="0d8022834",
        pr=1937,
        te_fixed_in="2.6.0.post1",
        layer="c++",
        failure="9.10.0/9.10.1: known bugs with SDPA F16",
        te_last_lacking="2.5.0",
        reference="[Common] Skip cuDNN 9.10.0/9.10.1 due to bugs",
    ),
    kernel_version="",
    witness_shapes=({"cudnn_version": (9, 10, 0)}, {"cudnn_version": (9, 10, 1)}),
    controls=(
        Control("cuDNN 9.10.2", {"cudnn_version": (9, 10, 2)}),
        Control("cuDNN 9.9.0", {"cudnn_version": (9, 9, 0)}),
        Control("FP8 attention on cuDNN 9.10.1", {**FP8_DPA, "cudnn_version": (9, 10, 1)}),
    ),
    te_releases="every release before 2.6",
)

FUSED_KV_CACHE_SM89 = Hazard(
    id="TEA052",
    backend="FUSED",
    title="FusedAttention chosen with a KV cache on sm89 (wrong results)",
    architectures=((8, 9),),
    triggers=(Condition("kv_cache", "in", ("non_paged", "paged")),),
    message="Disabling FusedAttention for KV caching for sm89: cuDNN gives wrong results.",
    section="fused_backend",
    evidence=TeFix(
        commit="7f77127cb",
        pr=2185,
        te_fixed_in="2.8.0",
        layer="python",
        failure=(
            "Temporarily disabling fused attention for kv caching for sm89 irrespective of cuDNN"
            " version until the cuDNN bug is resolved"
        ),
        te_last_lacking="2.7.0",
        reference=(
            "first #1776 (2.4: cuDNN < 9.11), widened by #1895 (2.5: < 9.12), 2.6 (<= 9.12),"
            " #2121 (2.7: <= 9.13), then #2185 (2.8: every cuDNN)"
        ),
    ),
    kernel_version="",
    witness_shapes=(KV_CACHE_CALL, {**KV_CACHE_CALL, "kv_cache": "paged"}),
    controls=(
        Control("no KV cache", {"kv_cache": None}),
        Control("sm90", {"compute_capability": (9, 0)}),
        Control("sm80", {"compute_capability": (8, 0)}),
    ),
    te_releases="2.3 (KV cache) onward, filtered for some cuDNN from 2.4, for all from 2.8",
)

FUSED_KV_CACHE_SM120 = Hazard(
    id="TEA053",
    backend="FUSED",
    title="FusedAttention chosen with a KV cache on sm120",
    architectures=((12, 0),),
    triggers=(Condition("kv_cache", "in", ("non_paged", "paged")),),
    message="Disabling FusedAttention for KV caching for sm120: cuDNN gives wrong results.",
    section="fused_backend",
    evidence=KV_CACHE_SM120_FIX,
    kernel_version="",
    witness_shapes=(KV_CACHE_CALL,),
    controls=(Control("no KV cache", {"kv_cache": None}),),
    te_releases="2.3 (KV cache) - 2.13",
)

FUSED_KV_CACHE_SM121 = FUSED_KV_CACHE_SM120.replace(
    id="TEA054",
    title="FusedAttention chosen with a KV cache on sm121 (TE's sm120 filter leaves it out)",
    architectures=((12, 1),),
    message="Disabling FusedAttention for KV caching for sm121: cuDNN gives wrong results.",
    evidence=_family_gap(KV_CACHE_SM120_FIX, "the cuDNN bug is the SM 12.x kernels'"),
    te_releases="every release through 2.20.2",
)

FLASH_KV_CACHE_SM120 = Hazard(
    id="TEA055",
    backend="FA2",
    title="FlashAttention 2 chosen with a KV cache on sm120",
    architectures=((12, 0),),
    triggers=(Condition("kv_cache", "in", ("non_paged", "paged")),),
    message="Disabling FlashAttention for KV caching for sm120.",
    section="compute_capability",
    evidence=KV_CACHE_SM120_FIX.replace(
        failure="Temporarily disable FlashAttention for KV caching on sm120"
    ),
    kernel_version="2.8.3",
    #: TE 2.2 - 2.9 accept flash-attn only below 2.8 (`FlashAttentionUtils.max_version`).
    older_kernel_versions=("2.7.4.post1",),
    witness_shapes=(
        {**KV_CACHE_DECODE, "kv_cache": "paged", "kv_page_size": 256},
        KV_CACHE_DECODE,
    ),
    controls=(Control("no KV cache", {"kv_cache": None}),),
    te_releases="2.3 (KV cache) - 2.13",
)

FLASH_KV_CACHE_SM121 = FLASH_KV_CACHE_SM120.replace(
    id="TEA056",
    title="FlashAttention 2 chosen with a KV cache on sm121 (TE's sm120 filter leaves it out)",
    architectures=((12, 1),),
    message="Disabling FlashAttention for KV caching for sm121.",
    evidence=_family_gap(
        FLASH_KV_CACHE_SM120.evidence, "flash-attn runs its SM 12.x kernels on both"
    ),
    te_releases="every release through 2.20.2",
)

FUSED_DETERMINISTIC_BLACKWELL = Hazard(
    id="TEA057",
    backend="FUSED",
    title=(
        "FusedAttention chosen for deterministic training on SM 10.x / 11.0 with cuDNN < 9.18.1"
        " (its backward is not deterministic)"
    ),
    architectures=SM10X_SM11X,
    triggers=(
        Condition("deterministic", "==", True),
        Condition("training", "==", True),
        Condition("cudnn_version", "<", (9, 18, 1)),
    ),
    message=(
        "Disabling FusedAttention for determinism reasons on Blackwell: cuDNN < 9.18.1 has no"
        " deterministic backward there."
    ),
    section="determinism",
    evidence=TeFix(
        commit="a5c79876a",
        pr=2130,
        te_fixed_in="2.7.0",
        layer="python",
        failure="Disabling FusedAttention for determinism reasons on Blackwell",
        te_last_lacking="2.6.0.post1",
        reference=(
            "#2130 (2.7, cuDNN <= 9.14.0), #2288 fixed the tests around it; #2584 (27fc168e2)"
            " moved it into the C++ query, which admits cuDNN >= 9.18.1 without dropout or bias"
        ),
        cxx_from="2.12.0",
        cxx_until=V1_QUERY_LAST,
    ),
    kernel_version="",
    witness_shapes=({"cudnn_version": (9, 14, 0)},),
    controls=(
        Control("nondeterministic", {"deterministic": False}),
        Control("sm90", {"compute_capability": (9, 0)}),
        Control("inference", INFERENCE),
    ),
    te_releases="every release before 2.7",
)

SM120_DETERMINISM_FIX = TeFix(
    commit="4ead776cf",
    pr=2798,
    te_fixed_in="2.14.0",
    layer="c++",
    failure="Warning: Deterministic fused attention on SM120 is not supported.",
    te_last_lacking="2.13.0",
    reference="[PyT][Common] Disable fused attention for sm120 if determinism is required",
)

FUSED_DETERMINISTIC_SM121 = Hazard(
    id="TEA058",
    backend="FUSED",
    title=(
        "FusedAttention chosen for deterministic training on sm121 (TE's sm120 filter leaves it"
        " out)"
    ),
    architectures=((12, 1),),
    triggers=(Condition("deterministic", "==", True), Condition("training", "==", True)),
    message=(
        "Disabling FusedAttention for determinism reasons on sm121: deterministic fused"
        " attention on SM 12.x is not supported."
    ),
    section="fused_backend",
    evidence=_family_gap(SM120_DETERMINISM_FIX, "cuDNN's SM 12.x backward is not deterministic"),
    kernel_version="",
    witness_shapes=({},),
    controls=(
        Control("nondeterministic", {"deterministic": False}),
        Control("inference", INFERENCE),
    ),
    te_releases="every release through 2.20.2",
)

FUSED_SM121_OLD_CUDNN = Hazard(
    id="TEA059",
    backend="FUSED",
    title="FusedAttention chosen on sm121 with cuDNN < 9.18.1 (TE's sm120 filter leaves it out)",
    architectures=((12, 1),),
    triggers=(Condition("cudnn_version", "<", (9, 18, 1)),),
    message="Disabling FusedAttention for sm121 with cuDNN < 9.18.1: it is not supported.",
    section="fused_backend",
    evidence=_family_gap(
        TeFix(
            commit="487d68c02",
            pr=2693,
            te_fixed_in="2.14.0",
            layer="c++",
            failure=(
                "Warning: Given combination of sm_arch_ == 120 and cudnn_runtime_version < 91801"
                " is not supported."
            ),
            te_last_lacking="2.13.0",
        ),
        "cuDNN's SM 12.x support starts at 9.18.1",
    ),
    kernel_version="",
    witness_shapes=({"cudnn_version": (9, 17, 0)},),
    controls=(Control("cuDNN 9.18.1", {"cudnn_version": (9, 18, 1)}),),
    te_releases="every release through 2.20.2",
)

FUSED_SM120_DETERMINISTIC = FUSED_DETERMINISTIC_SM121.replace(
    id="TEA060",
    title="FusedAttention chosen for deterministic training on sm120",
    architectures=((12, 0),),
    message=(
        "Disabling FusedAttention for determinism reasons on sm120: deterministic fused"
        " attention on SM 12.x is not supported."
    ),
    evidence=SM120_DETERMINISM_FIX.replace(cxx_until=V1_QUERY_LAST),
    te_releases="every release before 2.14 that runs fused attention on sm120",
)

FUSED_SM120_OLD_CUDNN = FUSED_SM121_OLD_CUDNN.replace(
    id="TEA061",
    title="FusedAttention chosen on sm120 with cuDNN < 9.18.1",
    architectures=((12, 0),),
    message="Disabling FusedAttention for sm120 with cuDNN < 9.18.1: it is not supported.",
    evidence=TeFix(
        commit="487d68c02",
        pr=2693,
        te_fixed_in="2.14.0",
        layer="c++",
        failure=(
            "Warning: Given combination of sm_arch_ == 120 and cudnn_runtime_version < 91801 is"
            " not supported."
        ),
        te_last_lacking="2.13.0",
        reference="[PyT] [Common] Enable sm120 support for fused attn if cuDNN is 9.18.1+",
        cxx_until=V1_QUERY_LAST,
    ),
    te_releases="every release before 2.14 that runs fused attention on sm120",
)

FUSED_FP8_SM120 = Hazard(
    id="TEA062",
    backend="FUSED",
    title="FusedAttention chosen for FP8 attention on sm120",
    architectures=((12, 0),),
    triggers=(Condition("fp8_dpa", "==", True),),
    message="Disabling FusedAttention as FP8 is not supported for compute capability = sm120",
    section="fused_backend",
    evidence=SM120_BACKENDS_FIX,
    kernel_version="",
    witness_shapes=(FP8_DPA,),
    controls=(Control("no FP8", {"fp8_recipe": None, "fp8_dpa": False}),),
    te_releases="every release before 2.9 with FP8 attention",
)

FUSED_FP8_SM121 = FUSED_FP8_SM120.replace(
    id="TEA063",
    title="FusedAttention chosen for FP8 attention on sm121 (TE's sm120 filter leaves it out)",
    architectures=((12, 1),),
    message="Disabling FusedAttention as FP8 is not supported for compute capability = sm121",
    evidence=_family_gap(SM120_BACKENDS_FIX, "cuDNN's FP8 attention has no SM 12.x kernels"),
    te_releases="every release through 2.20.2",
)

FUSED_MLA_BACKWARD_SM120 = Hazard(
    id="TEA064",
    backend="FUSED",
    title="FusedAttention chosen for an MLA backward with head_dim_qk > 128 on sm120",
    architectures=((12, 0),),
    triggers=(
        Condition("mla", "==", True),
        Condition("head_dim_qk", ">", 128),
        Condition("training", "==", True),
    ),
    message=(
        "Disabling FusedAttention as MLA for backward pass is not supported for compute"
        " capability = sm120 for a head_dim_qk > 128 or head_dim_qk %8 != 0."
    ),
    section="fused_backend",
    evidence=SM120_BACKENDS_FIX.replace(
        failure=(
            "Disabling FusedAttention as MLA for backward pass is not supported for compute"
            " capability = sm120 for a head_dim_qk > 128 or head_dim_qk %%8 != 0."
        )
    ),
    kernel_version="",
    witness_shapes=({"head_dim_qk": 192, "head_dim_v": 128},),
    controls=(
        Control("head_dim_qk 128", {"head_dim_qk": 128}),
        Control("inference", INFERENCE),
    ),
    te_releases="every release before 2.9 with MLA",
)

FUSED_MLA_BACKWARD_SM121 = FUSED_MLA_BACKWARD_SM120.replace(
    id="TEA065",
    title=(
        "FusedAttention chosen for an MLA backward with head_dim_qk > 128 on sm121 (TE's sm120"
        " filter leaves it out)"
    ),
    architectures=((12, 1),),
    message=(
        "Disabling FusedAttention as MLA for backward pass is not supported for compute"
        " capability = sm121 for a head_dim_qk > 128."
    ),
    evidence=_family_gap(
        FUSED_MLA_BACKWARD_SM120.evidence, "cuDNN's SM 12.x MLA backward is the limit"
    ),
    te_releases="every release through 2.20.2",
)

FUSED_T3HD_SM121 = Hazard(
    id="TEA066",
    backend="FUSED",
    title="FusedAttention chosen for T3HD/TH3D layouts on sm121 (TE's sm120 filter leaves it out)",
    architectures=((12, 1),),
    triggers=(Condition("qkv_layout", "in", ("t3hd", "th3d")),),
    message="Disabling FusedAttention for T3HD/TH3D layouts on sm121: they are not supported.",
    section="fused_backend",
    evidence=_family_gap(
        FUSED_SM120_OLD_CUDNN.evidence.replace(
            failure=(
                "Warning: Given combination of T3HD/TH3D layouts on SM120 is not supported."
                " Please consider using other THD layouts if possible."
            )
        ),
        "cuDNN's SM 12.x kernels lack the packed THD layouts",
    ),
    kernel_version="",
    witness_shapes=(
        {"qkv_layout": "t3hd", "attn_mask_type": "padding_causal"},
        {"qkv_layout": "th3d", "attn_mask_type": "padding_causal"},
    ),
    controls=(Control("thd_thd_thd", {"qkv_layout": "thd_thd_thd"}),),
    te_releases="every release through 2.20.2",
)

FA3_DETERMINISTIC_HEAD_DIM_256 = Hazard(
    id="TEA067",
    backend="FA3",
    title="FlashAttention 3 chosen for deterministic execution with head_dim_qk >= 256",
    architectures=((9, 0),),
    triggers=(
        Condition("deterministic", "==", True),
        Condition("training", "==", True),
        Condition("head_dim_qk", ">=", 256),
    ),
    message="Disabling FlashAttention 3 for deterministic execution with head_dim_qk >= 256.",
    section="determinism",
    evidence=TeFix(
        commit="c5a4fd5a3",
        pr=2432,
        te_fixed_in="2.15.0",
        layer="python",
        failure="Disabling FlashAttention 3 for deterministic execution with head_dim_qk >= 256.",
        te_last_lacking="2.14.0",
        reference=(
            "came inside [PyTorch] Add FA4 Support, without a fix title: flash-attn 3's"
            " deterministic backward has no head-dim-256 kernel"
        ),
        package="flash-attn 3",
    ),
    kernel_version="3.0.0b1",
    #: FA3 built from flash-attention 2.7.2.post1's `hopper/`: the interface TE 1.12 - 2.1
    #: import (`_flash_attn_varlen_forward`), which later builds no longer export. TE 1.12 -
    #: 2.1 run FA3 only beside a flash-attn 2 they admit (at most 2.6.3): a witness has one.
    witness_shapes=(
        {"head_dim_qk": 256, "head_dim_v": 256, "flash_attn_3_source": "2.7.2.post1"},
        {
            "head_dim_qk": 256,
            "head_dim_v": 256,
            "flash_attn_3_source": "2.7.2.post1",
            "flash_attn_2": "2.6.3",
        },
    ),
    controls=(
        Control("nondeterministic", {"deterministic": False}),
        Control("head dim 128", {"head_dim_qk": 128, "head_dim_v": 128}),
    ),  # no inference control: 2.15's fix filters inference too; 2.16 narrowed it to training
    te_releases=(
        "1.11 - 2.14 (FA3 from flashattn-hopper / 3.0.0b1 sources; TE 1.11 - 2.1 hold it in the"
        " module global `_use_flash_attn_3`)"
    ),
)

FUSED_MLA_BACKWARD_SM90 = Hazard(
    id="TEA068",
    backend="FUSED",
    title=(
        "FusedAttention chosen for an MLA backward on sm90 with unequal head dims >= 128 and"
        " cuDNN >= 9.11"
    ),
    architectures=((9, 0),),
    triggers=(
        Condition("cudnn_version", ">=", (9, 11, 0)),
        Condition("training", "==", True),
        Condition("head_dim_qk", ">=", 128),
        Condition("head_dim_v", ">=", 128),
        Condition("mla", "==", True),
        Condition("head_dim_qk", "!=", 192),
    ),
    message=(
        "Disabling FusedAttention for an MLA backward on sm90 with unequal head dims >= 128:"
        " cuDNN 9.11+ fails it."
    ),
    section="fused_backend",
    evidence=TeFix(
        commit="7f77127cb",
        pr=2185,
        te_fixed_in="2.8.0",
        layer="c++",
        failure=(
            "9.11+ bug: 128 < d_qk <= 256, 128 < d_v <= 256 + Hopper + bprop + MLA. Conditional"
            " to temporarily use blanket cudnn_runtime_version >= 9.11 until fixed"
        ),
        te_last_lacking="2.7.0",
        reference=(
            "#1960 (657c965bb) filtered cuDNN 9.11 - 9.13 only; #2185 widened it to every cuDNN"
            " from 9.11"
        ),
        cxx_until=V1_QUERY_LAST,
    ),
    kernel_version="",
    witness_shapes=({"head_dim_qk": 256, "head_dim_v": 128, "cudnn_version": (9, 18, 1)},),
    controls=(
        Control("equal head dims", {"head_dim_v": 256}),
        Control("inference", INFERENCE),
        Control("cuDNN 9.10.2", {"cudnn_version": (9, 10, 2)}),
    ),
    te_releases="every release with MLA before 2.8 (cuDNN 9.11 - 9.13 filtered from #1960)",
)

FUSED_FP8_CURRENT_SCALING_OLD_CUDNN = Hazard(
    id="TEA069",
    backend="FUSED",
    title="FusedAttention chosen for FP8 current scaling with cuDNN < 9.14.0",
    architectures=SM10X_SM11X,
    triggers=(
        Condition("fp8_dpa", "==", True),
        Condition("fp8_recipe", "==", "Float8CurrentScaling"),
        Condition("cudnn_version", "<", (9, 14, 0)),
    ),
    message="Disabling FusedAttention for FP8 current scaling with cuDNN < 9.14.0",
    section="fused_backend",
    evidence=TeFix(
        commit="fd2f589f2",
        pr=2236,
        te_fixed_in="2.9.0",
        layer="python",
        failure="Disabling FusedAttention for FP8 current scaling with cuDNN < 9.14.0",
        te_last_lacking="2.8.0",
        reference="[PyTorch] Bump minimum cuDNN version for fused attention with FP8 current scaling",
        #: 2.2 introduced the recipe; 2.4 - 2.7's `Float8CurrentScaling` asserts against fp8_dpa.
        te_reachable=">=2.2,!=2.4.*,!=2.5.*,!=2.6.*,!=2.7.*",
    ),
    kernel_version="",
    witness_shapes=({"cudnn_version": (9, 13, 0)},),
    controls=(
        Control("cuDNN 9.14.0", {"cudnn_version": (9, 14, 0)}),
        Control("delayed scaling", {"fp8_recipe": "DelayedScaling"}),
    ),
    te_releases="2.8 (FP8 current scaling attention)",
)

FUSED_MAX_LOGIT_OLD_CUDNN = Hazard(
    id="TEA070",
    backend="FUSED",
    title="FusedAttention chosen for max_logit with cuDNN < 9.21",
    architectures=SM80_ON,
    triggers=(
        Condition("return_max_logit", "==", True),
        Condition("cudnn_version", "<", (9, 21, 0)),
    ),
    message=(
        "Disabling FusedAttention for max_logit with cuDNN < 9.21: its composite softmax node"
        " rejects the Stats + Max output combination."
    ),
    section="fused_backend",
    evidence=TeFix(
        commit="9b3818422",
        pr=3091,
        te_fixed_in="2.17.0",
        layer="c++",
        failure=(
            "max_logit pre-9.21: no (the composite softmax node rejects the Stats + Max output"
            " combination)"
        ),
        te_last_lacking="2.16.1",
        reference="guarding max_logits fused attention for cudnn < 9.21.0",
    ),
    kernel_version="",
    witness_shapes=({"cudnn_version": (9, 18, 1)},),
    controls=(
        Control("no max_logit", {"return_max_logit": False}),
        Control("cuDNN 9.21.0", {"cudnn_version": (9, 21, 0)}),
    ),
    te_releases="2.9 (max_logit) - 2.16",
)

FUSED_CUDNN_9_10_0_FP8 = Hazard(
    id="TEA071",
    backend="FUSED",
    title="FusedAttention chosen for FP8 attention on cuDNN 9.10.0 (known SDPA FP8 bugs)",
    architectures=((9, 0), (10, 0)),
    triggers=(
        Condition("cudnn_version", "==", (9, 10, 0)),
        Condition("fp8_dpa", "==", True),
    ),
    message="Disabling FusedAttention for FP8 attention on cuDNN 9.10.0: known SDPA FP8 bugs.",
    section="fused_backend",
    evidence=FUSED_CUDNN_9_10_F16.evidence.replace(failure="9.10.0: known bugs with SDPA FP8"),
    kernel_version="",
    witness_shapes=({**FP8_DPA, "cudnn_version": (9, 10, 0)},),
    controls=(Control("cuDNN 9.10.2", {"cudnn_version": (9, 10, 2)}),),
    te_releases="every release with FP8 attention before 2.6",
)

#: TE's packed-sequence layouts (`qkv_format == "thd"`).
THD_LAYOUTS = ("thd_thd_thd", "t3hd", "th3d", "thd_t2hd", "thd_th2d")

FUSED_DETERMINISTIC_THD_WORKSPACE_SM90 = Hazard(
    id="TEA072",
    backend="FUSED",
    title=(
        "FusedAttention chosen for a deterministic THD backward on sm90 whose workspace cannot"
        " fit (batch x heads x s_q x s_kv >= 2**30)"
    ),
    architectures=((9, 0),),
    triggers=(
        Condition("deterministic", "==", True),
        Condition("training", "==", True),
        Condition("qkv_dtype", "in", ("bfloat16", "float16")),
        Condition("qkv_layout", "in", THD_LAYOUTS),
        Condition("bhss", ">=", 1 << 30),
    ),
    message=(
        "Disabling FusedAttention due to a known cuDNN deterministic F16/BF16 THD backward"
        " workspace limitation on sm90 for large BHSS configurations"
    ),
    section="fused_backend",
    evidence=TeFix(
        commit="836407430",
        pr=2596,
        te_fixed_in="2.19.0",
        layer="python",
        failure=(
            "Observed: cuDNN deterministic F16/BF16 THD backward asks for ~128 * BHSS bytes of"
            " workspace on sm90; at 1 << 30 that's 128 GiB, which does not fit on H100's 80 GB."
        ),
        te_last_lacking="2.18.0",
        reference=(
            "came inside [PyTorch] Add `pad_between_seqs` support ... with FA3 + THD (#2596), on a"
            " release branch: in the 2.19.0 wheel, not in TE main's history. Its filter tests"
            " the C++ query's answer (`F16_arbitrary_seqlen`)"
        ),
        cxx_from="2.19.0",
    ),
    kernel_version="",
    witness_shapes=(
        {
            "qkv_layout": "thd_thd_thd",
            "attn_mask_type": "padding_causal",
            "num_heads": 16,
            "num_gqa_groups": 16,
            "max_seqlen_q": 8192,
            "max_seqlen_kv": 8192,
        },
    ),
    controls=(
        Control("nondeterministic", {"deterministic": False}),
        Control("short sequences", {"max_seqlen_q": 2048, "max_seqlen_kv": 2048}),
    ),
    te_releases="every release with deterministic THD fused attention on sm90 before 2.19",
)

FA4_SM100_HD256_SLIDING_WINDOW = Hazard(
    id="TEA073",
    backend="FA4",
    title="FlashAttention 4 chosen for head dim 256 with a sliding window on SM 10.x / 11.0",
    architectures=SM10X_SM11X,
    triggers=(
        Condition("head_dim_qk", "==", 256),
        Condition("head_dim_v", "==", 256),
        Condition("sliding_window", "==", True),
    ),
    message=(
        "Disabling FlashAttention 4 as SM100 head_dim=256 does not support sliding-window/local"
        " attention yet."
    ),
    section="compute_capability",
    evidence=TeFix(
        commit="bffde8f4a",
        pr=3056,
        te_fixed_in="2.18.0",
        layer="python",
        failure=(
            "Disabling FlashAttention 4 as SM100 head_dim=256 does not support"
            " sliding-window/local attention yet."
        ),
        te_last_lacking="2.17.1",
        reference=(
            "came inside [JAX] [PyT] [Common] Enable D=256 BWD cuDNN fused attn for Blackwell CC"
            " 10.x (f61ef61d7, Disable FA4 D256 SWA on SM100)"
        ),
        package="flash-attn-4",
    ),
    kernel_version="4.0.0b24",
    witness_shapes=({"head_dim_qk": 256, "head_dim_v": 256, "window_size": (128, 0)},),
    controls=(
        Control("no sliding window", {"window_size": None}),
        Control("head dim 128", {"head_dim_qk": 128, "head_dim_v": 128}),
        Control("sm90", {"compute_capability": (9, 0)}),
    ),
    te_releases="2.15 - 2.17",
)

FUSED_FP8_TRAINING_SM90_HEAD_DIM = Hazard(
    id="TEA074",
    backend="FUSED",
    title=(
        "FusedAttention chosen for FP8 training on sm90 with a head dim other than 128 (cuDNN's"
        " FP8 backward there takes d=128 only)"
    ),
    architectures=((9, 0),),
    triggers=(
        Condition("fp8_dpa", "==", True),
        Condition("training", "==", True),
        Condition("head_dim_qk", "!=", 128),
    ),
    message=(
        "Disabling FusedAttention for FP8 training on sm90 with head_dim != 128: cuDNN's FP8"
        " backward supports d=128 only."
    ),
    section="fused_backend",
    evidence=TeFix(
        commit="33b4fa708",
        pr=2148,
        te_fixed_in="2.8.0",
        layer="c++",
        failure="sm90: fwd d<=256, bwd d=128 only",
        te_last_lacking="2.7.0",
        reference=(
            "came inside [PyTorch] Add sink attention support from cuDNN (#2148; on main"
            " 5e4e0b2c3, first tagged in 2.9), without a fix title: TE's C++ had said since 2.1"
            " that sm90's FP8 backward takes d=128 only (`TODO (cyang): add is_training to"
            " nvte_get_fused_attn_backend`) and now tests is_training"
        ),
        #: Before 2.1 the C++ offers FP8 fused attention d=64 (t3hd) and d=128 alone.
        te_reachable=">=2.1",
    ),
    kernel_version="",
    witness_shapes=(
        {**FP8_DPA, "head_dim_qk": 64, "head_dim_v": 64},
        {**FP8_DPA, "head_dim_qk": 256, "head_dim_v": 256},
    ),
    controls=(
        Control("head dim 128", {"head_dim_qk": 128, "head_dim_v": 128}),
        Control("inference", INFERENCE),
        Control("no FP8", {"fp8_recipe": None, "fp8_dpa": False}),
    ),
    te_releases="2.1 (cuDNN 9.7's FP8 head dims up to 256 on sm90) - 2.7",
)

FUSED_MXFP8_CUDNN_9_23 = Hazard(
    id="TEA075",
    backend="FUSED",
    title="FusedAttention chosen for MXFP8 attention on cuDNN 9.23.0 or 9.23.1 (known SDPA bugs)",
    architectures=SM10X_SM11X,
    triggers=(
        Condition("fp8_dpa", "==", True),
        Condition("fp8_recipe", "==", "MXFP8BlockScaling"),
        Condition("cudnn_version", "in", ((9, 23, 0), (9, 23, 1))),
    ),
    message="Disabling FusedAttention for MXFP8 with cuDNN 9.23.0/9.23.1",
    section="fused_backend",
    evidence=TeFix(
        commit="75609aeb4",
        pr=3173,
        te_fixed_in="2.17.0",
        layer="python",
        failure="9.23.0/9.23.1: known bugs with MXFP8 SDPA",
        te_last_lacking="2.16.1",
        reference="Disable cuDNN 9.23.0/9.23.1 for MXFP8 attention",
        #: MXFP8 attention, cuDNN's MXFP8 graph, came in 2.15 (#2719, 8e73f54fe). 2.8 - 2.14's
        #: `DotProductAttention` asserts "DotProductAttention does not support
        #: MXFP8BlockScaling recipe" for `fp8_dpa`; 2.1 - 2.7 check nothing, but their C++
        #: knows no MXFP8 scaling (their FP8 graph is per-tensor), so the request, if made, is
        #: not the one whose cuDNN 9.23 graph fails, and fails on every cuDNN.
        te_reachable=">=2.15",
    ),
    kernel_version="",
    witness_shapes=({"cudnn_version": (9, 23, 0)}, {"cudnn_version": (9, 23, 1)}),
    controls=(
        Control("cuDNN 9.21.0", {"cudnn_version": (9, 21, 0)}),
        Control("cuDNN 9.24.0", {"cudnn_version": (9, 24, 0)}),
        Control("delayed scaling", {"fp8_recipe": "DelayedScaling"}),
    ),
    te_releases="2.15 (MXFP8 attention) - 2.16",
)

FA4_SM100_HD512 = Hazard(
    id="TEA080",
    backend="FA4",
    title="FlashAttention 4 chosen for symmetric head dim 512 on SM 10.x / 11.0",
    architectures=SM10X_SM11X,
    triggers=(Condition("head_dim_qk", "==", 512), Condition("head_dim_v", "==", 512)),
    message=(
        "Disabling FlashAttention 4 for unsupported symmetric head_dim=512 on SM100/SM110: its"
        " forward kernel exceeds its TMEM allocation."
    ),
    section="compute_capability",
    evidence=TeFix(
        commit="7d0365b35",
        pr=3341,
        te_fixed_in="2.19.0",
        layer="python",
        failure=(
            "FA4's validator currently accepts symmetric (512, 512) on SM100/SM110, but the"
            " generic forward kernel exceeds its TMEM allocation for that shape."
        ),
        te_last_lacking="2.18.0",
        reference="came inside Stabilize FlashAttention CI environments",
        package="flash-attn-4",
    ),
    kernel_version="4.0.0b24",
    witness_shapes=({"head_dim_qk": 512, "head_dim_v": 512},),
    controls=(
        Control("MLA-absorbed (64, 512)", {"head_dim_qk": 64, "head_dim_v": 512}),
        Control("head dim 128", {"head_dim_qk": 128, "head_dim_v": 128}),
        Control("sm90", {"compute_capability": (9, 0)}),
    ),
    te_releases="2.16 - 2.18 (where TE defers to FA4's validator, which accepts (512, 512))",
)

#: The masks with padding, which TE 2.10's CUDA-graph filter spares.
PADDING_MASKS = ("padding", "padding_causal", "padding_causal_bottom_right")
#: A self-attention training call whose keys end past a whole 128-token tile, BSHD, causal.
CUDA_GRAPH_CALL = {
    "qkv_layout": "bshd_bshd_bshd",
    "attn_mask_type": "causal",
    "max_seqlen_q": 1000,
    "max_seqlen_kv": 1000,
}

FUSED_CUDA_GRAPH_UNALIGNED_KV_IMA = Hazard(
    id="TEA081",
    backend="FUSED",
    title=(
        "FusedAttention chosen for training under CUDA graph capture with max_seqlen_kv % 128 != 0"
        " on cuDNN <= 9.15.0 (illegal memory access)"
    ),
    architectures=SM80_ON,
    triggers=(
        Condition("cuda_graph", "==", True),
        Condition("cudnn_version", "<=", (9, 15, 0)),
        Condition("training", "==", True),
        Condition("qkv_format", "in", ("bshd", "sbhd")),
        Condition(KV_TILE_REMAINDER, "!=", 0),
        Condition("attn_mask_type", "not in", PADDING_MASKS),
    ),
    message=(
        "Disabling FusedAttention for training under CUDA graph capture with a non-padding mask,"
        " max_seqlen_kv % 128 != 0 and BSHD/SBHD on cuDNN <= 9.15.0: it needs cuDNN 9.15.1+."
    ),
    section="fused_backend",
    evidence=KNOWN_IMA_AND_NANS_FIX.replace(
        failure=(
            "Warning: Given combination of attention mask (non-padding), max_seqlen_kv (not"
            " divisible by 128), and qkv_format (BSHD/SBHD) for backward fused attention with"
            " graph capture requires cuDNN 9.15.1+."
        ),
    ),
    kernel_version="",
    witness_shapes=tuple(
        {**CUDA_GRAPH_CALL, "cudnn_version": version} for version in ((9, 15, 0), (9, 12, 0))
    ),
    controls=(
        Control("cuDNN 9.15.1", {"cudnn_version": (9, 15, 1)}),
        Control("outside capture", {"cuda_graph": False}),
        Control("max_seqlen_kv 1024", {"max_seqlen_q": 1024, "max_seqlen_kv": 1024}),
        Control("padding mask", {"attn_mask_type": "padding_causal"}),
        Control("inference", {"training": False, "backward": False}),
    ),
    te_releases=(
        "every release with fused attention before 2.10.0; before 2.10 the params say nothing"
        " of capture, so the guard comes with TE 2.10's `cuda_graph` field"
    ),
)
#: Not registered: TE 2.8's FA3 head/group and FP8 checks (`_is_fa3_supported`, #1907
#: c334fc46b, "[PyTorch] Support FA3 for MLA and with CP") are a policy, not a fix. Its
#: `num_heads % num_gqa_groups != 0` test switches FA3 off for a request TE 2.7 picks it for,
#: but which `DotProductAttention` never makes (its `__init__` asserts
#: `num_attention_heads % self.num_gqa_groups == 0`); its FP8 `head_dim_v > 256` test is the
#: new FA3 MLA support's own filter (TE 2.7 switches FA3 off above head dim 128).

TE_FIXES: tuple[Hazard, ...] = (
    FUSED_CUDNN_9_14_SLIDING_WINDOW_NAN,
    FUSED_CUDNN_9_10_F16,
    FUSED_KV_CACHE_SM89,
    FUSED_KV_CACHE_SM120,
    FUSED_KV_CACHE_SM121,
    FLASH_KV_CACHE_SM120,
    FLASH_KV_CACHE_SM121,
    FUSED_DETERMINISTIC_BLACKWELL,
    FUSED_DETERMINISTIC_SM121,
    FUSED_SM121_OLD_CUDNN,
    FUSED_SM120_DETERMINISTIC,
    FUSED_SM120_OLD_CUDNN,
    FUSED_FP8_SM120,
    FUSED_FP8_SM121,
    FUSED_MLA_BACKWARD_SM120,
    FUSED_MLA_BACKWARD_SM121,
    FUSED_T3HD_SM121,
    FA3_DETERMINISTIC_HEAD_DIM_256,
    FUSED_MLA_BACKWARD_SM90,
    FUSED_FP8_CURRENT_SCALING_OLD_CUDNN,
    FUSED_MAX_LOGIT_OLD_CUDNN,
    FUSED_CUDNN_9_10_0_FP8,
    FUSED_DETERMINISTIC_THD_WORKSPACE_SM90,
    FA4_SM100_HD256_SLIDING_WINDOW,
    FUSED_FP8_TRAINING_SM90_HEAD_DIM,
    FUSED_MXFP8_CUDNN_9_23,
    FA4_SM100_HD512,
    FUSED_CUDA_GRAPH_UNALIGNED_KV_IMA,
)
