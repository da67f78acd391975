"""A fork that already carries the FA2 dropout guard, spelt its own way (TE 2.1 dialect: the
selector returns five items, flash-attn is looked up at import): nested `if`s, the 99 KB GPUs as
a set display (`device_compute_capability in {(8, 6), (8, 9), (12, 0), (12, 1)}`) rather than a
tuple. The head-dim allowlist admits sm120 for head dim > 192 (TE 2.1's), but the guard switches
FA2 off for every TEA002 witness: not reachable, and every control keeps FA2.
"""

import logging
import os
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as get_pkg_version

from packaging.version import Version as PkgVersion

from transformer_engine.pytorch.utils import get_device_compute_capability

try:
    _flash_attn_version = PkgVersion(get_pkg_version("flash-attn"))
except PackageNotFoundError:
    _flash_attn_version = None
_flash_attn_is_installed = _flash_attn_version is not None
_flash_attn_2_4_1_plus = _flash_attn_is_installed and _flash_attn_version >= PkgVersion("2.4.1")


@dataclass(eq=True)
class AttentionParams:
    head_dim_qk: int = 64
    head_dim_v: int = 64
    attention_dropout: float = 0.0
    deterministic: bool = False
    is_training: bool = True


def get_attention_backend(attention_params: AttentionParams = None):
    logger = logging.getLogger("DotProductAttention")
    device_compute_capability = get_device_compute_capability()
    head_dim_qk = attention_params.head_dim_qk
    head_dim_v = attention_params.head_dim_v
    attention_dropout = attention_params.attention_dropout
    is_training = attention_params.is_training

    use_flash_attention = _flash_attn_is_installed and int(os.getenv("NVTE_FLASH_ATTN", "1"))
    use_unfused_attention = True
    if device_compute_capability < (8, 0):
        use_flash_attention = False

    # Filter: Head dimension
    if use_flash_attention and (
        head_dim_qk > 256
        or head_dim_qk % 8 != 0
        or (head_dim_qk > 192 and device_compute_capability not in ((8, 0), (9, 0), (12, 0)))
    ):
        logger.debug("Disabling FlashAttention due to unsupported head_dim")
        use_flash_attention = False
    if use_flash_attention and head_dim_qk != head_dim_v:
        use_flash_attention = False
    if use_flash_attention and head_dim_qk > 192:
        if device_compute_capability in {(8, 6), (8, 9), (12, 0), (12, 1)}:
            if attention_dropout > 0 and is_training:
                logger.debug(
                    "Disabling FlashAttention 2 for head_dim > 192 with dropout on GPUs with"
                    " 99 KB of shared memory per block"
                )
                use_flash_attention = False

    # Filter: Determinism
    if use_flash_attention and attention_params.deterministic and not _flash_attn_2_4_1_plus:
        use_flash_attention = False

    available_backends = [use_flash_attention, False, use_unfused_attention]
    if use_flash_attention:
        use_unfused_attention = False
    return use_flash_attention, False, None, use_unfused_attention, available_backends
