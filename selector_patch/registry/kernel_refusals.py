"""Hazards whose evidence is a kernel's own refusal: flash-attn asserts, raises or launches
nothing for inputs TE admits (found by the kernel miners, `lint_plugin.mine`).
"""

from __future__ import annotations

from selector_patch.registry.model import Control, Evidence, Hazard, Spelling
from selector_patch.scenario import Condition


#: Where flash-attn-4 refuses on SM 12.x: its CuTe interface, branch `arch // 10 == 12`.
FA4_INTERFACE = "flash_attn/cute/interface.py"
#: Every architecture of the SM 12.x family that flash-attn-4 runs its SM 12.0 kernels on.
SM12X = ((12, 0), (12, 1))
#: Every architecture of the SM 8.x family (A100; RTX 30xx; Jetson Orin; RTX 40xx / L4 / L40):
#: flash-attn-4 tests the family, `arch // 10`.
SM8X = ((8, 0), (8, 6), (8, 7), (8, 9))

#: A backward refusal's witness shapes: training, and eval with a backward (autograd records the
#: call of a module in eval()).
WITH_BACKWARD = ({}, {"training": False})
#: A backward refusal's controls: the calls autograd does not record, in eval and in training.
FORWARD_ONLY = (
    Control("forward-only eval", {"training": False, "backward": False}),
    Control("forward only", {"backward": False}),
)

FA4_SM12X_DETERMINISTIC_BACKWARD = Hazard(
    id="TEA001",
    backend="FA4",
    title="FlashAttention 4 chosen for deterministic backward on SM 12.x",
    architectures=SM12X,
    triggers=(
        Condition("deterministic", "==", True),
        Condition("backward", "==", True),
    ),
    message=(
        "Disabling FlashAttention 4 for deterministic backward on sm120: the CuTe SM 12.0 "
        "backward kernel does not support deterministic execution."
    ),
    section="determinism",
    evidence=Evidence(
        package="flash-attn-4",
        file=FA4_INTERFACE,
        line=2352,
        text='assert deterministic is False, "deterministic backward not supported on SM 12.0"',
        affected=">=4.0.0b5",
        reference=(
            "backward (`_flash_attn_bwd`), branch `arch // 10 == 12`: the same assert in every"
            " release with an SM 12.x path, 4.0.0b5 (line 1028) through 4.0.0b36; 4.0.0b4 and"
            " older refuse SM 12.x altogether. DotProductAttention passes `deterministic` to FA4"
            " whenever it has no inference params, so a backward of a module in eval() asserts"
            " too"
        ),
    ),
    kernel_version="4.0.0b24",
    older_kernel_versions=("4.0.0b36",),
    witness_shapes=WITH_BACKWARD,
    controls=(
        *FORWARD_ONLY,
        Control("nondeterministic", {"deterministic": False}),
        Control("sm90", {"compute_capability": (9, 0)}),
        Control("sm100", {"compute_capability": (10, 0)}),
    ),
    te_releases="2.15.0 onward",
)

FA4_SM12X_SPLIT_KV_FORWARD = Hazard(
    id="TEA003",
    backend="FA4",
    title="FlashAttention 4 chosen for split-KV (num_splits > 1) on SM 12.x",
    architectures=SM12X,
    triggers=(Condition("num_splits", ">", 1),),
    message=(
        "Disabling FlashAttention 4 for num_splits > 1 on sm120: the CuTe SM 12.0 forward"
        " kernel does not support split-KV."
    ),
    section="num_splits",
    evidence=Evidence(
        package="flash-attn-4",
        file=FA4_INTERFACE,
        line=417,
        text='assert num_splits <= 1, "SM120 forward only supports num_splits=1"',
        affected=">=4.0.0b5",
        reference=(
            "forward, branch `arch // 10 == 12` (in `_flash_attn_fwd` before 4.0.0b22, where"
            " `is_split_kv = num_splits > 1`): a forward refusal, so eval and inference assert"
            " too. TE passes `num_splits` to FA4 and its own FA4 split-KV filter only excludes"
            " SM < 10.0"
        ),
        spellings=(
            Spelling(
                ">=4.0.0b22,<4.0.0b36",
                'assert num_splits == 1, "SM120 forward only supports num_splits=1"',
                417,
            ),
            Spelling(
                ">=4.0.0b5,<4.0.0b22",
                'assert not is_split_kv, "SplitKV not supported on SM 12.0 in this PR"',
                944,
            ),
        ),
    ),
    kernel_version="4.0.0b24",
    older_kernel_versions=("4.0.0b36",),
    witness_shapes=({}, {"training": False, "backward": False}),
    controls=(
        Control("num_splits 1", {"num_splits": 1}),
        Control("sm100", {"compute_capability": (10, 0)}),
        Control("sm90", {"compute_capability": (9, 0)}),
    ),
    te_releases="2.15.0 onward",
)

