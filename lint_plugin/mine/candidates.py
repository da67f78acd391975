"""A mapped case as a registry `Hazard`: what the judges check and what the user may declare.

The candidate is built the way the registry's entries are written (see TEA001): the kernel's
architectures, the feature's selector triggers (plus `backward == True` for backward code), a
message in TE's log style, the refusal as evidence affecting this kernel version onwards, and
controls - inputs just outside the hazard where FA4 must stay eligible: each trigger switched
back to the plain call's value, eval and forward-only for backward refusals, and one
architecture per family where no mapped case with a subset of these features refuses.

Candidates are judged before they get an id (`lint_plugin.mine.declare` numbers the ones worth
declaring).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from lint_plugin.mine.arch import ARCHITECTURES, Arch
from lint_plugin.mine.cases import BACKWARD, Case
from lint_plugin.mine.kernel import DISTRIBUTION, KernelSource
from selector_patch.registry import Control, Evidence, Hazard
from selector_patch.roles import ROLES
from selector_patch.scenario import Scenario

BACKEND = "FA4"
#: Section of a guard on the architecture alone: TE's compute-capability filters come first,
#: and the head-dim section is the nearer of the two this project can anchor.
ARCH_ONLY_SECTION = "head_dim"
#: Id of a candidate that has not been declared.
UNDECLARED = ""


def candidate(case: Case, mapped: Sequence[Case], kernel: KernelSource) -> Hazard:
    """The hazard `case` describes; `mapped` (every mapped case) bounds its arch controls."""
    refusal = case.refusal
    display = ROLES[BACKEND].display
    what = " ".join(
        [*(f.label for f in case.features), *(["backward"] if refusal.backward else [])]
    )
    sms = ", ".join(_sm(arch) for arch in case.architectures)
    where = f"for {what} on {sms}" if what else f"on {sms}"
    branch = f", branch `{refusal.branch}`" if refusal.branch else ""
    return Hazard(
        id=UNDECLARED,
        backend=BACKEND,
        title=f"{display} chosen {where}",
        architectures=case.architectures,
        triggers=case.triggers,
        message=f"Disabling {display} {where}: flash-attn-4 refuses it"
        f" ({refusal.message or refusal.text}).",
        section=next((f.section for f in case.features), ARCH_ONLY_SECTION),
        evidence=Evidence(
            package=DISTRIBUTION,
            file=refusal.file,
            line=refusal.line,
            text=refusal.text,
            affected=f">={kernel.version}",
            reference=f"{refusal.function}{branch}; mined from {DISTRIBUTION} {kernel.version}",
        ),
        kernel_version=kernel.version,
        controls=_controls(case, mapped),
    )


def _controls(case: Case, mapped: Sequence[Case]) -> tuple[Control, ...]:
    """Each trigger back at the plain call's value; eval and forward-only for backward code;
    one architecture per family that no mapped case with a subset of the features refuses."""
    plain = Scenario()
    controls = [
        Control(f"{t.input}={getattr(plain, t.input)!r}", {t.input: getattr(plain, t.input)})
        for t in case.triggers
        if t != BACKWARD
    ]
    if case.refusal.backward:
        controls += [
            Control("eval", {"training": False, "backward": False}),
            Control("forward only", {"backward": False}),
        ]
    refused = {
        arch
        for other in mapped
        if set(other.features) <= set(case.features)
        for arch in other.architectures
    }
    families: dict[int, Arch] = {}
    for arch in ARCHITECTURES:
        if arch not in refused:
            families.setdefault(arch[0], arch)
    controls += [Control(_sm(arch), {"compute_capability": arch}) for arch in families.values()]
    return tuple(controls)


def same_hazard(hazard: Hazard) -> tuple:
    """What a verdict depends on: candidates with the same key are judged (and declared) once."""
    return (hazard.architectures, hazard.triggers)


def matches(hazard: Hazard, known: Iterable[Hazard]) -> str | None:
    """The id of a known hazard saying the same: same backend, architectures and triggers."""
    for other in known:
        if (
            other.backend == hazard.backend
            and set(other.architectures) == set(hazard.architectures)
            and set(other.triggers) == set(hazard.triggers)
        ):
            return other.id
    return None


def _sm(arch: Arch) -> str:
    return Scenario(compute_capability=arch).sm
