"""A refusal in selector terms: on which architectures it fires, with which features on.

For each architecture of a refusal, the features its conditions read are set off (what a plain
call passes), then turned on one at a time, then two at a time, until the refusal fires: the
smallest sets that make it fire are its triggers there ("fires" = its own test certainly fails
and its path may be taken). None at all: it fires on that architecture whatever is passed. A
set that needs a feature TE cannot turn on, or a refusal whose own test reads variables the
table does not cover, is a case too, unmapped, with the reason.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from lint_plugin.mine.arch import Arch
from lint_plugin.mine.extract import Refusal
from lint_plugin.mine.features import FEATURES, Feature
from selector_patch.scenario import Condition

#: Features turned on together at most; refusals that need more stay unmapped.
MAX_FEATURES = 3
BACKWARD = Condition("backward", "==", True)


@dataclass(frozen=True)
class Case:
    """One way a refusal fires: on these architectures, with these features on."""

    refusal: Refusal
    architectures: tuple[Arch, ...]
    features: tuple[Feature, ...]
    #: Why it cannot be stated in selector inputs; None when it can.
    unmapped: str | None

    @property
    def triggers(self) -> tuple[Condition, ...]:
        """Selector conditions under which the kernel refuses; backward code needs a backward."""
        found = [trigger for feature in self.features for trigger in feature.triggers]
        if self.refusal.backward:
            found.append(BACKWARD)
        return tuple(dict.fromkeys(found))


def cases(refusal: Refusal) -> list[Case]:
    """The refusal's cases, architectures grouped by outcome, in the refusal's arch order."""
    named = [f for f in FEATURES if set(f.values) & refusal.reads()]
    grouped: dict[tuple[tuple[Feature, ...], ...] | str, list[Arch]] = {}
    for arch in refusal.architectures:
        grouped.setdefault(_outcome(refusal, arch, named), []).append(arch)
    found = []
    for outcome, architectures in grouped.items():
        if isinstance(outcome, str):
            found.append(Case(refusal, tuple(architectures), (), outcome))
            continue
        for features in outcome:
            missing = [f for f in features if not f.mapped]
            why = "; ".join(f"needs {f.label}: {f.why}" for f in missing) or None
            found.append(Case(refusal, tuple(architectures), features, why))
    return found


def _outcome(
    refusal: Refusal, arch: Arch, named: list[Feature]
) -> tuple[tuple[Feature, ...], ...] | str:
    """The smallest feature sets that make it fire on `arch`, or why none can be found."""
    undecided: set[str] = set()
    for size in range(min(len(named), MAX_FEATURES) + 1):
        firing = []
        for features in itertools.combinations(named, size):
            bindings = {}
            for feature in named:
                bindings.update(feature.bindings(on=feature in features))
            if refusal.reachable(arch, bindings) is False:
                continue
            own = refusal.own_truth(arch, bindings)
            if own is None:
                undecided |= refusal.own_names() - set(bindings)
            elif own:
                firing.append(features)
        if firing:
            return tuple(firing)
    if undecided:
        names = ", ".join(f"`{name}`" for name in sorted(undecided))
        return f"its test reads {names}, which the feature table does not cover"
    return "no feature of the table makes it fire"
