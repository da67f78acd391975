"""What a TE release's own code outside the selector already decides, told from its version
alone: the fixes its C++ filters, the recipe predicates it has (the requests it never makes are
the registry's: `Hazard.never_made`).

A hazard that TE fixed in its C++ fused-attention query (`nvte_get_fused_attn_backend`) leaves no
trace in the selector: the selector just reads the query's answer. flake8 and the codemod never
parse C++, so they take the release the analysed tree records (its wheel metadata, or a
checkout's `build_tools/VERSION.txt`: `selector_patch.sources`) at its word: a tree at or past
the fix's first release filters the case, as TE shipped it, up to the last release that still
does (`TeFix.cxx_until`: TE 2.20's rewritten query leaves some cases to cuDNN's own support
check). A fork that reverted TE's C++ fix is the one case this cannot see; `verify`, which runs
the tree's own C++, does. A file with no
recorded release, or a fix that lives in the selector, is judged by the analysis as usual.
"""

from __future__ import annotations

from lint_plugin.engine.recipes import PREDICATES
from selector_patch.registry import Hazard, TeFix
from selector_patch.versions import compare, valid


def filtered_in_cxx(hazard: Hazard, te_version: str | None) -> str | None:
    """Why the release `te_version` already filters `hazard` in its C++, or None if it does not
    (or the fix is not a C++ one, or the release is not known)."""
    fix = hazard.evidence
    first = fix.filtered_in_cxx_from if isinstance(fix, TeFix) else ""
    if not (first and te_version and valid(te_version) and compare(te_version, first) >= 0):
        return None
    if fix.cxx_until and compare(te_version, fix.cxx_until) > 0:
        return None  # TE 2.20's query no longer filters it: a guard in the selector does
    return (
        f"TE {te_version}'s C++ fused-attention query filters it (from {first}; TE #{fix.pr}:"
        f" {fix.failure})"
    )


def unseen_inputs(hazard: Hazard, dialect, te_version: str | None = None) -> list[str]:
    """What a TE fix's guard would test that the selector's code cannot ask, each as the
    reason names it: its guard cannot be written, so it is not applicable here, rather than a
    guard that leaves the condition out and fires far too widely.

    An FP8 recipe's class is asked with the recipe's own predicate
    (`fp8_meta["recipe"].float8_current_scaling()`), which a release's recipes define from
    some release on (`recipes.PREDICATES`): the selector's module calls it, or the tree
    records a release whose recipes have it (TE 2.2 - 2.7 define `float8_current_scaling()`
    and never call it); a file with neither cannot tell."""
    if not isinstance(hazard.evidence, TeFix):
        return []
    unseen = []
    for condition in hazard.triggers:
        if not dialect.asks(condition):
            unseen.append(f"`{condition.input}`")
        elif condition.input == "fp8_recipe":
            predicate = PREDICATES[condition.value]
            recorded = (
                te_version and valid(te_version) and compare(te_version, predicate.since) >= 0
            )
            if not (recorded or dialect.calls(predicate.method)):
                unseen.append(
                    f"`{predicate.method}()` on its FP8 recipes (TE {predicate.since}+ defines it,"
                    " and the module calls none)"
                )
    return unseen
