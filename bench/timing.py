"""The one timing helper the benchmark scripts share (run them as `python bench/NAME.py`)."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def median_seconds(action: Callable[[], object], repeat: int) -> float:
    """Median wall time of `repeat` calls: robust to the noise of a shared machine."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
