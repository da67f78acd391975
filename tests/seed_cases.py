"""The two seed reports (`shared/seeds/`) as scenarios, shared by the harness and runtime tests.

Seed 000: deterministic training on one RTX 5090 (sm120) with only flash-attn-4 4.0.0b24
installed; FA2, FA3 and fused attention switched off, unfused attention left on; BF16 BSHD,
causal, batch 2, 8 heads, sequence 128, head dim 128.

Seed 001: training with dropout 0.1 on sm120 at padded head dims 256, 224 and MLA 192/256, with
flash-attn 2.8.3 and fused attention switched off, plus the PR's controls.
"""

from __future__ import annotations

from selector_patch.scenario import Scenario

SEED_000 = Scenario(
    compute_capability=(12, 0),
    flash_attn_2=None,
    flash_attn_4="4.0.0b24",
    deterministic=True,
    training=True,
    backward=True,
    env=tuple(
        sorted(
            {
                "NVTE_FLASH_ATTN": "1",
                "NVTE_FLASH_ATTN_V2": "0",
                "NVTE_FLASH_ATTN_V3": "0",
                "NVTE_FLASH_ATTN_V4": "1",
                "NVTE_FUSED_ATTN": "0",
                "NVTE_UNFUSED_ATTN": "1",
            }.items()
        )
    ),
)
#: The same crash with the module in eval(): autograd still records the call (TEA001).
SEED_000_EVAL_WITH_BACKWARD = SEED_000.with_changes({"training": False})
#: Seed 000's executed controls: evaluation under no_grad, nondeterministic training.
SEED_000_CONTROLS = {
    "eval": SEED_000.with_changes({"training": False, "backward": False}),
    "nondeterministic training": SEED_000.with_changes({"deterministic": False}),
}
SEED_000_NO_UNFUSED = SEED_000.with_changes({"env": {"NVTE_UNFUSED_ATTN": "0"}})

_SEED_001_BASE = Scenario(
    compute_capability=(12, 0),
    flash_attn_2="2.8.3",
    flash_attn_4=None,
    training=True,
    backward=True,
    attention_dropout=0.1,
    env=(("NVTE_FUSED_ATTN", "0"),),
)
SEED_001 = {
    "head dim 256": _SEED_001_BASE.with_changes({"head_dim_qk": 256, "head_dim_v": 256}),
    "head dim 224": _SEED_001_BASE.with_changes({"head_dim_qk": 224, "head_dim_v": 224}),
    "MLA 192/256": _SEED_001_BASE.with_changes({"head_dim_qk": 192, "head_dim_v": 256}),
}
_HEAD_DIM_256 = SEED_001["head dim 256"]
#: The PR's controls, where FA2 stays selected.
SEED_001_CONTROLS = {
    "sm120 without dropout": _HEAD_DIM_256.with_changes({"attention_dropout": 0.0}),
    "sm120 eval": _HEAD_DIM_256.with_changes({"training": False, "backward": False}),
    "sm120 forward only": _HEAD_DIM_256.with_changes({"backward": False}),
    "sm120 head dim 192": _HEAD_DIM_256.with_changes({"head_dim_qk": 192, "head_dim_v": 192}),
    "sm100 with dropout": _HEAD_DIM_256.with_changes({"compute_capability": (10, 0)}),
}
