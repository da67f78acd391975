"""The selector's own log lines, captured privately and cheaply.

TE logs every filter decision through `logging.getLogger("DotProductAttention")`, sets that
logger's level on each call and attaches a stderr handler when it finds none; TE 1.x even calls
`logging.basicConfig` at import. Run against the real `logging` module, a loaded selector would
reconfigure the process's loggers and print to stderr. So the loaded module gets `LoggingView`:
`logging` with a private logger hierarchy whose loggers append `(level, message, args)` to a
`LogSink` instead of building `LogRecord`s (no frame walk, no formatting); lines are formatted
only when a caller reads them. `warnings.warn` from the selector lands in the same sink.
"""

from __future__ import annotations

import logging
import warnings

from selector_patch.views import ModuleView


class LogSink:
    """Raw log calls of the current selection: `(levelname, msg, args)`."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, object, tuple]] = []

    def take(self) -> tuple[tuple[str, object, tuple], ...]:
        entries, self.entries = tuple(self.entries), []
        return entries


def format_entry(entry: tuple[str, object, tuple]) -> str:
    """The message as TE's `%(message)s` formatter would print it."""
    _level, message, args = entry
    message = str(message)
    if args:
        if len(args) == 1 and isinstance(args[0], dict) and args[0]:
            args = args[0]  # logging's one-mapping convention
        message = message % args
    return message


def _capturing_logger_class(sink: LogSink) -> type[logging.Logger]:
    class CapturingLogger(logging.Logger):
        """A logger whose enabled calls go straight to the sink."""

        def _log(self, level, msg, args, exc_info=None, extra=None, stack_info=False, stacklevel=1):
            sink.entries.append((logging.getLevelName(level), msg, args))

    return CapturingLogger


class LoggingView(ModuleView):
    """`logging` with a private logger hierarchy that writes to `sink`."""

    def __init__(self, sink: LogSink) -> None:
        super().__init__(logging)
        logger_class = _capturing_logger_class(sink)
        self._root = logger_class("root", logging.WARNING)
        # TE adds its own stderr handler to a logger that has none; this one is never called.
        self._root.addHandler(logging.NullHandler())
        self._manager = logging.Manager(self._root)
        self._manager.setLoggerClass(logger_class)
        self._root.manager = self._manager

    def getLogger(self, name: str | None = None) -> logging.Logger:
        if not name or name == "root":
            return self._root
        return self._manager.getLogger(name)

    def basicConfig(self, **kwargs) -> None:
        if "level" in kwargs:
            self._root.setLevel(kwargs["level"])


class WarningsView(ModuleView):
    """`warnings` whose `warn` records a WARNING line in `sink` instead of printing."""

    def __init__(self, sink: LogSink) -> None:
        super().__init__(warnings)
        self._sink = sink

    def warn(self, message, category=None, stacklevel=1, source=None) -> None:
        self._sink.entries.append(("WARNING", message, ()))
