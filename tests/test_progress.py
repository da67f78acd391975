"""Progress on stderr: a bar with counts and time left on a terminal, nothing anywhere else."""

from __future__ import annotations

import io

from selector_patch.progress import progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_with_counts_and_time_left() -> None:
    stream = Terminal()
    with progress(4, "snapshot 2.20.2", stream=stream) as bar:
        for _ in range(4):
            bar.advance()
    drawn = stream.getvalue()
    assert "snapshot 2.20.2 [" in drawn and "4/4" in drawn and " left" in drawn
    assert drawn.endswith("\r\x1b[2K")  # erased once done: the terminal keeps only the result


def test_a_pipe_or_quiet_gets_nothing() -> None:
    for stream, quiet in ((io.StringIO(), False), (Terminal(), True)):
        with progress(3, "diff", stream=stream, quiet=quiet) as bar:
            bar.begin(10, "diff: asking A")
            bar.advance(10)
        assert stream.getvalue() == ""


def test_a_run_of_unknown_size_begins_when_it_knows() -> None:
    stream = Terminal()
    with progress(0, "diff", stream=stream) as bar:
        bar.begin(2, "diff: asking A")
        bar.advance(2)
    assert "diff: asking A [" in stream.getvalue() and "2/2" in stream.getvalue()
