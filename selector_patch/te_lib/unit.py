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


def declaration(root: Path) -> Definition:
    """The header's declaration of `nvte_get_fused_attn_backend`."""
    path = root / DECLARING
    if not path.is_file():
        raise CxxError(root, f"holds no {DECLARING}")
    tree = PARSER.parse(path.read_bytes())
    for node in walk(tree.root_node):
        if node.type != "declaration":
            continue
        function = next((n for n in walk(node) if n.type == "function_declarator"), None)
        if function is not None and text(function.child_by_field_name("declarator")) == ENTRY:
            return Definition("function", ENTRY, (), node, DECLARING)
    raise CxxError(path, f"declares no {ENTRY}")


def build(root: Path) -> TranslationUnit:
    """The trampoline unit for the headers under `root` (the directory holding
    `transformer_engine/`)."""
    found = index(root, PUBLIC_HEADERS)
    entry = declaration(root)
    parameters = parameters_of(entry, found, root)
    enums = list(found.enums())
    parts = [
        f"// The compiled query of {root}, as te-attn-guards calls it.",
        header("machine.h"),
        resources.files("selector_patch.te_lib").joinpath("library_prelude.h").read_text(),
        *map(in_namespaces, enums),
        f'extern "C" {text(entry.node)}',
        trampoline(ENTRY, parameters, PROLOGUE),
        enum_table(enums),
    ]
    return TranslationUnit(
        "\n\n".join(parts) + "\n",
        root / DECLARING,
        ENTRY,
        parameters,
        tuple(d.qualified for d in enums),
    )
