"""TE's compiled fused-attention query, called through `ctypes` with the virtual machine's answers.

`FusedQuery` holds one tree's compiled query (`compiler.library`) and its enums as TE's headers
value them. A call passes the machine (compute capability as `cuda::sm_arch` answers it, cuDNN's
version as `cudnnGetVersion` does, and a lookup into the environment the Python side of the call
sees) and the arguments already converted to C (`parameters` says each one's kind; converting
Python values as pybind11 does is the extension stand-in's job). It returns the backend's value
and what TE printed; an exception TE's C++ throws (an `NVTE_CHECK`) comes back as `QueryFailure`
with TE's message, as pybind11 turns it into a `RuntimeError`.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from pathlib import Path
from typing import Callable, Sequence

from selector_patch.te_cxx.compiler import library
from selector_patch.te_cxx.replies import Replies
from selector_patch.te_cxx.translation_unit import Parameter, build

#: The C type of each parameter type the trampoline declares (enums travel as `long long`).
C_TYPES = {
    "bool": ctypes.c_bool,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "int": ctypes.c_int,
    "int32_t": ctypes.c_int32,
    "int64_t": ctypes.c_int64,
    "long": ctypes.c_long,
    "size_t": ctypes.c_size_t,
    "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64,
}
#: Room for what one call prints and for TE's exception message.
BUFFER = 1 << 14
EnvironmentLookup = ctypes.CFUNCTYPE(
    ctypes.c_long, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char), ctypes.c_size_t
)


class _Machine(ctypes.Structure):
    """`te_attn_guards::Machine` in `prelude.h`."""

    _fields_ = [
        ("sm_arch", ctypes.c_int),
        ("cudnn_version", ctypes.c_size_t),
        ("environment_lookup", EnvironmentLookup),
    ]


class QueryFailure(Exception):
    """TE's C++ threw: its message, as pybind11 raises it (a `RuntimeError` in Python)."""


def _c_type(parameter: Parameter):
    return ctypes.c_longlong if parameter.kind == "enum" else C_TYPES[parameter.type]


class FusedQuery:
    """One `get_fused_attn_backend`, compiled: the trampoline at `path` taking `parameters`."""

    def __init__(
        self, parameters: Sequence[Parameter], path: Path, source: str | None = None
    ) -> None:
        self.parameters = tuple(parameters)
        #: The translation unit's text, where it was built from TE's source (its comparisons
        #: join the history miner's grid); None for a trampoline into a compiled library.
        self.source = source
        self._call = _Call()
        self._replies = Replies()
        compiled = ctypes.CDLL(str(path))
        self._query = compiled.te_attn_guards_query
        self._query.restype = ctypes.c_int
        self._query.argtypes = [
            ctypes.POINTER(_Machine),
            *map(_c_type, self.parameters),
            ctypes.POINTER(ctypes.c_longlong),
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        listing = compiled.te_attn_guards_enums
        listing.restype = ctypes.c_char_p
        #: Each enum's members and their values, as TE's headers give them.
        self.enums: dict[str, dict[str, int]] = {}
        for row in listing().decode().splitlines():
            enum, member, value = row.split(" ")
            self.enums.setdefault(enum, {})[member] = int(value)

    def __call__(
        self,
        sm_arch: int,
        cudnn_version: int,
        environment: Callable[[str], str | None],
        arguments: Sequence[object],
    ) -> tuple[int, tuple[str, ...]]:
        """The backend's value and the lines TE printed; `QueryFailure` when TE threw.

        A request asked again, with the variables TE read reading as they did, is answered as
        it was (`replies`): a snapshot of TE 2.17.1 asks some 20,000 times, a few hundred of
        them distinct.
        """
        request = (sm_arch, cudnn_version, tuple(arguments))
        reply = self._replies.get(request, environment)
        if reply is None:
            reply = self._asked(request, environment)
        backend, printed, failure = reply
        if failure is not None:
            raise QueryFailure(failure)
        return backend, printed

    def _asked(
        self, request: tuple, environment: Callable[[str], str | None]
    ) -> tuple[int, tuple[str, ...], str | None]:
        """TE's own answer: the backend's value, the lines printed and the exception's message
        (None: none thrown), kept with the variables read meanwhile."""
        sm_arch, cudnn_version, arguments = request
        machine, call = self._begin(sm_arch, cudnn_version, environment)
        status = self._query(
            ctypes.byref(machine),
            *arguments,
            ctypes.byref(call.backend),
            call.log,
            BUFFER,
            call.error,
            BUFFER,
        )
        printed = tuple(
            line for line in call.log.value.decode(errors="replace").splitlines() if line
        )
        failure = call.error.value.decode(errors="replace") if status != 0 else None
        reply = (call.backend.value, printed, failure)
        self._replies.add(request, tuple(call.reads), reply)
        return reply

    def _begin(
        self, sm_arch: int, cudnn_version: int, environment: Callable[[str], str | None]
    ) -> tuple[_Machine, "_Call"]:
        """The machine to pass, and this thread's buffers, reading `environment` from now."""
        call = self._call
        call.environment, call.reads = environment, []
        return _Machine(sm_arch, cudnn_version, call.lookup), call


class _Call(threading.local):
    """One thread's buffers for the query's result, log and error (the trampoline writes the
    log whole on every call and the error whenever it fails, so nothing of an earlier call is
    read), and the environment and reads of its call in progress, which the C callback `getenv`
    reads through (made once per thread, kept alive here)."""

    def __init__(self) -> None:
        self.backend = ctypes.c_longlong()
        self.log = ctypes.create_string_buffer(BUFFER)
        self.error = ctypes.create_string_buffer(BUFFER)
        self.environment: Callable[[str], str | None] = lambda _name: None
        self.reads: list[tuple[str, str | None]] = []
        self.lookup = EnvironmentLookup(self._lookup)

    def _lookup(self, name: bytes, buffer, size: int) -> int:
        decoded = name.decode()
        value = self.environment(decoded)
        self.reads.append((decoded, value))
        if value is None:
            return -1
        encoded = value.encode()[: size - 1]
        ctypes.memmove(buffer, encoded, len(encoded))
        return len(encoded)


@functools.lru_cache(maxsize=None)
def load(root: Path) -> FusedQuery:
    """The compiled query of the tree at `root` (the directory holding `transformer_engine/`),
    built and compiled on first use in this process; a `CxxError` when it cannot be run."""
    unit = build(root)
    return FusedQuery(unit.parameters, library(unit), unit.text)
