"""Seed 000 on an SM 12.0 GPU with the runtime patch: deterministic training must not use FA4.

Needs one SM 12.0 GPU (e.g. an RTX 5090) with PyTorch, Transformer Engine and flash-attn-4
installed. Without the patch, TE selects FlashAttention 4 and the first backward fails with
`AssertionError: deterministic backward not supported on SM 12.0`. With it, TE's own selector
falls back (here to UnfusedDotProductAttention, the only other backend left enabled), forward and
backward complete, and the gradients are finite.

    python examples/fa4_sm120_deterministic.py

The same works without the `install()` call below: `python -m selector_patch run SCRIPT`.
"""

import logging
import os

# Set before importing Transformer Engine, as in the report. Keep an unfused fallback available.
for name, value in {
    "NVTE_ALLOW_NONDETERMINISTIC_ALGO": "0",
    "NVTE_FLASH_ATTN": "1",
    "NVTE_FLASH_ATTN_V2": "0",
    "NVTE_FLASH_ATTN_V3": "0",
    "NVTE_FLASH_ATTN_V4": "1",
    "NVTE_FUSED_ATTN": "0",
    "NVTE_UNFUSED_ATTN": "1",
    "NVTE_DEBUG": "1",
    "NVTE_DEBUG_LEVEL": "2",
}.items():
    os.environ.setdefault(name, value)

import torch  # noqa: E402
import transformer_engine  # noqa: E402
import transformer_engine.pytorch as te  # noqa: E402

import selector_patch  # noqa: E402
from selector_patch.registry import get_hazard  # noqa: E402


class RecordingHandler(logging.StreamHandler):
    """Prints TE's selector log as TE would, and keeps the messages for the checks below."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("[%(levelname)-8s | %(name)-19s]: %(message)s"))
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        super().emit(record)


def main() -> None:
    assert torch.cuda.get_device_capability() == (12, 0), "Requires an SM 12.0 GPU"
    print("GPU:", torch.cuda.get_device_name())
    print("TE:", transformer_engine.__version__, transformer_engine.__file__)
    selector_patch.install()
    log = RecordingHandler()
    logging.getLogger("DotProductAttention").addHandler(log)

    torch.manual_seed(0)
    shape = (2, 128, 8, 128)  # batch, sequence, heads, head dimension
    q, k, v = [
        torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        for _ in range(3)
    ]
    dpa = (
        te.DotProductAttention(
            num_attention_heads=shape[2],
            kv_channels=shape[3],
            qkv_format="bshd",
            attn_mask_type="causal",
            attention_dropout=0.0,
        )
        .cuda()
        .train()
    )
    out = dpa(q, k, v)
    out.float().square().mean().backward()
    torch.cuda.synchronize()

    assert torch.isfinite(out).all()
    assert all(x.grad is not None and torch.isfinite(x.grad).all() for x in (q, k, v))
    assert get_hazard("TEA001").message in log.messages, "the guard did not fire"
    assert not any(m.startswith("Selected backend = FlashAttention") for m in log.messages)
    print("Forward and backward completed without FlashAttention 4; gradients are finite.")


if __name__ == "__main__":
    main()
