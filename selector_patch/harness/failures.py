"""A selector the harness cannot run, in one line: `path: cause` or `path:line: cause`.

Fork code fails in ways TE's releases do not: an `AttributeError` from a device API the virtual
device does not model (`torch.npu`), a branch on a value it has no answer for
(`OpaqueDecision`), a return value TE's caller could not unpack. Every command turns these into
exit status 2 with the exception's one line, so they all derive from `LoadError`; the line names
the selector file and, when the failure happened in its code, the line that raised.
"""

from __future__ import annotations

import traceback
from pathlib import Path


class LoadError(Exception):
    """The selector cannot be loaded or run; `str()` is one line, `"<path>: <cause>"`."""

    def __init__(self, path: object, cause: str) -> None:
        super().__init__(f"{path}: {cause}")


class SelectionError(LoadError):
    """The selector's own code raised while selecting, or returned what TE cannot unpack."""


def one_line(text: str) -> str:
    return " ".join(text.split())


def describe(error: BaseException) -> str:
    """`Type: message` on one line (a multi-line assertion message is joined)."""
    message = one_line(str(error))
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def located(path: Path, error: BaseException) -> str:
    """`path:line` of the innermost frame of the selector file that `error` passed through, or
    `path` when it never ran the file's code."""
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename == str(path)
    ]
    return f"{path}:{lines[-1]}" if lines else str(path)
