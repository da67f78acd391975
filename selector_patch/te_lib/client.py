"""A release's compiled query, asked through its helper process: the source path's interface.

`LibraryQuery` is what `te_cxx.query.FusedQuery` is to the extension stand-in (`parameters`,
`enums`, a call with the machine, the environment lookup and the converted arguments, returning
the backend's value and TE's printed lines or raising `QueryFailure`), for a release whose C++
is not at hand but whose compiled library is (`fetch`). It builds what the helper process loads
(the trampoline from the release's headers, the stubs generated from the library, the virtual
machine), starts the process once and keeps it for the session; calls from several threads take
turns. A request asked again is answered from the replies kept (`te_cxx.replies`), with no round
trip. The process ends when this one does (its input is closed at exit, or closes with it).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from importlib import resources
from pathlib import Path
from typing import Callable, Sequence

import selector_patch
from selector_patch.memo import once
from selector_patch.te_cxx.compiler import library, shared_library
from selector_patch.te_cxx.errors import CxxError
from selector_patch.te_cxx.query import QueryFailure
from selector_patch.te_lib import seam, stubs, verdicts
from selector_patch.te_cxx.replies import Replies
from selector_patch.te_lib.unit import build, build_v2


def machine_library() -> Path:
    """The compiled virtual machine (`machine.cpp`)."""
    text = resources.files("selector_patch.te_lib").joinpath("machine.cpp").read_text()
    return shared_library(text, "machine.cpp", "machine", "as the virtual machine")


class LibraryQuery:
    """The compiled `nvte_get_fused_attn_backend` of the release whose headers are under `root`
    and whose library is `path`; with `configured`, TE 2.20+'s `..._v2` (cuDNN's verdicts from
    a recorded file where one is named for `version`). Not `stubbed`: over the machine's own
    CUDA and cuDNN (a GPU machine's, for the verdict recorder)."""

    def __init__(
        self,
        root: Path,
        path: Path,
        configured: bool,
        version: str | None = None,
        *,
        stubbed: bool = True,
        recording: bool = False,
    ) -> None:
        unit = build_v2(root) if configured else build(root)
        #: The parameters a call converts its arguments to; None for TE 2.20+'s query, which
        #: takes one `FusedAttentionParams` (`fields`).
        self.parameters = None if configured else unit.parameters
        #: Calls whose answer was cuDNN's own support check, which a CPU cannot run.
        self.asked_cudnn = 0
        #: With `recording`, every TE 2.20+ answer by request (`verdicts.key`), for the
        #: verdict recorder; and the latest request's key.
        self.recorded: dict | None = {} if recording else None
        self.last_request: verdicts.Key | None = None
        self._verdicts = verdicts.configured(version) if configured and version else None
        self._where = path
        self._lock = threading.Lock()
        self._replies = Replies()
        #: Each distinct request's line to the helper and its verdict key (TE 2.20+'s verdicts
        #: are kept by it), made once.
        self._requests: dict[tuple, tuple[str, verdicts.Key]] = {}
        spec = {
            "stubs": [str(stub) for stub in stubs.build(path)] if stubbed else [],
            "library": str(path),
            "trampoline": str(library(unit)),
            "seam": seam.locate(path) if configured and stubbed else None,
            "parameters": (
                None if configured else [list(parameter) for parameter in unit.parameters]
            ),
        }
        environment = dict(os.environ)
        environment["LD_PRELOAD"] = " ".join(
            filter(None, (str(machine_library()), environment.get("LD_PRELOAD")))
        )
        package_parent = str(Path(selector_patch.__file__).resolve().parents[1])
        environment["PYTHONPATH"] = os.pathsep.join(
            filter(None, (package_parent, environment.get("PYTHONPATH")))
        )
        self._process = subprocess.Popen(
            [sys.executable, "-m", "selector_patch.te_lib.helper", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
            text=True,
            bufsize=1,
        )
        atexit.register(self._close)
        first = self._read()
        if "failure" in first:
            raise CxxError(path, f"cannot be loaded over the stubs: {first['failure']}")
        #: Each enum's members and their values, as the release's headers give them.
        self.enums: dict[str, dict[str, int]] = first["enums"]

    def _close(self) -> None:
        """At exit: the helper's input closed, so it ends; killed if it does not."""
        if self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._process.stdout.close()

    def _read(self) -> dict:
        line = self._process.stdout.readline()
        if not line:
            status = self._process.wait()
            raise CxxError(self._where, f"its helper process ended (exit status {status})")
        return json.loads(line)

    def _write(self, line: str) -> None:
        self._process.stdin.write(line + "\n")
        self._process.stdin.flush()

    def __call__(
        self,
        sm_arch: int,
        cudnn_version: int,
        environment: Callable[[str], str | None],
        arguments: Sequence[object],
    ) -> tuple:
        """The backend's value and the lines TE printed (TE 2.20+: also the reject message and
        whether cuDNN's check was reached); `QueryFailure` when TE threw."""
        with self._lock:
            request, key = self._request(sm_arch, cudnn_version, arguments)
            reply = self._replies.get(request, environment)
            if reply is None:
                reply = self._asked(request, environment)
            if "error" in reply:
                raise QueryFailure(reply["error"])
            return self._answered(key, *reply["answer"])

    def _request(
        self, sm_arch: int, cudnn_version: int, arguments: Sequence[object]
    ) -> tuple[str, verdicts.Key | None]:
        """The request's line to the helper, and its verdict key where the query is TE 2.20+'s;
        made once per distinct request where the arguments are a key (TE 2.20+'s settings, a
        tuple), else each time (`memo.once`)."""
        return once(
            self._requests,
            (sm_arch, cudnn_version, arguments),
            lambda: self._made(sm_arch, cudnn_version, arguments),
        )

    def _made(
        self, sm_arch: int, cudnn_version: int, arguments: Sequence[object]
    ) -> tuple[str, verdicts.Key | None]:
        line = json.dumps({"machine": [sm_arch, cudnn_version], "arguments": list(arguments)})
        if self.parameters is not None:
            return line, None
        return line, verdicts.key(sm_arch, cudnn_version, arguments)

    def _asked(self, request: str, environment: Callable[[str], str | None]) -> dict:
        """The helper's reply to `request`, answering the variables TE reads meanwhile from
        `environment`; kept with those reads (`te_cxx.replies`)."""
        self._write(request)
        reads = []
        while True:
            reply = self._read()
            if "environment" not in reply:
                self._replies.add(request, tuple(reads), reply)
                return reply
            value = environment(reply["environment"])
            reads.append((reply["environment"], value))
            self._write(json.dumps({"value": value}))

    def _answered(self, request: verdicts.Key | None, backend, printed, *v2):
        """The answer as the caller takes it; TE 2.20+'s with cuDNN's verdict from the recorded
        file where it holds the request, else counted as assumed."""
        if not v2:
            return backend, tuple(printed)
        message, asked = v2
        self.last_request = request
        if self.recorded is not None:
            self.recorded[request] = (backend, message)
        found = self._verdicts.lookup(*request) if asked and self._verdicts else None
        if found is not None:
            backend, message = found
            asked = False
            printed = [
                *printed,
                f"cuDNN's support verdict as recorded on a GPU in {self._verdicts.path}",
            ]
        self.asked_cudnn += asked
        return backend, tuple(printed), message, asked
