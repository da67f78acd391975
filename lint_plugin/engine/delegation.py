"""Which functions hold a selector's filters: the selector itself, or the module-level functions
it hands the call to on a CUDA device.

Multi-platform forks keep one function of filters per platform and make `get_attention_backend`
a dispatcher: `if IS_HIP_EXTENSION: return get_attention_backend_rocm(attention_params)`, then
`return get_attention_backend_cuda(attention_params)`. Every return of such a dispatcher calls a
module-level function. It is interpreted with what PyTorch answers on a CUDA device (`CUDA`),
and the functions its reachable returns call (followed through further dispatchers) are what
the hazard analysis, the coverage rules and the codemod look at instead: findings land on the
filters' real lines, guards go into the function that holds them. Where the platform test
cannot be decided, each function a return may reach is looked at.
"""

from __future__ import annotations

import ast
import functools

from lint_plugin.engine.absint import State, Value, const, unknown
from lint_plugin.engine.interpreter import Facts, Interpreter, Observer
from lint_plugin.engine.program import Program, function_index

#: What PyTorch answers on a CUDA device (not a ROCm or other vendor build).
CUDA = Facts(
    names={
        "torch.version.hip": const(None),
        "torch.version.cuda": unknown(truth=True),
        "IS_HIP_EXTENSION": const(False),
        "torch.utils.cpp_extension.IS_HIP_EXTENSION": const(False),
    }
)


class _Returns(Observer):
    """The selector's own `return` statements that a run reaches."""

    def __init__(self) -> None:
        self.reached: list[ast.Return] = []

    def on_return(self, interpreter: Interpreter, node: ast.Return, value: Value, state: State):
        if interpreter.frame.depth == 0:
            self.reached.append(node)


def _module_functions(module: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in module.body if isinstance(node, ast.FunctionDef)}


def _callee(node: ast.Return, functions: dict[str, ast.FunctionDef]) -> ast.FunctionDef | None:
    call = node.value
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
        return functions.get(call.func.id)
    return None


@functools.lru_cache(maxsize=4)
def delegates(module: ast.Module, function: ast.FunctionDef) -> tuple[ast.FunctionDef, ...]:
    """The functions holding `function`'s filters on a CUDA device: itself, unless every one of
    its returns hands the call to a module-level function."""
    return _delegates(module, function, frozenset())


def _delegates(
    module: ast.Module, function: ast.FunctionDef, seen: frozenset[ast.FunctionDef]
) -> tuple[ast.FunctionDef, ...]:
    functions = _module_functions(module)
    returns = list(function_index(function).returns)
    callees = [_callee(node, functions) for node in returns]
    if not returns or None in callees or seen & set(callees) or function in callees:
        return (function,)
    observer = _Returns()
    Interpreter(Program(function), CUDA, observer).run()
    found: dict[ast.FunctionDef, None] = {}
    for node in observer.reached:
        for target in _delegates(module, _callee(node, functions), seen | {function}):
            found.setdefault(target, None)
    return tuple(found) or (function,)
