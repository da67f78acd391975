"""What one request of a snapshot got: the pick, and TE's lines saying why.

The pick is what decides which kernel runs: the backend (with its flash role and version), the
backends TE reported available, and cuDNN's sub-backend when fused attention is the pick (TE
returns one beside its flags whenever fused attention survived the filters, even when another
backend wins; only the winner's runs). A request the release cannot express (an input it lacks)
or whose selection raised in the selector's own code gets that instead, in words that do not
name the file: two copies of one selector in two places raise alike.

The log is kept beside the pick and never compared: a new debug line, a print or a reworded
message changes no request's kernel. TE's first line echoes the whole request
(`Running with config=...`); the request is already the configuration, so that line is left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from selector_patch.harness import Selection

#: TE's echo of the request, the first line of every selection's log.
CONFIG_ECHO = "Running with config="
FUSED = "FusedAttention"
FLASH = "FlashAttention"
#: TE's `available_backends`, in order; a fork's own backend is named by its place.
AVAILABLE_NAMES = ("FlashAttention", "FusedAttention", "UnfusedDotProductAttention")


class Pick(NamedTuple):
    """What a difference is a difference in."""

    backend: str
    role: str | None = None
    version: str | None = None
    available: tuple[str, ...] = ()
    fused: str | None = None
    #: The selector raised: `Type: message`.
    error: str | None = None
    #: The release cannot express the request: why.
    unrepresentable: str | None = None

    def label(self) -> str:
        """`FlashAttention 4`, `FusedAttention (F16_arbitrary_seqlen)`, `raised KeyError: ...`."""
        if self.error is not None:
            return f"raised {self.error}"
        if self.unrepresentable is not None:
            return "not expressible"
        if self.backend == FLASH and self.role:
            return f"FlashAttention {self.role[2:]}"
        if self.backend == FUSED and self.fused:
            return f"FusedAttention ({self.fused})"
        return self.backend

    def to_json(self) -> dict[str, Any]:
        return {name: value for name, value in self._asdict().items() if value not in (None, ())}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Pick":
        known = set(cls._fields)
        unknown = sorted(set(data) - known)
        if unknown or "backend" not in data:
            raise ValueError(f"not a pick: {unknown[0] if unknown else 'no backend'}")
        return cls(**{**data, "available": tuple(data.get("available", ()))})


def change_text(a: Pick, b: Pick) -> str:
    """What side A's pick became: `FusedAttention → FlashAttention 3`; where the backend stays,
    what left or joined the backends TE reported available."""
    if a.label() != b.label():
        return f"{a.label()} → {b.label()}"
    gone = [name for name in a.available if name not in b.available]
    joined = [name for name in b.available if name not in a.available]
    if gone or joined:
        moves = [f"-{name}" for name in gone] + [f"+{name}" for name in joined]
        return f"{a.label()} (available: {', '.join(moves)})"
    return f"{a.to_json()} → {b.to_json()}"  # a pick differing in nothing a label shows


ERROR = "error"
UNREPRESENTABLE = "not expressible"


class Outcome(NamedTuple):
    pick: Pick
    log: tuple[str, ...] = ()


def available_names(flags: tuple[bool, ...]) -> tuple[str, ...]:
    names = [*AVAILABLE_NAMES, *(f"available_backends[{i}]" for i in range(3, len(flags)))]
    return tuple(name for name, on in zip(names, flags) if on)


class Reader:
    """Turns selections into outcomes, formatting each distinct log entry once, and reading
    each distinct log once: a grid's requests repeat a few thousand logs some 150,000 times."""

    def __init__(self) -> None:
        self._lines: dict[tuple, str | None] = {}
        self._logs: dict[tuple, tuple[str, ...]] = {}
        self._outcomes: dict[Outcome, Outcome] = {}
        self._picks: dict[tuple, Pick] = {}

    def outcome(self, selection: "Selection") -> Outcome:
        fused = selection.fused_backend if selection.backend == FUSED else None
        key = (
            selection.backend,
            selection.role,
            selection.flash_version,
            selection.available,
            fused,
        )
        pick = self._picks.get(key)
        if pick is None:
            pick = self._picks[key] = Pick(
                selection.backend,
                selection.role,
                selection.flash_version,
                available_names(selection.available),
                fused,
            )
        return self.interned(Outcome(pick, self.log(selection.entries)))

    def failed(self, *, error: str | None = None, unrepresentable: str | None = None) -> Outcome:
        backend = ERROR if error is not None else UNREPRESENTABLE
        pick = Pick(backend, error=error, unrepresentable=unrepresentable)
        return self.interned(Outcome(pick))

    def interned(self, outcome: Outcome) -> Outcome:
        return self._outcomes.setdefault(outcome, outcome)

    def log(self, entries: tuple) -> tuple[str, ...]:
        """The lines of `entries`, TE's echo of the request left out. Read once per distinct
        log: keyed without the echo, whose arguments (the request, a dict) are no key."""
        if entries and _echoes(entries[0]):
            entries = entries[1:]
        try:
            lines = self._logs.get(entries)
        except TypeError:  # arguments that cannot be a key
            return self._read(entries)
        if lines is None:
            lines = self._logs[entries] = self._read(entries)
        return lines

    def _read(self, entries: tuple) -> tuple[str, ...]:
        from selector_patch.harness.logs import format_entry

        lines = []
        for entry in entries:
            if _echoes(entry):
                continue
            try:
                line = self._lines[entry]
            except KeyError:
                line = self._lines[entry] = format_entry(entry)
            except TypeError:  # arguments that cannot be a key (a dict): formatted each time
                line = format_entry(entry)
            if line is not None:
                lines.append(line)
        return tuple(lines)


def _echoes(entry: tuple) -> bool:
    """Whether a log entry is TE's echo of the request."""
    message = entry[1]
    return isinstance(message, str) and message.startswith(CONFIG_ECHO)
