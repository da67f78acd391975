"""What both sides of the miner find, in one shape: a site in the kernel and its cases.

The CuTe side (`lint_plugin.mine.cute`, flash-attn-4's Python) finds `assert`s and `raise`s; the
CUDA side (`lint_plugin.mine.cuda`, flash-attn 2 and 3's C++) finds `TORCH_CHECK`s and dispatch
paths that launch no kernel. Either way a *site* is a statement of the kernel library, and a
*case* says on which architectures and for which selector inputs the site fires, or why that
cannot be said in selector inputs. Candidates, the judges, declarations and reports work on
cases alone, so they serve both sides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from lint_plugin.mine.devices import Arch
from selector_patch.scenario import Condition, sm_name

#: A refusal: the library raises (`assert`, `raise`, `TORCH_CHECK`).
REFUSAL = "refusal"
#: A silent no-op: the dispatch returns without launching a kernel and without an error.
NO_LAUNCH = "no-launch"
#: Section of a guard on the architecture alone: TE's compute-capability filters come first,
#: and the head-dim section is the nearer of the two this project can anchor.
ARCH_ONLY_SECTION = "head_dim"
#: Where a case stands when the judges cannot take it (`Case.standing`): not stated in selector
#: inputs yet; on a kernel parameter TE's calls never pass, or fix to a value that does not fire
#: (`lint_plugin.mine.te_calls`); a test of the kernel's own state that no parameter reaches.
UNMAPPED = "unmapped"
UNREACHABLE = "unreachable"
INTERNAL = "internal"
#: Backward code fails only when a backward runs.
BACKWARD = Condition("backward", "==", True)


@dataclass(frozen=True)
class Site:
    """A statement of the kernel library where a call is refused or launches nothing."""

    #: `flash_attn/cute/interface.py`, `csrc/flash_attn/src/flash_bwd_launch_template.h`
    file: str
    line: int
    #: Enclosing function, qualified by its class (`FlashAttentionBackwardSm120.__init__`).
    function: str
    #: The statement, whitespace collapsed to one line.
    text: str
    #: The refusal's own message ("" when it has none, and for a no-launch).
    message: str
    backward: bool
    #: Its own condition, as the kernel writes it.
    condition: str
    #: The innermost enclosing branch that depends on the architecture ("" when none does).
    branch: str
    kind: str = REFUSAL

    @property
    def direction(self) -> str:
        return "backward" if self.backward else "forward"


@dataclass(frozen=True)
class Case:
    """One way a site fires: on these architectures, for these selector inputs."""

    site: Site
    #: The backend role TE runs the kernel as ("FA2", "FA3", "FA4").
    backend: str
    #: The pip distribution and version the site was read from (the evidence's package).
    distribution: str
    version: str
    architectures: tuple[Arch, ...]
    #: Names of the kernel features that must be on, for messages ("dropout", "split-KV").
    labels: tuple[str, ...]
    #: Selector conditions under which it fires (`backward == True` for backward code).
    triggers: tuple[Condition, ...]
    #: Why it cannot be stated in selector inputs, or need not be; None when it can.
    unmapped: str | None
    #: Where a guard on it belongs (`Hazard.section`).
    section: str = ARCH_ONLY_SECTION
    #: Concrete head dims for witnesses when the triggers only bound them.
    witness_shapes: tuple[Mapping[str, Any], ...] = field(default=({},))
    #: Where a case with an `unmapped` reason stands: UNMAPPED, UNREACHABLE or INTERNAL.
    standing: str = UNMAPPED


def sms(architectures: Iterable[Arch]) -> str:
    """`sm120, sm121`: architectures as TE's log lines name them."""
    return ", ".join(sm_name(arch) for arch in architectures)


def with_backward(triggers: Iterable[Condition], backward: bool) -> tuple[Condition, ...]:
    """The triggers, plus `backward == True` for backward code, without repeats."""
    found = [*triggers, *([BACKWARD] if backward else [])]
    return tuple(dict.fromkeys(found))
