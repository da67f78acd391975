"""Why a request's pick changed: the TE log line, or C++ warning, that explains it.

A release pair reads as its few causes, not its many regions: `diff 2.17.1 2.18.0` moves picks
in 358 regions, and 355 of them are one cause, the new `NVTE_FLASH_ATTN_V2/V3/V4` switches
("Disabling FlashAttention 4 due to NVTE_FLASH_ATTN=0 or NVTE_FLASH_ATTN_V4=0"). TE says why it
switches a backend off, in the selector's `Disabling ...` lines and in what its C++
fused-attention query prints (`Warning: ...`, which joins the log), so the explanation of a
change is a line one side logged and the other did not:

- side A's backend *switched off*: a line only side B logged that disables it;
- side B's backend *switched on*: a line only side A logged that disabled it;
- else the first line either side alone logged, and with none, a silent change (a dispatch or
  preference that logs nothing).

For FusedAttention a C++ warning beats TE's generic "no backend supports the provided input",
which only repeats that the C++ said no. A cause is named by the line with what varies per
request left out: what follows "Found:", values after " = ", and the FlashAttention version one
rule is stated for, once per version (`FlashAttention N`, `NVTE_FLASH_ATTN_VN`).
"""

from __future__ import annotations

import re
from typing import NamedTuple, Sequence

from selector_patch.snapshot.outcome import FLASH, FUSED, Outcome, Pick

OFF, ON = "off", "on"
#: TE's summary lines: they restate the pick, they do not explain it.
SUMMARY = ("Available backends = ", "Selected backend = ")
#: TE's generic line when its C++ fused query answered no backend.
FUSED_GENERIC = "Disabling FusedAttention as no backend supports the provided input"
SILENT = "no log line explains it"
UNFUSED = "UnfusedDotProductAttention"

_FOUND = re.compile(r"\s*Found:.*$")
_VALUE = re.compile(r" = [^,;]+?(?=,|;| and |\.$|$)")
_FLASH_VERSION = re.compile(r"FlashAttention [234]\b")
_SWITCH_VERSION = re.compile(r"(NVTE_FLASH_ATTN_V)[234]\b")


class Explanation(NamedTuple):
    """The line that explains one request's change, and how."""

    #: TE's words, as logged for the request.
    line: str
    #: The cause it names: the line without what varies per request.
    key: str
    #: "a" or "b": the side that logged it.
    side: str
    #: OFF: a backend side A could use is switched off; ON: one side A refused is switched on.
    direction: str
    #: The backend the line is about (`FlashAttention 4`, `FusedAttention`).
    backend: str


def key_of(line: str) -> str:
    """The cause a line names: `Disabling FlashAttention N due to NVTE_FLASH_ATTN=0 or
    NVTE_FLASH_ATTN_VN=0` for each version's line alike."""
    text = _FOUND.sub("", line).strip()
    text = _VALUE.sub(" = …", text)
    text = _FLASH_VERSION.sub("FlashAttention N", text)
    return _SWITCH_VERSION.sub(r"\1N", text)


def is_cxx(line: str) -> bool:
    """A line TE's C++ fused query printed (the Python selector's lines say `Disabling`)."""
    return not line.startswith("Disabling") and not line.startswith(SUMMARY)


def backend_name(pick: Pick) -> str:
    """How TE's lines name the pick's backend: `FlashAttention 4`, `FusedAttention`."""
    if pick.backend == FLASH and pick.role:
        return f"FlashAttention {pick.role[2:]}"
    return pick.backend


def names(line: str, backend: str) -> bool:
    """Whether `line` disables `backend`: `Disabling FlashAttention due to ...` (TE 1.x, or the
    preference line) disables every FlashAttention; a C++ line is about FusedAttention."""
    if is_cxx(line):
        return backend == FUSED
    subject = line[len("Disabling ") :] if line.startswith("Disabling ") else line
    if backend.startswith(FLASH):
        if subject.startswith(backend):
            return True
        return subject.startswith(FLASH) and not re.match(r"FlashAttention \d", subject)
    return subject.startswith(backend)


def _disabling(lines: Sequence[str], backend: str) -> str | None:
    """The line of `lines` that disables `backend`; for FusedAttention a C++ warning first."""
    if backend == FUSED:
        for line in lines:
            if is_cxx(line):
                return line
    for line in lines:
        if not is_cxx(line) and names(line, backend):
            return line
    return None


def _only(log: Sequence[str], other: Sequence[str]) -> list[str]:
    seen = set(other)
    return [line for line in log if line not in seen and not line.startswith(SUMMARY)]


def explain(a: Outcome, b: Outcome) -> Explanation:
    """The line that explains why side A's outcome became side B's (see the module)."""
    new, gone = _only(b.log, a.log), _only(a.log, b.log)
    before, after = backend_name(a.pick), backend_name(b.pick)
    candidates = [(before, new, "b", OFF), (after, gone, "a", ON)]
    if before == after:  # only the available backends moved
        candidates = [
            *((name, new, "b", OFF) for name in a.pick.available if name not in b.pick.available),
            *((name, gone, "a", ON) for name in b.pick.available if name not in a.pick.available),
        ]
    for backend, lines, side, direction in candidates:
        line = _disabling(lines, _family(backend))
        if line is not None:
            return Explanation(line, key_of(line), side, direction, backend)
    for lines, side, direction, backend in ((new, "b", OFF, before), (gone, "a", ON, after)):
        if lines:
            return Explanation(lines[0], key_of(lines[0]), side, direction, backend)
    return Explanation(SILENT, SILENT, "b", OFF, before)


def _family(backend: str) -> str:
    """`FusedAttention` for any FusedAttention sub-backend as a pick names it."""
    return FUSED if backend.startswith(FUSED) else backend
