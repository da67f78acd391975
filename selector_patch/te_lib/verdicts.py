"""cuDNN's support verdicts recorded on a GPU, and read wherever they are given.

TE 2.20+'s query leaves the requests its own rules admit to cuDNN's graph support check, which
only a GPU's cuDNN runs; on a CPU that one verdict is assumed (`harness.config_fields`). On a GPU
machine, `python -m selector_patch.te_lib.record` runs the installed TE's own query and writes
what it answered, request by request, into a JSON file:

    {"te_version": "2.20.2", "verdicts": [{"sm_arch": 90, "cudnn_version": 91801,
      "fields": [[attribute, is real, value], ...], "backend": 1, "message": ""}, ...]}

(`fields` as `config_fields` gives them: the configuration's attributes by the release's header
values). Named by `TE_ATTN_GUARDS_CUDNN_VERDICTS=FILE`, the file answers every request it holds
for that release, on that compute capability and cuDNN version, instead of the assumption. A
file that cannot be read is one line naming it and the cause.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Sequence

from selector_patch.te_cxx.errors import CxxError

VERDICTS_VARIABLE = "TE_ATTN_GUARDS_CUDNN_VERDICTS"

Key = tuple[int, int, tuple[tuple[int, bool, float], ...]]


def key(sm_arch: int, cudnn_version: int, fields: Iterable[Sequence]) -> Key:
    return sm_arch, cudnn_version, tuple((int(a), bool(r), float(v)) for a, r, v in fields)


class Verdicts:
    """One file's verdicts for one release."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            self.te_version = data["te_version"]
            self._answers = {
                key(v["sm_arch"], v["cudnn_version"], v["fields"]): (v["backend"], v["message"])
                for v in data["verdicts"]
            }
        except OSError as error:
            raise CxxError(path, f"cannot read the cuDNN verdicts: {error.strerror}") from None
        except (ValueError, KeyError, TypeError) as error:
            raise CxxError(path, f"not a file of cuDNN verdicts: {error}") from None

    def lookup(self, sm_arch: int, cudnn_version: int, fields) -> tuple[int, str] | None:
        return self._answers.get(key(sm_arch, cudnn_version, fields))


def configured(te_version: str) -> Verdicts | None:
    """The verdicts `TE_ATTN_GUARDS_CUDNN_VERDICTS` names, where they are `te_version`'s."""
    named = os.environ.get(VERDICTS_VARIABLE)
    if not named:
        return None
    verdicts = Verdicts(Path(named).expanduser())
    return verdicts if verdicts.te_version == te_version else None


def write(path: Path, te_version: str, recorded: dict[Key, tuple[int, str]]) -> None:
    """The recorded verdicts as the file `Verdicts` reads."""
    rows = [
        {"sm_arch": sm, "cudnn_version": cudnn, "fields": [list(f) for f in fields],
         "backend": backend, "message": message}
        for (sm, cudnn, fields), (backend, message) in sorted(recorded.items())
    ]  # fmt: skip
    path.write_text(json.dumps({"te_version": te_version, "verdicts": rows}, indent=1) + "\n")
