"""flash-attn-4's environment switches, read as TE's calls meet them: every variable unset.

FA4 reads some choices from the environment through small helpers (`utils._get_hd256_generic_bwd()`
is `os.getenv("FLASH_ATTENTION_HD256_GENERIC_BWD", "0") == "1"`, `_get_disable_2cta_default()`
returns the module global `_fa_disable_2cta_enabled`, itself `os.environ.get("FA_DISABLE_2CTA",
"0") == "1"`). TE never sets those variables: its callers of the kernel (`backends.py`,
`context_parallel.py`) pass arguments only, and no TE module writes a `FLASH_ATTENTION_*` or
`FA_*` variable (`tests/test_mine_switches.py` checks the releases). So where a refusal is reached
through TE's calls, in the default environment, each helper returns what it returns with its
variables unset: the read's default (None without one).

The helpers are found by reading the kernel's modules, not listed: a module function without
parameters, or a module global, whose value reads the environment. Its value is what the
selector analysis' interpreter makes of it with each read replaced by its default; only a
helper whose value that decides (one constant) is a switch.
"""

from __future__ import annotations

import ast
import copy
import functools
from dataclasses import dataclass
from typing import Any, Iterable

from lint_plugin.engine.absint import State, const, join
from lint_plugin.engine.interpreter import Facts, Interpreter
from lint_plugin.engine.program import Program, dotted_name
from lint_plugin.mine.cute.kernel import MODULE_CACHE

#: The calls that read one variable: `os.environ.get(NAME, default)`, `os.getenv(NAME, default)`.
READS = ("os.environ.get", "os.getenv", "environ.get", "getenv")


@dataclass(frozen=True)
class Switch:
    """A kernel helper whose value, with the variables it reads unset, is one constant."""

    name: str
    value: Any
    variables: tuple[str, ...]

    def describe(self) -> str:
        """`_get_hd256_generic_bwd()` is False (FLASH_ATTENTION_HD256_GENERIC_BWD unset ...)."""
        unset = ", ".join(self.variables)
        return (
            f"`{self.name}()` is {self.value!r} ({unset} unset: TE sets none of flash-attn-4's"
            " environment variables)"
        )


class _Unset(ast.NodeTransformer):
    """Each environment read as its default; the variables read, in order."""

    def __init__(self) -> None:
        self.variables: list[str] = []

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if dotted_name(node.func) not in READS or not node.args or node.keywords:
            return node
        name = node.args[0]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return node
        self.variables.append(name.value)
        return node.args[1] if len(node.args) > 1 else ast.Constant(None)


def switches(modules: Iterable[ast.Module]) -> dict[str, Switch]:
    """Helper name -> its switch, over the kernel's modules (a name two modules define
    differently is no switch)."""
    found: dict[str, Switch] = {}
    clashes = set()
    for module in modules:
        for name, switch in _module_switches(module).items():
            if name in found and found[name] != switch:
                clashes.add(name)
            found[name] = switch
    return {name: switch for name, switch in found.items() if name not in clashes}


@functools.lru_cache(maxsize=MODULE_CACHE)
def _module_switches(module: ast.Module) -> dict[str, Switch]:
    globals_: dict[str, Switch] = {}
    for node in module.body:
        target, value = _assigned(node)
        if target is not None:
            switch = _evaluate(target, [ast.Return(value)], globals_)
            if switch is not None:
                globals_[target] = switch
    helpers = {}
    for node in module.body:
        if isinstance(node, ast.FunctionDef) and not _parameters(node):
            switch = _evaluate(node.name, node.body, globals_)
            if switch is not None:
                helpers[node.name] = switch
    return helpers


def _assigned(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target = node.target
    else:
        return None, None
    return (target.id, node.value) if isinstance(target, ast.Name) else (None, None)


def _parameters(function: ast.FunctionDef) -> bool:
    arguments = function.args
    return bool(
        arguments.posonlyargs
        or arguments.args
        or arguments.kwonlyargs
        or arguments.vararg
        or arguments.kwarg
    )


def _evaluate(name: str, body: list[ast.stmt], globals_: dict[str, Switch]) -> Switch | None:
    """The switch `body` makes (returning one constant with its variables unset), if any."""
    unset = _Unset()
    function = ast.FunctionDef(
        name=name,
        args=ast.arguments(
            posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[], vararg=None
        ),
        body=[unset.visit(copy.deepcopy(stmt)) for stmt in body],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    ast.fix_missing_locations(ast.Module(body=[function], type_ignores=[]))
    read = {g for g in globals_ if any(_reads(n, g) for n in ast.walk(function))}
    variables = [*unset.variables, *(v for g in sorted(read) for v in globals_[g].variables)]
    if not variables:
        return None
    facts = Facts(names={g: const(globals_[g].value) for g in read})
    interpreter = Interpreter(Program(function), facts)
    try:
        interpreter.run(State({}))
    except Exception:  # a body the interpreter cannot run is no switch
        return None
    returns = [value for value, _ in interpreter.frame.returns]
    if not returns:
        return None
    value = returns[0]
    for other in returns[1:]:
        value = join(value, other)
    if not value.known:
        return None
    return Switch(name, value.const, tuple(dict.fromkeys(variables)))


def _reads(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
