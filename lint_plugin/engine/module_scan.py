"""One walk of a whole selector module, for the two questions `Dialect` asks of all of it.

Which dotted names the module uses (`FlashAttentionUtils.v4_is_installed`, where the selector
function itself names no installed flag), and which top-level names the module ever changes
(what keeps a literal from being a constant). Each used to walk the module itself: on TE
2.20.2's 17,000 nodes the two walks were the largest fixed cost of a flake8 run's analysis,
paid with and without TE's fixes. Now one walk visits the nodes once, skipping the context and
operator singletons neither question looks at, and the selector function's own nodes, which
its index has walked already (`FunctionIndex.rebinds`, `FunctionIndex.changed`).
"""

from __future__ import annotations

import ast
from collections import Counter

from lint_plugin.engine.program import descendants, function_index
from selector_patch.records import TupleRecord


class ModuleScan(TupleRecord):
    """What one walk of a module found."""

    #: Names and `name.attr` pairs used anywhere in the module.
    text_names: frozenset[str]
    #: How often each name is bound or deleted (a store other than `x = ...` at top level).
    stores: Counter
    #: Names changed other than by a store: declared `global`, defined by `def` / `class`,
    #: imported, called a method on, or assigned or deleted an item of.
    changed: frozenset[str]


def scan(module: ast.Module, function: ast.FunctionDef) -> ModuleScan:
    """`module` walked once (`ModuleScan`), but for `function`, the selector: what it holds is
    read from its `function_index`, the walk that preparing its analysis makes anyway (on TE
    2.20.2, 6,200 of the module's 17,000 nodes)."""
    text: set[str] = set()
    stores: Counter = Counter()
    changed: set[str] = set()
    name, attribute = ast.Name, ast.Attribute
    for node in descendants(module, skip=function):
        kind = type(node)
        if kind is name:
            text.add(node.id)
            if type(node.ctx) is not ast.Load:
                stores[node.id] += 1
        elif kind is attribute:
            if type(node.value) is name:
                text.add(f"{node.value.id}.{node.attr}")
        elif kind is ast.Call:
            call = node.func
            if type(call) is attribute and type(call.value) is name:
                changed.add(call.value.id)
        elif kind is ast.Subscript:
            if type(node.ctx) is not ast.Load and type(node.value) is name:
                changed.add(node.value.id)  # `TABLE[key] = ...`, `del TABLE[key]`
        elif kind is ast.Global:
            changed.update(node.names)
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            changed.add(node.name)
            if node is function:  # its walk is the index's, not this one's
                index = function_index(function)
                text.update(index.text_names)
                stores.update(index.rebinds)
                changed.update(index.changed)
        elif kind is ast.alias:
            changed.add(node.asname or node.name.partition(".")[0])
    return ModuleScan(frozenset(text), stores, frozenset(changed))
