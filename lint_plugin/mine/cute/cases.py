"""A refusal in selector terms: on which architectures it fires, with which features on.

For each architecture of a refusal, the features its conditions read are set off (what a plain
call passes), then turned on one at a time, then two at a time, until the refusal fires: the
smallest sets that make it fire are its triggers there ("fires" = its own test certainly fails
and its path may be taken). None at all: it fires on that architecture whatever is passed. A
set that needs a feature TE cannot turn on, or a refusal whose own test reads variables the
table does not cover, is a case too, unmapped, with the reason.

A refusal whose tests read the head dims (`_validate_head_dims`, the hd256 paths) is asked this
per head dim (`lint_plugin.mine.head_dims`, with FA4's `alignment` for the plain call's dtype);
the dims where a feature set fires become runs, each bounded on `padded_head_dim` with witness
shapes inside.

All of it is asked through TE: the parameters TE's calls fix hold their values
(`lint_plugin.mine.cute.reach`), and a feature carried by one of them is not switched. A refusal
that may fire on its architectures for some call, but for none TE makes, is one case,
unreachable through TE, citing TE's calls. One whose test the table cannot decide, in a module
TE's calls do not enter (the compiled kernels' classes, built by flash-attn-4's interface from
its own choices), is kernel-internal: no parameter reaches its test.
"""

from __future__ import annotations

import itertools
from typing import Mapping

from lint_plugin.mine.cute.extract import Refusal
from lint_plugin.mine.cute.features import (
    FEATURES,
    HEAD_DIM_VARIABLES,
    Feature,
    head_dim_bindings,
)
from lint_plugin.mine.cute.kernel import BACKEND, DISTRIBUTION
from lint_plugin.mine.cute.reach import Fixed, unreachable_reason
from lint_plugin.mine.devices import Arch
from lint_plugin.mine.head_dims import HEAD_DIMS, bounds, runs
from lint_plugin.mine.findings import (
    ARCH_ONLY_SECTION,
    INTERNAL,
    UNMAPPED,
    UNREACHABLE,
    Case,
    with_backward,
)

#: Features turned on together at most; refusals that need more stay unmapped.
MAX_FEATURES = 3
NO_FEATURE = "no feature of the table makes it fire"


def cases(refusal: Refusal, version: str) -> list[Case]:
    """The refusal's cases, architectures grouped by outcome, in the refusal's arch order.

    `version` is the flash-attn-4 release the refusal was read from.
    """
    fixed = refusal.fixed_reads()
    if not any(refusal.may_fire(arch, {}, through_te=True) for arch in refusal.architectures):
        return [_unreachable(refusal, version, fixed)]
    named = [
        f for f in FEATURES if set(f.values) & refusal.reads() and not set(f.values) & set(fixed)
    ]
    shaped = bool(refusal.reads() & set(HEAD_DIM_VARIABLES))
    grouped: dict[tuple[tuple[tuple[Feature, ...], tuple[int, ...]], ...] | str, list[Arch]] = {}
    for arch in refusal.architectures:
        grouped.setdefault(_shaped_outcome(refusal, arch, named, shaped), []).append(arch)
    found = []
    for outcome, architectures in grouped.items():
        if isinstance(outcome, str):
            standing = INTERNAL if refusal.entered is False else UNMAPPED
            if standing == INTERNAL:
                outcome = (
                    f"no parameter reaches this test: {outcome}, and TE's calls enter"
                    f" flash-attn-4 elsewhere ({', '.join(refusal.entries)})"
                )
            found.append(_case(refusal, version, architectures, (), outcome, standing))
            continue
        for features, heads in outcome:
            missing = [f for f in features if not f.mapped]
            why = "; ".join(f"needs {f.label}: {f.why}" for f in missing) or None
            head_triggers, shapes = bounds(list(heads), list(HEAD_DIMS), pads=False)
            found.append(
                _case(refusal, version, architectures, features, why, head=(head_triggers, shapes))
            )
    return found


