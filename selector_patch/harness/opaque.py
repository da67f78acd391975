"""Stand-ins for the modules a CPU-only machine lacks: TE's internals, its compiled extension,
flash-attn.

The selector module imports dozens of names it never uses while selecting (tensor classes,
kernels, decorators, enum members used as dataclass defaults). Listing them per release would be
brittle, so every such name is an *opaque* value: a class (so it works in `Union[...]`, as a base
class and in `isinstance`), whose attributes and items are further opaque values, which compares
by identity, and which, called on a function or class, gives it back unchanged (so `@jit_fuser`
and `@no_torch_dynamo()` leave the decorated function intact). Anything the selector's decision
depends on (hardware queries, cuDNN's answer) is not opaque: `OpaqueModule` takes those as
explicit `answers`. An opaque value must never decide a branch, so testing its truth, or
iterating over it (how many times a loop runs), raises `OpaqueDecision`, naming the value: the
cue to add an answer rather than a silent guess.

Some module bodies turn such a value into an integer as they import: TE 2.18+ cache the FP8
tensor indices, `int(tex.FP8FwdTensors.GEMM1_INPUT)`, values of TE's `pytorch/csrc` enums that
no tree here holds. There an opaque value converts to a placeholder of its own, a negative number
far from any index or enum value, so that what only stores it imports, and what would use it as
an index (the FP8 scaling tensors, which the harness never builds) cannot silently succeed.
"""

from __future__ import annotations

import itertools
import types
from typing import Any, Callable, Mapping

#: Placeholders for opaque values converted to integers, each distinct (see the module doc).
_placeholders = itertools.count(-(1 << 48), -1)


class OpaqueDecision(Exception):
    """The selector branched on a value the virtual device has no answer for."""


#: Attributes of an opaque value that are what the selector has named of it, as an enum's are.
MEMBERS = "__members__"


def _new_attribute(owner: Any, owner_name: str, name: str) -> type:
    """An opaque attribute, kept on `owner`; dunder lookups (typing, inspect) find nothing."""
    if name == MEMBERS:  # TE 2.18+ check at import that they name every member of tex's enums
        return {k: v for k, v in vars(owner).items() if isinstance(v, _OpaqueMeta)}
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    value = opaque(f"{owner_name}.{name}")
    setattr(owner, name, value)
    return value


class _OpaqueMeta(type):
    def __getattr__(cls, name: str) -> Any:
        return _new_attribute(cls, cls.__qualname__, name)

    def __getitem__(cls, key: Any) -> Any:
        return cls._derived(f"{cls.__qualname__}[{key!r}]")

    def __bool__(cls) -> bool:
        raise OpaqueDecision(f"the selector branched on {cls.__qualname__}, which has no answer")

    def __iter__(cls) -> Any:
        # Without it Python iterates through `__getitem__` (`cls[0]`, `cls[1]`, ...), which
        # never stops: a loop over what a module the device does not load returns (TE 2.20's
        # `cp_per_step_configs` in a selector file alone) would grow until memory runs out.
        raise OpaqueDecision(f"the selector iterated over {cls.__qualname__}, which has no answer")

    def __index__(cls) -> int:
        return cls.__dict__["_opaque_placeholder"]

    __int__ = __index__

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], (types.FunctionType, type)):
            return args[0]
        return cls._derived(f"{cls.__qualname__}()")

    def _derived(cls, qualname: str) -> type:
        """The same opaque value each time the same expression is evaluated."""
        derived = cls.__dict__["_opaque_derived"]
        if qualname not in derived:
            derived[qualname] = opaque(qualname)
        return derived[qualname]


def is_opaque(value: Any) -> bool:
    """Whether `value` is one of the stand-ins: what the virtual device has no answer for."""
    return isinstance(value, _OpaqueMeta)


def opaque(qualname: str) -> type:
    """A fresh opaque value named `qualname` (the name shows up in TE's debug log)."""
    namespace = {
        "__qualname__": qualname,
        "_opaque_derived": {},
        "_opaque_placeholder": next(_placeholders),
    }
    return _OpaqueMeta(qualname.rsplit(".", 1)[-1], (), namespace)


class OpaqueModule(types.ModuleType):
    """A module whose every attribute is opaque, except the `answers` it is given."""

    def __init__(self, name: str, answers: Mapping[str, Callable[..., Any]]) -> None:
        super().__init__(name)
        self.__dict__.update(answers)
        self.__path__: list[str] = []  # a package: submodules may be imported from it

    def __getattr__(self, name: str) -> Any:
        return _new_attribute(self, self.__name__, name)
