"""TE 2.15 - 2.18 dialect: numbered flash flags, FlashAttentionUtils, fa2_padded_head_dim, FA4
switched off below sm80 only (2.19 raised that to sm90)."""

import logging
import os
from dataclasses import dataclass, fields

import torch
from packaging.version import Version as PkgVersion


class FlashAttentionUtils:
    version = PkgVersion("0")
    is_installed = False
    v2_4_1_plus = False
    v4_is_installed = False
    fa4_version = PkgVersion("0")


@dataclass(eq=True)
class AttentionParams:
    """What `get_attention_backend` is asked about."""

    head_dim_qk: int = 64
    head_dim_v: int = 64
    attention_dropout: float = 0.0
    deterministic: bool = False
    is_training: bool = True
    num_splits: int = 1


def get_device_compute_capability():
    return (9, 0)


def get_attention_backend(attention_params=None):
    head_dim_qk = attention_params.head_dim_qk
    head_dim_v = attention_params.head_dim_v
    attention_dropout = attention_params.attention_dropout
    deterministic = attention_params.deterministic
    is_training = attention_params.is_training
    num_splits = attention_params.num_splits
    logger = logging.getLogger("DotProductAttention")
    device_compute_capability = get_device_compute_capability()

    # Filter: Environment variables
    use_flash_attention = int(os.environ.get("NVTE_FLASH_ATTN", "1"))
    use_flash_attention_2 = use_flash_attention and int(os.environ.get("NVTE_FLASH_ATTN_V2", "1"))
    use_flash_attention_4 = use_flash_attention and int(os.environ.get("NVTE_FLASH_ATTN_V4", "1"))
    use_fused_attention = int(os.environ.get("NVTE_FUSED_ATTN", "1"))
    use_unfused_attention = int(os.environ.get("NVTE_UNFUSED_ATTN", "1"))

    # Filter: Compute capability
    if device_compute_capability < (8, 0):
        use_flash_attention_2 = False
        use_fused_attention = False
    if device_compute_capability < (8, 0):
        if use_flash_attention_4 and FlashAttentionUtils.v4_is_installed:
            logger.debug("Disabling FlashAttention 4 for compute capability < sm80")
        use_flash_attention_4 = False

    # Filter: num_splits
    if num_splits != 1:
        if use_flash_attention_2 and FlashAttentionUtils.is_installed:
            logger.debug("Disabling FlashAttention 2 for num_splits")
            use_flash_attention_2 = False
        if use_flash_attention_4 and device_compute_capability < (10, 0):
            if FlashAttentionUtils.v4_is_installed:
                logger.debug("Disabling FlashAttention 4 for num_splits on SM < 100")
            use_flash_attention_4 = False

    # Filter: Head dimension
    fa2_padded_head_dim = max(head_dim_qk, head_dim_v)
    if (
        use_flash_attention_2
        and FlashAttentionUtils.is_installed
        and (
            fa2_padded_head_dim > 256
            or (
                fa2_padded_head_dim > 192
                and device_compute_capability not in ((8, 0), (9, 0), (10, 0), (12, 0))
            )
        )
    ):
        logger.debug("Disabling FlashAttention 2 due to unsupported head_dim")
        use_flash_attention_2 = False

    # Filter: Dropout
    if attention_dropout != 0.0:
        if use_flash_attention_4 and FlashAttentionUtils.v4_is_installed:
            logger.debug("Disabling FlashAttention 4 for dropout")
            use_flash_attention_4 = False

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
    use_flash_attention_4 = use_flash_attention and use_flash_attention_4
    if use_flash_attention_2 and not FlashAttentionUtils.is_installed:
        use_flash_attention_2 = False
    if use_flash_attention_4 and not FlashAttentionUtils.v4_is_installed:
        use_flash_attention_4 = False
    use_flash_attention = use_flash_attention_2 or use_flash_attention_4
    flash_attention_backend = None
    if use_flash_attention_4:
        flash_attention_backend = FlashAttentionUtils.fa4_version
    elif use_flash_attention_2:
        flash_attention_backend = FlashAttentionUtils.version
    return use_flash_attention, flash_attention_backend, use_fused_attention, use_unfused_attention
