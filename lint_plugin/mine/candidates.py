"""A mapped case as a registry `Hazard`: what the judges check and what the user may declare.

The candidate is built the way the registry's entries are written (see TEA001, TEA002): the
case's backend, architectures and triggers, a message in TE's log style, the site as evidence
affecting this kernel version onwards, and controls - inputs just outside the hazard where the
backend must stay eligible: each trigger switched back to the plain call's value (a head-dim
bound to the bound itself), eval and forward-only for backward sites, and one architecture per
family where no mapped case of the same backend whose triggers are a subset of these fires.

Candidates are judged before they get an id (`lint_plugin.mine.declare` numbers the ones worth
declaring).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from lint_plugin.mine.devices import ARCHITECTURES, Arch
from lint_plugin.mine.findings import BACKWARD, NO_LAUNCH, Case, sms
from selector_patch.registry import PACKAGE_FIELD, Control, Evidence, Hazard
from selector_patch.roles import ROLES
from selector_patch.scenario import Condition, Scenario

#: Id of a candidate that has not been declared.
UNDECLARED = ""
HEAD_DIM = "padded_head_dim"


def candidate(case: Case, mapped: Sequence[Case]) -> Hazard:
    """The hazard `case` describes; `mapped` (every mapped case) bounds its arch controls."""
    site = case.site
    display = ROLES[case.backend].display
    what = " ".join([*case.labels, *(["backward"] if site.backward else [])])
    bounds = " and ".join(str(t) for t in case.triggers if t.input == HEAD_DIM)
    subject = ", ".join(part for part in (what, bounds) if part)
    where = (
        f"for {subject} on {sms(case.architectures)}"
        if subject
        else f"on {sms(case.architectures)}"
    )
    if site.kind == NO_LAUNCH:
        why = f"{case.distribution} launches no kernel there and raises nothing (`{site.text}`)"
    else:
        why = f"{case.distribution} refuses it ({site.message or site.text})"
    branch = f", branch `{site.branch}`" if site.branch else ""
    return Hazard(
        id=UNDECLARED,
        backend=case.backend,
        title=f"{display} chosen {where}",
        architectures=case.architectures,
        triggers=case.triggers,
        message=f"Disabling {display} {where}: {why}.",
        section=case.section,
        evidence=Evidence(
            package=case.distribution,
            file=site.file,
            line=site.line,
            text=site.text,
            affected=f">={case.version}",
            reference=f"{site.function}{branch}; mined from {case.distribution} {case.version}",
        ),
        kernel_version=case.version,
        witness_shapes=case.witness_shapes,
        controls=_controls(case, mapped),
    )


def _controls(case: Case, mapped: Sequence[Case]) -> tuple[Control, ...]:
    """Each trigger back at the plain call's value; eval and forward-only for backward code;
    one architecture per family that no mapped case with a subset of the triggers refuses."""
    plain = Scenario()
    controls = []
    for trigger in case.triggers:
        if trigger == BACKWARD:
            continue
        if trigger.input == HEAD_DIM:
            controls += _head_dim_control(trigger)
        elif not trigger.holds(plain):
            value = getattr(plain, trigger.input)
            controls.append(Control(f"{trigger.input}={value!r}", {trigger.input: value}))
    if case.site.backward:
        controls += [
            Control("eval", {"training": False, "backward": False}),
            Control("forward only", {"backward": False}),
        ]
    refused = {
        arch
        for other in mapped
        if other.backend == case.backend and set(other.triggers) <= set(case.triggers)
        for arch in other.architectures
    }
    families: dict[int, Arch] = {}
    for arch in ARCHITECTURES:
        if arch not in refused:
            families.setdefault(arch[0], arch)
    controls += [Control(sms([arch]), {"compute_capability": arch}) for arch in families.values()]
    return tuple(controls)


def _head_dim_control(trigger: Condition) -> list[Control]:
    """A head-dim bound's control is the nearest head dim outside it (`> 192`: 192)."""
    outside = {">": 0, ">=": -8, "<=": 8, "<": 0}.get(trigger.op)
    if outside is None:
        return []
    head_dim = trigger.value + outside
    return [Control(f"head dim {head_dim}", {"head_dim_qk": head_dim, "head_dim_v": head_dim})]


def same_hazard(hazard: Hazard) -> tuple:
    """What a verdict depends on: candidates with the same key are judged (and declared) once."""
    shapes = tuple(tuple(sorted(shape.items())) for shape in hazard.witness_shapes)
    return (hazard.backend, hazard.architectures, hazard.triggers, shapes)


def subsumed(case: Case, mapped: Sequence[Case]) -> frozenset[Arch]:
    """The case's architectures where a mapped case of its backend with fewer triggers fires
    too: FA4's forward refuses sm70 and sm75 for any call, so its backward's refusal there
    says nothing of its own."""
    weaker = {
        arch
        for other in mapped
        if other.backend == case.backend and set(other.triggers) < set(case.triggers)
        for arch in other.architectures
    }
    return frozenset(weaker & set(case.architectures))


def matches(
    hazard: Hazard, known: Iterable[Hazard], stated_elsewhere: frozenset[Arch] = frozenset()
) -> str | None:
    """The id of a known hazard saying the same: same backend and architectures, and the
    triggers of each decide every witness and control of both alike, on the mined release.

    Compared by meaning, not spelling: `padded_head_dim > 192` and `padded_head_dim >= 200`
    say the same for head dims flash-attn runs (multiples of 8). Only the mined release's
    scenarios count: one release's sources cannot say that a later one fixed it (TEA004 holds
    below flash-attn-4 4.0.0b36 only). Architectures `stated_elsewhere`, by a case with fewer
    triggers (`subsumed`), are that case's: FA4's backward refusal below sm90 is TEA005, on the
    SM 8.x its forward runs on.
    """
    own = tuple(arch for arch in hazard.architectures if arch not in stated_elsewhere)
    if own:
        hazard = hazard.replace(architectures=own)
    field = PACKAGE_FIELD[hazard.backend]
    for other in known:
        if other.backend != hazard.backend or set(other.architectures) != set(hazard.architectures):
            continue
        scenarios = [
            s
            for s in (*_scenarios(hazard), *_scenarios(other))
            if getattr(s, field) == hazard.kernel_version
        ]
        if all(hazard.guard_fires(s) == other.guard_fires(s) for s in scenarios):
            return other.id
    return None


def _scenarios(hazard: Hazard) -> list[Scenario]:
    witnesses = list(hazard.witnesses())
    return witnesses + [s for w in witnesses for _, s in hazard.control_scenarios(w)]
