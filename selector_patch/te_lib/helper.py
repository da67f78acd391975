"""The helper process: a release's compiled query loaded over stub CUDA and cuDNN libraries.

The stubs define CUDA and cuDNN symbols for the whole process, and TE's code may crash; neither
may touch the user's process (which may have a real CUDA loaded), so the library runs here, one
process per release per session, started by `client.LibraryQuery` with the virtual machine
(`machine.cpp`) preloaded. The stubs are loaded globally first (the driver entry point is looked
up with `dlsym(RTLD_DEFAULT)`, and the library's needed sonames are then already loaded), then
the library, then the trampoline, which the source path's `FusedQuery` binds. Where the spec
places TE 2.20+'s `query_support` (`seam`), the machine assumes cuDNN's verdict graph by graph.

The protocol is one JSON object per line. The process first says `{"enums": ...}` (or
`{"failure": ...}` and exits). Each request `{"machine": [sm_arch, cudnn], "arguments": [...]}`
is answered by `{"answer": [backend, log, ...]}` (TE 2.20+'s adds the reject message and
whether cuDNN's check was reached, `config_query`) or `{"error": TE's message}`; while it runs,
every variable TE's code reads is asked back, `{"environment": NAME}` answered by
`{"value": ... or null}`, so TE reads the environment the caller's thread sees. Standard output
is the protocol's own descriptor: whatever C code prints goes to standard error.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

from selector_patch.te_cxx.query import FusedQuery, QueryFailure
from selector_patch.te_cxx.translation_unit import Parameter
from selector_patch.te_lib.config_query import ConfigQuery


def _assume_per_graph(library: ctypes.CDLL, seam: dict) -> None:
    """The machine's stand-in over TE's `query_support`, placed by the loaded anchor."""
    anchor = ctypes.cast(getattr(library, seam["anchor"]), ctypes.c_void_p).value
    address = anchor - seam["anchor_offset"] + seam["offset"]
    ctypes.CDLL(None).te_attn_guards_assume_per_graph(ctypes.c_void_p(address))


def main(spec: dict) -> int:
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def say(message: dict) -> None:
        replies.write(json.dumps(message) + "\n")

    try:
        for stub in spec["stubs"]:
            ctypes.CDLL(stub, mode=ctypes.RTLD_GLOBAL)
        library = ctypes.CDLL(spec["library"], mode=ctypes.RTLD_GLOBAL)
        if spec.get("seam"):
            _assume_per_graph(library, spec["seam"])
        if spec["parameters"] is None:
            query = ConfigQuery(spec["trampoline"])
        else:
            query = FusedQuery([Parameter(*p) for p in spec["parameters"]], spec["trampoline"])
    except OSError as error:
        say({"failure": str(error)})
        return 1
    say({"enums": query.enums})

    def environment(name: str) -> str | None:
        say({"environment": name})
        return json.loads(sys.stdin.readline())["value"]

    for line in sys.stdin:
        request = json.loads(line)
        sm_arch, cudnn_version = request["machine"]
        try:
            answer = query(sm_arch, cudnn_version, environment, request["arguments"])
        except QueryFailure as failure:
            say({"error": str(failure)})
            continue
        say({"answer": answer})
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
