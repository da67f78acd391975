"""A stand-in for `transformer_engine_torch`, TE's compiled extension.

Of the extension, a selector needs only cuDNN's fused-attention answer and the enum it is spelt in;
everything else it touches (other enums, FP8 tensor indices) is opaque. The answer is the
`NVTE_Fused_Attn_Backend` member named by the scenario, with the value TE's C++ header gives it,
because TE 2.19+ converts it with `int()` and compares integers, while older releases compare the
member itself against their `FusedAttnBackend` dict. Each release's extension has exactly the
members its Python side names (TE 2.19+ asserts so at import, and 2.19 dropped
`F16_max512_seqlen`), so members come into existence when the release first names them. TE 2.20
made the query return `(backend, reject_message)`; the shape is read off how the selector unpacks
the call.
"""

from __future__ import annotations

import ast

from selector_patch.harness.device import VirtualDevice
from selector_patch.harness.opaque import OpaqueModule

#: `NVTE_Fused_Attn_Backend` in transformer_engine/common/include/transformer_engine/fused_attn.h
BACKEND_VALUES = {
    "NVTE_No_Backend": -1,
    "NVTE_F16_max512_seqlen": 0,
    "NVTE_F16_arbitrary_seqlen": 1,
    "NVTE_FP8": 2,
}
QUERY = "get_fused_attn_backend"
#: What the extension says when it rejects a configuration; TE only logs it.
REJECT_MESSAGE = "rejected by cuDNN on the virtual device"


def returns_reject_message(tree: ast.Module) -> bool:
    """Whether the selector unpacks the fused-backend query into `(backend, reject_message)`."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == QUERY
            and isinstance(node.targets[0], ast.Tuple)
        ):
            return len(node.targets[0].elts) == 2
    return False


class BackendMember:
    """A member of the pybind11 enum: named, convertible to int, equal by value."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.value = BACKEND_VALUES[name]

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __eq__(self, other: object) -> bool:
        try:
            return self.value == int(other)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"<NVTE_Fused_Attn_Backend.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"NVTE_Fused_Attn_Backend.{self.name}"


class _BackendEnumType(type):
    def __getattr__(cls, name: str) -> BackendMember:
        if name not in BACKEND_VALUES:
            raise AttributeError(name)
        member = cls.__members__[name] = BackendMember(name)
        setattr(cls, name, member)
        return member


def backend_enum() -> type:
    """A fresh `NVTE_Fused_Attn_Backend` whose members appear as the release names them."""
    return _BackendEnumType("NVTE_Fused_Attn_Backend", (), {"__members__": {}})


def member_name(fused_backend: str) -> str:
    """The extension's member name for a `FusedAttnBackend` name such as "F16_arbitrary_seqlen"."""
    name = f"NVTE_{fused_backend}"
    if name not in BACKEND_VALUES:
        known = [member.removeprefix("NVTE_") for member in BACKEND_VALUES]
        raise ValueError(f"unknown fused backend {fused_backend!r}; known: {known}")
    return name


def extension_module(device: VirtualDevice, *, with_reject_message: bool) -> OpaqueModule:
    """`transformer_engine_torch` answering the fused-backend query from `device`."""
    enum_type = backend_enum()

    def get_fused_attn_backend(*_args, **_kwargs):
        backend = getattr(enum_type, member_name(device.fused_backend))
        if not with_reject_message:
            return backend
        return backend, REJECT_MESSAGE if backend.name == "NVTE_No_Backend" else ""

    return OpaqueModule(
        "transformer_engine_torch",
        {QUERY: get_fused_attn_backend, "NVTE_Fused_Attn_Backend": enum_type},
    )
