"""Per-call state of a loaded selector: put back what the last call changed, pin the packages.

The selector is not a pure function. It writes module globals (TE 2.1 lowers
`_flash_attn_max_version`, sets `_use_flash_attn_3`) and `FlashAttentionUtils` class attributes
(`version_required`, the `*_warning_printed` flags). Harness calls must be independent, so
`ModuleState` snapshots both right after import and restores them before every call. The globals
are those written by the selector and by the module's functions it calls: a fork's selector may
dispatch to module-level functions that hold the filters (and write the globals).

From TE 2.2 on, which flash-attn packages are installed lives on `FlashAttentionUtils`, filled in
by `backends.py` at import: it sets `version` / `fa3_version` / `fa4_version` and calls the
matching setter. `ModuleState.pin` does the same for the scenario's packages (the setter, not a
copy of it, derives the `v2_*_plus` flags), once per package set, and replays the result.
TE 1.x - 2.1 read the packages at import instead; the loader imports those once per machine.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from packaging.version import Version

from selector_patch.bytecode import reached_functions, written_globals
from selector_patch.roles import ROLES

UTILS_CLASS = "FlashAttentionUtils"
#: The `FlashAttentionUtils` setter TE's backends.py calls after recording each role's version.
SETTERS = {
    "FA2": "set_flash_attention_version",
    "FA3": "set_flash_attention_3_params",
    "FA4": "set_flash_attention_4_params",
}


def _class_state(cls: type) -> dict[str, Any]:
    return {
        name: value
        for name, value in vars(cls).items()
        if not name.startswith("__")
        and not isinstance(value, (staticmethod, classmethod, property, types.FunctionType))
    }


def pins_packages(module: types.ModuleType) -> bool:
    """Whether this dialect records installed packages on `FlashAttentionUtils` (TE 2.2+)."""
    utils = module.__dict__.get(UTILS_CLASS)
    return isinstance(utils, type) and hasattr(utils, SETTERS["FA2"])


class ModuleState:
    """Snapshot of one imported selector module's mutable state."""

    def __init__(self, module: types.ModuleType, selector: types.FunctionType) -> None:
        namespace = module.__dict__
        self._namespace = namespace
        reached = reached_functions(inspect.unwrap(selector))
        written = {name for function in reached for name in written_globals(function)}
        self._globals = {name: namespace[name] for name in written if name in namespace}
        self._utils = namespace.get(UTILS_CLASS) if pins_packages(module) else None
        self._pristine = _class_state(self._utils) if self._utils is not None else {}
        self._pinned: dict[tuple, dict[str, Any]] = {}

    def reset(self, flash_attn: tuple[tuple[str, str | None], ...]) -> None:
        """Restore the import-time globals and pin `flash_attn` ((role, version) pairs)."""
        self._namespace.update(self._globals)
        if self._utils is None:
            return
        pinned = self._pinned.get(flash_attn)
        if pinned is None:
            pinned = self._pinned[flash_attn] = self._pin(flash_attn)
        for name, value in pinned.items():
            setattr(self._utils, name, value)

    def _pin(self, flash_attn: tuple[tuple[str, str | None], ...]) -> dict[str, Any]:
        utils = self._utils
        for name, value in self._pristine.items():
            setattr(utils, name, value)
        for role, version in flash_attn:
            setter = getattr(utils, SETTERS[role], None)
            if version is None or setter is None:
                continue  # not installed, or a package this release does not know
            setattr(utils, ROLES[role].versions[0].rpartition(".")[2], Version(version))
            setter()
        return _class_state(utils)