FA4_SM12X_SPLIT_HEURISTIC_FORWARD = Hazard(
    id="TEA004",
    backend="FA4",
    title="FlashAttention 4 < 4.0.0b36 chosen for its split heuristic (num_splits < 1) on SM 12.x",
    architectures=SM12X,
    triggers=(Condition("num_splits", "<", 1),),
    message=(
        "Disabling FlashAttention 4 < 4.0.0b36 for num_splits < 1 on sm120: its CuTe SM 12.0"
        " forward kernel only supports num_splits=1."
    ),
    section="num_splits",
    evidence=Evidence(
        package="flash-attn-4",
        file=FA4_INTERFACE,
        line=417,
        text='assert num_splits == 1, "SM120 forward only supports num_splits=1"',
        affected=">=4.0.0b5,<4.0.0b36",
        reference=(
            "forward, branch `arch // 10 == 12`. num_splits < 1 asks FA4's split heuristic:"
            " before 4.0.0b22 the SM 12.0 forward refuses whenever the heuristic splits, then"
            " refuses it outright; 4.0.0b36 accepts it on SM 12.x (`assert num_splits <= 1`, then"
            " `num_splits = 1`), so the guard keeps FA4 from 4.0.0b36 on"
        ),
        spellings=(
            Spelling(
                ">=4.0.0b5,<4.0.0b22",
                'assert not is_split_kv, "SplitKV not supported on SM 12.0 in this PR"',
                944,
            ),
        ),
    ),
    kernel_version="4.0.0b24",
    witness_shapes=({}, {"training": False, "backward": False}),
    controls=(
        Control("num_splits 1", {"num_splits": 1}),
        Control("FA4 4.0.0b36", {"flash_attn_4": "4.0.0b36"}),
        Control("sm100", {"compute_capability": (10, 0)}),
    ),
    te_releases="2.15.0 onward",
)

FA4_SM8X_BACKWARD = Hazard(
    id="TEA005",
    backend="FA4",
    title="FlashAttention 4 chosen for a backward on SM 8.x",
    architectures=SM8X,
    triggers=(Condition("backward", "==", True),),
    message=(
        "Disabling FlashAttention 4 for backward on sm8x: its CuTe backward supports SM 9.x,"
        " 10.x, 11.x and 12.x only."
    ),
    section="compute_capability",
    evidence=Evidence(
        package="flash-attn-4",
        file=FA4_INTERFACE,
        line=2288,
        text=(
            'assert arch // 10 in [9, 10, 11, 12], "Unsupported compute capability. Supported:'
            ' 9.x, 10.x, 11.x, 12.x"'
        ),
        affected=">=4.0.0b5",
        reference=(
            "backward (`_flash_attn_bwd`), its first check: the same assert in every release"
            " from 4.0.0b5 (line 996; 4.0.0b24: line 1353) through 4.0.0b36, while the forward"
            " (`_flash_attn_fwd`) accepts 8.x (`assert arch // 10 in [8, 9, 10, 11, 12]`), so a"
            " forward-only call runs; 4.0.0b3 and 4.0.0b4 refuse SM 8.x in the forward too. TE"
            " 2.15 - 2.18 switch FA4 off below sm80 only, TE 2.19 below sm90 (its comment: FA4"
            " does not currently support SM8x)"
        ),
    ),
    kernel_version="4.0.0b24",
    older_kernel_versions=("4.0.0b36",),
    witness_shapes=WITH_BACKWARD,
    controls=(
        *FORWARD_ONLY,
        Control("sm90", {"compute_capability": (9, 0)}),
        Control("sm100", {"compute_capability": (10, 0)}),
    ),
    te_releases="2.15.0 onward (2.19.0 and newer switch FA4 off below sm90 themselves)",
)

