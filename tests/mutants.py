"""AST mutation operators for differential fuzzing of the analyzer against the harness.

Each operator names the places ("sites") in a selector function where it can apply, in source
order, and applies to one of them. A mutation is (operator, site index); a mutant is a base
selector and a sequence of mutations, so it is rebuilt exactly from those few values and no TE
source is ever stored (`tests/fuzz_regressions/` keeps failing mutants that way).

The operators are the ways a fork breaks a filter by hand:

- `drop_filter`: delete an `if` that switches a flash backend's flag off;
- `negate`: negate a filter's condition, or one of the conditions it is built from;
- `move_late`: move a top-level filter to just after a later statement that recombines the flags
  (`use_flash_attention_4 = use_flash_attention and use_flash_attention_4`,
  `use_flash_attention = ... or use_flash_attention_4`, `available_backends = [...]`) or that
  picks the flash version (`if use_flash_attention_4: flash_attention_backend = ...`);
- `re_enable`: insert `flag = True` or `flag = use_flash_attention` after one of the last top-level
  statements that switch the flag off;
- `arch`: replace a compute-capability tuple in a comparison by another architecture, or drop
  an element of / add one to an allowlist of them;
- `wrap_kill`: replace `flag = False` by a call to a local `_disable_*()` helper that does it
  through `nonlocal`, defined just before the call;
- `wrap_guard`: move a whole filter into a local helper (with `nonlocal` for what it assigns)
  and call it where the filter was.

Filters are recognised syntactically here, independently of `lint_plugin`, so that a fault in
the analyzer's own notion of a filter cannot hide itself from the fuzzer.
"""

from __future__ import annotations

import ast
import builtins
import collections
import itertools
import pickle
from dataclasses import dataclass
from typing import Callable, Iterator

from selector_patch.roles import ROLES


def _copied(function: ast.FunctionDef) -> ast.FunctionDef:
    """A deep copy of the selector's definition to rewrite, made by a pickle round trip: the
    same nodes and positions as `copy.deepcopy`'s, at a third of its cost (a fuzz example makes
    one of TE 2.20.2's 1,460-line selector)."""
    return pickle.loads(pickle.dumps(function, protocol=pickle.HIGHEST_PROTOCOL))


