"""TE 2.3 - 2.14 dialect: no FlashAttention 4 path, padded head dim spelt out."""

import logging
import os
from dataclasses import dataclass, fields

import torch


class FlashAttentionUtils:
    is_installed = False
    v2_4_1_plus = False


@dataclass(eq=True)
class AttentionParams:
    """What `get_attention_backend` is asked about."""

    head_dim_qk: int = 64
    head_dim_v: int = 64
    attention_dropout: float = 0.0
    deterministic: bool = False
    is_training: bool = True


def get_device_compute_capability():
    return (9, 0)


def get_attention_backend(attention_params=None):
    head_dim_qk = attention_params.head_dim_qk
    head_dim_v = attention_params.head_dim_v
    attention_dropout = attention_params.attention_dropout
    deterministic = attention_params.deterministic
    is_training = attention_params.is_training
    logger = logging.getLogger("DotProductAttention")
    device_compute_capability = get_device_compute_capability()

    # Filter: Environment variables
    use_flash_attention = int(os.environ.get("NVTE_FLASH_ATTN", "1"))
    use_flash_attention_2 = use_flash_attention and int(os.environ.get("NVTE_FLASH_ATTN_V2", "1"))
    use_fused_attention = int(os.environ.get("NVTE_FUSED_ATTN", "1"))
    use_unfused_attention = int(os.environ.get("NVTE_UNFUSED_ATTN", "1"))

    # Filter: Compute capability
    if device_compute_capability < (8, 0):
        use_flash_attention_2 = False
        use_fused_attention = False

    # Filter: Head dimension
    if (
        use_flash_attention_2
        and FlashAttentionUtils.is_installed
        and (
            max(head_dim_qk, head_dim_v) > 256
            or (
                max(head_dim_qk, head_dim_v) > 192
                and device_compute_capability not in ((8, 0), (9, 0), (10, 0), (12, 0))
            )
        )
    ):
        logger.debug("Disabling FlashAttention 2 due to unsupported head_dim")
        use_flash_attention_2 = False

    # Filter: Determinism
    if use_flash_attention_2 and deterministic:
        if not FlashAttentionUtils.v2_4_1_plus:
            use_flash_attention_2 = False
    if use_fused_attention and deterministic:
        if is_training:
            logger.debug("Disabling FusedAttention for determinism reasons")
            use_fused_attention = False

    # use_flash_attention may have been set above
    use_flash_attention_2 = use_flash_attention and use_flash_attention_2
    use_flash_attention = use_flash_attention_2
    return use_flash_attention, use_fused_attention, use_unfused_attention
