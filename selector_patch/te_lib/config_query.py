"""TE 2.20+'s compiled query, `nvte_get_fused_attn_backend_v2`, bound in the helper process.

The query takes one `FusedAttentionParams` (a dataclass on TE's Python side, whose field names
are the configuration's attribute names in snake case: `qkv_dtype` is
`kNVTEFusedAttnConfigQKVDtype`). A call passes `(attribute value, is real, value)` per field;
the trampoline (`query_v2.h`) sets each with the size the library reports. It answers the
backend, what TE printed and TE's reject message, or says that the request reached cuDNN's
own support check (the one step only a GPU answers), or raises `QueryFailure` with what TE
threw. The callback and buffers are `FusedQuery`'s; the replies are kept by the caller
(`client`), which asks through a pipe.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Callable, Sequence

from selector_patch.te_cxx.query import BUFFER, FusedQuery, QueryFailure, _Machine

#: A call's status when TE's rules admitted the request and cuDNN's check was next.
ASKED_CUDNN = 2


class ConfigQuery(FusedQuery):
    """The compiled v2 trampoline at `path`."""

    def __init__(self, path: Path) -> None:
        super().__init__((), path)
        self._query.argtypes = [
            ctypes.POINTER(_Machine),
            ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_longlong),
            ctypes.POINTER(ctypes.c_double),
            ctypes.POINTER(ctypes.c_longlong),
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        self._message = ctypes.create_string_buffer(BUFFER)

    def __call__(
        self,
        sm_arch: int,
        cudnn_version: int,
        environment: Callable[[str], str | None],
        fields: Sequence[tuple[int, bool, float]],
    ):
        """`(backend, printed, reject message, whether cuDNN's check was reached)`."""
        count = len(fields)
        attributes = (ctypes.c_int * count)(*(attribute for attribute, _, _ in fields))
        reals = (ctypes.c_int * count)(*(real for _, real, _ in fields))
        integers = (ctypes.c_longlong * count)(
            *(0 if real else int(value) for _, real, value in fields)
        )
        values = (ctypes.c_double * count)(*(float(value) for _, _, value in fields))
        machine, call = self._begin(sm_arch, cudnn_version, environment)
        status = self._query(
            ctypes.byref(machine), count, attributes, reals, integers, values,
            ctypes.byref(call.backend), self._message, BUFFER, call.log, BUFFER, call.error, BUFFER,
        )  # fmt: skip
        printed = tuple(
            line for line in call.log.value.decode(errors="replace").splitlines() if line
        )
        if status == 1:
            raise QueryFailure(call.error.value.decode(errors="replace"))
        message = self._message.value.decode(errors="replace")
        return call.backend.value, printed, message, status == ASKED_CUDNN
