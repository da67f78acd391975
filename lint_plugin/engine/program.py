"""Syntactic facts about one selector function, computed once and shared by every analysis run.

The interpreter runs a selector once per witness; anything that depends only on the source -
which names a statement reads or writes, which nested functions are local helpers and what they
write through `nonlocal`, which statements switch a flag off or may raise - is computed here,
once per node. One walk over the function (`function_index`) finds what every statement and
every compound statement's head reads, binds and calls; a compound statement's facts are those
of its heads and statements together.

Sets of names are held as bits of an `int` (`Names`): the slice and the facts of a compound
statement are unions and intersections of hundreds of names, which `int` does in a few machine
words where a `frozenset` copies every name. The methods that answer in names convert, once per
node.
"""

from __future__ import annotations

import ast
import functools
import operator
from typing import Iterable, Iterator

from lint_plugin.engine.absint import EMPTY
from selector_patch.records import TupleRecord

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_DEFINITION_TYPES = frozenset(DEFINITIONS)
#: Statements that hold statement lists (`blocks`).
COMPOUND = (
    *DEFINITIONS,
    *(ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match),
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)
_COMPOUND_ALL = frozenset(COMPOUND)
#: The compound statements that run their blocks where they stand (definitions aside): their
#: facts are their heads' and their blocks' (`_Walker`), and a slice looks into them.
BLOCK_STATEMENTS = _COMPOUND_ALL - _DEFINITION_TYPES
#: The statement lists each compound statement holds directly (`blocks`).
_BLOCK_FIELDS = {
    kind: tuple(name for name in ("body", "orelse", "finalbody") if name in kind._fields)
    for kind in COMPOUND
}
#: Sort key that puts nodes in source order.
POSITION = operator.attrgetter("lineno", "col_offset")


def _parameters(function: ast.FunctionDef) -> list[ast.arg]:
    """The function's named parameters, a method's `self` / `cls` left out."""
    arguments = function.args
    named = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return named[1:] if named and named[0].arg in ("self", "cls") else named


def selector_inputs(function: ast.FunctionDef) -> tuple[str, ...]:
    """A selector that takes its inputs as keyword parameters (TE before 1.9, and forks of it:
    `get_attention_backend(qkv_dtype=..., head_dim=..., ...)`): their names, else ()."""
    named = _parameters(function)
    return tuple(argument.arg for argument in named) if len(named) > 1 else ()


def selector_parameter(function: ast.FunctionDef) -> ast.arg | None:
    """The selector's `AttentionParams` argument: its attributes are the selector's inputs
    (None for a selector that takes keyword inputs)."""
    named = _parameters(function)
    return named[0] if len(named) == 1 else None


class Names:
    """The names and dotted names of one selector function, each a bit of an `int`."""

    __slots__ = ("bit", "names")

    def __init__(self) -> None:
        self.bit: dict[str, int] = {}
        self.names: list[str] = []

    def of(self, name: str) -> int:
        """The bit of `name`, given one on first sight."""
        bit = self.bit.get(name)
        if bit is None:
            bit = self.bit[name] = 1 << len(self.names)
            self.names.append(name)
        return bit

    def bits(self, names: Iterable[str]) -> int:
        bits = 0
        for name in names:
            bits |= self.of(name)
        return bits

    def named(self, bits: int) -> frozenset[str]:
        """The names of `bits`."""
        names, found = self.names, []
        while bits:
            low = bits & -bits
            found.append(names[low.bit_length() - 1])
            bits ^= low
        return frozenset(found)


class Facts(TupleRecord):
    """What one statement or expression reads, binds and calls (nested scopes included), sets of
    names as `Names` bits."""

    #: Names and dotted attribute names loaded.
    loads: int
    #: `AttentionParams` fields read as attributes of the selector's argument.
    fields: frozenset[str]
    #: Names and dotted names bound.
    stores: int
    #: Names an item or attribute assignment starts from (`x` in `x.a[0] = 1`): a local object
    #: changed in place, where `x` is a local of the function (`Program.locals`).
    roots: int
    #: Names called as functions (`f(...)`), to match against local helpers.
    calls: frozenset[str]
    #: Names assigned a falsy constant (`flag = False`).
    falsified: int
    walrus: bool


#: `Facts(...)` without the namedtuple's `__new__`, a Python function: one per statement.
new_facts = functools.partial(tuple.__new__, Facts)


