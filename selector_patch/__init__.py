"""Hazard registry, virtual-device harness and runtime patch for TE's attention selector.

Nothing here imports Transformer Engine, libcst or flake8 at import time.
"""
