"""What one selector call decided, in release-independent words.

TE 2.2+ returns `(use_flash, flash_version, use_fused, fused_backend, use_unfused, available)`;
TE 1.9 - 2.1 return the same without the flash version and record FA3's use in the module global
`_use_flash_attn_3`. `Selection` names the chosen backend, its role ("FA4", ...) and the
selector's own log lines, formatted only when read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from packaging.version import Version

from selector_patch.harness.logs import format_entry
from selector_patch.roles import dispatched_role
from selector_patch.scenario import Scenario

BACKENDS = ("FlashAttention", "FusedAttention", "UnfusedDotProductAttention")
NO_BACKEND = "NoBackend"
#: TE 1.11 - 2.1: set by the selector when FlashAttention means FA3.
FA3_GLOBAL = "_use_flash_attn_3"


@dataclass(frozen=True)
class Selection:
    #: "FlashAttention" | "FusedAttention" | "UnfusedDotProductAttention" | "NoBackend"
    backend: str
    #: "FA2" | "FA3" | "FA4" | "FUSED" | "UNFUSED" | None
    role: str | None
    flash_version: str | None
    #: TE's available_backends: (flash, fused, unfused)
    available: tuple[bool, bool, bool]
    entries: tuple[tuple[str, object, tuple], ...] = field(default=(), repr=False, compare=False)

    @cached_property
    def log(self) -> tuple[str, ...]:
        """The selector's debug / warning lines for this call, formatted as TE prints them."""
        return tuple(format_entry(entry) for entry in self.entries)


def _flash_role(version: str | None) -> str:
    """The role TE runs for `use_flash_attention=True` with this flash version.

    A well-formed selector returns the version of the backend it enabled; one whose filters
    switch a flag off after the version was chosen, or that enables a backend whose package is
    not installed, returns a stale version or none, and TE's dispatch decides what runs.
    """
    return dispatched_role(Version(version).major if version is not None else None)


def interpret(result: tuple, module_globals: dict, scenario: Scenario, entries: tuple) -> Selection:
    """Read a selector's return value (either dialect) into a `Selection`."""
    if len(result) == 6:
        use_flash, flash_backend, use_fused, _fused_backend, use_unfused, available = result
        flash_version = str(flash_backend) if use_flash and flash_backend is not None else None
        role = _flash_role(flash_version) if use_flash else None
    else:
        use_flash, use_fused, _fused_backend, use_unfused, available = result
        role = ("FA3" if module_globals.get(FA3_GLOBAL) else "FA2") if use_flash else None
        flash_version = scenario.flash_attn_3 if role == "FA3" else scenario.flash_attn_2
        flash_version = flash_version if use_flash else None
    if use_flash:
        backend = BACKENDS[0]
    elif use_fused:
        backend, role = BACKENDS[1], "FUSED"
    elif use_unfused:
        backend, role = BACKENDS[2], "UNFUSED"
    else:
        backend = NO_BACKEND
    return Selection(backend, role, flash_version, tuple(bool(x) for x in available), entries)
