"""Ending a command's process without tearing the interpreter down, as mypy does (`hard_exit`).

A normal exit frees every object the process still holds, module by module, after a last full
collection over all of them. A command's results are written and printed by then, so that work
is wasted. On TE 2.20.2 it was 7 ms of `codemods.apply --check`'s 92 ms (its bound is 2x an
`ast.parse` process: `bench/codemod.py`), 0.27 s of `selector_patch verify`'s 2.2 s and 0.5 s of
`selector_patch snapshot`'s 10.6 s. The `atexit` handlers still run (one closes a TE library
helper process, a temporary directory's finalizer is one), and the standard streams are flushed;
only the freeing is skipped. Used only where a command line ends (`if __name__ == "__main__"`):
a caller of `main()` in-process, a test say, keeps its interpreter; and not after a user's own
script (`selector_patch run`), whose threads a normal exit waits for.
"""

from __future__ import annotations

import atexit
import os
import sys


def fast_exit(status: int) -> None:
    """Run the `atexit` handlers, flush stdout and stderr, and end the process with `status`."""
    try:
        atexit._run_exitfuncs()
    except Exception:  # noqa: S110 - a failing handler is reported there, as at any exit
        pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a reader gone (`| head`): Python's own exit says 120 then
        status = status or 120
    os._exit(status)
