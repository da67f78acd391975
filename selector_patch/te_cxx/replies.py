"""TE's fused-query answers, kept per request: a request asked again is answered without TE.

A grid asks TE's query the same request many times (a selection of 2.19.0's grid: 9,935
queries, 776 of them distinct). Through a release's compiled library each answer is a pipe round
trip to the helper process, plus one per variable TE's code reads (`te_lib.client`); through the
source-compiled query it is a `ctypes` call of twenty-odd arguments (`query`). TE's query is a
pure function of the machine, the arguments and the variables it reads (it keeps no state
between calls: the `sm_arch` it caches is per virtual device), so a reply holds for the same
request wherever every variable it read, in the order read, has the same value now. Replaying
those reads against the caller's environment is a few dictionary lookups; a value that differs
stops the replay where TE's code would have taken another path, and TE is asked again.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable

#: The variables one call read, in order, each with the value it got (None: unset).
Reads = tuple[tuple[str, "str | None"], ...]


class Replies:
    """Replies by request (anything hashable naming the machine and the arguments: the request
    line sent to the helper), each with the reads it made."""

    def __init__(self) -> None:
        self._known: dict[Hashable, list[tuple[Reads, Any]]] = {}

    def get(self, request: Hashable, environment: Callable[[str], str | None]) -> Any:
        """The reply to `request` whose every read gets the same value from `environment` now,
        or None."""
        for reads, reply in self._known.get(request, ()):
            if all(environment(name) == value for name, value in reads):
                return reply
        return None

    def add(self, request: Hashable, reads: Reads, reply: Any) -> None:
        self._known.setdefault(request, []).append((reads, reply))
