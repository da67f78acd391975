"""Syntactic facts about one selector function, computed once and shared by every analysis run.

The interpreter runs a selector once per witness; anything that depends only on the source -
which names a statement reads or writes, which nested functions are local helpers and what they
write through `nonlocal`, which statements switch a flag off or may raise - is computed here,
lazily and once per node. Facts about a compound statement are built from those of the
statements inside it, so every node is looked at a bounded number of times.
"""

from __future__ import annotations

import ast
import functools
import operator
from typing import Iterator, NamedTuple

from lint_plugin.engine.absint import EMPTY

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: Statements that hold statement lists (`blocks`).
COMPOUND = (
    *DEFINITIONS,
    *(ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match),
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)
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


class FunctionIndex(NamedTuple):
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


#: Fields that never hold a node worth visiting: names and numbers, and the context and operator
#: singletons (`Load`, `Add`, `Eq`, ...), which hold nothing: 2,242 of the 6,194 nodes of TE
#: 2.20.2's selector.
_LEAF_FIELDS = frozenset(
    ("ctx", "op", "ops", "id", "attr", "arg", "name", "module", "level", "kind", "conversion")
    + ("simple", "is_async", "type_comment")
)
#: The fields `descendants` visits, per node type.
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def descendants(node: ast.AST) -> Iterator[ast.AST]:
    """`node` and every node under it but the context and operator singletons, in no
    particular order.

    What `ast.walk` yields, at a third of its cost. Walking the selector (whole for
    `function_index`, statement by statement for `Program.info`) is most of what preparing an
    analysis costs.
    """
    todo = [node]
    pop, push, fields_of = todo.pop, todo.append, _CHILD_FIELDS.get
    while todo:
        current = pop()
        yield current
        kind = type(current)
        fields = fields_of(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _LEAF_FIELDS)
        for name in fields:
            value = getattr(current, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push(item)
            elif isinstance(value, ast.AST):
                push(value)


@functools.lru_cache(maxsize=2)  # keeps trees alive: flake8 moves on file by file
def function_index(function: ast.FunctionDef) -> FunctionIndex:
    argument = selector_parameter(function)
    parameter = argument.arg if argument else None
    stores, text, fields, definitions, assignments = set(), set(), set(), [], []
    compared: set[str] = set()
    for node in descendants(function):
        kind = type(node)
        if kind is ast.Name:
            text.add(node.id)
            if type(node.ctx) is ast.Store:
                stores.add(node.id)
        elif kind is ast.Attribute:
            value = node.value
            if type(value) is ast.Name:
                text.add(f"{value.id}.{node.attr}")
                if value.id == parameter:
                    fields.add(node.attr)
        elif kind is ast.Assign:
            if any(type(target) is ast.Name for target in node.targets):
                assignments.append(node)
        elif kind is ast.FunctionDef and node is not function:
            definitions.append(node)
        elif kind is ast.Compare:
            for side in (node.left, *node.comparators):
                if (dotted := dotted_name(side)) is not None:
                    compared.add(dotted)
    return FunctionIndex(
        frozenset(stores),
        frozenset(text),
        frozenset(fields),
        tuple(sorted(definitions, key=POSITION)),
        tuple(sorted(assignments, key=POSITION)),
        frozenset(compared),
    )


class NodeInfo(NamedTuple):
    """What one walk over a statement or expression finds (nested scopes included)."""

    #: Names and dotted attribute names loaded.
    loads: frozenset[str]
    #: `AttentionParams` fields read as attributes of the selector's argument.
    fields: frozenset[str]
    #: Names and dotted names bound, and local objects changed by subscript assignment.
    stores: frozenset[str]
    #: Names called as functions (`f(...)`), to match against local helpers.
    calls: frozenset[str]
    #: Names assigned a falsy constant (`flag = False`).
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
    if not isinstance(stmt, COMPOUND):
        return []  # most statements: asked for on every walk, answered without looking
    found = [
        getattr(stmt, name)
        for name in ("body", "orelse", "finalbody")
        if isinstance(getattr(stmt, name, None), list)
    ]
    found += [handler.body for handler in getattr(stmt, "handlers", ())]
    found += [case.body for case in getattr(stmt, "cases", ())]
    return [block for block in found if block]


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body in source order, nested blocks included (not helpers)."""
    for stmt in body:
        yield stmt
        if not isinstance(stmt, DEFINITIONS):
            for block in blocks(stmt):
                yield from statements(block)


@functools.lru_cache(maxsize=2)  # keeps trees alive, as `function_index` does
def body_statements(function: ast.FunctionDef) -> tuple[ast.stmt, ...]:
    """`statements(function.body)`, listed once per function: the delegation test and the
    return shape each read all of it (TE 2.20.2's selector: some 1,300 statements)."""
    return tuple(statements(function.body))


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


class Helper(NamedTuple):
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
        self._info: dict[ast.AST, NodeInfo] = {}
        self._closure_reads: dict[ast.AST, frozenset[str]] = {}
        self._kills: dict[ast.AST, frozenset[str]] = {}
        self._writes: dict[ast.AST, frozenset[str]] = {}
        self._raises: dict[ast.AST, bool] = {}
        self._blocks: dict[ast.stmt, list[list[ast.stmt]]] = {}
        self._branch_keys: dict[ast.If, frozenset[str]] = {}
        #: Each expression and statement compiled once for every run (`interpret.evaluators`,
        #: `interpret.statements`), and each body as a slice executes it (`Interpreter.plan`).
        self.evaluators: dict[ast.AST, object] = {}
        #: `own_enablers`' answers, which every store of a possibly-true value asks.
        self.own_enablers_memo: dict[tuple[str, frozenset], tuple | None] = {}
        self.executors: dict[ast.stmt, object] = {}
        self.plans: dict[object, dict[int, tuple]] = {}
        #: Each call of a module predicate, expanded once for every run (the interpreter fills it).
        self.expansions: dict[ast.Call, ast.expr | None] = {}

    def blocks(self, stmt: ast.stmt) -> list[list[ast.stmt]]:
        """`blocks(stmt)`, cached: the slice asks for it repeatedly."""
        cached = self._blocks.get(stmt)
        if cached is None:
            cached = self._blocks[stmt] = blocks(stmt)
        return cached

    def helper(self, node: ast.FunctionDef) -> Helper:
        return next(h for h in self.helpers[node.name] if h.node is node)

    def info(self, node: ast.AST) -> NodeInfo:
        """What `node` reads, binds and calls. A compound statement's is built from its heads'
        and its statements' (each computed once), so nested code is not walked again."""
        cached = self._info.get(node)
        if cached is None:
            blocks = self.blocks(node) if isinstance(node, ast.stmt) else ()
            if blocks and not isinstance(node, DEFINITIONS):
                parts = [self.info(head) for head in heads(node)]
                parts += [self.info(stmt) for block in blocks for stmt in block]
                cached = _merged_info(parts)
            else:
                cached = _node_info(node, self.parameter, self.locals)
            self._info[node] = cached
        return cached

    def called_helpers(self, node: ast.AST) -> list[Helper]:
        """Local helpers a node calls by name (directly, not through other helpers)."""
        return [h for name in self.info(node).calls for h in self.helpers.get(name, ())]

    def assigned(self, stmt: ast.AST) -> frozenset[str]:
        """Names a simple assignment statement binds."""
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            return self.info(stmt).stores
        return EMPTY

    def own_enablers(self, name: str, enablers: frozenset) -> tuple | None:
        """Of the sites that may have made a value true, those of statements that bind `name`
        itself (a flag's own earlier value), or None when that is all of them; kept in
        `own_enablers_memo`."""
        own = tuple(s for s in enablers if s.stmt is not None and name in self.assigned(s.stmt))
        answer = None if len(own) == len(enablers) else own
        self.own_enablers_memo[(name, enablers)] = answer
        return answer

    def results_of(self, callee: str) -> frozenset[str]:
        """Names assigned the result of a call to `callee` (by name or as an attribute)."""
        return frozenset(
            name
            for node in function_index(self.function).assignments
            if isinstance(node.value, ast.Call) and _callee(node.value) == callee
            for name in self.assigned(node)
        )

    def reads(self, node: ast.AST) -> tuple[frozenset[str], frozenset[str]]:
        """Names (dotted attribute names too) a node loads, and `AttentionParams` fields read."""
        info = self.info(node)
        return info.loads, info.fields

    def closure_reads(self, node: ast.AST) -> frozenset[str]:
        """Names `node` reads, including everything read by the local helpers it calls."""
        cached = self._closure_reads.get(node)
        if cached is None:
            self._closure_reads[node] = EMPTY  # a helper that calls itself adds nothing new
            names = set(self.info(node).loads)
            for helper in self.called_helpers(node):
                names |= self.closure_reads(helper.node)
            cached = self._closure_reads[node] = frozenset(names)
        return cached

    def calls_helper(self, node: ast.AST) -> bool:
        """Whether evaluating `node` may run a local helper or bind a name (walrus)."""
        info = self.info(node)
        return info.walrus or any(name in self.helpers for name in info.calls)

    def kills(self, node: ast.AST) -> frozenset[str]:
        """Names that some path through `node` assigns a falsy constant, helpers included.

        A filter is exactly that: a statement that can switch a backend flag off.
        """
        cached = self._kills.get(node)
        if cached is None:
            self._kills[node] = EMPTY  # a helper that calls itself adds nothing new
            killed = set(self.info(node).falsified)
            for helper in self.called_helpers(node):
                killed.update(self.kills(helper.node) & helper.nonlocals)
            cached = self._kills[node] = frozenset(killed)
        return cached

    def body_kills(self, node: ast.If) -> frozenset[str]:
        """Names the then-branch of an `if` can switch off."""
        return frozenset().union(*(self.kills(stmt) for stmt in node.body))

    def branch_keys(self, node: ast.If) -> frozenset[str]:
        """Names the two branches of an `if` can leave different: what they may bind, and what
        its test reads (refined on each side, helpers' reads included)."""
        cached = self._branch_keys.get(node)
        if cached is None:
            cached = self._branch_keys[node] = self.writes(node) | self.closure_reads(node.test)
        return cached

    def writes(self, stmt: ast.stmt) -> frozenset[str]:
        """Names that executing `stmt` may rebind or mutate, local helpers' writes included."""
        cached = self._writes.get(stmt)
        if cached is None:
            self._writes[stmt] = EMPTY  # a helper that calls itself adds nothing new
            if isinstance(stmt, DEFINITIONS):
                written = {stmt.name}
            elif self.blocks(stmt):
                written = set().union(*(self.expression_writes(h) for h in heads(stmt)))
                written.update(h.name for h in getattr(stmt, "handlers", ()) if h.name)
                for block in self.blocks(stmt):
                    for inner in block:
                        written |= self.writes(inner)
            else:
                written = self.expression_writes(stmt)
                if isinstance(stmt, ast.Expr):
                    written.update(self.mutated(stmt))
            cached = self._writes[stmt] = frozenset(written)
        return cached

    def expression_writes(self, node: ast.AST) -> set[str]:
        """Names an expression (or simple statement) binds, helper writes included."""
        written = set(self.info(node).stores)
        for helper in self.called_helpers(node):
            for inner in helper.node.body:
                written.update(self.writes(inner) & helper.nonlocals)
        return written

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
        """Whether `stmt` may raise explicitly (`raise`, `assert`, a helper that does)."""
        cached = self._raises.get(stmt)
        if cached is None:
            self._raises[stmt] = False  # a helper that calls itself adds nothing new
            if isinstance(stmt, (ast.Raise, ast.Assert)):
                cached = True
            elif isinstance(stmt, DEFINITIONS):
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


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _node_info(node: ast.AST, parameter: str | None, scope: frozenset[str]) -> NodeInfo:
    loads, fields, stores, calls, falsified, walrus = set(), set(), set(), set(), set(), False
    for child in descendants(node):
        kind = type(child)
        if kind is ast.Name:
            if type(child.ctx) is ast.Load:
                loads.add(child.id)
            else:
                stores.add(child.id)
        elif kind is ast.Attribute:
            dotted = dotted_name(child)
            if type(child.ctx) is ast.Load:
                if dotted is not None:
                    loads.add(dotted)
                if type(child.value) is ast.Name and child.value.id == parameter:
                    fields.add(child.attr)
            elif dotted is not None:
                stores.add(dotted)
        elif kind is ast.Subscript and type(child.ctx) is not ast.Load:
            stores.update(root_names(child.value, scope))
        elif kind is ast.Call and type(child.func) is ast.Name:
            calls.add(child.func.id)
        elif kind is ast.Assign and is_falsy_constant(child.value):
            falsified.update(n for t in child.targets for n in target_names(t))
        elif kind is ast.AnnAssign and is_falsy_constant(child.value):
            falsified.update(target_names(child.target))
        elif kind is ast.NamedExpr:
            walrus = True
    return NodeInfo(
        frozenset(loads),
        frozenset(fields) or EMPTY,
        frozenset(stores),
        frozenset(calls),
        frozenset(falsified),
        walrus,
    )


def _merged_info(parts: list[NodeInfo]) -> NodeInfo:
    """The info of code made of `parts`."""
    return NodeInfo(
        frozenset().union(*(part.loads for part in parts)),
        frozenset().union(*(part.fields for part in parts)),
        frozenset().union(*(part.stores for part in parts)),
        frozenset().union(*(part.calls for part in parts)),
        frozenset().union(*(part.falsified for part in parts)),
        any(part.walrus for part in parts),
    )


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
