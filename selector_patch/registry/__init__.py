"""The hazard registry: every known case where TE's selector picks a kernel that cannot run.

One package, one module per concern: `model` (what a hazard states, its TOML/JSON form),
`kernel_refusals` (a kernel refuses inputs TE admits) and `te_fixes` (TE itself later switched
the backend off, in its selector or its C++ fused-attention query). Consumers import from here.

`HAZARDS` are the hazards every mode guards (the codemod, flake8, `verify`, the runtime patch);
`TE_FIXES` are judged by the harness (`verify --te-fixes`, the pytest plugin's cases) until the
static analysis reads TE's fused answer (their guards sit after TE's fused-attention query).
"""

from __future__ import annotations

from selector_patch.registry.kernel_refusals import (
    FA2_99KB_HEAD_DIM_DROPOUT_BACKWARD,
    FA4_INTERFACE,
    FA4_SM8X_BACKWARD,
    FA4_SM12X_DETERMINISTIC_BACKWARD,
    FA4_SM12X_SPLIT_HEURISTIC_FORWARD,
    FA4_SM12X_SPLIT_KV_FORWARD,
    FA4_SM100_HD256_SEQUSED_BACKWARD,
    FA4_SM100_HD256_SEQUSED_FORWARD,
    PACKED_WITH_PADDING,
    SM8X,
    SM10X_SM11X,
    SM12X,
)
from selector_patch.registry.model import (
    HAZARD_ID,
    ISOLATING_ENV,
    PACKAGE_FIELD,
    SECTIONS,
    Control,
    Evidence,
    Hazard,
    Spelling,
    TeFix,
)

HAZARDS: tuple[Hazard, ...] = (
    FA4_SM12X_DETERMINISTIC_BACKWARD,
    FA2_99KB_HEAD_DIM_DROPOUT_BACKWARD,
    FA4_SM12X_SPLIT_KV_FORWARD,
    FA4_SM12X_SPLIT_HEURISTIC_FORWARD,
    FA4_SM8X_BACKWARD,
    FA4_SM100_HD256_SEQUSED_FORWARD,
    FA4_SM100_HD256_SEQUSED_BACKWARD,
)


#: What `te_fixes` defines, loaded where first asked for (PEP 562): a flake8 run that guards the
#: default hazards alone never reads TE's fixes, nor pays their import.
_TE_FIXES_NAMES = ("SM80_ON", "TE_FIXES")


def __getattr__(name: str):
    if name in _TE_FIXES_NAMES:
        from selector_patch.registry import te_fixes

        return getattr(te_fixes, name)
    raise AttributeError(f"module 'selector_patch.registry' has no attribute {name!r}")


def get_hazard(hazard_id: str) -> Hazard:
    from selector_patch.registry.te_fixes import TE_FIXES

    everything = (*HAZARDS, *TE_FIXES)
    for hazard in everything:
        if hazard.id == hazard_id:
            return hazard
    known = [hazard.id for hazard in everything]
    raise KeyError(f"unknown hazard {hazard_id!r}; known: {known}")


__all__ = [
    "FA4_INTERFACE", "HAZARDS", "HAZARD_ID", "ISOLATING_ENV", "PACKAGE_FIELD",
    "PACKED_WITH_PADDING", "SECTIONS", "SM80_ON", "SM8X", "SM10X_SM11X", "SM12X", "TE_FIXES",
    "Control", "Evidence", "Hazard", "Spelling", "TeFix", "get_hazard",
]  # fmt: skip
