"""A module that stands in for a real one, overriding a few attributes and forwarding the rest.

The harness hands the selector views of `torch`, `os`, `logging`, `warnings` and
`importlib.metadata`; the runtime patch hands a live TE module a view of `os`. Each view
subclass defines only what it changes; every other attribute is the real module's, looked up
once and then kept on the view (the selector reads `torch.bfloat16` and friends on every call).
"""

from __future__ import annotations

import types


class ModuleView(types.ModuleType):
    def __init__(self, real: types.ModuleType) -> None:
        super().__init__(real.__name__, real.__doc__)
        self._real = real

    def __getattr__(self, name: str):
        value = getattr(self._real, name)
        setattr(self, name, value)
        return value
