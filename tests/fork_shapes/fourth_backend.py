"""A research fork with a fourth backend (TE 2.2+ dialect): FlexAttention, tried after
FusedAttention and before the unfused reference, lengthens the returned tuple to seven items:
its flag comes after `use_unfused_attention`, and `available_backends` lists four. The fork
keeps TE 1.x's FA2 head-dim allowlist, which admits head dim > 192 only on sm80 / sm90, so
TEA002 is not reachable: its witnesses run FusedAttention, or the unfused reference once
`NVTE_FUSED_ATTN=0` (FlexAttention has no dropout). Without dropout, on sm90+, with FA2 and
FusedAttention switched off, FlexAttention is selected.
"""

import logging
import os
from dataclasses import dataclass

import torch
from packaging.version import Version as PkgVersion

import transformer_engine_torch as tex
from transformer_engine.pytorch.utils import get_device_compute_capability


@dataclass(eq=True)
class AttentionParams:
    qkv_dtype: torch.dtype = torch.bfloat16
    max_seqlen_q: int = 128
    max_seqlen_kv: int = 128
    head_dim_qk: int = 64
    head_dim_v: int = 64
    attention_dropout: float = 0.0
    deterministic: bool = False
    is_training: bool = True


class FlashAttentionUtils:
    is_installed = False
    version = PkgVersion("0")

    @staticmethod
    def set_flash_attention_version():
        FlashAttentionUtils.is_installed = True


def get_attention_backend(attention_params: AttentionParams = None):
    logger = logging.getLogger("DotProductAttention")
    device_compute_capability = get_device_compute_capability()
    head_dim_qk = attention_params.head_dim_qk
    head_dim_v = attention_params.head_dim_v

    use_flash_attention_2 = FlashAttentionUtils.is_installed and int(
        os.getenv("NVTE_FLASH_ATTN", "1")
    )
    use_fused_attention = int(os.getenv("NVTE_FUSED_ATTN", "1"))
    use_flex_attention = int(os.getenv("NVTE_FLEX_ATTN", "1"))
    use_unfused_attention = int(os.getenv("NVTE_UNFUSED_ATTN", "1"))

    # Filter: Compute capability
    if device_compute_capability < (8, 0):
        use_flash_attention_2 = use_fused_attention = False
    if use_flex_attention and device_compute_capability < (9, 0):
        logger.debug("Disabling FlexAttention below sm90")
        use_flex_attention = False

    # Filter: Head dimension
    if use_flash_attention_2 and (
        max(head_dim_qk, head_dim_v) > 256
        or (
            max(head_dim_qk, head_dim_v) > 192 and device_compute_capability not in ((8, 0), (9, 0))
        )
    ):
        logger.debug("Disabling FlashAttention 2 due to unsupported head_dim")
        use_flash_attention_2 = False
    if use_flex_attention and head_dim_qk != head_dim_v:
        use_flex_attention = False

    # Filter: Dropout and determinism
    if use_flex_attention and attention_params.attention_dropout > 0:
        logger.debug("Disabling FlexAttention: it has no dropout")
        use_flex_attention = False
    if attention_params.deterministic and attention_params.is_training:
        use_fused_attention = use_fused_attention and device_compute_capability >= (9, 0)
        use_flex_attention = False

    fused_attention_backend = None
    if use_fused_attention:
        fused_attention_backend = tex.get_fused_attn_backend(
            attention_params.qkv_dtype, attention_params.max_seqlen_q, head_dim_qk
        )
        use_fused_attention = fused_attention_backend != tex.NVTE_Fused_Attn_Backend.NVTE_No_Backend

    available_backends = [
        use_flash_attention_2,
        use_fused_attention,
        use_unfused_attention,
        use_flex_attention,
    ]
    use_flash_attention = use_flash_attention_2
    if use_flash_attention:
        use_fused_attention = use_flex_attention = use_unfused_attention = False
    elif use_fused_attention:
        use_flex_attention = use_unfused_attention = False
    elif use_flex_attention:
        use_unfused_attention = False
    flash_attention_backend = FlashAttentionUtils.version if use_flash_attention else None
    return (
        use_flash_attention,
        flash_attention_backend,
        use_fused_attention,
        fused_attention_backend,
        use_unfused_attention,
        use_flex_attention,
        available_backends,
    )
