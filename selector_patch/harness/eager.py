"""`torch.compile` and `torch.compiler` as a loaded selector sees them: eager identities.

The harness runs eagerly; compilation is what a CPU harness doesn't need. TE's module bodies
mark functions for the compiler while they are being defined: `@torch.compile` on tensor
helpers (TE 1.10 - 2.1), `@torch.compiler.assume_constant_result` on `_get_fused_attn_backend`
(TE 2.19+). Outside a dynamo trace none of these changes what the function computes
(`assume_constant_result` returns the function itself; `torch.compile` returns a wrapper that
compiles on its first call and then computes the same thing), but merely applying them imports
`torch._dynamo`, and `torch.compile` also `torch._inductor`: more than `import torch` costs,
paid by the first load in every process. Here they hand the function back as it is, importing
nothing. Queries such as `torch.compiler.is_compiling()` stay real: they import nothing and
answer False, as they do eagerly.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from selector_patch.views import ModuleView


def _identity(function: Callable[..., Any]) -> Callable[..., Any]:
    return function


def eager(function: Callable[..., Any] | None = None, /, *_args: Any, **_options: Any) -> Any:
    """A compiler decorator in all its spellings, run eagerly: `@torch.compile`,
    `@torch.compile(mode=...)` and `torch.compile(fn, ...)` alike give back the function."""
    return _identity if function is None else function


class EagerCompiler(ModuleView):
    """`torch.compiler` whose function-marking decorators are `eager`."""

    def __init__(self) -> None:
        super().__init__(torch.compiler)
        for name in ("compile", "assume_constant_result", "allow_in_graph", "disable"):
            setattr(self, name, eager)
