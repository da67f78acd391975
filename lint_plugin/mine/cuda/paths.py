"""The paths the dispatch interpreter follows: their state, how they end, and their merging.

A path holds the variables of the frames it is in, the struct objects it built (`params`),
the inputs that take it (a `Region`), and what it has done: launched a kernel, been refused,
or left a launch behind (the site). Paths multiply at every branch on an input or an unknown;
`merge` keeps that in check: paths that end alike are one path taken by the union of their
inputs, and paths taken by the same inputs that differ only in what unknowns decided are one
path whose disagreeing values are unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from lint_plugin.mine.cuda.values import UNKNOWN, Region, hashable
from lint_plugin.mine.findings import Site


class TooManyPaths(Exception):
    """An entry point whose paths outgrow the interpreter's budget (`MAX_STATES`)."""


@dataclass
class State:
    scopes: list[dict]
    heap: dict[int, dict]
    domains: Region
    launched: bool = False
    site: Site | None = None
    #: The text of the unknown condition that decided `site` (or the refusal), if any.
    undecided: str | None = None
    refusal: Site | None = None
    arch_branch: str = ""

    def copy(self) -> "State":
        return State(
            [dict(scope) for scope in self.scopes],
            {key: dict(fields) for key, fields in self.heap.items()},
            self.domains,
            self.launched,
            self.site,
            self.undecided,
            self.refusal,
            self.arch_branch,
        )

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise KeyError(name)

    def assign(self, name: str, value: Any) -> None:
        for scope in reversed(self.scopes):
            if name in scope:
                scope[name] = value
                return
        self.scopes[-1][name] = value

    def outcome(self) -> tuple:
        """What a path has done so far, as opposed to what it holds."""
        return (
            self.launched, self.site, self.undecided, self.refusal, self.arch_branch,
            len(self.scopes),
        )  # fmt: skip

    def key(self, value: Any) -> tuple:
        """Everything but the domains: states with equal keys may be merged."""
        scopes = tuple(tuple(sorted(scope.items(), key=lambda kv: kv[0])) for scope in self.scopes)
        heap = tuple(sorted((k, tuple(sorted(v.items()))) for k, v in self.heap.items()))
        return (
            scopes, heap, self.launched, self.site, self.undecided, self.refusal,
            self.arch_branch, hashable(value),
        )  # fmt: skip


@dataclass(frozen=True)
class Leaf:
    """How one path ended, and the inputs that take it."""

    domains: Mapping[str, frozenset]
    #: "launch", or the kind of the site.
    outcome: str
    site: Site | None
    undecided: str | None


def merge(results: list) -> list:
    """Paths that end alike become one, taken by the union of their inputs; paths taken by
    the same inputs that differ only in what unknowns decided become one too, with the values
    they disagree on unknown (a join: it loses nothing the inputs decide)."""
    if len(results) < 2:
        return results
    groups: dict[tuple, tuple] = {}
    for state, value in results:
        key = state.key(value)
        if key in groups:
            groups[key][0].domains = groups[key][0].domains.union(state.domains)
        else:
            groups[key] = (state, value)
    if len(groups) < 2:
        return list(groups.values())
    joined: dict[tuple, tuple] = {}
    for state, value in groups.values():
        key = (state.outcome(), hashable(value), state.domains.key())
        if key in joined:
            _widen(joined[key][0], state)
        else:
            joined[key] = (state, value)
    return list(joined.values())


def _widen(into: State, other: State) -> None:
    """`into` becomes the join of both: every variable or field they disagree on is unknown."""
    if len(into.scopes) != len(other.scopes):
        return
    for mine, theirs in zip(into.scopes, other.scopes):
        for name in set(mine) | set(theirs):
            if hashable(mine.get(name, UNKNOWN)) != hashable(theirs.get(name, UNKNOWN)):
                mine[name] = UNKNOWN
    for identifier in set(into.heap) | set(other.heap):
        mine, theirs = into.heap.setdefault(identifier, {}), other.heap.get(identifier, {})
        for name in set(mine) | set(theirs):
            if hashable(mine.get(name, UNKNOWN)) != hashable(theirs.get(name, UNKNOWN)):
                mine[name] = UNKNOWN
