"""One C++ translation unit: TE's fused-attention query, everything it reaches, and nothing else.

TE's `fused_attn.cpp` cannot be compiled on a CPU-only machine as it stands: it includes cuDNN,
the CUDA runtime and the kernels it dispatches to. The query itself needs none of them. So the
unit takes, from the release's own sources, the query's entry point and every definition it
reaches (functions, templates, enums, macros, found by name from `syntax.index`), verbatim and
in source order, each back in its namespaces, after `prelude.h`, which answers what the machine
answers (device, compute capability, cuDNN version) and carries the call's environment and log.
TE's `std::getenv`, `std::cout` and `std::cerr` are redirected to those (`REDIRECTED`); nothing
else of TE's text changes.

The entry point is what the Python side calls: the pybind wrapper
`transformer_engine::pytorch::get_fused_attn_backend` (in `pytorch/csrc/extensions/attention.cpp`,
present from TE 2.4), else `nvte_get_fused_attn_backend` itself (the trees of TE 1.9 - 2.3 hold
no wrapper: it took the same arguments, `transformer_engine::DType` where the query takes
`NVTEDType`, and cast one to the other, whose values are the same; `WRAPPED` says so). `te_attn_guards_query` calls it with the arguments the harness converts as pybind11
would, and `te_attn_guards_enums` lists every enumerator of the public headers with the value
the compiler gives it, so enum members are named on the Python side and valued by TE's headers.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from selector_patch.te_cxx.errors import CxxError
from selector_patch.te_cxx.syntax import Definition, Index, index, text, walk

#: The files the query and its enums live in, relative to the directory holding
#: `transformer_engine/`, in the order TE's own includes read them.
FILES = tuple(
    f"transformer_engine/{relative}"
    for relative in (
        "common/include/transformer_engine/transformer_engine.h",
        "common/include/transformer_engine/fused_attn.h",
        "common/util/logging.h",
        "common/util/system.h",
        "common/util/cuda_runtime.h",
        "common/common.h",
        "common/fused_attn/utils.h",
        "common/fused_attn/utils.cu",
        "common/fused_attn/fused_attn.cpp",
        "pytorch/csrc/extensions/attention.cpp",
    )
)
#: Every enum of these is listed for the Python side, reached by the query or not: pybind
#: registers them all, and the selector's modules name their members at import.
PUBLIC_HEADERS = FILES[:2]
#: The query as the Python side calls it, preferred first.
ENTRIES = ("transformer_engine::pytorch::get_fused_attn_backend", "nvte_get_fused_attn_backend")
#: The enum pybind11 takes where the query itself takes another (the wrapper casts it).
WRAPPED = {"NVTEDType": "DType"}
#: What `prelude.h` defines: never taken from the sources, whatever they define.
MACHINE = frozenset({"cudnnGetVersion", "current_device", "sm_arch", "concat_strings"})
#: TE's names for the process environment and standard output, and the prelude's for this call.
REDIRECTED = {
    "getenv": "te_attn_guards::environment",
    "cout": "te_attn_guards::log",
    "cerr": "te_attn_guards::log",
}
_REDIRECTED_PATTERN = re.compile(rf"(?<![\w:])(?:::)?std::({'|'.join(REDIRECTED)})\b")
_WORD = re.compile(r"[A-Za-z_]\w*")
#: How the trampoline hands the call's machine to the prelude's answers.
SOURCE_PROLOGUE = "te_attn_guards::machine = machine;"
#: TE's `getenv<T>` defined over the call's environment, for trees that only declare it.
GETENV = "getenv"
#: C++ scalar parameter types and how the harness passes them (`query.py` reads the kind).
SCALARS = {
    "bool": "bool",
    "float": "float",
    "double": "float",
    "int": "int",
    "int32_t": "int",
    "int64_t": "int",
    "long": "int",
    "size_t": "unsigned",
    "uint32_t": "unsigned",
    "uint64_t": "unsigned",
}


class Parameter(NamedTuple):
    name: str
    #: The type as the trampoline spells it (enums fully qualified).
    type: str
    #: "bool" | "float" | "int" | "unsigned" | "enum"
    kind: str
    #: For an enum: the Python-side enum whose members the call takes (its C++ name).
    enum: str | None = None


class TranslationUnit(NamedTuple):
    text: str
    #: The entry point's file, for messages.
    entry_file: Path
    entry: str
    parameters: tuple[Parameter, ...]
    #: The enums `te_attn_guards_enums` lists, qualified (pybind11 names them by the last part).
    enums: tuple[str, ...]


def build(root: Path) -> TranslationUnit:
    """The unit for the tree at `root` (the directory holding `transformer_engine/`)."""
    found = index(root, FILES)
    entry = _entry(found, root)
    reached = _reached(found, entry)
    enums = [d for d in found.enums() if d.file in PUBLIC_HEADERS or d in reached]
    parameters = parameters_of(entry, found, root)
    parts = [
        f"// TE's fused-attention query from {root}, as te-attn-guards compiles it.",
        *map(header, ("machine.h", "prelude.h")),
        *(
            _redirected(text(d.node))
            for d in _first_per_name(d for d in reached if d.kind == "macro")
        ),
    ]
    if not any(d.kind == "function" and d.name == GETENV for d in reached) and any(
        GETENV in _names(d) for d in reached
    ):
        parts.append(header("getenv.h"))
    parts += [in_namespaces(d) for d in enums]
    parts += [in_namespaces(d) for d in reached if d.kind == "function"]
    parts.append(trampoline(entry.qualified, parameters, SOURCE_PROLOGUE))
    parts.append(enum_table(enums))
    return TranslationUnit(
        "\n\n".join(parts) + "\n",
        root / entry.file,
        entry.qualified,
        parameters,
        tuple(d.qualified for d in enums),
    )


def header(name: str) -> str:
    """The text of one of this package's C++ headers."""
    return resources.files("selector_patch.te_cxx").joinpath(name).read_text()


