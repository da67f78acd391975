"""Progress of a long run on stderr: a bar with counts and time left, for a person watching.

`snapshot`, `diff` and the miner over several releases take seconds to minutes. Their stdout is
the result (JSON, a report, a page) and must stay exactly that, so progress goes to stderr, and
only when stderr is a terminal: a CI log or a redirect gets nothing, and neither does a run asked
to be `--quiet`. The bar is redrawn at most ten times a second (a selection costs far less than
a redraw) and erased when the run ends, so what remains on the terminal is the result.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30
#: Seconds between redraws.
INTERVAL = 0.1


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds + 0.5), 60)
    return f"{minutes}:{seconds:02d}"


class Progress:
    """Counts done out of `total`, drawn on `stream` when `enabled`; a context manager that
    erases its line on exit."""

    def __init__(self, total: int, label: str, *, stream: TextIO, enabled: bool) -> None:
        self.total = max(total, 1)
        self.label = label
        self.stream = stream
        self.enabled = enabled
        self.done = 0
        self._start = time.monotonic()
        self._drawn = 0.0

    def advance(self, count: int = 1) -> None:
        self.done += count
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._drawn >= INTERVAL or self.done >= self.total:
            self._drawn = now
            self._draw(now)

    def relabel(self, label: str) -> None:
        """Say what is being done now (the next release, the other side of a diff)."""
        self.label = label

    def begin(self, total: int, label: str) -> None:
        """Count afresh: a run whose size is known only once it has started (a diff's grid)."""
        self.total, self.label, self.done = max(total, 1), label, 0
        self._start = time.monotonic()

    def _draw(self, now: float) -> None:
        done = min(self.done, self.total)
        filled = WIDTH * done // self.total
        elapsed = now - self._start
        left = elapsed * (self.total - done) / done if done else None
        eta = f"{_clock(left)} left" if left is not None else "--:-- left"
        bar = "#" * filled + "." * (WIDTH - filled)
        self.stream.write(f"\r\x1b[2K{self.label} [{bar}] {done}/{self.total} {eta}")
        self.stream.flush()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.enabled and self._drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


def progress(
    total: int, label: str, *, quiet: bool = False, stream: TextIO | None = None
) -> Progress:
    """A bar on stderr (or `stream`) if that is a terminal and the run is not `quiet`."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return Progress(total, label, stream=stream, enabled=not quiet and bool(isatty and isatty()))
