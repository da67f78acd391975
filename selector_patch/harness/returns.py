"""Which item of the tuple a selector returns is which: its layout, read off its return statements.

TE's caller unpacks the returned tuple by position, and the positions moved between dialects:
before 1.9 (keyword parameters) `(use_flash_attention, use_fused_attention,
use_unfused_attention, available_backends, fused_attention_backend)`; 1.9 - 2.1
`(use_flash_attention, use_fused_attention, fused_attention_backend, use_unfused_attention,
available_backends)`; 2.2+ inserts `flash_attention_backend` (the flash version) second. Every
release returns a tuple display of those very names, so the layout is read from the selector's
`return` statements, following a dispatcher's `return get_attention_backend_cuda(...)` into the
module-level function whose result it returns.

A fork that adds a backend lengthens the tuple with its own flag (`use_flex_attention`) wherever
it puts it, and changes its caller to match; TE's items are still found by their names, and
every other returned name starting with `use_` is taken for the fork's backend flag. The
selected backend is the first flag that is on, in the order the tuple gives them: TE's own
selectors make the flags exclusive, and TE's caller tests them in that order (flash, fused,
unfused). Returns that do not name their items (a tuple of constants, an expression) are read
with the layout the others give when they have its length. A selector with no return that names
TE's items (a renamed variable), or with two that disagree, is read by position as TE's caller
reads a tuple of its length.
"""

from __future__ import annotations

import ast
from typing import Iterator

FLASH = "use_flash_attention"
FLASH_VERSION = "flash_attention_backend"
FUSED = "use_fused_attention"
FUSED_BACKEND = "fused_attention_backend"
UNFUSED = "use_unfused_attention"
AVAILABLE = "available_backends"
#: What a layout must name for TE's caller to find its backends in it.
REQUIRED = frozenset({FLASH, FUSED, UNFUSED, AVAILABLE})
FLAG_PREFIX = "use_"


class Layout:
    """The names of a returned tuple's items, indexed once (a selection reads them by position)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.position = {name: index for index, name in enumerate(names)}
        #: The backend flags, TE's and a fork's own, in the tuple's order: (position, name).
        self.flags = tuple(
            (index, name) for index, name in enumerate(names) if name.startswith(FLAG_PREFIX)
        )

    def __len__(self) -> int:
        return len(self.names)


#: TE's layouts by tuple length, for returns that do not name their items.
POSITIONAL = {
    6: Layout((FLASH, FLASH_VERSION, FUSED, FUSED_BACKEND, UNFUSED, AVAILABLE)),
    5: Layout((FLASH, FUSED, FUSED_BACKEND, UNFUSED, AVAILABLE)),
}


def _own_returns(body: list[ast.stmt]) -> Iterator[ast.Return]:
    """The function's own `return` statements, not those of functions or classes nested in it."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from _own_returns([child])
            elif isinstance(child, ast.excepthandler | ast.match_case):
                yield from _own_returns(child.body)


def _returned_names(
    function: ast.FunctionDef, functions: dict[str, ast.FunctionDef], seen: set[str]
) -> Iterator[tuple[str, ...]]:
    """The names of each returned tuple display whose items are all plain names."""
    seen.add(function.name)
    for node in _own_returns(function.body):
        value = node.value
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in functions
            and value.func.id not in seen
        ):
            yield from _returned_names(functions[value.func.id], functions, seen)
        elif isinstance(value, ast.Tuple) and all(isinstance(e, ast.Name) for e in value.elts):
            yield tuple(element.id for element in value.elts)


def return_layout(tree: ast.Module, selector: str) -> Layout | None:
    """The names the selector's returns give their items, when those that name them agree and
    name TE's backends; None otherwise (the tuple is then read by position, `POSITIONAL`)."""
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    if selector not in functions:
        return None
    layouts = set(_returned_names(functions[selector], functions, set()))
    if len(layouts) != 1:
        return None
    (layout,) = layouts
    return Layout(layout) if REQUIRED <= set(layout) else None
