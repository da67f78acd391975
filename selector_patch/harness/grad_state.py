"""Whether a selection could tell that a backward will run: autograd's state, watched.

The harness says "a backward will run" the way `DotProductAttention` does: autograd records the
call (`loader._autograd`). TE's releases never look: they read `is_training`, not autograd, so
an eval request with a backward and the same request forward-only run the very same code and
pick the same backend with the same log. A grid asks both (`snapshot.grid.MODES`), a third of
its requests. The runner answers the forward-only one from its twin, as it answers a switched
request from one that never read the switch, where nothing says the selection looked:

- the selector, and the functions of its module it calls, name nothing that reads or sets
  autograd's state (`names_it`: `is_grad_enabled`, `no_grad`, `grad_mode`, ...), however
  they reached it;
- and nothing told the selection (`GradWatch.reads`): TE's code, in any of its modules, asked
  nothing through the `torch` the harness hands it (an access to one of `WATCHED` counts, and
  a function of them bound at import counts at each call: the codemod's `requires_backward`
  field, `default_factory=torch.is_grad_enabled`), and its `AttentionParams` took no
  `requires_backward` from the request (`told`: the runtime patch's field, or a fork's own).
"""

from __future__ import annotations

import types
from typing import Any, Callable

import torch

from selector_patch.runtime import BACKWARD_FIELD

#: What tells autograd's state, or changes it, through `torch` (modules included: their
#: functions, `torch.autograd.grad_mode.is_grad_enabled`, `torch._C._is_grad_enabled`).
WATCHED = (
    "is_grad_enabled",
    "set_grad_enabled",
    "no_grad",
    "enable_grad",
    "inference_mode",
    "is_inference_mode_enabled",
    "autograd",
    "_C",
)
#: Names of the same in code: any of them in a selector's own code, however it reached them.
NAMED = frozenset(WATCHED) | {"grad_mode", "_is_grad_enabled"}


def names_it(code: types.CodeType) -> bool:
    """Whether `code`, or any code object nested in it, names what tells autograd's state."""
    pending = [code]
    while pending:
        current = pending.pop()
        if NAMED.intersection(current.co_names):
            return True
        pending.extend(const for const in current.co_consts if isinstance(const, types.CodeType))
    return False


def _counting(watch: "GradWatch", function: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args, **kwargs):
        watch.reads += 1
        return function(*args, **kwargs)

    return counted


def _watched(name: str) -> property:
    def get(watch: "GradWatch"):
        watch.reads += 1
        return watch._grad_attributes[name]

    return property(get, doc=f"`torch.{name}`, counted")


def _watching(cls: type) -> type:
    for name in WATCHED:
        setattr(cls, name, _watched(name))
    return cls


@_watching
class GradWatch:
    """A `torch` view's part that counts what tells a selection autograd's state (`reads`): the
    runner compares the count before and after a selection."""

    def __init__(self) -> None:
        self.reads = 0
        self._grad_attributes = {
            name: (
                _counting(self, value)
                if isinstance(value, types.BuiltinFunctionType | types.FunctionType)
                else value
            )
            for name in WATCHED
            if (value := getattr(torch, name, None)) is not None
        }

    def told(self, fields: tuple[str, ...]) -> None:
        """Count a call whose `AttentionParams` fields take the backward from the request."""
        if BACKWARD_FIELD in fields:
            self.reads += 1
