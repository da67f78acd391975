"""Selectors with guards, for tests that need a patched selector or a deliberately wrong one.

The reference "patched selector" is what the codemod writes (`codemods.apply.transform`), so the
runtime patch and `verify` are compared against the project's own fix, not a hand-written copy.
`OVERBROAD_TEA001_GUARD` is a wrong fix - FA4 off for every deterministic call, on every GPU
and in eval too - that `verify`'s controls must catch. A hazard's control may be another
hazard's witness (TEA002's controls on sm86 run FA4's backward there: TEA005): `ruled_out`
names what the guards must switch off for it.
"""

from __future__ import annotations

from codemods.apply import transform
from selector_patch.registry import HAZARDS, get_hazard
from selector_patch.scenario import Scenario

DETERMINISM_ANCHOR = "    # use_flash_attention may have been set above\n"
OVERBROAD_TEA001_GUARD = (
    "    if use_flash_attention_4 and deterministic:\n"
    f"        logger.debug({get_hazard('TEA001').message!r})\n"
    "        use_flash_attention_4 = False\n"
)


def patched(text: str, hazards=HAZARDS) -> str:
    """`text` with the codemod's guards for `hazards` inserted (once per session: the codemod
    is a function of the text, and its self-check runs the harness)."""
    key = (text, repr(tuple(hazards)))  # a hazard holds dicts: its repr is its identity here
    if key not in _PATCHED:
        _PATCHED[key] = transform(text, hazards)[0]
    return _PATCHED[key]


_PATCHED: dict[tuple[str, str], str] = {}


def overbroad(text: str) -> str:
    """`text` with the over-broad TEA001 guard inserted before the flags are recombined."""
    assert text.count(DETERMINISM_ANCHOR) == 1
    return text.replace(DETERMINISM_ANCHOR, OVERBROAD_TEA001_GUARD + DETERMINISM_ANCHOR)


def ruled_out(scenario: Scenario, hazards=HAZARDS) -> set[str]:
    """The backends (roles) that `hazards` rule out for `scenario`: those it is a witness of."""
    return {hazard.backend for hazard in hazards if hazard.triggered_by(scenario)}
