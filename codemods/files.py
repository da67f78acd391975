"""Rewriting a selector without ever leaving it half-written.

A target the codemod may not write is refused before anything is read or planned (read-only,
or a directory without room for a temporary file); unreadable, binary and non-UTF-8 files are
refused by `selector_patch.sources.read_text`. A rewrite goes to a temporary file beside the
target (same filesystem), takes the target's mode, and replaces it in one `os.replace`; a
symlink is written through to its target and stays a link. An exclusive lock on the target is
held from the read to the replace, so concurrent runs on one checkout serialise: the second
reads the first one's result, finds every guard present and changes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path
from typing import Iterator


#: The mode of a file `replace_atomically` creates (the codemod's emitted test module).
NEW_FILE_MODE = 0o644


class FileError(Exception):
    """A one-line reason why a file cannot be read or rewritten safely."""


def check_writable(path: Path) -> None:
    """Refuse read-only targets up front, also for root (whom `os.access` always lets write)."""
    target = path.resolve()
    mode = target.stat().st_mode
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        raise FileError(f"{path}: read-only file")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise FileError(f"{path}: cannot write: directory {target.parent} is not writable")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on `path`'s target while the body runs."""
    try:
        handle = open(path.resolve(), "rb")
    except OSError as error:
        raise FileError(f"{path}: cannot open: {error.strerror}") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def replace_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path`'s target through a temporary file and one rename; a file that
    does not exist yet is created readable by all (0o644)."""
    import tempfile  # only a write needs it; `--check` never does

    target = path.resolve()
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else NEW_FILE_MODE
    try:
        descriptor, temporary = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
        )
    except OSError as error:
        raise FileError(f"{path}: cannot create a temporary file: {error.strerror}") from None
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
