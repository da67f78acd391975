"""What one selector call decided, in release-independent words.

TE 2.2+ returns `(use_flash, flash_version, use_fused, fused_backend, use_unfused, available)`;
TE 1.9 - 2.1 return the same without the flash version and record FA3's use in the module global
`_use_flash_attn_3`; before 1.9 the fused backend came last. `returns` says which item is which
(a fork's extra backend included); `Selection` names the chosen backend, its role ("FA4", ...),
cuDNN's fused sub-backend TE returned, and the selector's own log lines, formatted only when read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from functools import cached_property

from packaging.version import Version

from selector_patch.harness.extension import BACKEND_VALUES
from selector_patch.harness.logs import format_entry
from selector_patch.harness.returns import (
    AVAILABLE,
    FLASH,
    FLASH_VERSION,
    FUSED,
    FUSED_BACKEND,
    POSITIONAL,
    UNFUSED,
    Layout,
)
from selector_patch.roles import FA3_GLOBAL, dispatched_role
from selector_patch.scenario import Scenario

#: TE's backends by the flag that selects them, and the role each runs (FlashAttention's is
#: decided by the flash version).
BACKENDS = {
    FLASH: ("FlashAttention", None),
    FUSED: ("FusedAttention", "FUSED"),
    UNFUSED: ("UnfusedDotProductAttention", "UNFUSED"),
}
NO_BACKEND = "NoBackend"
#: `NVTE_Fused_Attn_Backend` names by value: TE 2.19+ return the sub-backend as an `int`.
BACKEND_NAMES = {value: name for name, value in BACKEND_VALUES.items()}
MEMBER_PREFIX = "NVTE_"


class UnreadableResult(Exception):
    """The selector returned something TE's caller could not unpack."""


@dataclass(frozen=True)
class Selection:
    #: "FlashAttention" | "FusedAttention" | "UnfusedDotProductAttention" | "NoBackend", or a
    #: fork's own backend, named by its flag ("use_flex_attention")
    backend: str
    #: "FA2" | "FA3" | "FA4" | "FUSED" | "UNFUSED" | None
    role: str | None
    flash_version: str | None
    #: TE's available_backends: (flash, fused, unfused), and a fork's own as it lists them
    available: tuple[bool, ...]
    #: cuDNN's sub-backend TE returned beside its flags ("F16_arbitrary_seqlen"), by the name
    #: of its `NVTE_Fused_Attn_Backend` member without the prefix; None where TE returned none
    #: (fused attention filtered out) or the dialect returns no sub-backend.
    fused_backend: str | None = None
    entries: tuple[tuple[str, object, tuple], ...] = field(default=(), repr=False, compare=False)

    @cached_property
    def log(self) -> tuple[str, ...]:
        """The selector's debug / warning lines for this call, formatted as TE prints them."""
        lines = (format_entry(entry) for entry in self.entries)
        return tuple(line for line in lines if line is not None)


@functools.lru_cache(maxsize=64)
def _flash_role(version: str | None) -> str:
    """The role TE runs for `use_flash_attention=True` with this flash version.

    A well-formed selector returns the version of the backend it enabled; one whose filters
    switch a flag off after the version was chosen, or that enables a backend whose package is
    not installed, returns a stale version or none, and TE's dispatch decides what runs.
    """
    return dispatched_role(Version(version).major if version is not None else None)


#: `_text`'s answers by the identity of the object, which each entry keeps alive.
_TEXTS: dict[int, tuple[object, str]] = {}


def _text(value: object) -> str:
    """`str(value)`, remembered per `Version` object: a selector returns the same few, held on
    `FlashAttentionUtils`, and their `str` is pure Python (some 4% of a request in a snapshot).
    Per object, not by equality: `Version("2.0") == Version("2.0.0")`, and they print apart;
    anything else (a fork's own, perhaps mutable, version) is printed each time."""
    if not isinstance(value, Version):
        return str(value)
    held = _TEXTS.get(id(value))
    if held is not None and held[0] is value:
        return held[1]
    if len(_TEXTS) >= 1024:  # a selector that makes a new one each call
        _TEXTS.clear()
    text = str(value)
    _TEXTS[id(value)] = (value, text)
    return text


def fused_backend_name(returned: object) -> str | None:
    """The sub-backend's name: TE 1.9 - 2.18 return the extension's enum member, TE 2.19+ its
    `int` (a member does not survive a graph break under `torch.compile`)."""
    if returned is None:
        return None
    if isinstance(returned, int) and not isinstance(returned, bool):
        name = BACKEND_NAMES.get(returned, str(returned))
    else:
        name = str(getattr(returned, "name", returned))
    return name.removeprefix(MEMBER_PREFIX)


def _layout(result: object, layout: Layout | None) -> Layout:
    """`layout` when it fits the returned tuple, else TE's for its length (read by position)."""
    if not isinstance(result, (tuple, list)):
        raise UnreadableResult(f"returned {type(result).__name__}, not TE's tuple")
    if layout is not None and len(layout) == len(result):
        return layout
    positional = POSITIONAL.get(len(result))
    if positional is None:
        raise UnreadableResult(
            f"returned {len(result)} items (TE returns {' or '.join(map(str, POSITIONAL))}),"
            " and its return statement does not name them as TE does"
        )
    return positional


def interpret(
    result: object,
    layout: Layout | None,
    module_globals: dict,
    scenario: Scenario,
    entries: tuple,
) -> Selection:
    """Read a selector's return value (any dialect; `layout` from `returns.return_layout`)."""
    layout = _layout(result, layout)
    selected = None
    for position, flag in layout.flags:
        if result[position]:
            selected = flag
            break
    backend, role = BACKENDS.get(selected, (selected or NO_BACKEND, None))
    flash_version = None
    if selected == FLASH and FLASH_VERSION in layout.position:
        flash_backend = result[layout.position[FLASH_VERSION]]
        flash_version = _text(flash_backend) if flash_backend is not None else None
        role = _flash_role(flash_version)
    elif selected == FLASH:
        role = "FA3" if module_globals.get(FA3_GLOBAL) else "FA2"
        flash_version = scenario.flash_attn_3 if role == "FA3" else scenario.flash_attn_2
    available = result[layout.position[AVAILABLE]]
    try:
        available = tuple(map(bool, available))
    except TypeError:
        raise UnreadableResult(f"returned {AVAILABLE}={available!r}, not a list") from None
    fused_backend = (
        fused_backend_name(result[layout.position[FUSED_BACKEND]])
        if FUSED_BACKEND in layout.position
        else None
    )
    return Selection(backend, role, flash_version, available, fused_backend, entries)
