"""The selector's own log lines, captured privately and cheaply.

TE logs every filter decision through `logging.getLogger("DotProductAttention")`, sets that
logger's level on each call and attaches a stderr handler when it finds none; TE 1.x even calls
`logging.basicConfig` at import. Run against the real `logging` module, a loaded selector would
reconfigure the process's loggers and print to stderr. So the loaded module gets `LoggingView`:
`logging` with a private logger hierarchy whose loggers append `(level, message, args)` to a
`LogSink` instead of building `LogRecord`s (no frame walk, no formatting); lines are formatted
only when a caller reads them. `warnings.warn` from the selector lands in the same sink.

Formatting late must not change what a bad call does. With real `logging`, a call whose
arguments do not fit its format string (`logger.debug("%s %s", x)`) raises nothing in the
selector: the handler's `emit` fails, `Handler.handleError` reports it on stderr (when
`logging.raiseExceptions` is set, the default) and the line is not emitted. `format_entry` does
the same when the line is read, reporting each bad message once per process rather than once per
selection (the harness runs the same call thousands of times), so the selector's log simply lacks
that line.

What the selector `print`s (to stdout or stderr, at import or while selecting) goes into the same
sink, one entry per call, through the `print` of its private builtins: it shows among the
selection's log lines and never reaches the process's stdout, where a command may be writing
JSON. A print to any other file is left alone. Lines logged or printed while the module is being
imported belong to no selection and are dropped with the sink's first `take()`.
"""

from __future__ import annotations

import builtins
import logging
import sys
import warnings

from selector_patch.views import ModuleView


#: The level name of a printed line.
PRINTED = "PRINT"
#: Messages whose formatting failed and was reported (once per process).
_reported: set[str] = set()


class LogSink:
    """Raw log calls of the current selection: `(levelname, msg, args)`."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, object, tuple]] = []

    def take(self) -> tuple[tuple[str, object, tuple], ...]:
        entries, self.entries = tuple(self.entries), []
        return entries

    def print(self, *values, sep=" ", end="\n", file=None, flush=False) -> None:
        """The selector's `print`: a line in the sink, unless it names a file of its own."""
        if file is not None and file not in (sys.stdout, sys.stderr):
            builtins.print(*values, sep=sep, end=end, file=file, flush=flush)
            return
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        text = sep.join(str(value) for value in values) + end
        self.entries.append((PRINTED, text.removesuffix("\n"), ()))


def format_entry(entry: tuple[str, object, tuple]) -> str | None:
    """The message as TE's `%(message)s` formatter would print it; None, reported on stderr as
    `Handler.handleError` reports it, when its arguments do not fit."""
    _level, message, args = entry
    try:
        text = str(message)
        if args:
            if len(args) == 1 and isinstance(args[0], dict) and args[0]:
                args = args[0]  # logging's one-mapping convention
            text = text % args
    except Exception as error:  # whatever `LogRecord.getMessage` raises, as `emit` catches it
        _report(message, args, error)
        return None
    return text


def _report(message: object, args: object, error: Exception) -> None:
    key = repr(message)
    if not logging.raiseExceptions or key in _reported:
        return
    _reported.add(key)
    sys.stderr.write(
        "--- Logging error ---\n"
        f"{type(error).__name__}: {error}\n"
        f"Message: {message!r}\n"
        f"Arguments: {args!r}\n"
    )


def _capturing_logger_class(sink: LogSink) -> type[logging.Logger]:
    class CapturingLogger(logging.Logger):
        """A logger whose enabled calls go straight to the sink."""

        def _log(self, level, msg, args, exc_info=None, extra=None, stack_info=False, stacklevel=1):
            sink.entries.append((logging.getLevelName(level), msg, args))

        def setLevel(self, level) -> None:
            """As `Logger.setLevel`, but a level that is already set clears no caches: TE sets
            the same level on every selection, and clearing would make each of its `debug`
            calls work out the effective level afresh."""
            if logging._checkLevel(level) != self.level:
                super().setLevel(level)

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
        self._loggers: dict[str, logging.Logger] = {}

    def getLogger(self, name: str | None = None) -> logging.Logger:
        """The manager's logger, remembered by name: TE asks for it on every selection, and the
        manager takes logging's lock each time."""
        if not name or name == "root":
            return self._root
        logger = self._loggers.get(name) if isinstance(name, str) else None
        if logger is None:
            logger = self._manager.getLogger(name)
            self._loggers[name] = logger
        return logger

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
