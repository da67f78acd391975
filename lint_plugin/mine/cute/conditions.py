"""Kernel conditions in three-valued logic, on one device and one setting of the features.

A refusal's path is a list of branch tests. Whether it fires on (12, 0) with `deterministic`
True is a question about those tests with the arch names and the feature's variables bound
and every other name unknown: exactly what the selector analysis asks of TE's filters. So the
tests are evaluated by `lint_plugin.engine.interpreter` on the kernel function's own `Program`; the
interpreter's unknowns and short-circuit rules are the ones the analyzer trusts.

CuTe DSL wraps compile-time tests as `const_expr(...)` (`cutlass.const_expr`), which returns
its argument: the wrapper is dropped before evaluation.

Tests often read locals the function computed from its parameters (`alignment = 16 //
v.element_size()`, `is_sm90_range = 8 <= head_dim <= 256 and ...`, `use_block_sparsity =
block_sparse_tensors is not None`). A local the function assigns exactly once, by a plain
`name = expression`, is evaluated from that expression wherever a test reads it and nothing binds
it: the test is then decided by the parameters the expression reads. A local assigned more than
once (or by a loop, `with`, augmented assignment) has no one definition and stays unknown.

Evaluated `through_te`, the parameters TE's calls fix (`lint_plugin.mine.cute.reach`: `mask_mod`
is None on every TE call) hold their fixed values too, and the kernel's environment switches
their values with every variable unset (`lint_plugin.mine.cute.switches`).
"""

from __future__ import annotations

import ast
import copy
import functools
from collections import Counter
from typing import Any, Mapping

from lint_plugin.engine.absint import State, const
from lint_plugin.engine.interpreter import Facts, Interpreter
from lint_plugin.mine.cute.arch import ARCH_NAMES, Arch, arch_value
from lint_plugin.engine.program import Program, dotted_name
from lint_plugin.mine.cute.kernel import FUNCTION_CACHE
from lint_plugin.mine.cute.reach import Fixed
from lint_plugin.mine.cute.switches import Switch

#: CuTe DSL's identity marker for compile-time conditions.
CONST_EXPR = "const_expr"


def _const_expr(node: ast.AST) -> bool:
    """`const_expr(x)` or `cutlass.const_expr(x)`."""
    if not isinstance(node, ast.Call):
        return False
    callee = node.func
    name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
    return name == CONST_EXPR and len(node.args) == 1 and not node.keywords


