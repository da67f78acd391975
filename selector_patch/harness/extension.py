"""A stand-in for `transformer_engine_torch`, TE's compiled extension.

Of the extension, a selector needs cuDNN's fused-attention answer and the enums that answer and
its arguments are spelt in; everything else it touches (FP8 tensor indices, other enums' uses) is
opaque. Where TE's C++ is at hand (`selector_patch.te_cxx`), the answer is TE's own query,
compiled: its arguments are converted as pybind11 converts them (an enum member must be of the
parameter's enum, a negative number cannot become a `size_t`, ...), it runs on the virtual
device's compute capability, cuDNN version and environment, what it prints joins the
selection's log, and what it throws is the `RuntimeError` pybind11 raises. Its enums are the C++
headers' enums under their C++ names, valued as the compiler values them, because TE 2.19+
convert the answer with `int()` and compare integers while older releases compare members.

Which members pybind11 registers is TE's `pybind.cpp`, which the trees do not hold, and it is a
subset (`tex.DType` lacks the header's `kInt16`, `kInt64`, ...). TE's Python side names exactly
the members it uses, and from 2.18 asserts at import that it names every registered one (2.19
dropped `F16_max512_seqlen`). So members come into existence as the release names them. Without
any of TE's queries at hand (neither its C++ nor its release's compiled library, `te_lib`, which
answers through the same interface), the answer is a stated assumption,
`ASSUMED_BACKEND`, and only `NVTE_Fused_Attn_Backend` is real, with the values of
`BACKEND_VALUES`. A scenario's explicit `fused_backend` is an override that wins either way.
TE 2.20 made the query take one `FusedAttentionParams` and return `(backend, reject_message)`
(the shape is read off how the selector unpacks the call); with the release's library, TE's
message is the one returned, and a request its rules admit reaches cuDNN's own support check,
whose verdict alone is assumed (`config_fields`), in a log line of that selection.
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Any, Callable, Mapping

from selector_patch import scoped_env
from selector_patch.harness.config_fields import VERDICT_ASSUMED, ConfigFields, assumed_verdict
from selector_patch.harness.device import VirtualDevice
from selector_patch.harness.opaque import OpaqueDecision, OpaqueModule, is_opaque
from selector_patch.harness.params import Unrepresentable
from selector_patch.memo import once
from selector_patch.te_cxx.query import FusedQuery, QueryFailure

#: TE's refusal of a cuDNN older than it was built for, when it creates its cuDNN handle.
MINIMUM_CUDNN = re.compile(r"requires cuDNN [0-9.]+ or later, but the cuDNN runtime is [0-9.]+")

BACKEND_ENUM = "NVTE_Fused_Attn_Backend"
#: `NVTE_Fused_Attn_Backend` in transformer_engine/common/include/transformer_engine/fused_attn.h,
#: for an extension without TE's C++.
BACKEND_VALUES = {
    "NVTE_No_Backend": -1,
    "NVTE_F16_max512_seqlen": 0,
    "NVTE_F16_arbitrary_seqlen": 1,
    "NVTE_FP8": 2,
}
NO_BACKEND = "NVTE_No_Backend"
#: The fused answer assumed where TE's C++ is not at hand.
ASSUMED_BACKEND = "F16_arbitrary_seqlen"
QUERY = "get_fused_attn_backend"
#: What the extension says when it rejects a configuration; TE only logs it.
REJECT_MESSAGE = "rejected by cuDNN on the virtual device"
#: The range of each C integer type pybind11 converts to (`te_cxx.translation_unit.SCALARS`).
_INTEGER_BITS = {"int": 32, "int32_t": 32, "int64_t": 64, "long": 64}
_UNSIGNED_BITS = {"size_t": 64, "uint32_t": 32, "uint64_t": 64}


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


class EnumMember:
    """A member of a pybind11 enum: named, convertible to int, equal within its enum by value
    (and to the plain integer of that value)."""

    def __init__(self, enum: str, name: str, value: int) -> None:
        self.enum = enum
        self.name = name
        self.value = value

    def __int__(self) -> int:
        return self.value

    __index__ = __int__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EnumMember):
            return other.enum == self.enum and other.value == self.value
        if isinstance(other, int):
            return other == self.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"<{self.enum}.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"{self.enum}.{self.name}"


class _EnumType(type):
    """An enum class whose members come into existence as they are named."""

    def __getattr__(cls, name: str) -> EnumMember:
        values = cls.__dict__["_values"]
        if name not in values:
            raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")
        member = cls.__members__[name] = EnumMember(cls.__name__, name, values[name])
        setattr(cls, name, member)
        return member

    def member(cls, value: int) -> EnumMember:
        """The member of `value`, as pybind11 returns it from C++ (named "???" when none is)."""
        for name, candidate in cls.__dict__["_values"].items():
            if candidate == value:
                return getattr(cls, name)
        return EnumMember(cls.__name__, "???", value)


def enum_type(name: str, values: Mapping[str, int]) -> _EnumType:
    """A fresh enum `name` whose members take `values` once the selector names them."""
    return _EnumType(name, (), {"__members__": {}, "_values": dict(values)})


def member_name(fused_backend: str) -> str:
    """The extension's member name for a `FusedAttnBackend` name such as "F16_arbitrary_seqlen"."""
    name = f"NVTE_{fused_backend}"
    if name not in BACKEND_VALUES:
        known = [member.removeprefix("NVTE_") for member in BACKEND_VALUES]
        raise ValueError(f"unknown fused backend {fused_backend!r}; known: {known}")
    return name


