"""Hazard registry, virtual-device harness and runtime patch for TE's attention selector.

Nothing here imports Transformer Engine, libcst or flake8 at import time.
"""

__all__ = ["install", "uninstall"]


def __getattr__(name: str):
    """`selector_patch.install` / `uninstall`, imported on first use (PEP 562)."""
    if name in __all__:
        from selector_patch import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'selector_patch' has no attribute {name!r}")
