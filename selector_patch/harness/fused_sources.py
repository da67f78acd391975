"""Which of TE's own fused-attention queries answers for a selector, or which assumption does.

In order: the source's own C++ (a checkout), a configured directory of per-release trees
(`selector_patch.te_cxx`), then the release's compiled library (`selector_patch.te_lib`). The
first two compile TE's source; the third runs what the release shipped. Only where none is at
hand is the answer an assumption, and the sentence every result then carries says why. TE 2.20
changed the query to one `FusedAttentionParams` returning `(backend, reject_message)`, and asks
cuDNN's own graph support check for what its rules admit: there, and only there, cuDNN's
verdict is an assumption (`extension`), counted in the selector's note.
"""

from __future__ import annotations

from pathlib import Path

from selector_patch.harness.config_fields import VERDICT_ASSUMED
from selector_patch.harness.extension import ASSUMED_BACKEND
from selector_patch.harness.failures import LoadError
from selector_patch.sources import SelectorSource
from selector_patch.te_cxx import CxxError, configured_trees, locate
from selector_patch.te_cxx.query import load


def fused_query(source: SelectorSource, te_cxx: Path | str | None, two_results: bool):
    """TE's query for `source` (a `FusedQuery` or a `te_lib` `LibraryQuery`) and None, or None
    and the assumption's sentence ("fused answer assumed: ... (no TE C++ for 2.20.2)")."""
    try:
        tree = locate(source.root, source.te_version, configured_trees(te_cxx))
        if tree is not None:
            return load(tree), None
        missing = _library(source.te_version, two_results) if source.te_version else ""
        if not isinstance(missing, str):
            return missing, None
    except CxxError as error:
        where, _, cause = str(error).partition(": ")
        raise LoadError(where, cause) from None
    return None, (
        f"fused answer assumed: {ASSUMED_BACKEND}"
        f" (no TE C++ for {source.te_version or source.path}{missing})"
    )


def _library(version: str, two_results: bool):
    """The release's compiled query, or why there is none (": ..." for the sentence)."""
    from selector_patch import te_lib

    try:
        return te_lib.load(version, two_results)
    except te_lib.Missing as missing:
        return f": {missing}"


def verdicts_note(query) -> str | None:
    """How many requests reached cuDNN's check with TE 2.20+'s compiled `query` (its verdict
    assumed there), or None when none did."""
    asked = getattr(query, "asked_cudnn", 0)
    if not asked:
        return None
    return (
        f"{VERDICT_ASSUMED}: supported, for the {asked} request(s) so far whose check TE's own"
        " rules left to cuDNN"
    )