#: Every name a TE dialect uses for a flash backend's on/off flag (the registry's backends);
#: `use_flash_attention` is FA2's in TE 1.x - 2.1 and the gate FA2 - FA4 are `and`-ed with after.
FLASH_FLAGS = frozenset(
    itertools.chain.from_iterable(role.flags for role in ROLES.values() if role.flash_major)
)
GATE = "use_flash_attention"
#: Architectures an `arch` mutation may write, the ones TE's filters talk about.
ARCHITECTURES = ((8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (11, 0), (12, 0), (12, 1))
#: Names whose assignment picks the returned backend after the flags are recombined.
SELECTION_NAMES = frozenset({"available_backends", "flash_attention_backend"})

Block = list  # a statement list inside the tree being mutated


@dataclass(frozen=True)
class Mutation:
    operator: str
    #: Index into the operator's sites, reduced modulo their number when applied.
    site: int


@dataclass
class Site:
    """One place an operator can apply: what it does, in words, and the edit itself."""

    description: str
    apply: Callable[[], None]


# ---------------------------------------------------------------- syntax helpers


def _statements(body: Block) -> Iterator[tuple[Block, ast.stmt]]:
    """Every statement with the block holding it, nested blocks included, helpers excluded."""
    for stmt in list(body):
        yield body, stmt
        if isinstance(stmt, SCOPES):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _statements(inner)
        for handler in getattr(stmt, "handlers", ()):
            yield from _statements(handler.body)


#: Nodes with a scope of their own: what they bind is not the selector's.
SCOPES = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
)  # fmt: skip


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk` in source order that does not enter nested scopes."""
    pending = [node]
    while pending:
        current = pending.pop()
        yield current
        pending.extend(
            child
            for child in reversed(list(ast.iter_child_nodes(current)))
            if not isinstance(child, SCOPES)
        )


def _is_kill(stmt: ast.AST) -> str | None:
    """The flag `stmt` switches off (`flag = False` / `= None` / `= 0`), if it does."""
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id in FLASH_FLAGS
        and isinstance(stmt.value, ast.Constant)
        and not stmt.value.value
    ):
        return stmt.targets[0].id
    return None


def _helpers(function: ast.FunctionDef) -> dict[str, set[str]]:
    """Local helpers of the selector and the flags each switches off through `nonlocal`."""
    helpers = {}
    for node in ast.walk(function):
        if isinstance(node, ast.FunctionDef) and node is not function:
            nonlocal_names = {
                name for n in ast.walk(node) if isinstance(n, ast.Nonlocal) for name in n.names
            }
            helpers[node.name] = {
                flag for n in ast.walk(node) if (flag := _is_kill(n)) and flag in nonlocal_names
            }
    return helpers


def _kills(stmt: ast.stmt, helpers: dict[str, set[str]]) -> set[str]:
    """Flags a statement can switch off, directly or through a local helper."""
    killed = set()
    for node in _walk(stmt):
        flag = _is_kill(node)
        if flag:
            killed.add(flag)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in helpers
        ):
            killed |= helpers[node.func.id]
    return killed


def _filters(function: ast.FunctionDef) -> list[tuple[Block, ast.If]]:
    killing = _killing(function, _helpers(function))
    return [
        (block, stmt)
        for block, stmt in _statements(function.body)
        if isinstance(stmt, ast.If) and id(stmt) in killing
    ]


def _killing(function: ast.FunctionDef, helpers: dict[str, set[str]]) -> set[int]:
    """The ids of the selector's nodes for which `_kills` is not empty, in one pass over it
    (`_kills` of each `if` walks the `if`s inside it again: the operators ask for the filters
    of every site)."""
    found: set[int] = set()

    def visit(node: ast.AST) -> bool:
        kills = bool(_is_kill(node)) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and bool(helpers.get(node.func.id))
        )
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, SCOPES) and visit(child):
                kills = True
        if kills:
            found.add(id(node))
        return kills

    for stmt in function.body:
        if not isinstance(stmt, SCOPES):
            visit(stmt)
    return found


def _short(node: ast.AST, width: int = 70) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _remove(block: Block, stmt: ast.stmt) -> None:
    block.remove(stmt)
    if not block:
        block.append(ast.Pass())


def _locals(function: ast.FunctionDef) -> set[str]:
    """Names the selector binds in its own scope (what a helper may declare `nonlocal`)."""
    return {
        node.id
        for node in _walk(function)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    } | {a.arg for a in function.args.args}


def _fresh_name(taken: set[str], stem: str) -> str:
    """A helper name not yet defined in the selector (and now taken)."""
    candidates = (f"{stem}_{index}" if index else stem for index in itertools.count())
    name = next(candidate for candidate in candidates if candidate not in taken)
    taken.add(name)
    return name


def _defined(function: ast.FunctionDef) -> set[str]:
    return {node.name for node in ast.walk(function) if isinstance(node, ast.FunctionDef)}


def _helper_def(name: str, nonlocal_names: list[str], body: list[ast.stmt]) -> ast.FunctionDef:
    """`def name(): nonlocal ...; <body>` (parsed, so it has every field this Python wants)."""
    helper = ast.parse(f"def {name}():\n    pass").body[0]
    declaration = [ast.Nonlocal(names=nonlocal_names)] if nonlocal_names else []
    helper.body = [*declaration, *body]
    return helper


def _call_stmt(name: str) -> ast.Expr:
    return ast.Expr(ast.Call(func=ast.Name(name, ast.Load()), args=[], keywords=[]))


# ---------------------------------------------------------------- operators


def _drop_filter(function: ast.FunctionDef) -> list[Site]:
    return [
        Site(
            f"drop `if {_short(stmt.test)}` (line {stmt.lineno})",
            lambda b=block, s=stmt: _remove(b, s),
        )
        for block, stmt in _filters(function)
    ]


def _subconditions(node: ast.expr) -> Iterator[tuple[ast.AST, str, ast.expr]]:
    """(parent, field, condition) for every condition `node` is an `and`/`or`/`not` of."""
    if isinstance(node, ast.BoolOp):
        for index, operand in enumerate(node.values):
            yield node, f"values.{index}", operand
            yield from _subconditions(operand)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield node, "operand", node.operand
        yield from _subconditions(node.operand)


def _replace(parent: ast.AST, field: str, new: ast.expr) -> None:
    if "." in field:
        name, index = field.split(".")
        getattr(parent, name)[int(index)] = new
    else:
        setattr(parent, field, new)


def _negate(function: ast.FunctionDef) -> list[Site]:
    sites = []
    for _, stmt in _filters(function):
        places = [(stmt, "test", stmt.test), *_subconditions(stmt.test)]
        for parent, field, condition in places:
            sites.append(
                Site(
                    f"negate `{_short(condition)}` in the filter at line {stmt.lineno}",
                    lambda p=parent, f=field, c=condition: _replace(
                        p, f, ast.UnaryOp(ast.Not(), c)
                    ),
                )
            )
    return sites


def _is_late_anchor(stmt: ast.stmt) -> bool:
    """A statement that recombines the flags or picks the returned flash version."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, ast.Name) and target.id in SELECTION_NAMES:
            return True
        if isinstance(target, ast.Name) and target.id in FLASH_FLAGS:
            return isinstance(stmt.value, ast.BoolOp) and all(
                isinstance(operand, ast.Name) and operand.id in FLASH_FLAGS
                for operand in stmt.value.values
            )
    if isinstance(stmt, ast.If):
        return any(
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Store)
            and node.id in SELECTION_NAMES
            for node in _walk(stmt)
        )
    return False


def _move_late(function: ast.FunctionDef) -> list[Site]:
    body = function.body
    helpers = _helpers(function)
    anchors = [(index, stmt) for index, stmt in enumerate(body) if _is_late_anchor(stmt)]
    sites = []
    for index, stmt in enumerate(body):
        if not (isinstance(stmt, ast.If) and _kills(stmt, helpers)):
            continue
        for _, anchor in (a for a in anchors if a[0] > index):
            sites.append(
                Site(
                    f"move `if {_short(stmt.test)}` (line {stmt.lineno}) after"
                    f" `{_short(anchor, 50)}` (line {anchor.lineno})",
                    lambda s=stmt, a=anchor: (body.remove(s), body.insert(body.index(a) + 1, s)),
                )
            )
    return sites


def _re_enable(function: ast.FunctionDef) -> list[Site]:
    body = function.body
    helpers = _helpers(function)
    bound = _locals(function)
    sites = []
    for flag in sorted(FLASH_FLAGS & bound):
        killers = [stmt for stmt in body if flag in _kills(stmt, helpers)][-3:]
        values = ["True"] + ([GATE] if flag != GATE and GATE in bound else [])
        for stmt, value in itertools.product(killers, values):
            new = ast.parse(f"{flag} = {value}").body[0]
            sites.append(
                Site(
                    f"insert `{flag} = {value}` after line {stmt.lineno}",
                    lambda s=stmt, n=new: body.insert(body.index(s) + 1, n),
                )
            )
    return sites


def _arch(node: ast.AST) -> tuple[int, int] | None:
    if (
        isinstance(node, ast.Tuple)
        and len(node.elts) == 2
        and all(
            isinstance(e, ast.Constant) and type(e.value) is int and 0 <= e.value < 20
            for e in node.elts
        )
    ):
        return (node.elts[0].value, node.elts[1].value)
    return None


def _arch_node(arch: tuple[int, int]) -> ast.Tuple:
    return ast.Tuple([ast.Constant(arch[0]), ast.Constant(arch[1])], ast.Load())


def _arch_sites(function: ast.FunctionDef) -> list[Site]:
    sites = []
    for compare in (n for n in _walk(function) if isinstance(n, ast.Compare)):
        for node in ast.walk(compare):
            for field, value in ast.iter_fields(node):
                items = value if isinstance(value, list) else [value]
                for position, child in enumerate(items):
                    arch = _arch(child)
                    if arch is None:
                        continue
                    where = f"{field}.{position}" if isinstance(value, list) else field
                    for other in ARCHITECTURES:
                        if other != arch:
                            sites.append(
                                Site(
                                    f"replace {arch} by {other} in `{_short(compare)}`"
                                    f" (line {compare.lineno})",
                                    lambda p=node, f=where, o=other: _replace(p, f, _arch_node(o)),
                                )
                            )
                if isinstance(node, (ast.Tuple, ast.List)) and any(_arch(e) for e in node.elts):
                    sites.extend(_allowlist_sites(node, compare))
    return sites


def _allowlist_sites(allowlist: ast.Tuple | ast.List, compare: ast.Compare) -> list[Site]:
    archs = [_arch(e) for e in allowlist.elts]
    where = f"in `{_short(compare)}` (line {compare.lineno})"
    sites = []
    if len(archs) > 1:
        for position, arch in enumerate(archs):
            sites.append(
                Site(
                    f"drop {arch} {where}",
                    lambda n=allowlist, i=position: n.elts.pop(i),
                )
            )
    for other in ARCHITECTURES:
        if other not in archs:
            sites.append(
                Site(
                    f"add {other} {where}",
                    lambda n=allowlist, o=other: n.elts.append(_arch_node(o)),
                )
            )
    return sites


def _wrap_kill(function: ast.FunctionDef) -> list[Site]:
    sites, taken = [], _defined(function)
    for block, stmt in _statements(function.body):
        flag = _is_kill(stmt)
        if flag is None:
            continue
        name = _fresh_name(taken, f"_disable_{flag}")

        def apply(b=block, s=stmt, f=flag, n=name) -> None:
            position = b.index(s)
            b[position : position + 1] = [_helper_def(n, [f], [s]), _call_stmt(n)]

        sites.append(
            Site(
                f"wrap `{flag} = {ast.unparse(stmt.value)}` (line {stmt.lineno}) in {name}()", apply
            )
        )
    return sites


def _stores(node: ast.AST) -> collections.Counter[str]:
    return collections.Counter(
        n.id for n in _walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    )


def _wrap_guard(function: ast.FunctionDef) -> list[Site]:
    """Filters moved into a helper, where `nonlocal` can reach every name they assign."""
    declared_global = {
        name for node in _walk(function) if isinstance(node, ast.Global) for name in node.names
    }
    everywhere = _stores(function)
    sites, taken = [], _defined(function)
    for block, stmt in _filters(function):
        inner = list(_walk(stmt))
        if any(isinstance(n, (ast.Return, ast.Break, ast.Continue)) for n in inner):
            continue  # control flow that would mean something else inside a helper
        assigned = _stores(stmt)
        if any(everywhere[n] == count or n in declared_global for n, count in assigned.items()):
            continue  # `nonlocal` needs a binding in the selector's own scope
        name = _fresh_name(taken, "_filter")

        def apply(b=block, s=stmt, names=sorted(assigned), n=name) -> None:
            position = b.index(s)
            b[position : position + 1] = [_helper_def(n, names, [s]), _call_stmt(n)]

        sites.append(Site(f"wrap the filter at line {stmt.lineno} in {name}()", apply))
    return sites


OPERATORS: dict[str, Callable[[ast.FunctionDef], list[Site]]] = {
    "drop_filter": _drop_filter,
    "negate": _negate,
    "move_late": _move_late,
    "re_enable": _re_enable,
    "arch": _arch_sites,
    "wrap_kill": _wrap_kill,
    "wrap_guard": _wrap_guard,
}


@dataclass(frozen=True)
class Mutant:
    text: str
    #: The mutations as applied: site indices reduced to the operator's sites.
    mutations: tuple[Mutation, ...]
    #: What each mutation did, in words (line numbers are the base selector's).
    descriptions: tuple[str, ...]


def mutate(module: ast.Module, function_name: str, mutations: list[Mutation]) -> Mutant | None:
    """The mutant of `module`'s selector function; None if an operator has no site left.

    `module` is not changed: the selector function is copied, mutated and put back into a
    shallow copy of the module for `ast.unparse`.
    """
    position, original = next(
        (i, node)
        for i, node in enumerate(module.body)
        if isinstance(node, ast.FunctionDef) and node.name == function_name
    )
    function = _copied(original)
    applied, descriptions = [], []
    for mutation in mutations:
        sites = OPERATORS[mutation.operator](function)
        if not sites:
            return None
        index = mutation.site % len(sites)
        sites[index].apply()
        # Nodes a mutation creates take their parent's line, so a later one can name them.
        ast.fix_missing_locations(function)
        applied.append(Mutation(mutation.operator, index))
        descriptions.append(sites[index].description)
    mutant = ast.Module(
        body=[*module.body[:position], function, *module.body[position + 1 :]], type_ignores=[]
    )
    return Mutant(ast.unparse(mutant), tuple(applied), tuple(descriptions))


# ------------------------------------------------------- equivalent spellings of a guard
#
# A second class of operators rewrites a filter into another spelling of the same condition,
# the way forks write their guards: `respell` applies them. The verdict on every hazard (and
# the codemod's "already-guarded", nothing inserted) must not change. The compute capability
# tests rewritten are those comparing the device's capability (a name bound from TE's hardware
# query) with literal architectures; "equivalent" is over the architectures TE knows
# (`ARCHITECTURES`: nothing newer than 12.x, so `cc >= (12, 0)` is `cc[0] == 12`). Some move
# a guard out of the selector, as fork maintainers do: its architectures into a module-level
# constant (`CONSTANTS`), its condition or one conjunct of it into a module-level pure
# predicate (`_spell_predicate`); what they define goes before the selector.

#: TE's hardware query; its result's name is what the capability rewrites look for.
CAPABILITY_QUERY = "get_device_compute_capability"


def _capability_names(function: ast.FunctionDef) -> set[str]:
    return {
        target.id
        for node in _walk(function)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", getattr(node.value.func, "attr", None))
        == CAPABILITY_QUERY
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _arch_literal(node: ast.AST) -> list[tuple[int, int]] | None:
    """The architectures of a tuple / list / set display of them."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts:
        archs = [_arch(element) for element in node.elts]
        return None if None in archs else archs
    return None


def _capability_tests(function: ast.FunctionDef) -> list[tuple[ast.Compare, list]]:
    """`cc in (...)` / `cc not in (...)` / `cc == (a, b)` inside filters: (compare, archs)."""
    names = _capability_names(function)
    found = []
    for _, stmt in _filters(function):
        for node in _walk(stmt.test):
            if not (
                isinstance(node, ast.Compare)
                and len(node.ops) == 1
                and isinstance(node.left, ast.Name)
                and node.left.id in names
            ):
                continue
            op, right = node.ops[0], node.comparators[0]
            archs = _arch_literal(right) if isinstance(op, (ast.In, ast.NotIn)) else None
            if isinstance(op, ast.Eq) and _arch(right):
                archs = [_arch(right)]
            if archs:
                found.append((node, archs))
    return found


def _expression(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


def _become(node: ast.AST, new: ast.AST) -> None:
    """Turn `node` into `new` in place (its parent keeps pointing at it)."""
    node.__class__ = new.__class__
    for field in node._fields:
        if hasattr(node, field):
            delattr(node, field)
    for field in new._fields:
        setattr(node, field, getattr(new, field))


def _membership(compare: ast.Compare, container: str) -> str:
    name = compare.left.id
    negated = isinstance(compare.ops[0], ast.NotIn)
    return f"{name} {'not in' if negated else 'in'} {container}"


def _archs_source(archs: list[tuple[int, int]]) -> str:
    return ", ".join(repr(arch) for arch in archs)


def _family_test(name: str, archs: list[tuple[int, int]]) -> str | None:
    """`cc[0] == 12`-style tests for the families `archs` cover whole (over ARCHITECTURES)."""
    families = sorted({major for major, _ in archs})
    if set(archs) != {arch for arch in ARCHITECTURES if arch[0] in families}:
        return None
    if families == [12]:
        return f"{name}[0] == 12"
    return f"{name}[0] in {tuple(families)!r}"


#: How each container spelling writes a tuple of architectures `items` (source text).
CONTAINERS = {
    "set_display": "{{{items}}}",
    "frozenset_call": "frozenset(({items},))",
    "list_display": "[{items}]",
}
#: How each module-level constant spelling builds the same architectures.
CONSTANTS = {
    "module_constant": "({items},)",
    "frozenset_constant": "frozenset({{{items}}})",
    "set_constant": "{{{items}}}",
    "comprehension_constant": "tuple((major, minor) for major, minor in ({items},))",
    "set_comprehension_constant": "{{arch for arch in [{items}]}}",
}


def _spell_container(kind: str, prelude: list[ast.stmt], taken: set[str]):
    """`cc in (...)` with the architectures in another container (`CONTAINERS`), or in a
    module-level constant built as `CONSTANTS` says."""

    def sites(function: ast.FunctionDef) -> list[Site]:
        found = []
        for compare, archs in _capability_tests(function):
            if isinstance(compare.ops[0], ast.Eq):
                continue
            items = _archs_source(archs)

            def apply(c=compare, items=items) -> None:
                container = CONTAINERS.get(kind, "").format(items=items)
                if kind in CONSTANTS:
                    container = _fresh_name(taken, "_GUARDED_ARCHITECTURES")
                    built = CONSTANTS[kind].format(items=items)
                    prelude.append(ast.parse(f"{container} = {built}").body[0])
                _become(c, _expression(_membership(c, container)))

            found.append(Site(f"{kind} in `{_short(compare)}` (line {compare.lineno})", apply))
        return found

    return sites


#: Pure spellings of `cc in ARCHS` over a module-level constant: (the constant, built from the
#: architectures `items`; the test of `cc` on it, `c` the constant's name; whether a local
#: computed first from the constant stands in the test for it).
PURE = {
    "any_over_constant": ("({items},)", "any({cc} == arch for arch in {c})", False),
    "all_over_constant": ("({items},)", "not all({cc} != arch for arch in {c})", False),
    "max_over_constant": ("({items},)", "max(({cc} == arch for arch in {c}))", False),
    "min_over_constant": ("[{items}]", "not min([{cc} != arch for arch in {c}])", False),
    "len_over_constant": ("({items},)", "len([arch for arch in {c} if arch == {cc}]) > 0", False),
    "sorted_constant": ("{{{items}}}", "{cc} in sorted({c})", False),
    "mapping_subscript": (
        "{{'guarded': ({items},), 'other': ()}}",
        "{cc} in {c}['guarded']",
        False,
    ),
    "sequence_subscript": ("((), ({items},))", "{cc} in {c}[1]", False),
    "local_from_mapping": ("{{'guarded': ({items},)}}", "{c}['guarded']", True),
    "local_from_sorted": ("frozenset({{{items}}})", "sorted({c})", True),
    "local_filtered": ("({items},)", "tuple(a for a in {c} if any(a == b for b in {c}))", True),
}


def _spell_pure(kind: str, prelude: list[ast.stmt], taken: set[str]):
    """`cc in (...)` through a pure builtin or a subscript over a module-level constant
    (`PURE`), in the test itself or through a local computed from it before."""
    built, test, local = PURE[kind]

    def sites(function: ast.FunctionDef) -> list[Site]:
        found = []
        for compare, archs in _capability_tests(function):
            items = _archs_source(archs)

            def apply(c=compare, items=items) -> None:
                constant = _fresh_name(taken, "_GUARD_TABLE")
                prelude.append(ast.parse(f"{constant} = {built.format(items=items)}").body[0])
                cc = c.left.id
                if local:
                    name = _fresh_name(taken | _locals(function), "guard_archs")
                    value = test.format(c=constant)
                    position = int(bool(ast.get_docstring(function)))
                    function.body.insert(position, ast.parse(f"{name} = {value}").body[0])
                    spelling = f"{cc} in {name}"
                else:
                    spelling = test.format(cc=cc, c=constant)
                if isinstance(c.ops[0], ast.NotIn):
                    spelling = f"not ({spelling})"
                _become(c, _expression(spelling))

            found.append(Site(f"{kind} in `{_short(compare)}` (line {compare.lineno})", apply))
        return found

    return sites


def _spell_family(function: ast.FunctionDef) -> list[Site]:
    """`cc in ((12, 0), (12, 1))` as `cc[0] == 12`, `(12, 0) <= cc < (13, 0)`, `cc >= (12, 0)`."""
    found = []
    for compare, archs in _capability_tests(function):
        name = compare.left.id
        family = _family_test(name, archs)
        if family is None or isinstance(compare.ops[0], ast.NotIn):
            continue
        spellings = [family]
        if family.endswith("== 12"):
            spellings += [f"(12, 0) <= {name} < (13, 0)", f"{name} >= (12, 0)"]
        for spelling in spellings:
            found.append(
                Site(
                    f"`{_short(compare)}` as `{spelling}` (line {compare.lineno})",
                    lambda c=compare, s=spelling: _become(c, _expression(s)),
                )
            )
    return found


def _spell_any(function: ast.FunctionDef) -> list[Site]:
    """`cc in ARCHS` as `any(cc == arch for arch in ARCHS)` (`not any` for `not in`)."""
    found = []
    for compare, archs in _capability_tests(function):
        name = compare.left.id
        negated = "not " if isinstance(compare.ops[0], ast.NotIn) else ""
        spelling = f"{negated}any({name} == arch for arch in ({_archs_source(archs)},))"
        found.append(
            Site(
                f"`{_short(compare)}` as `{_short(_expression(spelling), 40)}` (line {compare.lineno})",
                lambda c=compare, s=spelling: _become(c, _expression(s)),
            )
        )
    return found


def _conjunctions(function: ast.FunctionDef) -> list[tuple[Block, ast.If]]:
    """Filters whose test is an `and` of several conditions, without an `else`."""
    return [
        (block, stmt)
        for block, stmt in _filters(function)
        if isinstance(stmt.test, ast.BoolOp)
        and isinstance(stmt.test.op, ast.And)
        and not stmt.orelse
    ]


def _spell_not(function: ast.FunctionDef) -> list[Site]:
    """`a and b` as `not (not a or not b)`."""

    def apply(stmt: ast.If) -> None:
        negated = [ast.UnaryOp(ast.Not(), operand) for operand in stmt.test.values]
        stmt.test = ast.UnaryOp(ast.Not(), ast.BoolOp(ast.Or(), negated))

    return [
        Site(f"De Morgan on the filter at line {stmt.lineno}", lambda s=stmt: apply(s))
        for _, stmt in _conjunctions(function)
    ]


def _spell_nested(function: ast.FunctionDef) -> list[Site]:
    """`if a and b and c: body` as `if a: if b: if c: body`."""

    def apply(stmt: ast.If) -> None:
        first, *rest = stmt.test.values
        inner = stmt.body
        for condition in reversed(rest):
            inner = [ast.If(test=condition, body=inner, orelse=[])]
        stmt.test, stmt.body = first, inner

    return [
        Site(f"nest the filter at line {stmt.lineno}", lambda s=stmt: apply(s))
        for _, stmt in _conjunctions(function)
    ]


def _spell_continue(function: ast.FunctionDef) -> list[Site]:
    """A capability test as a loop over the architectures with an early `continue`:
    `for arch in ARCHS: if cc != arch: continue; <the rest of the filter>`."""
    found = []
    capability_tests = _capability_tests(function)  # each walks every filter: once, not per site
    for block, stmt in _conjunctions(function):
        tests = [(c, a) for c, a in capability_tests if c in stmt.test.values]
        tests = [(c, a) for c, a in tests if not isinstance(c.ops[0], ast.NotIn)]
        for compare, archs in tests[:1]:

            def apply(b=block, s=stmt, c=compare, archs=archs) -> None:
                rest = [v for v in s.test.values if v is not c]
                arch = _fresh_name(_locals(function) | _defined(function), "_arch")
                loop = ast.parse(
                    f"for {arch} in ({_archs_source(archs)},):\n"
                    f"    if {c.left.id} != {arch}:\n"
                    "        continue\n"
                    "    break"
                ).body[0]
                condition = rest[0] if len(rest) == 1 else ast.BoolOp(ast.And(), rest)
                loop.body[-1:] = [ast.If(test=condition, body=s.body, orelse=[]), ast.Break()]
                b[b.index(s)] = loop

            found.append(Site(f"loop with `continue` for the filter at line {stmt.lineno}", apply))
    return found


def _spell_return(function: ast.FunctionDef) -> list[Site]:
    """The filter's test as a local helper with early returns: `def _guarded(): if not a:
    return False ... return True` and `if _guarded(): body`."""
    found, taken = [], _defined(function)
    for block, stmt in _conjunctions(function):
        name = _fresh_name(taken, "_hazard_applies")

        def apply(b=block, s=stmt, n=name) -> None:
            helper = ast.parse(f"def {n}():\n    return True").body[0]
            exits = [
                ast.If(
                    test=ast.UnaryOp(ast.Not(), v),
                    body=[ast.Return(ast.Constant(False))],
                    orelse=[],
                )
                for v in s.test.values
            ]
            helper.body[:0] = exits
            position = b.index(s)
            s.test = ast.Call(func=ast.Name(n, ast.Load()), args=[], keywords=[])
            b.insert(position, helper)

        found.append(Site(f"early returns for the filter at line {stmt.lineno} in {name}()", apply))
    return found


def _free_reads(condition: ast.expr) -> list[ast.expr] | None:
    """What a module-level predicate of `condition` takes as arguments: each name or attribute
    chain it reads that is not a builtin (the selector's locals, TE's `FlashAttentionUtils.*`),
    in order of first appearance, once each; None where it calls anything but a builtin, or
    binds a name (it would then not be a pure function of its arguments)."""
    reads: dict[str, ast.expr] = {}
    comprehensions = (n for n in ast.walk(condition) if isinstance(n, ast.comprehension))
    bound = {name for comprehension in comprehensions for name in _stores(comprehension.target)}

    def visit(node: ast.AST) -> bool:
        chain = node
        while isinstance(chain, ast.Attribute):
            chain = chain.value
        if isinstance(chain, ast.Name) and isinstance(node, (ast.Name, ast.Attribute)):
            if chain.id not in bound and chain.id not in BUILTINS:
                reads.setdefault(ast.unparse(node), node)
            return True
        if isinstance(node, ast.NamedExpr):
            return False
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in BUILTINS
        ):
            return False
        children = ast.iter_child_nodes(node)
        if isinstance(node, ast.Call):
            children = [*node.args, *(keyword.value for keyword in node.keywords)]
        return all(visit(child) for child in children)

    return list(reads.values()) if visit(condition) else None


#: Names every module reads without binding them.
BUILTINS = frozenset(dir(builtins))


def _spell_predicate(kind: str, prelude: list[ast.stmt], taken: set[str]):
    """A filter's condition ("positional", "keywords") or one conjunct of it ("conjunct") as a
    call of a module-level pure predicate, `def _guard_applies(a, b): return <condition>`,
    taking what the condition reads as its parameters; "keywords" passes them by keyword, in
    the reverse order."""

    def places(function: ast.FunctionDef) -> Iterator[tuple[ast.AST, str, ast.expr, int]]:
        for _, stmt in _filters(function):
            if kind != "conjunct":
                yield stmt, "test", stmt.test, stmt.lineno
            elif isinstance(stmt.test, ast.BoolOp) and isinstance(stmt.test.op, ast.And):
                for index, operand in enumerate(stmt.test.values):
                    yield stmt.test, f"values.{index}", operand, stmt.lineno

    def sites(function: ast.FunctionDef) -> list[Site]:
        found = []
        for parent, field, condition, line in places(function):
            reads = _free_reads(condition)
            if not reads:
                continue

            def apply(p=parent, f=field, c=condition, reads=reads) -> None:
                name = _fresh_name(taken, "_guard_applies")
                params = [ast.unparse(read).replace(".", "_") for read in reads]
                body = _Parameters(dict(zip(map(ast.unparse, reads), params))).visit(c)
                prelude.append(
                    ast.parse(
                        f"def {name}({', '.join(params)}):\n    return {ast.unparse(body)}"
                    ).body[0]
                )
                arguments = [ast.unparse(read) for read in reads]
                call = f"{name}({', '.join(arguments)})"
                if kind == "keywords":
                    pairs = reversed(list(zip(params, arguments)))
                    call = f"{name}({', '.join(f'{k}={v}' for k, v in pairs)})"
                _replace(p, f, _expression(call))

            found.append(
                Site(f"`{_short(condition, 50)}` (line {line}) as a module-level predicate", apply)
            )
        return found

    return sites


class _Parameters(ast.NodeTransformer):
    """A condition with each name or attribute chain it reads replaced by its parameter."""

    def __init__(self, params: dict[str, str]) -> None:
        self.params = params

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        name = self.params.get(ast.unparse(node))
        return self.generic_visit(node) if name is None else ast.Name(name, ast.Load())

    def visit_Name(self, node: ast.Name) -> ast.expr:
        name = self.params.get(node.id)
        return node if name is None else ast.Name(name, ast.Load())


def spellings(
    prelude: list[ast.stmt], taken: set[str]
) -> dict[str, Callable[[ast.FunctionDef], list[Site]]]:
    """The spelling operators; a module-level constant lands in `prelude`, named apart from
    `taken`."""
    return {
        **{kind: _spell_container(kind, prelude, taken) for kind in CONTAINERS},
        **{kind: _spell_container(kind, prelude, taken) for kind in CONSTANTS},
        **{kind: _spell_pure(kind, prelude, taken) for kind in PURE},
        "predicate": _spell_predicate("positional", prelude, taken),
        "predicate_keywords": _spell_predicate("keywords", prelude, taken),
        "conjunct_predicate": _spell_predicate("conjunct", prelude, taken),
        "family": _spell_family,
        "any": _spell_any,
        "not": _spell_not,
        "nested": _spell_nested,
        "continue": _spell_continue,
        "return": _spell_return,
    }


SPELLINGS = tuple(spellings([], set()))


def respell(module: ast.Module, function_name: str, rewrites: list[Mutation]) -> Mutant | None:
    """`module` with its selector's filters respelt (`SPELLINGS`); None if a rewrite has no
    site left. Module-level constants go right before the selector."""
    position, original = next(
        (i, node)
        for i, node in enumerate(module.body)
        if isinstance(node, ast.FunctionDef) and node.name == function_name
    )
    function = _copied(original)
    prelude: list[ast.stmt] = []
    taken = {name for node in module.body for name in _bound_at_top(node)}
    operators = spellings(prelude, taken)
    applied, descriptions = [], []
    for rewrite in rewrites:
        sites = operators[rewrite.operator](function)
        if not sites:
            return None
        index = rewrite.site % len(sites)
        sites[index].apply()
        # Nodes a rewrite creates take their parent's line, so a later rewrite can name them.
        ast.fix_missing_locations(function)
        applied.append(Mutation(rewrite.operator, index))
        descriptions.append(sites[index].description)
    for statement in prelude:
        ast.fix_missing_locations(statement)
    body = [*module.body[:position], *prelude, function, *module.body[position + 1 :]]
    return Mutant(
        ast.unparse(ast.Module(body=body, type_ignores=[])), tuple(applied), tuple(descriptions)
    )


def named_site(module: ast.Module, function_name: str, operator: str, words: str) -> int:
    """The index of the first site of `operator` (a mutation's or a spelling's) whose description
    holds `words`: a case named by what it rewrites, where an index would move whenever the
    base does."""
    function = next(
        node
        for node in module.body
        if isinstance(node, ast.FunctionDef) and node.name == function_name
    )
    sites = {**OPERATORS, **spellings([], set())}[operator](_copied(function))
    found = next((index for index, site in enumerate(sites) if words in site.description), None)
    assert found is not None, f"no {operator} site names {words!r}"
    return found


def _bound_at_top(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    return [
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    ]
