"""TE's C++ as tree-sitter's C++ grammar parses it: the definitions a translation unit can take.

The fused-attention query is spread over a few files (the query in `fused_attn.cpp`, its helpers
in `fused_attn/utils.cu`, enums in the public headers, macros in `util/logging.h`, templates in
`util/system.h`, the pybind wrapper in `pytorch/csrc/extensions/attention.cpp`), each wrapped in
header guards, `extern "C"` blocks and namespaces. `index` reads every file once and lists each
definition with a body - function (templates included), enum, macro - by its unqualified name,
with the namespaces it lives in and its place, so that `unit` can take exactly the definitions
the query reaches, in the order the sources give them. Declarations without a body are left out:
what they declare is either defined elsewhere in the tree or is a machine query (`prelude.h`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import tree_sitter_cpp
from tree_sitter import Language, Node, Parser

PARSER = Parser(Language(tree_sitter_cpp.language()))
#: Nodes whose insides are not namespace scope: nothing defined below one is taken.
_NOT_NAMESPACE_SCOPE = frozenset(
    {"field_declaration_list", "compound_statement", "enumerator_list", "parameter_list"}
)


def walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from walk(child)


def text(node: Node) -> str:
    return node.text.decode()


@dataclass(frozen=True, eq=False)
class Definition:
    """One definition with a body, as the source writes it."""

    #: "function" | "enum" | "macro"
    kind: str
    name: str
    #: Enclosing namespaces, outermost first (`("transformer_engine", "fused_attn")`).
    namespaces: tuple[str, ...]
    #: The whole definition (with its `template <...>` head, or the `enum ... { };` statement).
    node: Node
    file: str
    #: For an enum: its enumerators' names.
    members: tuple[str, ...] = ()
    #: Scopes the definition's own name carries (`int cuda::sm_arch(...) {` defines into `cuda`).
    scopes: tuple[str, ...] = ()

    @property
    def qualified(self) -> str:
        return "::".join((*self.namespaces, *self.scopes, self.name))

    @property
    def line(self) -> int:
        return self.node.start_point[0] + 1


@dataclass
class Index:
    """Every definition of a set of files, by unqualified name, in source order."""

    definitions: list[Definition] = field(default_factory=list)
    by_name: dict[str, list[Definition]] = field(default_factory=dict)
    #: Enumerator name -> the enum that declares it.
    enumerators: dict[str, Definition] = field(default_factory=dict)

    def add(self, definition: Definition) -> None:
        self.definitions.append(definition)
        self.by_name.setdefault(definition.name, []).append(definition)
        for member in definition.members:
            self.enumerators.setdefault(member, definition)

    def enums(self) -> Iterator[Definition]:
        return (d for d in self.definitions if d.kind == "enum")


def index(root: Path, files: tuple[str, ...]) -> Index:
    """The definitions of `files` (paths relative to `root`, in include order; missing ones are
    skipped: not every release has every file)."""
    found = Index()
    for relative in files:
        path = root / relative
        if path.is_file():
            _scan(PARSER.parse(path.read_bytes()).root_node, (), relative, found)
    return found


def _scan(node: Node, namespaces: tuple[str, ...], file: str, found: Index) -> None:
    """Definitions at namespace scope below `node`, which lies in `namespaces`."""
    for child in node.named_children:
        definition = _definition(child, namespaces, file)
        if definition is not None:
            found.add(definition)
        elif child.type == "namespace_definition":
            name = child.child_by_field_name("name")  # an anonymous namespace adds no qualifier
            inner = (*namespaces, text(name)) if name is not None else namespaces
            _scan(child.child_by_field_name("body"), inner, file, found)
        elif child.type not in _NOT_NAMESPACE_SCOPE:
            _scan(child, namespaces, file, found)


def _definition(node: Node, namespaces: tuple[str, ...], file: str) -> Definition | None:
    if node.type == "function_definition":
        return _function(node, node, namespaces, file)
    if node.type == "template_declaration":
        inner = next((c for c in node.named_children if c.type == "function_definition"), None)
        return _function(node, inner, namespaces, file) if inner is not None else None
    if node.type == "enum_specifier" and node.child_by_field_name("body") is not None:
        statement = node.parent if node.parent.type in ("declaration", "type_definition") else node
        name = node.child_by_field_name("name")
        if name is None and statement.type == "type_definition":  # typedef enum { ... } NAME;
            name = statement.child_by_field_name("declarator")
        if name is None:
            return None
        members = tuple(
            text(child.child_by_field_name("name"))
            for child in node.child_by_field_name("body").named_children
            if child.type == "enumerator"
        )
        return Definition("enum", text(name), namespaces, statement, file, members)
    if node.type in ("preproc_def", "preproc_function_def"):
        return Definition("macro", text(node.child_by_field_name("name")), (), node, file)
    return None


def _function(whole: Node, function: Node, namespaces: tuple[str, ...], file: str):
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return None
    qualifiers = _without_template_arguments(text(declarator.child_by_field_name("declarator")))
    *scopes, name = qualifiers.split("::")
    return Definition("function", name.strip(), namespaces, whole, file, scopes=tuple(scopes))


def _without_template_arguments(name: str) -> str:
    """`getenv_default_value<std::string>` -> `getenv_default_value` (nested `<>` included)."""
    kept, depth = [], 0
    for character in name:
        depth += character == "<"
        if depth == 0:
            kept.append(character)
        depth -= character == ">"
    return "".join(kept)
