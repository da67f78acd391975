"""Where control goes while a function body runs: loop exits, returns, exception sinks, and
the two ways a run stops short (an expression that never completes, a budget spent)."""

from __future__ import annotations

import ast

from lint_plugin.engine.absint import State, Value, unknown
from selector_patch.records import Record


class Unreachable(Exception):
    """Raised by an expression whose evaluation never completes (a helper that always raises)."""


#: A `Facts.calls` answer for a call known to raise (a kernel's validator refusing the
#: witness): the statement making it does not complete, and an enclosing `try` takes over.
RAISES = unknown()


class LocalFunction(Record):
    """The `const` of a name bound to a helper defined inside the selector."""

    node: ast.FunctionDef


class Loop:
    __slots__ = ("breaks", "continues")

    def __init__(self) -> None:
        self.breaks: list[State] = []
        self.continues: list[State] = []


class Frame:
    """Where control goes out of a function body: returns, loop exits, exception handlers."""

    __slots__ = ("returns", "loops", "sinks", "depth")

    def __init__(self, sinks: list[list[State]], depth: int) -> None:
        self.returns: list[tuple[Value, State]] = []
        self.loops: list[Loop] = []
        #: One list per enclosing `try`: states from which an exception may reach its handlers.
        self.sinks = sinks
        self.depth = depth