class FunctionIndex(TupleRecord):
    """What one pass over a selector function finds; shared by `Program` and `Dialect`."""

    #: Every name bound anywhere in the function (helpers included).
    stores: frozenset[str]
    #: Names and `name.attr` pairs used anywhere in the function.
    text_names: frozenset[str]
    #: `AttentionParams` fields read as attributes of the selector's argument.
    fields: frozenset[str]
    #: Nested function definitions, in source order.
    definitions: tuple[ast.FunctionDef, ...]
    #: Assignments whose targets include a plain name, in source order.
    assignments: tuple[ast.Assign, ...]
    #: Names and dotted names compared with something (`fa4_version < PkgVersion(...)`).
    compared: frozenset[str]
    #: The names the facts' bits stand for.
    names: Names
    #: The facts of every statement of the function (helpers' included) and of every compound
    #: statement's heads.
    facts: dict[ast.AST, Facts]
    #: The parts walked whole, with their facts: simple statements, compound statements' heads,
    #: definitions' signatures. Every node of the body is under exactly one.
    leaves: tuple[tuple[ast.AST | list, Facts], ...]
    #: `_Walker.writes`.
    writes: dict[ast.stmt, tuple[int, int]]
    #: `_Walker.returns` and `_Walker.own_assignments`.
    returns: tuple[ast.Return, ...]
    own_assignments: tuple[tuple[ast.Assign, ast.stmt], ...]
    #: `_Walker.blocks` and `_Walker.raising`.
    blocks: dict[ast.stmt, list[list[ast.stmt]]]
    raising: frozenset[ast.stmt]
    #: What `module_scan` asks of every part of the module, for the function's part (which it
    #: then need not walk again): how often each plain name is bound or deleted, and the names
    #: changed otherwise (`ModuleScan.changes`).
    rebinds: dict[str, int]
    changed: frozenset[str]


#: Fields that never hold a node worth visiting: names and numbers, and the context and operator
#: singletons (`Load`, `Add`, `Eq`, ...), which hold nothing: 2,242 of the 6,194 nodes of TE
#: 2.20.2's selector.
_LEAF_FIELDS = frozenset(
    ("ctx", "op", "ops", "id", "attr", "arg", "name", "module", "level", "kind", "conversion")
    + ("simple", "is_async", "type_comment")
)
#: The fields `descendants` visits, per node type.
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _LEAF_FIELDS)
    return fields


