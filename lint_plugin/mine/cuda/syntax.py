"""flash-attn's C++ as tree-sitter's C++ grammar parses it: the functions, macros and entry points.

The dispatch is spread over headers, explicit specializations in generated `.cu` files and
`*_SWITCH` macros, so the whole library directory is indexed once: every function definition
by its unqualified name (with its template parameters, or the arguments of an explicit
specialization `template<> void run_mha_bwd_<cutlass::bfloat16_t, 256, true>(...)`), every
`#define` (a function-like macro's body is parsed as the expression it expands to), and the
Python entry points the extension registers (`m.def("bwd", &mha_bwd)`,
`m.impl("bwd", &mha_bwd)`).

Preprocessor conditionals are resolved as a default build compiles the host code: a name is
defined only if the sources `#define` it (build switches such as
`FLASHATTENTION_DISABLE_DROPOUT` come from compiler flags, off by default), and `__CUDA_ARCH__`
is undefined. CUDA's `kernel<<<grid, block>>>(...)` is not C++: the grammar reads it as shifts
and a template, which is enough to find the token sequence `<<` `<` that marks a launch.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import tree_sitter_cpp
from tree_sitter import Language, Node, Parser

from selector_patch.sources import read_text

PARSER = Parser(Language(tree_sitter_cpp.language()))
#: Calls that launch a kernel besides `<<<...>>>` (FA3 launches through CUTLASS).
LAUNCH_CALLS = frozenset(
    {"kernel_launch", "launch_kernel_on_cluster", "cudaLaunchKernel", "cudaLaunchKernelEx"}
)
#: Registration of an entry point: pybind11's `m.def` (FA2), the torch library's `m.impl` (FA3).
REGISTRATION_METHODS = frozenset({"def", "impl"})
SOURCE_SUFFIXES = (".cpp", ".h", ".cu")


def parse(text: str) -> Node:
    return PARSER.parse(text.encode()).root_node


def node_text(node: Node) -> str:
    return node.text.decode()


def one_line(node: Node) -> str:
    """A node's source, whitespace and comments collapsed to one line."""
    text = node.text
    for comment in sorted(
        (n for n in walk(node) if n.type == "comment"), key=lambda n: n.start_byte, reverse=True
    ):
        start, end = comment.start_byte - node.start_byte, comment.end_byte - node.start_byte
        text = text[:start] + b" " + text[end:]
    return " ".join(text.decode().split())


def named(node: Node) -> list[Node]:
    """A node's named children, comments left out (they sit between arguments, too)."""
    return [child for child in node.named_children if child.type != "comment"]


def leaves(node: Node) -> Iterator[Node]:
    if node.child_count == 0:
        yield node
        return
    for child in node.children:
        yield from leaves(child)


def unqualified(name: str) -> str:
    """`FLASH_NAMESPACE::mha_fwd` -> `mha_fwd`; `run_mha_bwd_<T, 256>` -> `run_mha_bwd_`."""
    return name.split("<", 1)[0].rsplit("::", 1)[-1].strip()


@dataclass(frozen=True)
class Param:
    name: str
    #: The declared type, as written (`const at::Tensor &`, `std::optional<at::Tensor> &`).
    type: str
    default: Node | None = None


@dataclass(frozen=True, eq=False)
class Function:
    name: str
    file: str
    #: Names of the template parameters (empty for a plain function or a specialization).
    template: tuple[str, ...]
    #: Template parameters' defaults, by name.
    template_defaults: dict
    #: The explicit specialization's template arguments, as source text; None if not one.
    specialization: tuple[str, ...] | None
    params: tuple[Param, ...]
    body: Node

    @functools.cached_property
    def launches(self) -> bool:
        """Whether its body launches a kernel itself (`<<<`, a CUTLASS launch)."""
        return launches(self.body)


@dataclass(frozen=True, eq=False)
class Macro:
    name: str
    file: str
    line: int
    #: Parameter names; None for an object-like macro. A trailing `...` is `__VA_ARGS__`.
    params: tuple[str, ...] | None
    #: The expression a function-like macro expands to; None when it is not one expression.
    body: Node | None
    #: What an object-like macro stands for (`DROPOUT_SWITCH` -> `BOOL_SWITCH`).
    alias: str = ""


