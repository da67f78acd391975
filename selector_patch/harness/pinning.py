"""Per-call state of a loaded selector: put back what the last call changed, pin the machine.

The selector is not a pure function. It writes module globals (TE 2.1 lowers
`_flash_attn_max_version`, sets `_use_flash_attn_3`) and `FlashAttentionUtils` class attributes
(`version_required`, the `*_warning_printed` flags). Harness calls must be independent, so
`ModuleState` snapshots both right after import and restores them before every call. The globals
are those written by the selector and by the module's functions it calls: a fork's selector may
dispatch to module-level functions that hold the filters (and write the globals).

From TE 2.2 on, what the installed flash-attn packages allow lives on `FlashAttentionUtils`,
filled in by TE's own wiring at import (`wiring`). `ModuleState` runs that wiring on each
machine the first time it is pinned, from the class's pristine state, and replays the class
state it leaves on every later call on that machine. TE 1.x - 2.1 read the packages in the
selector's own module at import instead; the loader imports those once per machine.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable, Hashable, Mapping

from packaging.version import Version

from selector_patch.bytecode import reached_functions, written_globals
from selector_patch.roles import ROLES

UTILS_CLASS = "FlashAttentionUtils"
_MISSING = object()
#: The `FlashAttentionUtils` setter TE's wiring calls after recording each role's version.
SETTERS = {
    "FA2": "set_flash_attention_version",
    "FA3": "set_flash_attention_3_params",
    "FA4": "set_flash_attention_4_params",
}


def _class_state(cls: type) -> dict[str, Any]:
    """Everything the class holds but its dunders (functions assigned as attributes included:
    the wiring installs FA4's validator as one)."""
    return {name: value for name, value in vars(cls).items() if not name.startswith("__")}


def pins_packages(module: types.ModuleType) -> bool:
    """Whether this dialect records installed packages on `FlashAttentionUtils` (TE 2.2+)."""
    utils = module.__dict__.get(UTILS_CLASS)
    return isinstance(utils, type) and hasattr(utils, SETTERS["FA2"])


class ModuleState:
    """Snapshot of one imported selector module's mutable state.

    `wire` runs TE's wiring on the machine pinned at the time (None: the selector has none, see
    `wiring`, and the packages' versions are recorded through the setters).
    """

    def __init__(
        self,
        module: types.ModuleType,
        selector: types.FunctionType,
        wire: Callable[[], None] | None,
    ) -> None:
        namespace = module.__dict__
        self._namespace = namespace
        reached = reached_functions(inspect.unwrap(selector))
        written = {name for function in reached for name in written_globals(function)}
        self._globals = {name: namespace[name] for name in written if name in namespace}
        self._utils = namespace.get(UTILS_CLASS) if pins_packages(module) else None
        self._pristine = _class_state(self._utils) if self._utils is not None else {}
        #: The class's own dunders (its `__dict__` holds them beside the state).
        self._dunders = len(vars(self._utils)) - len(self._pristine) if self._utils else 0
        self._wire = wire
        self._pinned: dict[Hashable, dict[str, Any]] = {}
        #: The state last put back, and the whole class as it was right after.
        self._last: dict[str, Any] | None = None
        self._last_full: dict[str, Any] = {}

    def reset(self, machine: Hashable, flash_attn: tuple[tuple[str, str | None], ...]) -> None:
        """Restore the import-time globals and the class state TE's wiring leaves on `machine`
        (whose installed flash-attn packages are `flash_attn`, (role, version) pairs)."""
        self._namespace.update(self._globals)
        if self._utils is None:
            return
        pinned = self._pinned.get(machine)
        if pinned is None:
            pinned = self._pinned[machine] = self._pin(flash_attn)
        self._restore(pinned)

    def _restore(self, state: dict[str, Any]) -> None:
        """The class as it was in `state`: changed attributes put back, added ones removed
        (every call does this, so only what differs is written).

        Most calls change nothing: the class then compares equal to what was pinned (one
        comparison in C, each value first by identity), and nothing is written.
        """
        utils = self._utils
        current = vars(utils)
        if self._last is state and _equal(current, self._last_full):
            return
        for name, value in state.items():
            if current.get(name, _MISSING) is not value:
                setattr(utils, name, value)
        if len(current) != len(state) + self._dunders:
            for name in [n for n in current if not n.startswith("__") and n not in state]:
                delattr(utils, name)
        self._last, self._last_full = state, dict(current)

    def _pin(self, flash_attn: tuple[tuple[str, str | None], ...]) -> dict[str, Any]:
        self._restore(self._pristine)
        if self._wire is not None:
            self._wire()
            return _class_state(self._utils)
        for role, version in flash_attn:
            setter = getattr(self._utils, SETTERS[role], None)
            if version is None or setter is None:
                continue  # not installed, or a package this release does not know
            setattr(self._utils, ROLES[role].versions[0].rpartition(".")[2], Version(version))
            setter()
        return _class_state(self._utils)


def _equal(current: Mapping[str, Any], expected: dict[str, Any]) -> bool:
    """Whether the class holds what it held (False also where a value's `==` gives no truth
    value, as a tensor's does: that class is then put back attribute by attribute)."""
    try:
        return current == expected
    except Exception:
        return False