#: Where flash-attn-4 runs its dedicated head-dim-256 SM 10.x kernels: `arch // 10 in [10, 11]`
#: (4.0.0b15 on; 4.0.0b11 - 4.0.0b14 test `arch // 10 == 10`).
SM10X_SM11X = ((10, 0), (10, 3), (11, 0))
#: The head dims of flash-attn-4's dedicated kernels, with per-sequence lengths: TE passes
#: `seqused_q` / `seqused_k` to FA4 whenever there is padding between sequences.
HD256_PADDED_BETWEEN_SEQS = (
    Condition("head_dim_qk", "==", 256),
    Condition("head_dim_v", "==", 256),
    Condition("pad_between_seqs", "==", True),
)
#: Packed sequences (THD) with padding between them: where TE reads `pad_between_seqs`.
PACKED_WITH_PADDING = {"qkv_layout": "thd_thd_thd", "attn_mask_type": "padding_causal"}
#: The controls both head-dim-256 seqused hazards share: each trigger and the architecture.
HD256_SEQUSED_CONTROLS = (
    Control("no padding between sequences", {"pad_between_seqs": False}),
    Control("head dim 128", {"head_dim_qk": 128, "head_dim_v": 128}),
    Control("sm90", {"compute_capability": (9, 0)}),
    Control("sm120", {"compute_capability": (12, 0)}),
)
#: Why TE 2.19 and newer reach these refusals and 2.15 - 2.18 do not.
HD256_SEQUSED_TE = (
    " TE 2.19 and newer pass `seqused_q` / `seqused_k` to FA4's `flash_attn_varlen_func`"
    " whenever `pad_between_seqs` (2.20.2: backends.py:1251); 2.15 - 2.18 pass none and switch"
    " FA4 off for THD with padding between sequences"
)


def _hd256_seqused_evidence(direction: str, function: str, lines, fixed_in: str) -> Evidence:
    """The seqused assert of the dedicated head-dim-256 `direction`, from 4.0.0b11 until
    `fixed_in`; `lines`: in 4.0.0b11, in 4.0.0b24 (the seed's) and in the last affected."""
    first, seed, last = lines
    last_affected = f"4.0.0b{int(fixed_in.rpartition('b')[2]) - 1}"
    return Evidence(
        package="flash-attn-4",
        file=FA4_INTERFACE,
        line=last,
        text=(
            "assert seqused_q is None and seqused_k is None, "
            f'"SM100 {direction} with head_dim=256 does not support seqused_q/seqused_k"'
        ),
        affected=f">=4.0.0b11,<{fixed_in}",
        reference=(
            f"{direction} (`{function}`), branch `use_dedicated_hd256_kernel`: from 4.0.0b11"
            f" (line {first}; 4.0.0b24: line {seed}) through {last_affected}; {fixed_in}"
            f" supports seqused in its head-dim-256 {direction}." + HD256_SEQUSED_TE
        ),
    )


FA4_SM100_HD256_SEQUSED_FORWARD = Hazard(
    id="TEA006",
    backend="FA4",
    title=(
        "FlashAttention 4 < 4.0.0b31 chosen for head dim 256 with padding between sequences on"
        " SM 10.x / 11.0"
    ),
    architectures=SM10X_SM11X,
    triggers=HD256_PADDED_BETWEEN_SEQS,
    message=(
        "Disabling FlashAttention 4 < 4.0.0b31 for head_dim 256 with padding between sequences on"
        " sm100/sm103/sm110: its dedicated head-dim-256 forward does not support"
        " seqused_q/seqused_k."
    ),
    section="compute_capability",
    evidence=_hd256_seqused_evidence("forward", "_flash_attn_fwd", (858, 907, 1318), "4.0.0b31"),
    kernel_version="4.0.0b24",
    witness_shapes=({**PACKED_WITH_PADDING, "backward": False},),
    controls=(
        *HD256_SEQUSED_CONTROLS,
        Control("FA4 4.0.0b31", {"flash_attn_4": "4.0.0b31"}),
    ),
    te_releases="2.19.0 onward (2.15.0 - 2.18.0 pass no seqused to FA4)",
)

