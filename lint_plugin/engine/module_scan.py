"""What a selector module's code holds of the names `Dialect` asks about, walking as little of it
as the questions need.

`Dialect` asks the whole module a few things: whether it uses a dotted name
(`FlashAttentionUtils.v4_validate_head_dims`, where the selector function itself names no
installed flag) or calls a method of a name (an FP8 recipe's predicate), and whether a top-level
constant is ever stored again or changed (what keeps a literal from being a constant). The
selector function's part is its `function_index`, which preparing the analysis walks anyway.
The rest of the module was one walk of every node: on TE 2.20.2, 6,900 nodes and 2.4 ms of a
flake8 run, to answer questions about two names.

Where the source the module was parsed from is known (`parsed_from`: flake8's lines, the
codemod's text), a question about a name walks only the top-level statements whose text holds it
as a word. Every name, attribute, import alias and definition in the tree is spelt in its
statement's text as in the tree, once the text is read as Python reads it (identifiers
NFKC-normalized, `\\r\\n` and `\\r` breaking lines: `_as_spelt`), so a statement whose text lacks
the word holds nothing the answer needs; a word in a comment or a string walks its statement for
nothing, and the answer is the same. A statement is walked once, a word searched once, whatever
the questions: on TE 2.20.2, the 4 of 86 statements that name the two, 0.7 ms. Without the
source, the first question walks every statement.
"""

from __future__ import annotations

import ast
import bisect
from collections import Counter

from lint_plugin.engine.program import descendants, function_index

#: The source each module was parsed from, by the module's id (the module kept with it, so that
#: an id no longer alive finds nothing): what `parsed_from` records and `forget_sources` drops.
_SOURCES: dict[int, tuple[ast.Module, str]] = {}
#: How many modules' sources are kept: the analysis keeps two prepared selectors too.
KEPT_SOURCES = 2
#: What may spell a name beside a word: ASCII letters, digits and `_` (a non-ASCII letter beside
#: it reads as a boundary, which at most walks a statement for nothing).
_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def parsed_from(module: ast.Module, source: str) -> None:
    """Record that `module` is `ast.parse(source)`, for its scan to walk only the statements the
    questions name (the module docstring)."""
    while len(_SOURCES) >= KEPT_SOURCES:
        del _SOURCES[next(iter(_SOURCES))]
    _SOURCES[id(module)] = (module, source)


def forget_sources() -> None:
    """Drop every recorded source (`analysis.release`: the file is done)."""
    _SOURCES.clear()


def _source_of(module: ast.Module) -> str | None:
    kept = _SOURCES.get(id(module))
    return kept[1] if kept is not None and kept[0] is module else None


def _as_spelt(source: str) -> str:
    """`source` with its names spelt as in the tree and its lines broken as there: Python reads
    identifiers NFKC-normalized (`ﬁle` is `file`), and `\\r\\n` and `\\r` as line breaks too."""
    if not source.isascii():
        import unicodedata  # (rare: TE 2.20.2 has one em dash, in a comment)

        source = unicodedata.normalize("NFKC", source)
    if "\r" in source:
        source = source.replace("\r\n", "\n").replace("\r", "\n")
    return source


class ModuleScan:
    """What the module holds of the names asked about: its uses of names and dotted names (`in`
    asks), how often it stores each name, and which names it changes other than by a store:
    declared `global`, defined by `def` / `class`, imported, called a method on, or assigned or
    deleted an item of."""

    def __init__(self, module: ast.Module, function: ast.FunctionDef) -> None:
        index = function_index(function)
        self._function = function
        #: Names and `name.attr` pairs used in what has been walked, the selector's included.
        self._text: set[str] = set(index.text_names)
        #: How often each name is bound or deleted (a store other than `x = ...` at top level).
        self._stores: Counter = Counter(index.rebinds)
        self._changed: set[str] = set(index.changed)
        #: The top-level statements not walked yet.
        self._unwalked: dict[int, ast.stmt] = dict(enumerate(module.body))
        #: The words whose statements are walked (each question is asked again per run).
        self._searched: set[str] = set()
        source = _source_of(module)
        self._words = None if source is None else _as_spelt(source)
        #: Per top-level statement, its first line (its decorators' included).
        self._first_lines = [
            min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
            for stmt in module.body
        ]
        self._last_lines = [stmt.end_lineno for stmt in module.body]

    def __contains__(self, name: object) -> bool:
        """Whether the module uses `name` (`FlashAttentionUtils.is_installed`, `torch`)."""
        if not isinstance(name, str):
            return False
        self._walk_naming(name.rpartition(".")[2])
        return name in self._text

    def calls_method(self, method: str) -> bool:
        """Whether the module reads a method of that name off a name (`fp8_recipe.delayed()`)."""
        self._walk_naming(method)
        suffix = f".{method}"
        return any(name.endswith(suffix) for name in self._text)

    def stores(self, name: str) -> int:
        """How often the module binds or deletes `name`."""
        self._walk_naming(name)
        return self._stores[name]

    def changes(self, name: str) -> bool:
        """Whether the module changes `name` other than by a store."""
        self._walk_naming(name)
        return name in self._changed

    def _walk_naming(self, word: str) -> None:
        """Walk every statement not walked yet that may hold `word`: those whose text holds it,
        or, without the source, all of them."""
        if not self._unwalked or word in self._searched:
            return
        self._searched.add(word)
        if self._words is None:
            for index in list(self._unwalked):
                self._walk(self._unwalked.pop(index))
            return
        for index in self._statements_with(word):
            stmt = self._unwalked.pop(index, None)
            if stmt is not None:
                self._walk(stmt)

    def _statements_with(self, word: str) -> set[int]:
        """The top-level statements whose text holds `word`, as a word."""
        source, found = self._words, set()
        line, counted = 1, 0  # the line of `counted`, the offset the lines are counted up to
        start = source.find(word)
        while start != -1:
            end = start + len(word)
            if (start == 0 or source[start - 1] not in _NAME_CHARACTERS) and (
                end == len(source) or source[end] not in _NAME_CHARACTERS
            ):
                line += source.count("\n", counted, start)
                counted = start
                index = max(bisect.bisect_right(self._first_lines, line) - 1, 0)
                found.add(index)
                # and the statements before it that end on that line (`x = 1; y = 2`)
                while index > 0 and self._last_lines[index - 1] >= line:
                    index -= 1
                    found.add(index)
            start = source.find(word, end)
        return found

    def _walk(self, stmt: ast.stmt) -> None:
        """What `stmt` holds, the selector function's own nodes left to its index."""
        text, stores, changed = self._text, self._stores, self._changed
        name, attribute, function = ast.Name, ast.Attribute, self._function
        for node in descendants(stmt, skip=function):
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
                changed.add(node.name)  # (the selector's own nodes: its index, already in)
            elif kind is ast.alias:
                changed.add(node.asname or node.name.partition(".")[0])
