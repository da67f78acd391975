"""What a compiled function does, read from its code objects (its own and its nested ones).

The harness restores the module globals a selector assigns; the runtime patch asks which
`NVTE_*` variables a selector reads. Both questions are about the code actually loaded, not about
its source, so they work on a module imported from a wheel, a checkout or a patched text alike.
"""

from __future__ import annotations

import dis
import functools
import types
from typing import Iterator


def code_objects(function: types.FunctionType) -> Iterator[types.CodeType]:
    """`function`'s code and every code object nested in it (inner functions, comprehensions)."""
    pending = [function.__code__]
    while pending:
        code = pending.pop()
        yield code
        pending.extend(const for const in code.co_consts if isinstance(const, types.CodeType))


def reached_functions(function: types.FunctionType) -> list[types.FunctionType]:
    """`function` and the functions of its own module that it names, transitively: what a
    dispatcher delegates to (`return get_attention_backend_cuda(params)`)."""
    namespace = function.__globals__
    reached = [function]
    for current in reached:  # grows while it is walked
        for code in code_objects(current):
            for name in code.co_names:
                value = namespace.get(name)
                if (
                    isinstance(value, types.FunctionType)
                    and value.__globals__ is namespace
                    and value not in reached
                ):
                    reached.append(value)
    return reached


def written_globals(function: types.FunctionType) -> frozenset[str]:
    """Module globals `function` assigns or deletes."""
    return frozenset(name for code in code_objects(function) for name in _stored_globals(code))


@functools.lru_cache(maxsize=4096)
def _stored_globals(code: types.CodeType) -> frozenset[str]:
    """The globals one code object stores or deletes, disassembled once per code: every load
    of a selector module makes new functions, but a module whose code is compiled once
    (`harness.compiled`) hands them the same code objects."""
    return frozenset(
        instruction.argval
        for instruction in dis.get_instructions(code)
        if instruction.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")
    )


def names_constant(function: types.FunctionType, value: str) -> bool:
    """Whether the string `value` occurs as a literal in `function`'s code."""
    return any(value in code.co_consts for code in code_objects(function))
