"""Where TE 2.20+'s compiled query asks cuDNN about one graph: `query_support`, in the library.

TE's `nvte_get_fused_attn_backend_v2` asks cuDNN graph by graph, through one function,
`transformer_engine::fused_attn::detail::query_support(Backend, Pass, Graph &, cudnnHandle_t)`:
the frontend's own checks (`Graph::validate`, where cuDNN frontend refuses what it knows a cuDNN
version or GPU cannot run), then the descriptors, the engine heuristics and the support check,
which only a GPU's cuDNN answers. For training it asks the forward's graph, then the backward's.
If the first backend call ended the whole query, the backward graph's frontend checks would
never run (2.20.2: "Deterministic algorithm is not supported on blackwell architecture with
cudnn version below 9.18.0" is the backward's), so the helper has the virtual machine assume
each graph's verdict alone (`machine.cpp`): TE's code goes on after it.

The function is local to the library (its `.symtab`, which PyPI's wheels keep): `readelf` gives
its offset, and that of an exported function the helper can look up, to place it in memory. It
is found by its exact mangled name, the signature the machine's stand-in takes; a library
without it (another signature, a stripped build), or a machine other than x86-64 (the stand-in
jumps there in x86-64 code), keeps the verdict assumed for the whole query.
"""

from __future__ import annotations

import platform
from pathlib import Path

from selector_patch.te_lib.stubs import readelf

#: TE's `query_support(Backend, Pass, cudnn_frontend::graph::Graph &, cudnnContext *)`.
QUERY_SUPPORT = (
    "_ZN18transformer_engine10fused_attn6detail13query_support"
    "ENS0_7BackendENS0_4PassERN14cudnn_frontend5graph5GraphEP12cudnnContext"
)
#: An exported function the helper looks up to learn where the library was loaded.
ANCHOR = "nvte_get_fused_attn_backend_v2"


def locate(library: Path) -> dict | None:
    """`{"anchor": name, "anchor_offset": ..., "offset": ...}` for `query_support` in `library`
    (offsets as the library's symbol table gives them), or None where it has none."""
    if platform.machine() != "x86_64":
        return None
    offsets: dict[str, int] = {}
    for line in readelf(library, "--syms").splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[3] == "FUNC" and fields[7] in (QUERY_SUPPORT, ANCHOR):
            offsets[fields[7]] = int(fields[1], 16)
    if QUERY_SUPPORT not in offsets or ANCHOR not in offsets:
        return None
    return {"anchor": ANCHOR, "anchor_offset": offsets[ANCHOR], "offset": offsets[QUERY_SUPPORT]}
