"""TE's own C++ for the fused-attention query, compiled and called on a CPU-only machine.

`tex.get_fused_attn_backend` is not Python: it is `nvte_get_fused_attn_backend` in TE's
`common/fused_attn/fused_attn.cpp`, reached through the pybind wrapper in
`pytorch/csrc/extensions/attention.cpp`, a pure decision over the Python side's arguments, the
compute capability and `cudnnGetVersion()`. PyPI's wheels do not ship it. `locate` finds it
for a source (in a checkout; else in a directory of per-release trees); `load` builds one
translation unit of the query and what it reaches (`translation_unit`), compiles it
(`compiler`, cached by source hash) and binds it (`query`). Nothing here imports TE, torch or
the harness; tree-sitter parses the C++ and the C++ compiler from PATH compiles it, both
imported only when a query is loaded (`locate` is on the command lines' path).
"""

from selector_patch.te_cxx.errors import CxxError
from selector_patch.te_cxx.locate import (
    OPTION_HELP,
    TE_CXX_VARIABLE,
    configured_trees,
    locate,
    name_trees,
)

__all__ = [
    "CxxError",
    "OPTION_HELP",
    "TE_CXX_VARIABLE",
    "configured_trees",
    "locate",
    "name_trees",
]
