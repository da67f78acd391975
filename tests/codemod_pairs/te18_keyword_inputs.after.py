"""TE before 1.9 (and forks of it): keyword inputs instead of `AttentionParams`, no
`is_training`, one FA2 flag; this fork's head-dim allowlist admits sm120 for head dim > 192."""

import logging
import os

import torch

_flash_attn_2_4_1_plus = False


def get_device_compute_capability():
    return (9, 0)


def get_attention_backend(
    qkv_dtype: torch.dtype = torch.bfloat16,
    head_dim: int = 64,
    attention_dropout: float = 0.0,
    deterministic: bool = False,
):
    """Select an attention backend based on the user input and runtime environment."""
    requires_backward = torch.is_grad_enabled()
    logger = logging.getLogger("DotProductAttention")

    # Filter: Environment variables
    use_flash_attention = int(os.getenv("NVTE_FLASH_ATTN", "1"))
    use_fused_attention = int(os.getenv("NVTE_FUSED_ATTN", "1"))
    use_unfused_attention = int(os.getenv("NVTE_UNFUSED_ATTN", "1"))

    # Filter: Compute capability
    device_compute_capability = get_device_compute_capability()
    if device_compute_capability < (8, 0):
        use_flash_attention = False
        use_fused_attention = False

    # Filter: Head dimension
    if use_flash_attention and (
        head_dim > 256
        or head_dim % 8 != 0
        or (head_dim > 192 and device_compute_capability not in ((8, 0), (9, 0), (12, 0)))
    ):
        logger.debug("Disabling FlashAttention due to unsupported head_dim")
        use_flash_attention = False
    if (
        use_flash_attention
        and head_dim > 192
        and attention_dropout > 0.0
        and requires_backward
        and device_compute_capability in ((8, 6), (8, 9), (12, 0), (12, 1))
    ):
        logger.debug(
            "Disabling FlashAttention 2 for head_dim > 192 with dropout on GPUs with 99 KB of"
            " shared memory per block: its backward launches no kernel and leaves dq/dk/dv"
            " unwritten."
        )
        use_flash_attention = False

    # Filter: Dropout
    if attention_dropout != 0.0 and use_fused_attention and head_dim > 128:
        logger.debug("Disabling FusedAttention for dropout with head_dim > 128")
        use_fused_attention = False

    # Filter: Determinism
    if use_flash_attention and deterministic and not _flash_attn_2_4_1_plus:
        logger.debug("Disabling FlashAttention for determinism")
        use_flash_attention = False
    if use_fused_attention and deterministic:
        logger.debug("Disabling FusedAttention for determinism reasons")
        use_fused_attention = False

    return use_flash_attention, use_fused_attention, use_unfused_attention
