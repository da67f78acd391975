"""Thread-local overrides of the environment variables a TE selector reads.

Both the harness (pinning a scenario's `NVTE_*` variables) and the runtime patch (re-running the
selector with one backend switched off) must change what the selector *reads* without touching
`os.environ`, which every other thread shares. The selector module is given `OS_VIEW` in place of
its `os` global: a module that is `os` in every respect except that `os.environ` and `os.getenv`
consult this thread's override layers first. Layers nest, so the runtime patch's override composes
with the harness's pinning, innermost first.

`recording()` tells which variables a call read: a snapshot need not run a request again with a
variable set that the selector never looked at (TE reads `NVTE_FLASH_ATTN_V2` only while
`NVTE_FLASH_ATTN` leaves flash attention on).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from typing import NamedTuple

from selector_patch.views import ModuleView

_MISSING = object()
#: Recorded for a call that iterated over the environment: it saw every variable.
EVERY = "*"


class _Layer(NamedTuple):
    values: Mapping[str, str]
    #: Variables starting with this prefix read as unset unless `values` sets them.
    hidden_prefix: str | None


class _ThreadState(threading.local):
    """One thread's override layers, innermost last, and the set its reads are recorded in
    (None: not recording); set up on a thread's first use."""

    def __init__(self) -> None:
        self.layers: list[_Layer] = []
        self.read: set[str] | None = None


_state = _ThreadState()


def overridden(values: Mapping[str, str], *, hide_prefix: str | None = None) -> "_Overridden":
    """Within the block, and in this thread only, the selector reads `values` over the real
    environment; with `hide_prefix`, other variables with that prefix read as unset."""
    return _Overridden(_Layer(dict(values), hide_prefix))


def recording() -> "_Recording":
    """The names this thread looks up within the block (`EVERY` once it iterates them all)."""
    return _Recording()


class _Overridden:
    """`overridden`'s block. These blocks are classes, not generators: the harness enters
    both once a request, some 150,000 times a snapshot."""

    __slots__ = ("_layer",)

    def __init__(self, layer: _Layer) -> None:
        self._layer = layer

    def __enter__(self) -> None:
        _state.layers.append(self._layer)

    def __exit__(self, *_exc_info) -> None:
        _state.layers.pop()


class _Recording:
    """`recording`'s block: the reads within it, added to an enclosing block's on the way out."""

    __slots__ = ("_read", "_outer")

    def __enter__(self) -> set[str]:
        self._read: set[str] = set()
        self._outer = _state.read
        _state.read = self._read
        return self._read

    def __exit__(self, *_exc_info) -> None:
        _state.read = self._outer
        if self._outer is not None:
            self._outer.update(self._read)


def _note(name: str) -> None:
    read = _state.read
    if read is not None:
        read.add(name)


def lookup(name: str, default=None):
    """What this thread reads for `name`: the innermost layer deciding it, else os.environ.
    (`_note`'s work is written out here: TE's selector reads some 15 variables a request.)"""
    state = _state
    if state.read is not None:
        state.read.add(name)
    for layer in reversed(state.layers):
        value = layer.values.get(name, _MISSING)
        if value is not _MISSING:
            return value
        if layer.hidden_prefix is not None and name.startswith(layer.hidden_prefix):
            return default
    return os.environ.get(name, default)


class EnvironView(MutableMapping):
    """`os.environ` as this thread sees it; writes go to the real environment."""

    def get(self, name, default=None):
        return lookup(name, default)

    def __getitem__(self, name: str) -> str:
        value = lookup(name, _MISSING)
        if value is _MISSING:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and lookup(name, _MISSING) is not _MISSING

    def __iter__(self) -> Iterator[str]:
        _note(EVERY)
        names = set(os.environ)
        for layer in _state.layers:
            names.update(layer.values)
        return iter(sorted(name for name in names if name in self))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __setitem__(self, name: str, value: str) -> None:
        os.environ[name] = value

    def __delitem__(self, name: str) -> None:
        del os.environ[name]


class OsView(ModuleView):
    """The `os` module with `environ` and `getenv` replaced by this thread's view.

    `recording` is reached through the view a selector was given: a process that imports this
    module twice (pytest's in-process `pytester` sessions) has two of them, and only the one the
    selector reads through sees its reads.
    """

    recording = staticmethod(recording)

    def __init__(self) -> None:
        super().__init__(os)
        self.environ = EnvironView()

    def getenv(self, name: str, default=None):
        return lookup(name, default)


OS_VIEW = OsView()