FA4_SM100_HD256_SEQUSED_BACKWARD = Hazard(
    id="TEA007",
    backend="FA4",
    title=(
        "FlashAttention 4 < 4.0.0b33 chosen for a head-dim-256 backward with padding between"
        " sequences on SM 10.x / 11.0"
    ),
    architectures=SM10X_SM11X,
    triggers=(*HD256_PADDED_BETWEEN_SEQS, Condition("backward", "==", True)),
    message=(
        "Disabling FlashAttention 4 < 4.0.0b33 for backward with head_dim 256 and padding"
        " between sequences on sm100/sm103/sm110: its dedicated head-dim-256 backward does not"
        " support seqused_q/seqused_k."
    ),
    section="compute_capability",
    evidence=_hd256_seqused_evidence("backward", "_flash_attn_bwd", (1711, 1907, 2577), "4.0.0b33"),
    #: The last release whose backward alone refuses: its forward-only control runs FA4 (with
    #: 4.0.0b24, TEA006 would refuse it).
    kernel_version="4.0.0b32",
    older_kernel_versions=("4.0.0b24",),
    witness_shapes=tuple({**PACKED_WITH_PADDING, **shape} for shape in WITH_BACKWARD),
    controls=(
        *HD256_SEQUSED_CONTROLS,
        *FORWARD_ONLY,
        Control("FA4 4.0.0b33", {"flash_attn_4": "4.0.0b33"}),
    ),
    te_releases="2.19.0 onward (2.15.0 - 2.18.0 pass no seqused to FA4)",
)

FA2_99KB_HEAD_DIM_DROPOUT_BACKWARD = Hazard(
    id="TEA002",
    backend="FA2",
    title="FlashAttention 2 chosen for head dim > 192 with dropout on 99 KB shared-memory GPUs",
    architectures=((8, 6), (8, 9), (12, 0), (12, 1)),
    triggers=(
        Condition("padded_head_dim", ">", 192),
        Condition("attention_dropout", ">", 0.0),
        Condition("training", "==", True),
        Condition("backward", "==", True),
    ),
    message=(
        "Disabling FlashAttention 2 for head_dim > 192 with dropout on GPUs with 99 KB of shared"
        " memory per block: its backward launches no kernel and leaves dq/dk/dv unwritten."
    ),
    section="head_dim",
    evidence=Evidence(
        package="flash-attn",
        file="csrc/flash_attn/src/flash_bwd_launch_template.h",
        line=None,
        text="run_mha_bwd_hdim256: `} else { // sm86 and sm89, max smem is 99 KB. Only works"
        " without dropout.` launches a kernel only `if constexpr(!Is_dropout)`",
        affected=">=2.7.3",
        reference="check removed in flash-attn 2.7.3 (bbb21d6, PR #1427); flash-attn #3053",
    ),
    kernel_version="2.8.3",
    older_kernel_versions=("2.7.4.post1",),
    witness_shapes=(
        {"head_dim_qk": 256, "head_dim_v": 256},
        {"head_dim_qk": 224, "head_dim_v": 224},
        {"head_dim_qk": 192, "head_dim_v": 256},
    ),
    controls=(
        Control("no dropout", {"attention_dropout": 0.0}),
        *FORWARD_ONLY,
        Control("head dim 192", {"head_dim_qk": 192, "head_dim_v": 192}),
        Control("sm100", {"compute_capability": (10, 0)}),
        Control("sm90", {"compute_capability": (9, 0)}),
        Control("sm80", {"compute_capability": (8, 0)}),
    ),
    te_releases="1.9 onward (FA2 head dim > 192 on sm120 admitted from 2.1)",
)
