"""A multi-platform fork (CUDA and ROCm in one tree, TE 2.2+ dialect): `get_attention_backend` is
a dispatcher of a few lines that returns `get_attention_backend_cuda(...)` or `..._rocm(...)`,
module-level functions that hold the real filters. The CUDA filters admit head dim > 192 on
sm120 (as TE 2.1+ does) with no dropout guard, so TEA002 is reachable through the CUDA branch.
The CUDA branch also writes a module global (a warn-once flag), which the harness must restore
between calls.
"""

import logging
import os
from dataclasses import dataclass

import torch
from packaging.version import Version as PkgVersion

import transformer_engine_torch as tex
from transformer_engine.pytorch.utils import get_device_compute_capability

_deterministic_warning_printed = False


@dataclass(eq=True)
class AttentionParams:
    qkv_dtype: torch.dtype = torch.bfloat16
    head_dim_qk: int = 64
    head_dim_v: int = 64
    attention_dropout: float = 0.0
    deterministic: bool = False
    is_training: bool = True


class FlashAttentionUtils:
    is_installed = False
    version = PkgVersion("0")
    v2_4_1_plus = False

    @staticmethod
    def set_flash_attention_version():
        FlashAttentionUtils.is_installed = True
        FlashAttentionUtils.v2_4_1_plus = FlashAttentionUtils.version >= PkgVersion("2.4.1")


def get_attention_backend(attention_params: AttentionParams = None):
    """Select the backend with the filters of the platform PyTorch was built for."""
    if torch.version.hip is not None:
        return get_attention_backend_rocm(attention_params)
    return get_attention_backend_cuda(attention_params)


def get_attention_backend_cuda(attention_params):
    global _deterministic_warning_printed
    logger = logging.getLogger("DotProductAttention")
    device_compute_capability = get_device_compute_capability()
    head_dim = max(attention_params.head_dim_qk, attention_params.head_dim_v)

    use_flash_attention_2 = int(os.getenv("NVTE_FLASH_ATTN", "1"))
    use_fused_attention = int(os.getenv("NVTE_FUSED_ATTN", "1"))
    use_unfused_attention = int(os.getenv("NVTE_UNFUSED_ATTN", "1"))

    if use_flash_attention_2 and not FlashAttentionUtils.is_installed:
        use_flash_attention_2 = False
    if device_compute_capability < (8, 0):
        logger.debug("Disabling FlashAttention 2 and FusedAttention below sm80")
        use_flash_attention_2 = False
        use_fused_attention = False
    if use_flash_attention_2 and attention_params.qkv_dtype not in (torch.bfloat16, torch.float16):
        use_flash_attention_2 = False
    if use_flash_attention_2 and (
        head_dim > 256
        or (head_dim > 192 and device_compute_capability not in ((8, 0), (9, 0), (12, 0)))
    ):
        logger.debug("Disabling FlashAttention 2 due to unsupported head_dim %s", head_dim)
        use_flash_attention_2 = False

    fused_attention_backend = None
    if use_fused_attention:
        fused_attention_backend = tex.get_fused_attn_backend(
            attention_params.qkv_dtype, attention_params.attention_dropout, head_dim
        )
        if fused_attention_backend == tex.NVTE_Fused_Attn_Backend.NVTE_No_Backend:
            use_fused_attention = False

    if attention_params.deterministic:
        if use_flash_attention_2 and not FlashAttentionUtils.v2_4_1_plus:
            use_flash_attention_2 = False
        if use_fused_attention and device_compute_capability < (9, 0):
            use_fused_attention = False
        if not _deterministic_warning_printed:
            logger.warning("Deterministic attention requested")
            _deterministic_warning_printed = True

    available_backends = [use_flash_attention_2, use_fused_attention, use_unfused_attention]
    if use_flash_attention_2:
        use_fused_attention = use_unfused_attention = False
    elif use_fused_attention:
        use_unfused_attention = False
    use_flash_attention = use_flash_attention_2
    flash_attention_backend = FlashAttentionUtils.version if use_flash_attention else None
    return (
        use_flash_attention,
        flash_attention_backend,
        use_fused_attention,
        fused_attention_backend,
        use_unfused_attention,
        available_backends,
    )


def get_attention_backend_rocm(attention_params):
    """ROCm: the CK flash-attention port; no cuDNN, so no fused backend."""
    use_flash_attention = FlashAttentionUtils.is_installed and attention_params.head_dim_qk <= 128
    use_unfused_attention = not use_flash_attention
    return (
        use_flash_attention,
        FlashAttentionUtils.version if use_flash_attention else None,
        False,
        None,
        use_unfused_attention,
        [use_flash_attention, False, True],
    )
