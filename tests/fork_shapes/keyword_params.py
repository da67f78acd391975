"""The keyword-parameter dialect: TE's main branch of mid-2024, before 1.9 (and forks of that
history). There is no `AttentionParams`: `get_attention_backend` declares each input as a keyword
parameter with a default and `DotProductAttention.forward` calls it with keyword arguments; the
result puts `fused_attention_backend` last. The flash-attn version is read at import. The FA2
head-dim filter admits head dim > 192 only on sm80 / sm90, which already excludes every 99 KB
GPU: TEA002 is not reachable (the harness runs FusedAttention or the unfused reference there).
"""

import logging
import os
from importlib.metadata import version as get_pkg_version
from typing import Any, Dict, List, Optional, Tuple, Union

import torch
from packaging.version import Version as PkgVersion

import transformer_engine_torch as tex
from transformer_engine.pytorch.float8_tensor import Float8Tensor
from transformer_engine.pytorch.utils import get_device_compute_capability

_flash_attn_version = PkgVersion(get_pkg_version("flash-attn"))
_flash_attn_2_4_1_plus = _flash_attn_version >= PkgVersion("2.4.1")


def get_attention_backend(
    qkv_type: Union[torch.Tensor, Float8Tensor] = torch.Tensor,
    qkv_dtype: torch.dtype = torch.bfloat16,
    qkv_layout: str = "sbh3d",
    batch_size: int = 1,
    num_heads: int = 16,
    num_gqa_groups: int = 16,
    max_seqlen_q: int = 128,
    max_seqlen_kv: int = 128,
    head_dim: int = 64,
    attn_mask_type: str = "no_mask",
    window_size: Tuple[int, int] = (-1, -1),
    alibi_slopes_shape: Optional[Union[torch.Size, List]] = None,
    core_attention_bias_type: str = "no_bias",
    core_attention_bias_shape: str = "1hss",
    core_attention_bias_requires_grad: bool = True,
    pad_between_seqs: bool = False,
    attention_dropout: float = 0.0,
    context_parallel: bool = False,
    deterministic: bool = False,
    fp8: bool = False,
    fp8_meta: Optional[Dict[str, Any]] = None,
):
    """Select an attention backend from the inputs of one `DotProductAttention` call."""
    logger = logging.getLogger("DotProductAttention")
    use_flash_attention = int(os.getenv("NVTE_FLASH_ATTN", "1"))
    use_fused_attention = int(os.getenv("NVTE_FUSED_ATTN", "1"))
    use_unfused_attention = int(os.getenv("NVTE_UNFUSED_ATTN", "1"))

    # Filter: Compute capability
    device_compute_capability = get_device_compute_capability()
    if device_compute_capability < (8, 0):
        use_flash_attention = use_fused_attention = False

    # Filter: Data type and execution type
    if use_flash_attention and (qkv_dtype not in [torch.bfloat16, torch.float16] or fp8):
        use_flash_attention = False
    if fp8 and fp8_meta["recipe"].fp8_dpa:
        use_unfused_attention = False

    # Filter: Head dimension
    if use_flash_attention and (
        head_dim > 256
        or head_dim % 8 != 0
        or (head_dim > 192 and device_compute_capability not in ((8, 0), (9, 0)))
    ):
        logger.debug("Disabling FlashAttention due to unsupported head_dim %s", head_dim)
        use_flash_attention = False

    # Filter: Attention bias (DotProductAttention passes no shape when there is no bias)
    if use_flash_attention and core_attention_bias_shape is not None:
        use_flash_attention = False

    # Filter: cuDNN support
    fused_attention_backend = None
    if use_fused_attention:
        fused_attention_backend = tex.get_fused_attn_backend(
            qkv_dtype, qkv_layout, attn_mask_type, attention_dropout, num_heads, head_dim
        )
        if fused_attention_backend == tex.NVTE_Fused_Attn_Backend.NVTE_No_Backend:
            use_fused_attention = False

    # Filter: Determinism
    if use_flash_attention and deterministic and not _flash_attn_2_4_1_plus:
        use_flash_attention = False
    if use_fused_attention and deterministic and device_compute_capability < (9, 0):
        use_fused_attention = False

    available_backends = [use_flash_attention, use_fused_attention, use_unfused_attention]
    if use_flash_attention:
        use_fused_attention = use_unfused_attention = False
    elif use_fused_attention:
        use_unfused_attention = False
    return (
        use_flash_attention,
        use_fused_attention,
        use_unfused_attention,
        available_backends,
        fused_attention_backend,
    )
