"""Run the table's scenarios through a real selector, as shipped and with the runtime patch.

Each cell is TE's own choice on the virtual device (`LoadedSelector.select`). "Patched" is the
runtime patch, `selector_patch.runtime.install`, applied to a separately loaded copy of the
module, so both sides run in one process without touching each other. A cell is a *hazard cell*
when a registry hazard is triggered by the cell's request on the row's architecture and TE
selected that hazard's backend. The result is plain data (`TableData`, JSON-able), the one input
of every renderer.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from selector_patch import runtime
from selector_patch.harness import LoadedSelector, Selection, Unrepresentable, load_selector
from selector_patch.registry import HAZARDS, PACKAGE_FIELD, Hazard
from selector_patch.scenario import Scenario
from selector_patch.sources import SelectorSource
from selector_patch.table.columns import Column, architectures, table_columns

#: The table's JSON form: {"source", "te_version", "fused_assumption", "hazard_cell", "columns",
#: "variants"}.
TableData = dict[str, Any]
#: What a cell says when the release's `AttentionParams` cannot express the request.
UNREPRESENTABLE = "not expressible"
HAZARD_CELL = (
    "hazard cell: the request triggers the hazard on that architecture and TE selected the "
    "backend the hazard rules out"
)
VARIANTS = {
    "unpatched": "Unpatched: TE as shipped",
    "patched": "Patched: TE with the runtime patch, selector_patch.install()",
}


def selection_text(cell: dict[str, Any]) -> str:
    """A cell's backend as TE's debug log names it: "FlashAttention (4.0.0b24)"."""
    if cell["flash_version"]:
        return f"{cell['backend']} ({cell['flash_version']})"
    return cell["backend"]


def _hazard_ids(
    scenario: Scenario, selection: Selection | None, hazards: Iterable[Hazard]
) -> list[str]:
    """The hazards this cell falls into: triggered by the request and its backend selected."""
    if selection is None:
        return []
    return [h.id for h in hazards if h.triggered_by(scenario) and selection.role == h.backend]


def _cell(
    selector: LoadedSelector, scenario: Scenario, hazards: Sequence[Hazard]
) -> dict[str, Any]:
    try:
        selection: Selection | None = selector.select(scenario)
    except Unrepresentable:
        selection = None
    return {
        "backend": selection.backend if selection else UNREPRESENTABLE,
        "flash_version": selection.flash_version if selection else None,
        "hazards": _hazard_ids(scenario, selection, hazards),
    }


def _variant(
    name: str, selector: LoadedSelector, columns: list[Column], hazards: Sequence[Hazard]
) -> dict[str, Any]:
    rows = [
        {
            "architecture": Scenario(compute_capability=architecture).sm,
            "cells": [_cell(selector, column.on(architecture), hazards) for column in columns],
        }
        for architecture in architectures(hazards)
    ]
    return {"name": name, "title": VARIANTS[name], "rows": rows}


def settings(scenario: Scenario) -> str:
    """What the column fixes besides the request: its `NVTE_*` variables and installed packages."""
    env = ", ".join(f"{name}={value}" for name, value in scenario.env) or "no NVTE_* set"
    packages = ", ".join(
        f"{role} {getattr(scenario, field)}"
        for role, field in PACKAGE_FIELD.items()
        if getattr(scenario, field)
    )
    return f"{env}; installed: {packages or 'no flash-attn'}"


def _column_data(column: Column) -> dict[str, Any]:
    return {
        "hazard": column.hazard.id,
        "title": column.hazard.title,
        "kind": column.kind,
        "label": column.label,
        "settings": settings(column.scenario),
    }


def build(
    source: SelectorSource, *, patched: bool, hazards: Sequence[Hazard] = HAZARDS
) -> TableData:
    """The table of `hazards` for `source`; with `patched`, the selector patched against the
    same hazards beside it."""
    selector = load_selector(source)
    columns = table_columns(hazards)
    variants = [_variant("unpatched", selector, columns, hazards)]
    if patched:
        copy = load_selector(source)
        runtime.install(copy.module, hazards)
        try:
            variants.append(_variant("patched", copy, columns, hazards))
        finally:
            runtime.uninstall(copy.module)
    return {
        "source": str(source.path),
        "te_version": source.te_version,
        "fused_assumption": selector.fused_assumption,
        "hazard_cell": HAZARD_CELL,
        "columns": [_column_data(column) for column in columns],
        "variants": variants,
    }
