"""`fast_exit`: a command's process ends without freeing what it holds, and loses nothing else."""

from __future__ import annotations

import os
import subprocess
import sys

#: Output buffered, as it is unless PYTHONUNBUFFERED says otherwise.
BUFFERED = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
#: A command's last steps: an `atexit` handler of its own, output still buffered, then the end.
COMMAND = (
    "import atexit; atexit.register(print, 'handler'); print('result', end=' ');"
    " from selector_patch.fast_exit import fast_exit; fast_exit(3)"
)


def test_its_output_status_and_exit_handlers_are_kept() -> None:
    done = subprocess.run([sys.executable, "-c", COMMAND], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "result handler\n", "")


def test_a_failing_exit_handler_is_reported_as_at_any_exit() -> None:
    command = COMMAND.replace("print, 'handler'", "int, 'handler'")
    done = subprocess.run([sys.executable, "-c", command], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (3, "result ")
    assert (
        done.stderr.startswith("Exception ignored in atexit callback")
        and "ValueError" in done.stderr
    )


def test_a_reader_gone_is_status_120_and_no_traceback() -> None:
    """What Python's own exit says when stdout's pipe is closed (`| head`), without its
    "Exception ignored" lines."""
    command = "print('result'); from selector_patch.fast_exit import fast_exit; fast_exit(0)"
    process = subprocess.Popen(
        [sys.executable, "-c", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=BUFFERED,
    )
    process.stdout.close()
    assert (process.wait(), process.stderr.read()) == (120, "")
