"""A release's own compiled fused-attention query, where its C++ source is not at hand.

The third source of cuDNN's fused answer, after a checkout's C++ and a configured directory of
per-release trees (`selector_patch.te_cxx`): the release's `libtransformer_engine.so`, fetched
from PyPI once (`fetch`), run in a helper process (`helper`, `client`) over stub CUDA and cuDNN
libraries generated from it (`stubs`, `answers`, `machine.cpp`), and called through a
trampoline built from the release's own headers (`unit`). `load` gives it the interface of the
source path's `FusedQuery`, one per release per process; a release without a library raises
`Missing`, and its results keep the stated assumption. TE 2.20+'s query leaves some requests to
cuDNN's own check: verdicts recorded on a GPU (`record`, `verdicts`) answer those where given.
Nothing here imports torch.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from selector_patch.sources import cache_dir
from selector_patch.te_lib.fetch import LIBRARIES_VARIABLE, OFFLINE_VARIABLE, Missing
from selector_patch.te_lib.verdicts import VERDICTS_VARIABLE

__all__ = ["LIBRARIES_VARIABLE", "Missing", "OFFLINE_VARIABLE", "VERDICTS_VARIABLE", "load"]


def load(version: str, configured: bool = False):
    """The compiled query of TE `version` (a `client.LibraryQuery`), started on first use;
    `Missing` when the release has none (asked once per process), a `CxxError` when it cannot
    be run. `configured`: the selector passes one `FusedAttentionParams` (TE 2.20+)."""
    switches = tuple(
        os.environ.get(name) for name in (OFFLINE_VARIABLE, LIBRARIES_VARIABLE, VERDICTS_VARIABLE)
    )
    query, missing = _loaded(version, configured, cache_dir(), switches)
    if missing is not None:
        raise missing
    return query


@functools.lru_cache(maxsize=None)
def _loaded(version: str, configured: bool, cache: Path, switches: tuple):
    """One outcome per release, cache and fetch switches (a cache is a different library)."""
    from selector_patch.te_lib.client import LibraryQuery
    from selector_patch.te_lib.fetch import library

    try:
        root, path = library(version)
    except Missing as missing:
        return None, missing
    return LibraryQuery(root, path, configured, version), None
