"""What the codemod will do to one selector, decided by meaning, before any byte changes.

For each hazard the analyzer says whether the selector has the backend at all (else
"not-applicable"), whether every witness already ends with the backend off (else the guard is
missing), and where TE's own code puts such a filter (the anchor). A guard that asks whether a
backward will run, in a selector that cannot tell, first needs the backward signal
(`lint_plugin.engine.anchors.backward_signal`): its statements are planned with the guards. The
plan is plain data so the libcst command, `--check`, `--json` and the self-check all read the
same decision.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, NamedTuple, Sequence

from lint_plugin.engine.analysis import HazardVerdict, Selector, analyze_hazards, release, selector
from lint_plugin.engine.delegation import delegates
from lint_plugin.engine.dialect import (
    BACKWARD_FIELD,
    CAPTURE_FIELD,
    SELECTOR_FUNCTIONS,
    find_selectors,
)
from lint_plugin.engine.module_scan import parsed_from
from selector_patch.registry import Hazard

if TYPE_CHECKING:  # `anchors` loads only for a guard to insert (`_insertion`)
    from lint_plugin.engine.anchors import Anchor

NOT_APPLICABLE = "not-applicable"
ALREADY_GUARDED = "already-guarded"
INSERTED = "inserted"


class PlanError(Exception):
    """The selector cannot be patched safely; the message is the cause, in one line."""


class Insertion(NamedTuple):
    #: The hazard whose guard this is; None for a statement of the backward signal.
    hazard: Hazard | None
    #: The function whose filters it joins (a dispatcher's target, `delegation`).
    function: ast.FunctionDef
    #: The statement the new one goes next to, in `Plan.module`.
    anchor: ast.stmt
    #: "before" or "after" the anchor.
    position: str
    #: The new statement, indented like the anchor.
    source: str


class Plan:
    """What `plan_insertions` decided, filled in hazard by hazard. A plain class: importing
    `dataclasses` (with `inspect`) would cost `--check` some 40 M instructions."""

    def __init__(self, module: ast.Module) -> None:
        #: The parsed selector module the insertions' anchors belong to.
        self.module = module
        self.statuses: dict[str, str] = {}
        self.insertions: list[Insertion] = []
        #: The analyzer's verdict for each hazard that was missing (where it points, and why).
        self.missing: dict[str, HazardVerdict] = {}


def selector_function(module: ast.Module, names: Sequence[str]) -> ast.FunctionDef:
    functions = find_selectors(module, tuple(names))
    if not functions:
        raise PlanError("no get_attention_backend() function: not a TE attention selector")
    if len(functions) > 1:
        lines = ", ".join(str(f.lineno) for f in functions)
        raise PlanError(f"several get_attention_backend() definitions (lines {lines})")
    return functions[0]


def plan_insertions(
    code: str,
    hazards: Sequence[Hazard],
    function_names: Sequence[str] = SELECTOR_FUNCTIONS,
    *,
    expect_guarded: bool = False,
    te_version: str | None = None,
) -> Plan:
    """Decide, per hazard, not-applicable / already-guarded / inserted (and where).

    `expect_guarded` is the analyzer's (`analyze_hazards`): set where the hazards should all be
    guarded already, as after the codemod's own insertions; it changes no decision.
    `te_version` is the release the tree records (a TE fix its C++ has is already guarded).
    """
    try:
        module = ast.parse(code)
    except SyntaxError as error:
        raise PlanError(f"syntax error at line {error.lineno}: {error.msg}") from None
    parsed_from(module, code)
    try:
        return _plan(module, hazards, function_names, expect_guarded, te_version)
    finally:
        release()  # every call parses anew: nothing the analysis kept serves another (`release`)


def _plan(
    module: ast.Module,
    hazards: Sequence[Hazard],
    function_names: Sequence[str],
    expect_guarded: bool,
    te_version: str | None,
) -> Plan:
    function = selector_function(module, function_names)
    plan = Plan(module)
    anchors: dict[tuple[ast.FunctionDef, str, str], Anchor | None] = {}
    # A dispatcher's guards go into the functions that hold its filters (`delegation`).
    for target in delegates(module, function):
        prepared = selector(module, target)
        verdicts = analyze_hazards(
            module, target, hazards, expect_guarded=expect_guarded, te_version=te_version
        )
        for hazard, verdict in zip(hazards, verdicts):
            planned = [i.hazard for i in plan.insertions if i.function is target]
            if not verdict.applicable:
                plan.statuses.setdefault(hazard.id, NOT_APPLICABLE)
            elif not verdict.reachable or _covered(hazard, planned):
                if plan.statuses.get(hazard.id) != INSERTED:
                    plan.statuses[hazard.id] = ALREADY_GUARDED
            else:
                plan.statuses[hazard.id] = INSERTED
                plan.missing.setdefault(hazard.id, verdict)
                plan.insertions.append(_insertion(hazard, prepared, anchors))
        asking = [
            insertion.hazard.id
            for insertion in plan.insertions
            if insertion.function is target
            and any(condition.input == "backward" for condition in insertion.hazard.triggers)
        ]
        if asking and not prepared.dialect.sees_backward:
            plan.insertions[:0] = _backward_signal(prepared, asking, plan)
        capturing = [
            insertion.hazard.id
            for insertion in plan.insertions
            if insertion.function is target
            and insertion.hazard is not None
            and any(condition.input == CAPTURE_FIELD for condition in insertion.hazard.triggers)
        ]
        if capturing and not prepared.dialect.sees_capture:
            plan.insertions[:0] = _capture_signal(prepared, capturing, plan)
    return plan


def self_check(patched: str, inserted: Sequence[Hazard], function_names: Sequence[str]) -> None:
    """The analyzer must find every inserted guard effective in the result.

    Run by the libcst command itself, so no entry point (the CLI, `transform`, libcst's own
    codemod runner) can hand back a guard that does not verify. Hazards that were already
    guarded need no second look: a guard only ever switches a flag off, so inserting one cannot
    make another hazard reachable.
    """
    statuses = plan_insertions(patched, inserted, function_names, expect_guarded=True).statuses
    unguarded = [h for h, s in statuses.items() if s == INSERTED]
    if unguarded:
        raise PlanError(f"inserted guard for {', '.join(unguarded)} does not verify; not written")


def _covered(hazard: Hazard, planned: Sequence[Hazard]) -> bool:
    """Whether a guard already planned here switches `hazard`'s backend off for all its witnesses.

    Each hazard is analysed against the original text, so without this a hazard declared twice
    (a registry entry pasted into `pyproject.toml` under a new id) would get two equal guards.
    """
    witnesses = list(hazard.witnesses())
    return any(
        other.backend == hazard.backend and all(other.guard_fires(w) for w in witnesses)
        for other in planned
    )


def _insertion(
    hazard: Hazard,
    prepared: Selector,
    anchors: dict[tuple[ast.FunctionDef, str, str], Anchor | None],
) -> Insertion:
    """The guard for `hazard`, placed where TE keeps such filters. Where it goes and its text
    are imported here, for a guard to insert: `--check` on a guarded selector imports neither.
    `anchors` keeps each place found, by function, section and backend: the guards of TE's own
    later fixes mostly share one (after the fused-attention query, which finding walks the
    whole function)."""
    from codemods.render import RenderError, render_guard
    from lint_plugin.engine.anchors import find_anchor

    dialect = prepared.dialect
    if "logger" not in dialect.bound:
        raise PlanError(f"cannot insert {hazard.id}: the selector binds no `logger`")
    place = (prepared.function, hazard.section, hazard.backend)
    if place not in anchors:
        anchors[place] = find_anchor(prepared, hazard.section, hazard.backend)
    anchor = anchors[place]
    if anchor is None:
        raise PlanError(
            f"cannot place {hazard.id}: no {hazard.section} filter section found"
            " (refactored selector?)"
        )
    indent = " " * anchor.statement.col_offset
    try:
        source = render_guard(hazard, dialect, indent)
    except RenderError as error:
        raise PlanError(f"cannot insert {error}") from None
    return Insertion(hazard, prepared.function, anchor.statement, anchor.position, source)


def _backward_signal(prepared: Selector, asking: list[str], plan: Plan) -> list[Insertion]:
    """The statements that let the selector tell a backward from a forward."""
    from codemods.render import backward_field_source, backward_query_source
    from lint_plugin.engine.anchors import SignalPlaces, backward_signal

    places = backward_signal(prepared)
    if not isinstance(places, SignalPlaces):
        raise PlanError(f"cannot insert {', '.join(asking)}, which ask for a backward: {places}")
    if places.last_field is None:
        local = places.local
        query = backward_query_source(" " * local.statement.col_offset)
        return [Insertion(None, prepared.function, local.statement, local.position, query)]
    return _signal(prepared, places, BACKWARD_FIELD, backward_field_source, plan)


def _capture_signal(prepared: Selector, asking: list[str], plan: Plan) -> list[Insertion]:
    """The statements that let the selector tell a call under CUDA graph capture (the
    `analysis` reports the hazard unguardable, with the reason, where there are none)."""
    from codemods.render import capture_field_source
    from lint_plugin.engine.anchors import SignalPlaces, capture_signal

    places = capture_signal(prepared)
    if not isinstance(places, SignalPlaces):
        raise PlanError(f"cannot insert {', '.join(asking)}, which ask for a capture: {places}")
    return _signal(prepared, places, CAPTURE_FIELD, capture_field_source, plan)


def _signal(prepared: Selector, places, name: str, field_source, plan: Plan) -> list[Insertion]:
    """A signal's params field `name` (and `import dataclasses` where the module lacks it) and
    the selector's local reading it; the field once per module, the import once per plan."""
    from codemods.render import signal_read_source

    target, local = prepared.function, places.local
    read = signal_read_source(name, prepared.program.parameter, " " * local.statement.col_offset)
    insertions = [Insertion(None, target, local.statement, local.position, read)]
    field = field_source(places.field_function, " " * places.last_field.col_offset)
    if any(planned.source == field for planned in plan.insertions):
        return insertions  # the field (and its import) another function of a dispatcher asked for
    insertions.insert(0, Insertion(None, target, places.last_field, "after", field))
    importing = "import dataclasses\n"
    if places.import_after is not None and all(p.source != importing for p in plan.insertions):
        insertions.insert(0, Insertion(None, target, places.import_after, "after", importing))
    return insertions
