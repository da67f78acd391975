"""A selection diff as plain data: the regions, each with a witness and both sides' reasons.

    {"a": {...side...}, "b": {...}, "fused_assumption": [...], "grid": {...},
     "configurations": N, "compared": n, "not_compared": {...}, "differing": k,
     "outside_hazards": m,
     "differences": [
       {"region": "sm120, training, deterministic=True: FlashAttention 4 → FusedAttention",
        "architectures": ["sm120"], "conditions": ["training", "deterministic=True"],
        "change": "FlashAttention 4 → FusedAttention", "hazards": ["TEA001"],
        "configurations": 81,
        "witness": {select() keywords}, "position": its place in the grid's order,
        "a": {"backend": ..., "role": ..., "available": [...], "log": [TE's lines]},
        "b": {...},
        "explanation": {"line", "key", "side", "direction", "backend"}, "cause": 1}, ...],
     "causes": [{"cause": key, "line", "side", "direction", "backend", "class", "reason",
                 "hazards": [...], "configurations": n, "regions": [1, 2, ...]}, ...]}

The regions are in their causes' order (`grouping`): each request's change is explained by the
TE log line or C++ warning one side logged and the other did not (`causes.explain`), and
requests with different explanations are kept in regions of their own.

A region is named by each hazard whose guard fires for every request in it (and, where the
backend changed, whose backend side A chose): the regions a guard made. Requests one change
reaches for different hazards form regions of their own (`regions.find`'s causes). `outside_hazards`
counts the differing requests no hazard explains, which is 0 for a diff the codemod made. The
witness is the region's plainest request, as `select()` keywords (values JSON-encoded, see
`snapshot.codec`), with each side's log lines for it. The data is the one input of every
renderer.
"""

from __future__ import annotations

from typing import Any, Sequence

from selector_patch.registry import Hazard
from selector_patch.scenario import Scenario
from selector_patch.selection_diff.causes import explain
from selector_patch.selection_diff.compare import Compared, Side
from selector_patch.selection_diff.grouping import explanation_json, group
from selector_patch.selection_diff.regions import Region, Space, find, indices
from selector_patch.snapshot.codec import encode
from selector_patch.snapshot.grid import MODE_NAMES, Configuration, Grid
from selector_patch.snapshot.outcome import Pick
from selector_patch.testing.inputs import SCENARIO_FIELDS, request_of

DEFAULT = Scenario()
#: `select()` keywords a witness always states, default or not.
ALWAYS = ("compute_capability",)

Report = dict[str, Any]


def witness_keywords(grid: Grid, configuration: Configuration) -> dict[str, Any]:
    """The request as a caller types it: what differs from `select()`'s defaults."""
    keywords = grid.keywords(configuration)
    return {
        name: value
        for name, value in keywords.items()
        if name in ALWAYS or name not in SCENARIO_FIELDS or value != getattr(DEFAULT, name)
    }


def scenario_of(keywords: dict[str, Any]) -> Scenario:
    return request_of(keywords, tuple(keywords))[0]


def explained_by(hazard: Hazard, scenario: Scenario, a: Pick, b: Pick) -> bool:
    """Whether the hazard's guard accounts for this change: it fires for the request, and where
    the backend changed, side A had chosen the hazard's backend."""
    if not hazard.guard_fires(scenario):
        return False
    return a.backend == b.backend or a.role == hazard.backend


def _side(side: Side) -> dict[str, Any]:
    return {
        "name": side.name,
        "kind": side.kind,
        "te_version": side.te_version,
        "fused_assumption": side.fused_assumption,
    }


def _pick_json(pick: Pick, log: Sequence[str]) -> dict[str, Any]:
    return {**pick.to_json(), "log": list(log)}


def build(a: Side, b: Side, compared: Compared, hazards: Sequence[Hazard]) -> Report:
    """The report of `compared` (both sides' outcomes), its regions named by `hazards`."""
    grid = compared.grid
    space = Space(grid)
    picks_a = [o.pick if o is not None else None for o in compared.a]
    picks_b = [o.pick if o is not None else None for o in compared.b]
    causes = {}
    explained: dict[tuple[int, int], str] = {}  # outcomes are interned: one explanation each
    for position in indices(compared.compared):
        pa, pb = picks_a[position], picks_b[position]
        if pa != pb:
            scenario = scenario_of(grid.keywords(grid.at(position)))
            named = tuple(h.id for h in hazards if explained_by(h, scenario, pa, pb))
            oa, ob = compared.a[position], compared.b[position]
            key = explained.get((id(oa), id(ob)))
            if key is None:
                key = explained[(id(oa), id(ob))] = explain(oa, ob).key
            causes[position] = (named, key)
    regions = find(space, picks_a, picks_b, compared.compared, causes)
    outside = sum(not named for named, _key in causes.values())
    differences, grouped = group([_difference(compared, space, region) for region in regions])
    assumed = _assumptions(a, b)
    return {
        "a": _side(a),
        "b": _side(b),
        "fused_assumption": assumed,
        "grid": {
            "strength": grid.strength,
            "architectures": [f"sm{10 * x + y}" for x, y in grid.architectures],
            "modes": [MODE_NAMES[mode] for mode in grid.modes],
            "switches": [switch.name for switch in grid.switches],
            "inputs": [factor.keyword for factor in grid.factors if factor.levels],
            "singles": grid.singles,
            "pairs": len(grid.rows) - grid.singles,
            "pair_settings": len(grid.pair_settings),
        },
        "configurations": len(grid),
        "compared": compared.compared.bit_count(),
        "not_compared": compared.not_compared,
        "differing": sum(r["configurations"] for r in differences),
        "outside_hazards": outside,
        "differences": differences,
        "causes": grouped,
    }


def _assumptions(a: Side, b: Side) -> list[str]:
    """The harness's sentence for each side whose fused answer was assumed, once for both where
    they say the same ("fused answer assumed: F16_arbitrary_seqlen (no TE C++ for 2.20.2)"),
    after each side's release tree where a file alone was placed in one by inference."""
    trees = [
        f"{label}: {side.tree_assumption}"
        for label, side in (("A", a), ("B", b))
        if side.tree_assumption
    ]
    if a.fused_assumption and a.fused_assumption == b.fused_assumption:
        return [*trees, f"A and B: {a.fused_assumption}"]
    return [
        *trees,
        *(
            f"{label}: {side.fused_assumption}"
            for label, side in (("A", a), ("B", b))
            if side.fused_assumption
        ),
    ]


def _difference(compared: Compared, space: Space, region: Region) -> dict[str, Any]:
    grid = compared.grid
    architectures, conditions = region.statement(space)
    positions = list(indices(region.mask))
    witness = grid.at(region.witness)
    change = region.change
    where = ", ".join([*architectures, *conditions]) or "every request"
    return {
        "region": f"{where}: {change}",
        "architectures": architectures,
        "conditions": conditions,
        "change": change,
        "hazards": list(region.cause[0]),
        "configurations": len(positions),
        "witness": {k: encode(v) for k, v in witness_keywords(grid, witness).items()},
        "position": region.witness,
        "a": _pick_json(compared.a[region.witness].pick, compared.a[region.witness].log),
        "b": _pick_json(compared.b[region.witness].pick, compared.b[region.witness].log),
        "explanation": explanation_json(
            explain(compared.a[region.witness], compared.b[region.witness])
        ),
    }
