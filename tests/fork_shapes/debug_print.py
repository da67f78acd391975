"""A dev branch with debug prints (TE 1.9 - 2.1 dialect: the flash-attn version is read at import,
the selector returns five items). It prints when imported and on every call, naming the GPU
through `torch.cuda`; `verify --json` must still print nothing but its JSON. Its FA2 head-dim
allowlist admits sm120 for head dim > 192 (TE 2.1's) without a dropout guard: TEA002 is
reachable.
"""

import logging
import os
from dataclasses import dataclass
from importlib.metadata import version as get_pkg_version

import torch
from packaging.version import Version as PkgVersion

from transformer_engine.pytorch.utils import get_device_compute_capability

_flash_attn_version = PkgVersion(get_pkg_version("flash-attn"))
_flash_attn_2_4_1_plus = _flash_attn_version >= PkgVersion("2.4.1")
print(f"[debug] attention.py imported, flash-attn {_flash_attn_version}")


@dataclass
class AttentionParams:
    head_dim_qk: int = 64
    head_dim_v: int = 64
    deterministic: bool = False


def get_attention_backend(attention_params=None):
    logger = logging.getLogger("DotProductAttention")
    device_compute_capability = get_device_compute_capability()
    properties = torch.cuda.get_device_properties(torch.cuda.current_device())
    print(
        "[debug] get_attention_backend on",
        torch.cuda.get_device_name(),
        f"(sm{properties.major}{properties.minor}):",
        attention_params,
    )
    use_flash_attention = int(os.getenv("NVTE_FLASH_ATTN", "1"))
    use_fused_attention = False
    use_unfused_attention = int(os.getenv("NVTE_UNFUSED_ATTN", "1"))

    if device_compute_capability < (8, 0):
        use_flash_attention = False
    head_dim = max(attention_params.head_dim_qk, attention_params.head_dim_v)
    if use_flash_attention and head_dim > 256:
        use_flash_attention = False
    elif use_flash_attention and head_dim > 192:
        use_flash_attention = device_compute_capability in ((8, 0), (9, 0), (12, 0))
        logger.debug(
            "FlashAttention for head_dim %s on this GPU: %s", head_dim, use_flash_attention
        )
    if use_flash_attention and attention_params.deterministic and not _flash_attn_2_4_1_plus:
        use_flash_attention = False
    print("[debug] use_flash_attention =", bool(use_flash_attention))

    available_backends = [use_flash_attention, use_fused_attention, use_unfused_attention]
    if use_flash_attention:
        use_unfused_attention = False
    return (
        use_flash_attention,
        use_fused_attention,
        None,
        use_unfused_attention,
        available_backends,
    )
