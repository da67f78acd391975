"""The timing helpers the benchmark scripts share (run them as `python bench/NAME.py`)."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from typing import Any, Callable, Sequence


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    """Median wall time of `repeat` calls: robust to the noise of a shared machine."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def seconds_and_peak(command: Sequence[str], **popen: Any) -> tuple[float, int, int]:
    """Wall time, peak resident memory (bytes) and exit status of one child process run to its
    end: the kernel's count for that child alone (`wait4`), where `RUSAGE_CHILDREN` would give
    the largest of every child so far."""
    start = time.perf_counter()
    child = subprocess.Popen(command, **popen)
    _pid, status, usage = os.wait4(child.pid, 0)
    return time.perf_counter() - start, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status)
