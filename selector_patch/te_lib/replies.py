"""The helper process's replies, kept per request: a request asked again costs no round trip.

A grid asks TE's compiled query the same request many times (a selection of 2.19.0's grid:
9,935 queries, 776 of them distinct), and each reply is a pipe round trip to the helper process,
plus one per variable TE's code reads. TE's query is a pure function of the machine, the
arguments and the variables it reads (it keeps no state between calls: the `sm_arch` it caches
is per virtual device), so a reply holds for the same request wherever every variable it read,
in the order read, has the same value now. Replaying those reads against the caller's
environment is a few dictionary lookups; a value that differs stops the replay where TE's code
would have taken another path, and the request goes to the helper again.
"""

from __future__ import annotations

from typing import Callable

#: The variables one call read, in order, each with the value it got (None: unset).
Reads = tuple[tuple[str, "str | None"], ...]


class Replies:
    """Replies by request (the request line sent to the helper), each with the reads it made."""

    def __init__(self) -> None:
        self._known: dict[str, list[tuple[Reads, dict]]] = {}

    def get(self, request: str, environment: Callable[[str], str | None]) -> dict | None:
        """The reply to `request` whose every read gets the same value from `environment` now,
        or None."""
        for reads, reply in self._known.get(request, ()):
            if all(environment(name) == value for name, value in reads):
                return reply
        return None

    def add(self, request: str, reads: Reads, reply: dict) -> None:
        self._known.setdefault(request, []).append((reads, reply))
