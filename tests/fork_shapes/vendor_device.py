"""A vendor port for another GPU (TE 1.9 - 2.1 dialect): the selector asks the vendor's PyTorch
device module (`torch.musa`, added by the vendor's plugin) for the current device and its
capability instead of TE's CUDA helper. The virtual device is a CUDA GPU and models no vendor
module, so `verify` cannot run it: exit 2, one line naming the file, the line and `torch.musa`.
"""

import os
from dataclasses import dataclass
from importlib.metadata import version as get_pkg_version

import torch

_flash_attn_version = get_pkg_version("flash-attn")


@dataclass
class AttentionParams:
    head_dim_qk: int = 64
    attention_dropout: float = 0.0
    deterministic: bool = False


def get_attention_backend(attention_params=None):
    use_flash_attention = int(os.getenv("NVTE_FLASH_ATTN", "1"))
    device = torch.musa.current_device()
    if use_flash_attention and torch.musa.get_device_capability(device) < (2, 2):
        use_flash_attention = False  # MUSA's flash attention needs arch 2.2
    if use_flash_attention and attention_params.head_dim_qk > 128:
        use_flash_attention = False
    if use_flash_attention and attention_params.deterministic:
        use_flash_attention = False
    if use_flash_attention and attention_params.attention_dropout > 0.5:
        use_flash_attention = False
    use_unfused_attention = not use_flash_attention
    return (
        use_flash_attention,
        False,
        None,
        use_unfused_attention,
        [use_flash_attention, False, True],
    )
