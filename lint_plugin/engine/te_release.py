"""What a TE release's own C++ already filters, told from its version alone.

A hazard that TE fixed in its C++ fused-attention query (`nvte_get_fused_attn_backend`) leaves no
trace in the selector: the selector just reads the query's answer. flake8 and the codemod never
parse C++, so they take the release the analysed tree records (its wheel metadata, or a
checkout's `build_tools/VERSION.txt`: `selector_patch.sources`) at its word: a tree at or past
the fix's first release filters the case, as TE shipped it. A fork that reverted TE's C++ fix is
the one case this cannot see; `verify`, which runs the tree's own C++, does. A file with no
recorded release, or a fix that lives in the selector, is judged by the analysis as usual.
"""

from __future__ import annotations

from selector_patch.registry import Hazard, TeFix
from selector_patch.scenario import PROCESS_STATE
from selector_patch.versions import compare, valid


def filtered_in_cxx(hazard: Hazard, te_version: str | None) -> str | None:
    """Why the release `te_version` already filters `hazard` in its C++, or None if it does not
    (or the fix is not a C++ one, or the release is not known)."""
    fix = hazard.evidence
    first = fix.filtered_in_cxx_from if isinstance(fix, TeFix) else ""
    if not (first and te_version and valid(te_version) and compare(te_version, first) >= 0):
        return None
    return (
        f"TE {te_version}'s C++ fused-attention query filters it (from {first}; TE #{fix.pr}:"
        f" {fix.failure})"
    )


def unseen_inputs(hazard: Hazard, sees) -> list[str]:
    """The trigger inputs of a TE fix that the selector's code cannot be asked about (an FP8
    recipe's options are TE objects): its guard cannot be written, so it is not applicable
    here, rather than a guard that leaves the condition out and fires far too widely. A process
    state (`scenario.PROCESS_STATE`: CUDA-graph capture before TE 2.10) is so for every hazard:
    the selector is asked under it all the same and may pick the failing backend, but has no
    field to test."""
    return [
        condition.input
        for condition in hazard.triggers
        if (isinstance(hazard.evidence, TeFix) or condition.input in PROCESS_STATE)
        and not sees(condition.input)
    ]