@dataclass
class Library:
    """Every function, macro and entry point of one library directory."""

    root: Path
    functions: dict[str, list[Function]] = field(default_factory=dict)
    macros: dict[str, Macro] = field(default_factory=dict)
    #: Registered Python name -> C++ function name (`"bwd"` -> `"mha_bwd"`).
    entries: dict[str, str] = field(default_factory=dict)
    defined: set[str] = field(default_factory=set)

    def macro(self, name: str) -> Macro | None:
        """The function-like macro `name` names, through object-like aliases."""
        seen = set()
        while name in self.macros and name not in seen:
            seen.add(name)
            macro = self.macros[name]
            if macro.params is not None:
                return macro
            name = macro.alias
        return None


def index(root: Path, directories: tuple[str, ...]) -> Library:
    """The library under `root`, from the C++ sources of `directories` (not recursively into
    vendored trees: `csrc/flash_attn/src`, `hopper/instantiations` are named explicitly)."""
    library = Library(root)
    files = []
    for directory in directories:
        files += sorted(
            path
            for path in (root / directory).glob("*")
            if path.suffix in SOURCE_SUFFIXES and path.is_file()
        )
    trees = [(path.relative_to(root).as_posix(), parse(read_text(path))) for path in files]
    for _, tree in trees:
        for node in walk(tree):
            if node.type in ("preproc_def", "preproc_function_def"):
                library.defined.add(node_text(node.child_by_field_name("name")))
    for file, tree in trees:
        _collect(library, file, active_children(tree, library.defined), ())
    return library


def walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from walk(child)


def active_children(node: Node, defined: set[str]) -> Iterator[Node]:
    """A block's children with preprocessor conditionals resolved (their live branch inlined)."""
    for child in node.named_children:
        if child.type in ("preproc_ifdef", "preproc_if"):
            yield from active_children(live_branch(child, defined), defined)
        elif child.type in ("preproc_else", "preproc_elif", "preproc_elifdef"):
            continue  # reached only through `live_branch`
        else:
            yield child


def live_branch(node: Node, defined: set[str]) -> Node:
    """The part of `#ifdef` / `#if` ... `#else` a default host build compiles (a node whose
    children are that part's statements or declarations)."""
    while True:
        if _condition_holds(node, defined):
            return node
        alternative = node.child_by_field_name("alternative")
        if alternative is None:
            return _EMPTY
        if alternative.type == "preproc_else":
            return alternative
        node = alternative


def _condition_holds(node: Node, defined: set[str]) -> bool:
    if node.type in ("preproc_ifdef", "preproc_elifdef"):
        name = node_text(node.child_by_field_name("name"))
        negated = node_text(node.children[0]).startswith(("#ifndef", "#elifndef"))
        return (name in defined) != negated
    return bool(_preproc_value(node.child_by_field_name("condition"), defined))


def _preproc_value(node: Node, defined: set[str]) -> int:
    kind = node.type
    if kind == "preproc_defined":
        return int(node_text(node.named_children[0]) in defined)
    if kind == "number_literal":
        return int(re.match(r"\d+", node_text(node)).group())
    if kind == "parenthesized_expression":
        return _preproc_value(node.named_children[0], defined)
    if kind == "unary_expression":
        return int(not _preproc_value(node.child_by_field_name("argument"), defined))
    if kind == "binary_expression":
        left = _preproc_value(node.child_by_field_name("left"), defined)
        right = _preproc_value(node.child_by_field_name("right"), defined)
        op = node_text(node.child_by_field_name("operator"))
        return int(_PREPROC_OPS[op](left, right)) if op in _PREPROC_OPS else 0
    return 0  # an identifier no source defines as a number (`__CUDA_ARCH__` on the host)