def _unreachable(refusal: Refusal, version: str, fixed: Mapping[str, Fixed]) -> Case:
    """The case of a refusal no TE call fires, citing the fixed parameters that rule it out:
    all it reads, less each one the others rule it out without."""
    deciding = dict(fixed)
    for name in fixed:
        rest = {other: one.value for other, one in deciding.items() if other != name}
        if not any(refusal.may_fire(arch, rest) for arch in refusal.architectures):
            del deciding[name]
    why = unreachable_reason(deciding)
    switched = refusal.switches_read()
    if switched:
        why += "; in the default environment " + "; ".join(s.describe() for s in switched)
    return _case(refusal, version, list(refusal.architectures), (), why, UNREACHABLE)


def _case(
    refusal: Refusal,
    version: str,
    architectures: list[Arch],
    features: tuple[Feature, ...],
    unmapped: str | None,
    standing: str = UNMAPPED,
    head: tuple[tuple, tuple] = ((), ((),)),
) -> Case:
    """`head`: the head-dim triggers and witness shapes of the case (none: any head dim)."""
    head_triggers, shapes = head
    triggers = [*(t for feature in features for t in feature.triggers), *head_triggers]
    return Case(
        site=refusal.site,
        backend=BACKEND,
        distribution=DISTRIBUTION,
        version=version,
        architectures=tuple(architectures),
        labels=tuple(feature.label for feature in features),
        triggers=with_backward(triggers, refusal.backward),
        unmapped=unmapped,
        section=next((f.section for f in features), ARCH_ONLY_SECTION),
        witness_shapes=tuple(dict(shape) for shape in shapes),
        standing=standing,
    )


def _shaped_outcome(refusal: Refusal, arch: Arch, named: list[Feature], shaped: bool):
    """(feature set, head dims) pairs that make it fire on `arch`, or why none can be found.

    Without `shaped` (its tests read no head dim) the head dims are () - any. With it, the
    feature search runs per head dim, and each feature set's firing dims are split in runs of
    consecutive dims (each run one set of bounds TE's selector can test)."""
    if not shaped:
        outcome = _outcome(refusal, arch, named, {})
        return outcome if isinstance(outcome, str) else tuple((fs, ()) for fs in outcome)
    firing: dict[tuple[Feature, ...], list[int]] = {}
    reasons = []
    for head_dim in HEAD_DIMS:
        outcome = _outcome(refusal, arch, named, head_dim_bindings(head_dim))
        if isinstance(outcome, str):
            reasons.append(outcome)
            continue
        for features in outcome:
            firing.setdefault(features, []).append(head_dim)
    undecided = [reason for reason in reasons if reason != NO_FEATURE]
    if undecided:  # a dim the table cannot decide: no bounds would be the whole truth
        return undecided[0]
    if not firing:
        return NO_FEATURE
    return tuple(
        (features, tuple(run) if len(run) < len(HEAD_DIMS) else ())
        for features, heads in firing.items()
        for run in runs(heads, list(HEAD_DIMS))
    )


def _outcome(
    refusal: Refusal, arch: Arch, named: list[Feature], shape: Mapping[str, int]
) -> tuple[tuple[Feature, ...], ...] | str:
    """The smallest feature sets that make it fire on `arch` with the head-dim variables of
    `shape`, or why none can be found."""
    undecided: set[str] = set()
    for size in range(min(len(named), MAX_FEATURES) + 1):
        firing = []
        for features in itertools.combinations(named, size):
            bindings = _bindings(named, features)
            if bindings is not None:
                bindings = {**shape, **bindings}
            if bindings is None or refusal.reachable(arch, bindings, through_te=True) is False:
                continue
            own = refusal.own_truth(arch, bindings, through_te=True)
            if own is None:
                undecided |= refusal.own_names() - set(bindings)
            elif own:
                firing.append(features)
        if firing:
            return tuple(firing)
    if undecided:
        names = ", ".join(f"`{name}`" for name in sorted(undecided))
        return f"its test reads {names}, which the feature table does not cover"
    return NO_FEATURE


def _bindings(named: list[Feature], on: tuple[Feature, ...]) -> dict | None:
    """Kernel variables with the features `on` switched on and the others off; None when two
    of `on` need one variable to hold different values (split-KV and the split heuristic both
    set `num_splits`), which no call does."""
    bindings = {}
    for feature in named:
        if feature not in on:
            bindings.update(feature.bindings(on=False))
    switched: dict = {}
    for feature in on:
        for name, value in feature.bindings(on=True).items():
            if name in switched and switched[name] != value:
                return None
            switched[name] = value
    return {**bindings, **switched}
