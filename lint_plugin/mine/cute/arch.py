"""The architectures a kernel check can be about, and the names FA4 keeps the device's in.

FA4 asks the device once (`_get_device_arch()` returns `major * 10 + minor`: 120 on an RTX
5090, 103 on a B300) and branches on `arch // 10` (the major) or on `arch` itself; CuTe kernel
classes keep it as `self.arch`. Helpers receive it under other names, e.g.
`_validate_head_dims(head_dim, head_dim_v, arch // 10, alignment)` whose parameter is
`compute_capability`: a parameter to which every call in the module passes an expression of
the arch is itself an arch quantity (`forwarded_parameters`). Arch sets are stated over
`lint_plugin.mine.devices.ARCHITECTURES`, so `arch // 10 == 12` means (12, 0) and (12, 1).
"""

from __future__ import annotations

import ast

from lint_plugin.engine.program import dotted_name
from lint_plugin.mine.devices import Arch

#: Names FA4 binds to the device arch as `major * 10 + minor`.
ARCH_NAMES = ("arch", "self.arch")


def arch_value(arch: Arch) -> int:
    """FA4's encoding of a compute capability: (12, 0) is 120."""
    major, minor = arch
    return 10 * major + minor


def reads_only_arch(node: ast.expr, names: frozenset[str]) -> bool:
    """Whether `node` is computed from arch names and constants alone (`arch // 10`)."""
    return _arch_kind(node, names) is True


def _arch_kind(node: ast.expr, names: frozenset[str]) -> bool | None:
    """True: arithmetic on an arch name; False: a constant; None: it reads something else."""
    if isinstance(node, (ast.Name, ast.Attribute)):
        return True if dotted_name(node) in names else None
    if isinstance(node, ast.Constant):
        return False
    if isinstance(node, ast.UnaryOp):
        return _arch_kind(node.operand, names)
    if isinstance(node, ast.BinOp):
        kinds = {_arch_kind(node.left, names), _arch_kind(node.right, names)}
        return None if None in kinds else True in kinds
    return None


def forwarded_parameters(module: ast.Module) -> dict[str, dict[str, ast.expr]]:
    """Per function name: parameters that every call in `module` passes an arch expression.

    The expression is returned so that the parameter's value on a device can be computed
    from the arch (`compute_capability` is `arch // 10`). A parameter some call passes
    anything else is left out.
    """
    names = frozenset(ARCH_NAMES)
    functions = {
        node.name: [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
        for node in ast.walk(module)
        if isinstance(node, ast.FunctionDef)
    }
    passed: dict[str, dict[str, list[ast.expr]]] = {}
    for call in ast.walk(module):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            continue
        parameters = functions.get(call.func.id)
        if parameters is None:
            continue
        arguments = dict(zip(parameters, call.args))
        arguments.update((k.arg, k.value) for k in call.keywords if k.arg is not None)
        for parameter, argument in arguments.items():
            passed.setdefault(call.func.id, {}).setdefault(parameter, []).append(argument)
    return {
        function: found
        for function, parameters in passed.items()
        if (
            found := {
                parameter: arguments[0]
                for parameter, arguments in parameters.items()
                if all(reads_only_arch(argument, names) for argument in arguments)
                and len({ast.dump(argument) for argument in arguments}) == 1
            }
        )
    }
