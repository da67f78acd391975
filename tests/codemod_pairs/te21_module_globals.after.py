"""TE 1.10 - 2.1 dialect: one `use_flash_attention` flag, module-global installed flags."""

import logging
import os
from dataclasses import dataclass, fields
import dataclasses

import torch

_flash_attn_is_installed = False
_flash_attn_2_4_1_plus = False


@dataclass(eq=True)
class AttentionParams:
    """What `get_attention_backend` is asked about."""

    head_dim_qk: int = 64
    head_dim_v: int = 64
    attention_dropout: float = 0.0
    deterministic: bool = False
    is_training: bool = True
    # Whether a backward will run: autograd's state when the params are built; a field,
    # so the backend cache never reuses a forward-only selection for it.
    requires_backward: bool = dataclasses.field(default_factory=torch.is_grad_enabled)


def get_device_compute_capability():
    return (9, 0)


def get_attention_backend(attention_params=None):
    head_dim_qk = attention_params.head_dim_qk
    head_dim_v = attention_params.head_dim_v
    attention_dropout = attention_params.attention_dropout
    deterministic = attention_params.deterministic
    is_training = attention_params.is_training
    requires_backward = attention_params.requires_backward
    logger = logging.getLogger("DotProductAttention")
    device_compute_capability = get_device_compute_capability()

    # Filter: Environment variables
    use_flash_attention = int(os.getenv("NVTE_FLASH_ATTN", "1"))
    use_fused_attention = int(os.getenv("NVTE_FUSED_ATTN", "1"))
    use_unfused_attention = int(os.getenv("NVTE_UNFUSED_ATTN", "1"))

    # Filter: Head dimension
    if use_flash_attention and head_dim_qk != head_dim_v:
        if _flash_attn_is_installed:
            logger.debug("Disabling FlashAttention as it does not support MLA.")
        use_flash_attention = False
    if use_flash_attention and (
        head_dim_qk > 256
        or head_dim_qk % 8 != 0
        or (
            head_dim_qk > 192
            and device_compute_capability not in ((8, 0), (9, 0), (10, 0), (12, 0))
        )
    ):
        if _flash_attn_is_installed:
            logger.debug("Disabling FlashAttention due to unsupported head_dim_qk and head_dim_v.")
        use_flash_attention = False
    if (
        use_flash_attention
        and max(head_dim_qk, head_dim_v) > 192
        and attention_dropout > 0.0
        and is_training
        and requires_backward
        and device_compute_capability in ((8, 6), (8, 9), (12, 0), (12, 1))
    ):
        if _flash_attn_is_installed:
            logger.debug(
                "Disabling FlashAttention 2 for head_dim > 192 with dropout on GPUs with 99 KB of"
                " shared memory per block: its backward launches no kernel and leaves dq/dk/dv"
                " unwritten."
            )
        use_flash_attention = False

    # Filter: Determinism
    if use_flash_attention and deterministic and not _flash_attn_2_4_1_plus:
        logger.warning("Disabling FlashAttention as version <2.4.1 does not support determinism")
        use_flash_attention = False
    if use_fused_attention and deterministic and is_training:
        use_fused_attention = False

    # All available backends
    return use_flash_attention, use_fused_attention, use_unfused_attention