class _DropConstExpr(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        if _const_expr(node):
            return self.visit(node.args[0])
        return self.generic_visit(node)


def plain(test: ast.expr) -> ast.expr:
    """`test` without `const_expr(...)` wrappers: a copy where it has them (the module's tree
    is left alone), else `test` itself (no reader changes a test; most of a kernel's
    definitions have none, and copying them all was a fifth of a release's first mining)."""
    if not any(_const_expr(node) for node in ast.walk(test)):
        return test
    return _DropConstExpr().visit(copy.deepcopy(test))


class Scope:
    """The conditions of one kernel function: its arch names and how to evaluate its tests."""

    def __init__(
        self,
        function: ast.FunctionDef,
        forwarded: Mapping[str, ast.expr],
        fixed: Mapping[str, Fixed] | None = None,
        switches: Mapping[str, Switch] | None = None,
    ) -> None:
        #: The kernel function whose tests these are.
        self.function = function
        #: Parameters holding an expression of the arch (`compute_capability`: `arch // 10`).
        self.forwarded = dict(forwarded)
        self.arch_names = frozenset((*ARCH_NAMES, *self.forwarded))
        #: Parameter -> the value TE's calls fix it to.
        self.fixed = dict(fixed or {})
        #: Local -> the one expression assigning it.
        self.definitions = _single_definitions(function, self.arch_names)
        #: Helper -> its value with the environment unset, where TE's calls reach here.
        self.switches = dict(switches or {})
        program = Program(function)
        self._interpreter = Interpreter(program, Facts())
        calls = {name: const(switch.value) for name, switch in self.switches.items()}
        self._te_interpreter = Interpreter(program, Facts(calls=calls))
        #: (test, arch, through_te, the bindings it reads) -> its truth (`truth`).
        self._truths: dict[tuple, bool | None] = {}
        #: Test -> the names whose bindings can decide it (`_deciding`).
        self._deciding: dict[ast.expr, frozenset[str]] = {}

    def truth(
        self, test: ast.expr, arch: Arch, bindings: Mapping[str, Any], through_te: bool = False
    ) -> bool | None:
        """The truth of `test` on `arch` with `bindings` (and, `through_te`, TE's fixed
        parameters and environment switches); None where unknown names decide it.

        Computed once per test, arch and value of the bindings it reads: a kernel's cases ask
        the tests of each path on every architecture for every feature set, and most of those
        bindings are of names the test never reads."""
        deciding = self._deciding.get(test)
        if deciding is None:
            deciding = self._deciding[test] = self._names_deciding(test)
        read = frozenset(
            (name, type(value), value) for name, value in bindings.items() if name in deciding
        )
        key = (test, arch, through_te, read)
        try:
            return self._truths[key]
        except KeyError:
            truth = self._truths[key] = self._truth(test, arch, bindings, through_te)
            return truth
        except TypeError:  # an unhashable binding's value: asked afresh
            return self._truth(test, arch, bindings, through_te)

    def _names_deciding(self, test: ast.expr) -> frozenset[str]:
        """The names a binding can decide `test` through: those it and the definitions of the
        locals it reads read, arch names included, and each dotted name's prefixes (`v` of
        `v.element_size`)."""
        read = set(_read(test))
        for name in self._locals_read(test):
            read |= _read(self.definitions[name])
        prefixes = {
            name.rsplit(".", cut)[0] for name in read for cut in range(1, name.count(".") + 1)
        }
        return frozenset(read | prefixes)

    def _truth(
        self, test: ast.expr, arch: Arch, bindings: Mapping[str, Any], through_te: bool
    ) -> bool | None:
        interpreter = self._te_interpreter if through_te else self._interpreter
        state = State({name: const(arch_value(arch)) for name in ARCH_NAMES})
        for name, expression in self.forwarded.items():
            state.vars[name] = interpreter.eval(expression, state)
        if through_te:
            state.vars.update((name, const(fixed.value)) for name, fixed in self.fixed.items())
        state.vars.update((name, const(value)) for name, value in bindings.items())
        for name in self._locals_read(test):
            if name not in state.vars:
                state.vars[name] = interpreter.eval(self.definitions[name], state)
        return interpreter.eval(test, state).truth

    def _locals_read(self, test: ast.expr) -> list[str]:
        """The defined locals `test` reads, directly or through other definitions, each after
        the ones its definition reads (a definition reading itself is not followed)."""
        ordered: list[str] = []
        visiting: set[str] = set()

        def visit(expression: ast.expr) -> None:
            for name in _read(expression):
                if name in self.definitions and name not in visiting and name not in ordered:
                    visiting.add(name)
                    visit(self.definitions[name])
                    ordered.append(name)

        visit(test)
        return ordered

    def names(self, test: ast.expr) -> frozenset[str]:
        """Names and whole dotted names (`self.x`, not `self`) `test` reads, arch names excepted;
        with the names the definitions of the locals it reads read."""
        read = set(_read(test))
        for name in self._locals_read(test):
            read |= _read(self.definitions[name])
        return frozenset(read - {None} - self.arch_names)

    def switches_read(self, test: ast.expr) -> list[Switch]:
        """The environment switches `test` calls, directly or through the definitions of the
        locals it reads."""
        expressions = [test, *(self.definitions[name] for name in self._locals_read(test))]
        called = {
            node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            for expression in expressions
            for node in ast.walk(expression)
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
        }
        return [switch for name, switch in self.switches.items() if name in called]


@functools.lru_cache(maxsize=8192)
def _read(expression: ast.expr) -> frozenset[str]:
    """Names and whole dotted names an expression reads (once per node: every case of a
    kernel asks again for the tests and definitions on its path)."""
    inner = {id(node.value) for node in ast.walk(expression) if isinstance(node, ast.Attribute)}
    return frozenset(
        dotted_name(node)
        for node in ast.walk(expression)
        if isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in inner
    ) - {None}


@functools.lru_cache(maxsize=FUNCTION_CACHE)
def _single_definitions(function: ast.FunctionDef, arch_names: frozenset[str]) -> dict:
    """Local -> its expression, for locals `function` stores exactly once, by `name = expr`.

    Nested functions are their own scopes and are not looked into; parameters and the arch
    names are not locals.
    """
    stores: Counter[str] = Counter()
    assigned: dict[str, ast.expr] = {}
    parameters = {
        a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)
    }
    for node in _own_nodes(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] += 1
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            assigned[node.targets[0].id] = plain(node.value)
    return {
        name: expression
        for name, expression in assigned.items()
        if stores[name] == 1 and name not in parameters and name not in arch_names
    }


def _own_nodes(function: ast.FunctionDef):
    """The nodes of a function's body, not those of the functions and classes nested in it."""
    pending = list(function.body)
    while pending:
        node = pending.pop()
        yield node
        pending += [
            child
            for child in ast.iter_child_nodes(node)
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