def descendants(node: ast.AST, skip: ast.AST | None = None) -> list[ast.AST]:
    """`node` and every node under it but the context and operator singletons, in no
    particular order: what `ast.walk` yields, at a third of its cost; nothing under `skip`, if
    given (itself included). A list, grown while it is read (each node's children appended
    behind it): no generator to resume at every node, which cost `module_scan`'s walk of TE
    2.20.2's whole module 8% more."""
    found = [node]
    push, fields_of = found.append, _CHILD_FIELDS.get
    for current in found:
        if current is skip:
            continue
        kind = type(current)
        children = fields_of(kind)
        if children is None:  # (an empty tuple where nothing is under it: most nodes)
            children = _child_fields(kind)
        for name in children:
            value = getattr(current, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push(item)
            elif isinstance(value, ast.AST):
                push(value)
    return found


class _Walker:
    """Finds the `Facts` of nodes, and while indexing a function (`index`), what
    `FunctionIndex` holds of the whole function too.

    Walking the selector is most of what preparing an analysis costs: each node is visited
    once, by one loop that records what it finds for both.
    """

    def __init__(self, parameter: str | None, names: Names, index: bool) -> None:
        self.parameter = parameter
        self.names = names
        self.index = index
        self.facts: dict[ast.AST, Facts] = {}
        self.leaves: list[tuple[ast.AST | list, Facts]] = []
        #: Per statement, what executing it binds (`Program.write_bits` without helpers' writes):
        #: bound names, and names of objects changed in place where they are locals.
        self.writes: dict[ast.stmt, tuple[int, int]] = {}
        #: The function's own returns, and its own assignments with the top-level statement
        #: each is in (not those of nested definitions), in source order.
        self.returns: list[ast.Return] = []
        #: Per compound statement, `blocks(stmt)`: the walk asks it of each, and so does every
        #: slice (`Program.blocks`).
        self.blocks: dict[ast.stmt, list[list[ast.stmt]]] = {}
        #: Statements with a `raise` or `assert` in them, nested definitions' aside
        #: (`Program.raises` without helpers), and how many the walk has met outside definitions.
        self.raising: set[ast.stmt] = set()
        self._jumps = 0
        self.own_assignments: list[tuple[ast.Assign, ast.stmt]] = []
        self._top: ast.stmt | None = None
        self._nested = 0
        self.stores: set[str] = set()
        self.text: set[str] = set()
        self.fields: set[str] = set()
        self.definitions: list[ast.FunctionDef] = []
        self.assignments: list[ast.Assign] = []
        self.compared: set[str] = set()
        self.rebinds: dict[str, int] = {}
        self.changed: set[str] = set()

    def statement(self, stmt: ast.stmt) -> Facts:
        """The facts of `stmt`, kept with those of its statements and heads."""
        kind = type(stmt)
        if kind in _DEFINITION_TYPES:
            # Its own parts, then its body: a helper's statements are asked about one by one.
            if self.index:
                self.changed.add(stmt.name)
                if kind is ast.FunctionDef:
                    self.definitions.append(stmt)
            parts = [self.leaf(part) for part in _signature(stmt)]
            self._nested, jumps = self._nested + 1, self._jumps
            parts += [self.statement(inner) for inner in stmt.body]
            self._nested, self._jumps = self._nested - 1, jumps  # its body runs where called
            found = _merged(parts)
            self.writes[stmt] = (self.names.of(stmt.name), 0)
        elif kind in BLOCK_STATEMENTS:
            parts, stores, roots = [], 0, 0
            for head in heads(stmt):
                found = self.facts[head] = self.leaf(head)
                parts.append(found)
                stores, roots = stores | found.stores, roots | found.roots
            for handler in getattr(stmt, "handlers", ()):
                if handler.name:  # `except E as name` binds it
                    stores |= self.names.of(handler.name)
            found_blocks = self.blocks[stmt] = blocks(stmt)
            jumps = self._jumps
            for block in found_blocks:
                for inner in block:
                    parts.append(self.statement(inner))
                    inner_stores, inner_roots = self.writes[inner]
                    stores, roots = stores | inner_stores, roots | inner_roots
            if self._jumps != jumps:
                self.raising.add(stmt)
            found = _merged(parts)
            self.writes[stmt] = (stores, roots)
        else:
            found = self.leaf(stmt)
            roots = found.roots
            if self.index and not self._nested:
                if kind is ast.Return:
                    self.returns.append(stmt)
                elif kind is ast.Assign:
                    self.own_assignments.append((stmt, self._top))
            if kind is ast.Raise or kind is ast.Assert:
                self.raising.add(stmt)
                self._jumps += 1
            elif kind is ast.Expr:  # `reasons.append(...)` changes a local object in place
                call = stmt.value
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
                    root = call.func.value
                    while isinstance(root, (ast.Attribute, ast.Subscript)):
                        root = root.value
                    if isinstance(root, ast.Name):
                        roots |= self.names.of(root.id)
            self.writes[stmt] = (found.stores, roots)
        self.facts[stmt] = found
        return found

    def leaf(self, part: ast.AST | list) -> Facts:
        """`walk` a part whole, and keep it among the leaves."""
        found = self.walk(part)
        self.leaves.append((part, found))
        return found

    def walk(self, node: ast.AST | list) -> Facts:
        """The facts of everything under `node` (a node, or a list of them)."""
        names, parameter, index = self.names, self.parameter, self.index
        loads = stores = roots = falsified = 0
        fields: set[str] = set()
        calls: set[str] = set()
        walrus = False
        todo = list(node) if type(node) is list else [node]
        pop, push, extend, fields_of = todo.pop, todo.append, todo.extend, _CHILD_FIELDS.get
        known, bit_of = names.bit.get, names.of
        Name, Constant, Attribute, Call, Compare, BoolOp, Load, Store, Node = _WALKED  # locals
        while todo:
            current = pop()
            kind = type(current)
            if kind is Name:
                name = current.id
                context = type(current.ctx)
                if context is Load:
                    loads |= known(name) or bit_of(name)
                else:
                    stores |= known(name) or bit_of(name)
                if index:
                    self.text.add(name)
                    if context is not Load:
                        self.rebinds[name] = self.rebinds.get(name, 0) + 1
                        if context is Store:
                            self.stores.add(name)
                continue  # no node below
            if kind is Constant:
                continue  # nor here
            if kind is Attribute:
                value, attr = current.value, current.attr
                named = type(value) is Name
                dotted = f"{value.id}.{attr}" if named else dotted_name(current)
                if type(current.ctx) is Load:
                    if dotted is not None:
                        loads |= known(dotted) or bit_of(dotted)
                    if named and value.id == parameter:
                        fields.add(attr)
                elif dotted is not None:
                    stores |= known(dotted) or bit_of(dotted)
                if index and named:
                    self.text.add(dotted)
                    if value.id == parameter:
                        self.fields.add(attr)
                push(value)  # its one child (the generic loop below, spelt out: most nodes)
                continue
            if kind is Call:
                func = current.func
                if type(func) is Name:
                    calls.add(func.id)
                elif index and type(func) is Attribute and type(func.value) is Name:
                    self.changed.add(func.value.id)  # a method called on it
                push(func)
                extend(current.args)
                extend(current.keywords)
                continue
            if kind is Compare:
                if index:
                    for side in (current.left, *current.comparators):
                        if type(side) is Name:  # (most sides: a name, or a literal)
                            self.compared.add(side.id)
                        elif type(side) is Attribute and (dotted := dotted_name(side)):
                            self.compared.add(dotted)
                push(current.left)
                extend(current.comparators)
                continue
            if kind is BoolOp:
                extend(current.values)
                continue
            if kind is ast.Subscript:
                if type(current.ctx) is not Load:
                    if index and type(current.value) is Name:
                        self.changed.add(current.value.id)  # `TABLE[key] = ...`
                    root = current.value
                    while isinstance(root, (Attribute, ast.Subscript)):
                        root = root.value
                    if type(root) is Name:
                        roots |= bit_of(root.id)
            elif kind is ast.Assign:
                targets = current.targets
                if type(current.value) is Constant and is_falsy_constant(current.value):
                    falsified |= names.bits(n for t in targets for n in target_names(t))
                if index:
                    for target in targets:
                        if type(target) is Name:
                            self.assignments.append(current)
                            break
            elif kind is ast.AnnAssign:
                if is_falsy_constant(current.value):
                    falsified |= names.bits(target_names(current.target))
            elif kind is ast.NamedExpr:
                walrus = True
            elif index and kind is ast.Global:
                self.changed.update(current.names)
            elif index and kind is ast.alias:
                self.changed.add(current.asname or current.name.partition(".")[0])
            children = fields_of(kind)
            if children is None:
                children = _child_fields(kind)
            for field in children:
                value = getattr(current, field, None)
                if type(value) is list:
                    for item in value:
                        if isinstance(item, Node):
                            push(item)
                elif isinstance(value, Node):
                    push(value)
        return new_facts(
            (loads, frozenset(fields) if fields else EMPTY, stores, roots)
            + (frozenset(calls) if calls else EMPTY, falsified, walrus)
        )


#: Expressions with nothing under them that runs or binds anything (`Program.calls_helper`).
_LEAF_EXPRESSIONS = frozenset((ast.Name, ast.Constant))
#: The node and context types `_Walker.walk` tests every node against.
_WALKED = (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.Compare, ast.BoolOp)
_WALKED += (ast.Load, ast.Store, ast.AST)


def _signature(definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> list:
    """What a definition holds besides its body: arguments, decorators, annotations, bases."""
    parts = []
    for field in type(definition)._fields:
        value = getattr(definition, field)
        if field != "body" and isinstance(value, (ast.AST, list)) and value:
            parts.append(value)
    return parts


def _merged(parts: list[Facts]) -> Facts:
    """The facts of code made of `parts`."""
    loads = stores = roots = falsified = 0
    fields = calls = EMPTY
    walrus = False
    for part in parts:
        loads |= part.loads
        stores |= part.stores
        roots |= part.roots
        falsified |= part.falsified
        if part.fields:
            fields = fields | part.fields
        if part.calls:
            calls = calls | part.calls
        walrus = walrus or part.walrus
    return new_facts((loads, fields, stores, roots, calls, falsified, walrus))


@functools.lru_cache(maxsize=2)  # keeps trees alive: flake8 moves on file by file
def function_index(function: ast.FunctionDef) -> FunctionIndex:
    argument = selector_parameter(function)
    walker = _Walker(argument.arg if argument else None, Names(), index=True)
    for part in _signature(function):  # its names and fields, for the index
        walker.walk(part)
    for stmt in function.body:
        walker._top = stmt
        walker.statement(stmt)
    return FunctionIndex(
        frozenset(walker.stores),
        frozenset(walker.text),
        frozenset(walker.fields),
        tuple(sorted(walker.definitions, key=POSITION)),
        tuple(sorted(walker.assignments, key=POSITION)),
        frozenset(walker.compared),
        walker.names,
        walker.facts,
        tuple(walker.leaves),
        walker.writes,
        tuple(walker.returns),
        tuple(walker.own_assignments),
        walker.blocks,
        frozenset(walker.raising),
        walker.rebinds,
        frozenset(walker.changed),
    )


class NodeInfo(TupleRecord):
    """`Facts` in names (`Program.info`)."""

    loads: frozenset[str]
    fields: frozenset[str]
    #: Names and dotted names bound, and local objects changed by subscript assignment.
    stores: frozenset[str]
    calls: frozenset[str]
    falsified: frozenset[str]
    walrus: bool


def dotted_name(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def target_names(target: ast.AST) -> list[str]:
    """Names (and dotted attribute names) that an assignment target binds."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in target_names(element)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    if isinstance(target, ast.Attribute):
        dotted = dotted_name(target)
        return [dotted] if dotted else []
    return []


def root_names(node: ast.AST, scope: frozenset[str]) -> list[str]:
    """The variable of `scope` an attribute / subscript chain starts from (`x` in `x.a[0]`)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return [node.id] if isinstance(node, ast.Name) and node.id in scope else []


def is_falsy_constant(node: ast.AST | None) -> bool:
    """`False`, `0`, `0.0` or `None`: what switches a backend flag off when assigned to it."""
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (bool, int, float, type(None)))
        and not node.value
    )


def blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in a compound statement (handlers and cases included)."""
    kind = type(stmt)
    if kind not in _COMPOUND_ALL:
        return []  # most statements: asked for on every walk, answered without looking
    found = [block for name in _BLOCK_FIELDS[kind] if (block := getattr(stmt, name))]
    found += [handler.body for handler in getattr(stmt, "handlers", ()) if handler.body]
    found += [case.body for case in getattr(stmt, "cases", ()) if case.body]
    return found


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body in source order, nested blocks included (not helpers)."""
    for stmt in body:
        yield stmt
        if not isinstance(stmt, DEFINITIONS):
            for block in blocks(stmt):
                yield from statements(block)


def enclosing_statements(body: list[ast.stmt], target: ast.stmt) -> list[ast.stmt] | None:
    """The compound statements of `body` around `target`, outermost first; None if it is not
    in `body`. Nested function definitions count as compound statements."""
    for stmt in body:
        if stmt is target:
            return []
        for block in blocks(stmt):
            inner = enclosing_statements(block, target)
            if inner is not None:
                return [stmt, *inner]
    return None


def heads(stmt: ast.stmt) -> list[ast.AST]:
    """Expressions a compound statement evaluates itself, outside its blocks."""
    if type(stmt) is ast.If:  # most of them
        return [stmt.test]
    found: list[ast.AST] = []
    for name in ("test", "iter", "target", "subject"):
        value = getattr(stmt, name, None)
        if value is not None:
            found.append(value)
    for item in getattr(stmt, "items", ()):
        found.append(item.context_expr)
        if item.optional_vars is not None:
            found.append(item.optional_vars)
    for handler in getattr(stmt, "handlers", ()):
        if handler.type is not None:
            found.append(handler.type)
    for case in getattr(stmt, "cases", ()):
        found.append(case.pattern)
        if case.guard is not None:
            found.append(case.guard)
    return found


class Helper(TupleRecord):
    """A function defined inside the selector: inlined at each call site."""

    node: ast.FunctionDef
    params: tuple[str, ...]
    #: Names the helper binds for itself (parameters included): restored after each call.
    locals: frozenset[str]
    #: Names it writes through to the selector (`nonlocal`).
    nonlocals: frozenset[str]


class Program:
    """One selector function and its caches."""

    def __init__(self, function: ast.FunctionDef) -> None:
        self.function = function
        argument = selector_parameter(function)
        #: The `AttentionParams` argument, whose attributes are the selector's inputs.
        self.parameter = argument.arg if argument else None
        #: Or, in the keyword-parameter dialect, the inputs themselves.
        self.inputs = selector_inputs(function)
        index = function_index(function)
        #: Names the function (or a helper in it) binds: the only objects it can mutate.
        self.locals = index.stores
        self.helpers: dict[str, list[Helper]] = {}
        for definition in index.definitions:
            self.helpers.setdefault(definition.name, []).append(_helper(definition))
        self.names = index.names
        self._locals = self.names.bits(self.locals)
        self._facts = index.facts
        self._info: dict[ast.AST, NodeInfo] = {}
        self._closure_reads: dict[ast.AST, int] = {}
        self._kills: dict[ast.AST, int] = {}
        #: `write_bits`, made at once where the walk's answer is the whole of it: for every
        #: statement that calls no local helper, what it binds and the local objects it changes.
        self._writes: dict[ast.AST, int] = {
            stmt: stores | (roots & self._locals)
            for stmt, (stores, roots) in index.writes.items()
            if index.facts[stmt].calls.isdisjoint(self.helpers)
        }
        self._head_bits: dict[ast.stmt, tuple[int, int]] = {}
        self._named: dict[tuple[str, ast.AST], frozenset[str]] = {}
        self._branch_keys: dict[ast.If, frozenset[str]] = {}
        self._raises: dict[ast.AST, bool] = {}
        self._raising = index.raising
        self._helpers_raise = any(
            inner in index.raising for definition in index.definitions for inner in definition.body
        )
        self._results: dict[str, frozenset[str]] = {}
        #: Walks the expressions the index did not keep (`facts`); it keeps nothing itself.
        self._walker = _Walker(self.parameter, self.names, index=False)
        self._blocks = index.blocks
        #: Each expression, condition and statement compiled once for every run
        #: (`interpret.evaluators`, `.refinement`, `.statements`), and each body as a run
        #: without a slice executes it (`Interpreter.plan`; a slice keeps its own, `Slice.plans`).
        self.evaluators: dict[ast.AST, object] = {}
        #: The evaluators shared by every node of a name, a dotted name or a literal.
        self.name_evaluators: dict[object, object] = {}
        self.refiners: dict[ast.AST, object] = {}
        self.executors: dict[ast.stmt, object] = {}
        self.plans: dict[int, tuple] = {}
        #: `own_enablers`' answers, which every store of a possibly-true value asks.
        self.own_enablers_memo: dict[tuple[str, frozenset], tuple | None] = {}
        #: Each call of a module predicate, expanded once for every run (the interpreter fills it).
        self.expansions: dict[ast.Call, ast.expr | None] = {}
        #: The outcome of each run of a module pure function, by what decides it, and the
        #: statements it took (`Expressions._run_pure`); the names those functions spell.
        self.pure_runs: dict[tuple, tuple[object, int]] = {}
        self.pure_names: tuple | None = None

    def blocks(self, stmt: ast.stmt) -> list[list[ast.stmt]]:
        """`blocks(stmt)`, cached: the slice asks for it repeatedly."""
        cached = self._blocks.get(stmt)
        if cached is None:
            cached = self._blocks[stmt] = blocks(stmt)
        return cached

    def helper(self, node: ast.FunctionDef) -> Helper:
        return next(h for h in self.helpers[node.name] if h.node is node)

    def facts(self, node: ast.AST) -> Facts:
        """What `node` reads, binds and calls, in bits: a statement's or a head's from the
        index; another expression's (a call, an operand) walked on first use."""
        found = self._facts.get(node)
        if found is None:
            found = self._facts[node] = self._walker.walk(node)
        return found

    def info(self, node: ast.AST) -> NodeInfo:
        """`facts` in names."""
        cached = self._info.get(node)
        if cached is None:
            facts, named = self.facts(node), self.names.named
            cached = self._info[node] = NodeInfo(
                named(facts.loads),
                facts.fields,
                named(self._stored(facts)),
                facts.calls,
                named(facts.falsified),
                facts.walrus,
            )
        return cached

    def _stored(self, facts: Facts) -> int:
        """What a node binds, the local objects it changes in place included."""
        return facts.stores | (facts.roots & self._locals)

    def stored_bits(self, node: ast.AST) -> int:
        """What `node` itself binds, in bits (`expression_write_bits` without helpers)."""
        return self._stored(self.facts(node))

    def _names(self, kind: str, node: ast.AST, bits: int) -> frozenset[str]:
        """`bits` in names, once per kind of question and node."""
        cached = self._named.get((kind, node))
        if cached is None:
            cached = self._named[(kind, node)] = self.names.named(bits)
        return cached

    def called_helpers(self, node: ast.AST) -> list[Helper]:
        """Local helpers a node calls by name (directly, not through other helpers)."""
        calls = self.facts(node).calls
        if not calls:
            return []  # most nodes call nothing
        return [h for name in calls for h in self.helpers.get(name, ())]

    def assigned(self, stmt: ast.AST) -> frozenset[str]:
        """Names a simple assignment statement binds."""
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            return self._names("assigned", stmt, self._stored(self.facts(stmt)))
        return EMPTY

    def binds(self, stmt: ast.AST, name: str) -> bool:
        """Whether `stmt` is a simple assignment that binds `name` (`assigned`, without its
        names)."""
        return isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and bool(
            self._stored(self.facts(stmt)) & self.names.of(name)
        )

    def own_enablers(self, name: str, enablers: frozenset) -> tuple | None:
        """Of the sites that may have made a value true, those of statements that bind `name`
        itself (a flag's own earlier value), or None when that is all of them; kept in
        `own_enablers_memo`."""
        own = tuple(s for s in enablers if s.stmt is not None and self.binds(s.stmt, name))
        answer = None if len(own) == len(enablers) else own
        self.own_enablers_memo[(name, enablers)] = answer
        return answer

    def results_of(self, callee: str) -> frozenset[str]:
        """Names assigned the result of a call to `callee` (by name or as an attribute); kept,
        as the strategy asks it of each backend and hazard."""
        found = self._results.get(callee)
        if found is None:
            found = self._results[callee] = frozenset(
                name
                for node in function_index(self.function).assignments
                if isinstance(node.value, ast.Call) and _callee(node.value) == callee
                for name in self.assigned(node)
            )
        return found

    def reads(self, node: ast.AST) -> tuple[frozenset[str], frozenset[str]]:
        """Names (dotted attribute names too) a node loads, and `AttentionParams` fields read."""
        facts = self.facts(node)
        return self._names("reads", node, facts.loads), facts.fields

    def closure_reads(self, node: ast.AST) -> frozenset[str]:
        """Names `node` reads, including everything read by the local helpers it calls."""
        return self._names("closure_reads", node, self.read_bits(node))

    def reads_any(self, node: ast.AST, names: Iterable[str]) -> bool:
        """Whether `closure_reads(node)` holds one of `names`."""
        return bool(self.read_bits(node) & self.names.bits(names))

    def read_bits(self, node: ast.AST) -> int:
        """`closure_reads`, in bits."""
        cached = self._closure_reads.get(node)
        if cached is None:
            facts = self.facts(node)
            cached = facts.loads
            if facts.calls:  # most nodes call nothing: no helper to read into
                self._closure_reads[node] = 0  # a helper that calls itself adds nothing new
                for helper in self.called_helpers(node):
                    cached |= self.read_bits(helper.node)
            self._closure_reads[node] = cached
        return cached

    def calls_helper(self, node: ast.AST) -> bool:
        """Whether evaluating `node` may run a local helper or bind a name (walrus). A name or a
        literal (a compared side, mostly) cannot, and is not walked."""
        if type(node) in _LEAF_EXPRESSIONS:
            return False
        facts = self.facts(node)
        return facts.walrus or any(name in self.helpers for name in facts.calls)

    def kills(self, node: ast.AST) -> frozenset[str]:
        """Names that some path through `node` assigns a falsy constant, helpers included.

        A filter is exactly that: a statement that can switch a backend flag off.
        """
        return self._names("kills", node, self.kill_bits(node))

    def kill_bits(self, node: ast.AST) -> int:
        """`kills`, in bits."""
        cached = self._kills.get(node)
        if cached is None:
            self._kills[node] = 0  # a helper that calls itself adds nothing new
            killed = self.facts(node).falsified
            for helper in self.called_helpers(node):
                killed |= self.kill_bits(helper.node) & self.names.bits(helper.nonlocals)
            cached = self._kills[node] = killed
        return cached

    def body_kills(self, node: ast.If) -> frozenset[str]:
        """Names the then-branch of an `if` can switch off."""
        killed = 0
        for stmt in node.body:
            killed |= self.kill_bits(stmt)
        return self._names("body_kills", node, killed)

    def branch_keys(self, node: ast.If) -> frozenset[str]:
        """Names the two branches of an `if` can leave different: what they may bind, and what
        any test in it reads, its own and those nested in its branches (refined on each side,
        helpers' reads included: a branch that raises where `b` is false leaves `b` true on
        that side alone). Asked at every join of both: kept in names."""
        keys = self._branch_keys.get(node)
        if keys is None:
            bits = self.write_bits(node) | self.read_bits(node)
            keys = self._branch_keys[node] = self.names.named(bits)
        return keys

    def writes(self, stmt: ast.stmt) -> frozenset[str]:
        """Names that executing `stmt` may rebind or mutate, local helpers' writes included."""
        return self._names("writes", stmt, self.write_bits(stmt))

    def write_bits(self, stmt: ast.stmt) -> int:
        """`writes`, in bits."""
        cached = self._writes.get(stmt)
        if cached is None:
            self._writes[stmt] = 0  # a helper that calls itself adds nothing new
            if isinstance(stmt, DEFINITIONS):
                written = self.names.of(stmt.name)
            elif self.blocks(stmt):
                written = 0
                for head in heads(stmt):
                    written |= self.expression_write_bits(head)
                written |= self.names.bits(h.name for h in getattr(stmt, "handlers", ()) if h.name)
                for block in self.blocks(stmt):
                    for inner in block:
                        written |= self.write_bits(inner)
            else:
                written = self.expression_write_bits(stmt)
                if isinstance(stmt, ast.Expr):
                    written |= self.names.bits(self.mutated(stmt))
            cached = self._writes[stmt] = written
        return cached

    def head_bits(self, stmt: ast.stmt) -> tuple[int, int]:
        """What a compound statement's heads read and bind (`read_bits`,
        `expression_write_bits`), kept: every slice asks it of every compound statement."""
        cached = self._head_bits.get(stmt)
        if cached is None:
            reads = written = 0
            for head in heads(stmt):
                facts = self.facts(head)
                if facts.calls.isdisjoint(self.helpers):  # most heads: no helper to look into
                    reads |= facts.loads
                    written |= self._stored(facts)
                else:
                    reads |= self.read_bits(head)
                    written |= self.expression_write_bits(head)
            cached = self._head_bits[stmt] = (reads, written)
        return cached

    def expression_write_bits(self, node: ast.AST) -> int:
        """What an expression (or simple statement) binds, helper writes included, in bits."""
        written = self._stored(self.facts(node))
        for helper in self.called_helpers(node):
            nonlocals = self.names.bits(helper.nonlocals)
            for inner in helper.node.body:
                written |= self.write_bits(inner) & nonlocals
        return written

    def derived_names(self, seeds: Iterable[str]) -> set[str]:
        """Local names whose value is computed from `seeds` (names, or `AttentionParams` fields).

        A name is derived when some assignment to it reads a seed or a derived name; the closure
        follows `x = attention_params.head_dim_qk` and `fa2_padded_head_dim = max(...)` alike. A
        comprehension's variable is the comprehension's own, not the assignment's: TE 1.x's
        `run_config = {..., "cudnn_version": ".".join([str(i) for i in cudnn_version])}` beside
        the compute capability derives `run_config`, not the `i` of every other comprehension.
        """
        derived = self.names.bits(seeds)
        changed = True
        while changed:
            changed = False
            for targets, reads in self._derivations:
                if reads & derived and targets & ~derived:
                    derived |= targets
                    changed = True
        return set(self.names.named(derived))

    @functools.cached_property
    def _derivations(self) -> list[tuple[int, int]]:
        """Per assignment with a plain name among its targets: what it binds (its value's
        comprehension variables left out) and what its value reads, fields included."""
        names, found = self.names, []
        for node in function_index(self.function).assignments:
            facts = self.facts(node)
            targets = self._stored(facts)
            if len(node.targets) == 1 and type(node.targets[0]) is ast.Name:
                # A plain name, the usual target, loads nothing: the statement reads what its
                # value reads, and its facts are at hand.
                value, named = facts, names.of(node.targets[0].id)
            else:
                plain = all(type(target) is ast.Name for target in node.targets)
                value = facts if plain else self.facts(node.value)
                named = names.bits(n for target in node.targets for n in target_names(target))
            if targets & ~named:  # a comprehension's variable, or a walrus, bound in the value
                targets &= ~names.bits(_comprehension_variables(node))
            reads = value.loads | names.bits(value.fields) if value.fields else value.loads
            found.append((targets, reads))
        return found

    def mutated(self, stmt: ast.Expr) -> list[str]:
        """The local object a statement like `reasons.append(...)` changes in place.

        A method call whose result is discarded is taken to mutate its receiver; one whose
        result is used (`if recipe.delayed():`) to query it.
        """
        call = stmt.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            return root_names(call.func.value, self.locals)
        return []

    def raises(self, stmt: ast.stmt) -> bool:
        """Whether `stmt` may raise explicitly (`raise`, `assert`, a helper that does). The walk
        found the statements with a `raise` or `assert` of their own (`FunctionIndex.raising`);
        the calls in one are looked into only where some local helper holds such a statement."""
        if stmt in self._raising:
            return True
        if not self._helpers_raise:
            return False
        cached = self._raises.get(stmt)
        if cached is None:
            self._raises[stmt] = False  # a helper that calls itself adds nothing new
            if isinstance(stmt, DEFINITIONS):
                cached = False
            else:
                parts = heads(stmt) if self.blocks(stmt) else [stmt]
                cached = any(
                    self.raises(inner) for block in self.blocks(stmt) for inner in block
                ) or any(
                    self.raises(inner)
                    for part in parts
                    for helper in self.called_helpers(part)
                    for inner in helper.node.body
                )
            self._raises[stmt] = cached
        return cached


def _comprehension_variables(node: ast.Assign) -> set[str]:
    return {
        name.id
        for generator in descendants(node.value)
        if isinstance(generator, ast.comprehension)
        for name in descendants(generator.target)
        if isinstance(name, ast.Name)
    }


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _helper(node: ast.FunctionDef) -> Helper:
    arguments = node.args
    params = tuple(a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs))
    extra = tuple(a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None)
    declared, bound = set(), set(params) | set(extra)
    stack = list(node.body)
    while stack:  # the helper's own scope: nested definitions are named, not entered
        child = stack.pop()
        if isinstance(child, (ast.Nonlocal, ast.Global)):
            declared.update(child.names)
        elif isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
            bound.add(child.id)
        if isinstance(child, (*DEFINITIONS, ast.Lambda)):
            if not isinstance(child, ast.Lambda):
                bound.add(child.name)
            continue
        stack.extend(ast.iter_child_nodes(child))
    return Helper(node, params, frozenset(bound - declared), frozenset(declared))
