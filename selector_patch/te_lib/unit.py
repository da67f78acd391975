"""The trampoline of a release's compiled query: its declaration and enums, from its own headers.

A release's wheel ships `libtransformer_engine.so` and its public headers
(`common/include/transformer_engine/{transformer_engine,fused_attn}.h`), the same files at the
same place as a checkout's. The Python side calls the pybind wrapper, which passes its arguments
straight to `nvte_get_fused_attn_backend`, casting `DType` to `NVTEDType` (so in every release
from 2.4 to 2.18 whose wrapper is public); the wheel holds no wrapper, so the trampoline calls
the exported function with the wrapper's conversion (`translation_unit.WRAPPED`). Its
parameters, the enums and their values are the headers', read as the source path reads them
(`te_cxx.translation_unit`); the trampoline and the enum table are that path's, around
`library_prelude.h` instead of the source path's machine. Nothing of TE's is compiled here: the
unit declares the function and the loader binds it to the library.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from selector_patch.te_cxx.errors import CxxError
from selector_patch.te_cxx.syntax import PARSER, Definition, index, text, walk
from selector_patch.te_cxx.translation_unit import (
    ENTRIES,
    PUBLIC_HEADERS,
    TranslationUnit,
    enum_table,
    header,
    in_namespaces,
    parameters_of,
    trampoline,
)

ENTRY = ENTRIES[-1]
#: The header declaring it.
DECLARING = PUBLIC_HEADERS[-1]
PROLOGUE = "const te_attn_guards::Call call(machine);"
#: What TE 2.20+'s query is called through, the query last.
V2_FUNCTIONS = (
    "nvte_create_fused_attn_config",
    "nvte_destroy_fused_attn_config",
    "nvte_get_fused_attn_config_attribute",
    "nvte_set_fused_attn_config_attribute",
    "nvte_get_fused_attn_backend_v2",
)


def declaration(root: Path, name: str = ENTRY) -> Definition:
    """The header's declaration of the function `name`."""
    path = root / DECLARING
    if not path.is_file():
        raise CxxError(root, f"holds no {DECLARING}")
    tree = PARSER.parse(path.read_bytes())
    for node in walk(tree.root_node):
        if node.type != "declaration":
            continue
        function = next((n for n in walk(node) if n.type == "function_declarator"), None)
        if function is not None and text(function.child_by_field_name("declarator")) == name:
            return Definition("function", name, (), node, DECLARING)
    raise CxxError(path, f"declares no {name}")


def build(root: Path) -> TranslationUnit:
    """The trampoline unit for the headers under `root` (the directory holding
    `transformer_engine/`)."""
    found = index(root, PUBLIC_HEADERS)
    entry = declaration(root)
    parameters = parameters_of(entry, found, root)
    enums = list(found.enums())
    return _unit(root, enums, [entry], trampoline(ENTRY, parameters, PROLOGUE), parameters)


def build_v2(root: Path) -> TranslationUnit:
    """The unit for TE 2.20+'s `nvte_get_fused_attn_backend_v2` (`query_v2.h`), which takes
    one configuration built attribute by attribute; it has no parameter list of its own."""
    enums = list(index(root, PUBLIC_HEADERS).enums())
    functions = [declaration(root, name) for name in V2_FUNCTIONS]
    handle = "typedef void *NVTEFusedAttnConfig;"  # the header's, beside its CUDA includes
    return _unit(root, enums, functions, _own("query_v2.h"), (), handle)


def _own(name: str) -> str:
    return resources.files("selector_patch.te_lib").joinpath(name).read_text()


def _unit(root: Path, enums, functions, call: str, parameters, preamble="") -> TranslationUnit:
    parts = [
        f"// The compiled query of {root}, as te-attn-guards calls it.",
        header("machine.h"),
        "#include <cstring>",
        _own("library_prelude.h"),
        preamble,
        *map(in_namespaces, enums),
        *(f'extern "C" {text(function.node)}' for function in functions),
        call,
        enum_table(enums),
    ]
    return TranslationUnit(
        "\n\n".join(parts) + "\n",
        root / DECLARING,
        functions[-1].name,
        parameters,
        tuple(d.qualified for d in enums),
    )