def _entry(found: Index, root: Path) -> Definition:
    for qualified in ENTRIES:
        name = qualified.rsplit("::", 1)[-1]
        for definition in found.by_name.get(name, ()):
            if definition.kind == "function" and definition.qualified == qualified:
                return definition
    raise CxxError(root / FILES[-2], f"defines no {' or '.join(ENTRIES)}")


def _names(definition: Definition) -> set[str]:
    if definition.kind == "macro":
        return set(_WORD.findall(text(definition.node)))
    return {
        text(node)
        for node in walk(definition.node)
        if node.type in ("identifier", "type_identifier")
    }


def _targets(found: Index, name: str) -> list[Definition]:
    if name in MACHINE:
        return []
    targets = list(found.by_name.get(name, ()))
    if name in found.enumerators:
        targets.append(found.enumerators[name])
    return targets


def _reached(found: Index, entry: Definition) -> list[Definition]:
    """The definitions `entry` reaches by name, itself included, in source order."""
    taken = {entry}
    pending = [entry]
    while pending:
        for name in _names(pending.pop()):
            for target in _targets(found, name):
                if target not in taken:
                    taken.add(target)
                    pending.append(target)
    return [d for d in found.definitions if d in taken]


def _first_per_name(definitions) -> list[Definition]:
    """Macros defined in several preprocessor branches: the first branch's."""
    first: dict[str, Definition] = {}
    for definition in definitions:
        first.setdefault(definition.name, definition)
    return list(first.values())


def _redirected(source: str) -> str:
    return _REDIRECTED_PATTERN.sub(lambda match: REDIRECTED[match.group(1)], source)


def in_namespaces(definition: Definition) -> str:
    body = _redirected(text(definition.node))
    if definition.node.type == "enum_specifier":  # `enum X { ... };` whose `;` stands beside it
        body += ";"
    for namespace in reversed(definition.namespaces):
        body = f"namespace {namespace} {{\n{body}\n}}  // namespace {namespace}"
    return body


def parameters_of(entry: Definition, found: Index, root: Path) -> tuple[Parameter, ...]:
    declarator = next(n for n in walk(entry.node) if n.type == "function_declarator")
    parameters = []
    for node in declarator.child_by_field_name("parameters").named_children:
        if node.type != "parameter_declaration":
            continue
        type_name = text(node.child_by_field_name("type")).removeprefix("std::")
        name = node.child_by_field_name("declarator")
        if name is None or name.type != "identifier":
            raise CxxError(
                root / entry.file,
                f"{entry.name} takes a parameter this harness cannot pass: {text(node)}",
            )
        if type_name in SCALARS:
            parameters.append(Parameter(text(name), type_name, SCALARS[type_name]))
            continue
        enum = next((d for d in found.by_name.get(type_name, ()) if d.kind == "enum"), None)
        if enum is None:
            raise CxxError(
                root / entry.file,
                f"{entry.name}'s parameter {text(name)} is a {type_name}, neither a scalar nor an"
                " enum: this harness cannot pass it",
            )
        wrapped = WRAPPED.get(enum.name) if entry.qualified == ENTRIES[-1] else None
        parameters.append(Parameter(text(name), enum.qualified, "enum", wrapped or enum.name))
    return tuple(parameters)


def trampoline(entry: str, parameters: tuple[Parameter, ...], prologue: str) -> str:
    """`te_attn_guards_query`: sets up the call's machine with `prologue`, calls `entry` with the
    converted arguments, and hands back its answer, what it printed and what it threw (a C++
    exception never crosses into the caller)."""
    declared = "".join(
        f", {'long long' if p.kind == 'enum' else p.type} {p.name}" for p in parameters
    )
    passed = ", ".join(
        f"static_cast<{p.type}>({p.name})" if p.kind == "enum" else p.name for p in parameters
    )
    return f"""\
extern "C" int te_attn_guards_query(const te_attn_guards::Machine *machine{declared},
                                    long long *backend, char *log, std::size_t log_size,
                                    char *error, std::size_t error_size) {{
  {prologue}
  te_attn_guards::log.str("");
  te_attn_guards::log.clear();
  int status = 0;
  try {{
    *backend = static_cast<long long>(::{entry}({passed}));
  }} catch (const std::exception &failure) {{
    status = 1;
    std::snprintf(error, error_size, "%s", failure.what());
  }}
  std::snprintf(log, log_size, "%s", te_attn_guards::log.str().c_str());
  return status;
}}"""


def enum_table(enums: list[Definition]) -> str:
    rows = "\n".join(
        f'  table << "{d.name} {member} " << static_cast<long long>({d.qualified}::{member})'
        ' << "\\n";'
        for d in enums
        for member in d.members
    )
    return f"""\
extern "C" const char *te_attn_guards_enums() {{
  static const std::string listed = [] {{
    std::ostringstream table;
{rows}
    return table.str();
  }}();
  return listed.c_str();
}}"""