_PREPROC_OPS = {
    "&&": lambda a, b: a and b,
    "||": lambda a, b: a or b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


class _Empty:
    named_children: tuple = ()


_EMPTY = _Empty()


def _collect(library: Library, file: str, nodes: Iterator[Node], template: tuple) -> None:
    for node in nodes:
        kind = node.type
        if kind in ("namespace_definition", "linkage_specification"):
            body = node.child_by_field_name("body")
            if body is not None:
                _collect(library, file, active_children(body, library.defined), ())
        elif kind == "declaration_list":
            _collect(library, file, active_children(node, library.defined), ())
        elif kind == "template_declaration":
            parameters = node.child_by_field_name("parameters")
            _collect(library, file, iter(node.named_children[1:]), _template(parameters))
        elif kind == "function_definition":
            _function(library, file, node, template)
        elif kind == "preproc_function_def":
            _macro(library, file, node)
        elif kind == "preproc_def":
            value = node.child_by_field_name("value")
            name = node_text(node.child_by_field_name("name"))
            alias = node_text(value).strip() if value is not None else ""
            library.macros[name] = Macro(name, file, node.start_point[0] + 1, None, None, alias)


def _template(parameters: Node) -> tuple[tuple[str, Node | None], ...]:
    found = []
    for parameter in parameters.named_children:
        names = [c for c in parameter.named_children if c.type in ("identifier", "type_identifier")]
        default = parameter.child_by_field_name("default_value") or parameter.child_by_field_name(
            "default_type"
        )
        if names:
            found.append((node_text(names[-1]), default))
    return tuple(found)


def _function(library: Library, file: str, node: Node, template: tuple) -> None:
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    body = node.child_by_field_name("body")
    if declarator is None or body is None:
        return
    name_node = declarator.child_by_field_name("declarator")
    specialization = None
    if name_node.type == "template_function":
        arguments = name_node.child_by_field_name("arguments")
        specialization = tuple(one_line(a) for a in named(arguments))
        name_node = name_node.child_by_field_name("name")
    params = []
    for parameter in named(declarator.child_by_field_name("parameters")):
        if parameter.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        inner = parameter.child_by_field_name("declarator")
        names = [n for n in walk(inner) if n.type == "identifier"] if inner is not None else []
        if not names:
            continue
        type_text = node_text(parameter)[: inner.start_byte - parameter.start_byte].strip()
        reference = "&" if inner.type == "reference_declarator" else ""
        params.append(
            Param(
                node_text(names[0]),
                f"{type_text} {reference}".strip(),
                parameter.child_by_field_name("default_value"),
            )
        )
    name = unqualified(node_text(name_node))
    function = Function(
        name=name,
        file=file,
        template=tuple(n for n, _ in template) if specialization is None else (),
        template_defaults={n: d for n, d in template if d is not None},
        specialization=specialization,
        params=tuple(params),
        body=body,
    )
    library.functions.setdefault(name, []).append(function)
    for statement in body.named_children:  # PYBIND11_MODULE(...) { m.def(...); } parses so
        if statement.type == "expression_statement":
            _registrations(library, statement)


def _macro(library: Library, file: str, node: Node) -> None:
    name = node_text(node.child_by_field_name("name"))
    params = tuple(
        "__VA_ARGS__" if node_text(p) == "..." else node_text(p)
        for p in node.child_by_field_name("parameters").children
        if p.type in ("identifier", "...")
    )
    value = node.child_by_field_name("value")
    body = None
    if value is not None:
        line = node.start_point[0]
        # Line continuations become plain line ends, so the body keeps its line numbers.
        text = "\n" * line + "auto __macro__ = " + node_text(value).replace("\\\n", " \n") + ";"
        tree = parse(text)
        declaration = tree.named_children[0] if tree.named_children else None
        if declaration is not None and not tree.has_error and declaration.type == "declaration":
            body = declaration.child_by_field_name("declarator").child_by_field_name("value")
    library.macros[name] = Macro(name, file, node.start_point[0] + 1, params, body)


def _registrations(library: Library, node: Node) -> None:
    """`m.def("bwd", &FLASH_NAMESPACE::mha_bwd, ...)` / `m.impl("bwd", &mha_bwd)`."""
    call = node.named_children[0] if node.named_children else None
    if call is None or call.type != "call_expression":
        return
    callee = call.child_by_field_name("function")
    if callee.type != "field_expression":
        return
    if node_text(callee.child_by_field_name("field")) not in REGISTRATION_METHODS:
        return
    arguments = named(call.child_by_field_name("arguments"))
    if len(arguments) < 2 or arguments[0].type != "string_literal":
        return
    target = arguments[1]
    if target.type == "pointer_expression":
        target = target.child_by_field_name("argument")
    name = node_text(arguments[0])[1:-1].split("(", 1)[0]
    library.entries[name] = unqualified(node_text(target))


def launches(node: Node) -> bool:
    """Whether `node` launches a kernel itself: `<<<` outside comments, or a launch call."""
    previous = ""
    for leaf in leaves(node):
        text = node_text(leaf)
        if leaf.type == "comment" or not text:  # the grammar's error recovery adds empty ones
            continue
        if previous == "<<" and text == "<":
            return True
        previous = text
    for call in walk(node):
        if call.type == "call_expression":
            callee = call.child_by_field_name("function")
            if unqualified(node_text(callee)) in LAUNCH_CALLS:
                return True
    return False