def _incompatible(index: int, parameter, value: object) -> TypeError:
    return TypeError(
        f"{QUERY}(): incompatible function arguments: argument {index + 1}"
        f" ({parameter.name}: {parameter.type}) cannot take {value!r}"
    )


def _converted(index: int, parameter, value: object, enums: Mapping[str, type]) -> Any:
    """`value` as pybind11 converts it to the C++ parameter, or its `TypeError`; an opaque
    value (one the virtual device has no answer for) cannot decide TE's query."""
    if is_opaque(value):
        raise OpaqueDecision(
            f"{QUERY}'s {parameter.name} would be {value.__qualname__}, which has no answer"
        )
    if parameter.kind == "enum":
        if isinstance(value, EnumMember):
            if value.enum != parameter.enum or parameter.enum not in enums:
                raise _incompatible(index, parameter, value)
            return value.value
        # TE 2.18+ pass their Python `DType` (an IntEnum of the extension's values): the
        # extension converts integers to its enums
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)
        raise _incompatible(index, parameter, value)
    if parameter.kind == "bool":
        if value is None or isinstance(value, (bool, int)) or type(value).__name__ == "bool_":
            return bool(value)
        raise _incompatible(index, parameter, value)
    if parameter.kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _incompatible(index, parameter, value)
        return float(value)
    try:
        number = operator.index(value)
    except TypeError:
        raise _incompatible(index, parameter, value) from None
    if parameter.kind == "unsigned":
        low, high = 0, (1 << _UNSIGNED_BITS[parameter.type]) - 1
    else:
        bits = _INTEGER_BITS[parameter.type]
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= number <= high:
        raise _incompatible(index, parameter, value)
    return number


def _query_arguments(query: FusedQuery, args: tuple, kwargs: dict, enums: Mapping[str, type]):
    parameters = query.parameters
    if len(args) > len(parameters) or set(kwargs) - {p.name for p in parameters[len(args) :]}:
        raise TypeError(f"{QUERY}(): incompatible function arguments ({len(parameters)} taken)")
    given = list(args) + [kwargs[p.name] for p in parameters[len(args) :] if p.name in kwargs]
    if len(given) != len(parameters):
        raise TypeError(f"{QUERY}(): incompatible function arguments ({len(parameters)} taken)")
    return [_converted(i, p, v, enums) for i, (p, v) in enumerate(zip(parameters, given))]


def extension_module(
    device: VirtualDevice,
    query: FusedQuery | None,
    log: Callable[[str], None],
    *,
    with_reject_message: bool,
) -> OpaqueModule:
    """`transformer_engine_torch` answering the fused-backend query on `device`: TE's own
    `query` where it is at hand (what it prints goes to `log`), else the assumption."""
    if query is None:
        enums = {BACKEND_ENUM: enum_type(BACKEND_ENUM, BACKEND_VALUES)}
    else:
        enums = {name: enum_type(name, values) for name, values in query.enums.items()}
    backends = enums[BACKEND_ENUM]
    #: The query's arguments as converted, by what TE passed (each value with its type: `128`
    #: and `128.0` are equal keys, but only one is an integer to pybind11): a grid asks the
    #: same few thousand argument lists again and again, and converting is a pure function.
    converted: dict[tuple, list] = {}
    #: TE 2.20+'s one `FusedAttentionParams`, converted by the release's header.
    fields_of = None if query is None or query.parameters is not None else ConfigFields(query.enums)

    def arguments_of(args: tuple, kwargs: dict) -> list:
        given = (*args, *kwargs.values())
        key = (given, tuple(kwargs), tuple(map(type, given)))
        return once(converted, key, lambda: _query_arguments(query, args, kwargs, enums))

    def answer(*args, **kwargs) -> tuple[EnumMember, str | None]:
        """The backend and, where TE's own query gave one, its reject message."""
        override = device.fused_backend
        if override is not None:
            return getattr(backends, member_name(override)), None
        if query is None:
            return getattr(backends, member_name(ASSUMED_BACKEND)), None
        machine = device.machine
        configured = fields_of is not None
        arguments = fields_of(args, kwargs) if configured else arguments_of(args, kwargs)
        try:
            value, printed, *more = query(
                machine.sm_arch, machine.cudnn_runtime_version, scoped_env.lookup, arguments
            )
        except QueryFailure as failure:
            needed = MINIMUM_CUDNN.search(str(failure))
            if needed:  # the release does not run on this cuDNN at all (TE 2.20: below 9.12)
                raise Unrepresentable(f"cudnn_version: TE {needed[0]}") from None
            raise RuntimeError(str(failure)) from None
        for line in printed:
            log(line)
        if not configured:
            return backends.member(value), None
        message, asked_cudnn = more
        if asked_cudnn:
            assumed = assumed_verdict(query.enums, arguments)
            log(f"{VERDICT_ASSUMED}: supported ({assumed})")
            return getattr(backends, member_name(assumed)), ""
        return backends.member(value), message

    def get_fused_attn_backend(*args, **kwargs):
        backend, message = answer(*args, **kwargs)
        if not with_reject_message:
            return backend
        if message is None:
            message = REJECT_MESSAGE if backend.name == NO_BACKEND else ""
        return backend, message

    return OpaqueModule("transformer_engine_torch", {QUERY: get_fused_attn_backend, **enums})
