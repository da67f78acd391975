"""A snapshot as a file: stable JSON, one configuration per line, small enough to commit.

    {
     "format": "te-attn-guards selection snapshot 1",
     "te_version": "2.20.2", "selector": "transformer_engine/.../utils.py", "sha256": "...",
     "fused_assumption": null,
     "grid": {... how the requests were derived: architectures, modes, switches, the pairwise
              inputs with their values and the comparisons they come from, the pairwise rows},
     "log": ["Disabling FlashAttention 2 for ...", ...],
     "outcomes": [[{"backend": "FusedAttention", "available": [...]}, [3, 17]], ...],
     "configurations": {
      "sm90": {
       "training": {
        "110111": [
    42,
    17,
    ...

Configurations are nested by architecture, mode and switch setting (one digit per grid switch,
in the grid's order: 1 the backend left on, 0 switched off), and hold one line per row of the
grid, in the rows' order: the configuration's outcome, an index into `outcomes` (the pick and its
log lines, indices into `log`). A line per configuration, each a few bytes: the 225,000 requests
of TE 2.20.2 make some 2 MB. Outcomes and log lines are written once each, in sorted order, so the
file depends only on what the selector picks and says, never on the order it was asked in, and a
change to one request changes one line. Paths are relative to the TE tree: a committed snapshot
reads the same on every machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from selector_patch.snapshot.codec import decode, encode
from selector_patch.snapshot.grid import MODES, Configuration, Factor, Grid, Switch
from selector_patch.snapshot.outcome import Outcome, Pick

FORMAT = "te-attn-guards selection snapshot 1"


class SnapshotError(Exception):
    """An unreadable snapshot file; `str()` is one line, `"<path>: <cause>"`."""

    def __init__(self, where: object, cause: str) -> None:
        super().__init__(f"{where}: {cause}")


def sm(architecture: tuple[int, int]) -> str:
    return f"sm{10 * architecture[0] + architecture[1]}"


def architecture_of(name: str) -> tuple[int, int]:
    if not (name.startswith("sm") and name[2:].isdigit()):
        raise ValueError(f"not an architecture: {name!r}")
    number = int(name[2:])
    return (number // 10, number % 10)


@dataclass
class Snapshot:
    """What a selector picked for every request of its grid."""

    te_version: str | None
    #: The selector file, relative to its TE tree (its name when it has none).
    selector: str
    sha256: str
    #: The harness's sentence when cuDNN's fused answer was assumed, not TE's C++.
    fused_assumption: str | None
    grid: Grid
    #: One per configuration, in the grid's order.
    outcomes: list[Outcome]

    def configured(self) -> Iterable[tuple[Configuration, Outcome]]:
        return zip(self.grid.configurations(), self.outcomes)

    def to_text(self) -> str:
        log = sorted({line for outcome in self.outcomes for line in outcome.log})
        line_ids = {line: index for index, line in enumerate(log)}
        keyed = {
            outcome: (_json(outcome.pick.to_json()), [line_ids[line] for line in outcome.log])
            for outcome in set(self.outcomes)
        }
        table = sorted(keyed, key=keyed.__getitem__)
        outcome_ids = {outcome: index for index, outcome in enumerate(table)}
        configurations = _nested(self.grid, [outcome_ids[o] for o in self.outcomes])
        header = {
            "format": FORMAT,
            "te_version": self.te_version,
            "selector": self.selector,
            "sha256": self.sha256,
            "fused_assumption": self.fused_assumption,
        }
        parts = [f" {json.dumps(key)}: {_json(value)}" for key, value in header.items()]
        parts.append(f' "grid": {_grid_text(self.grid)}')
        parts.append(f' "log": {_listed(json.dumps(line) for line in log)}')
        outcomes = (f"[{keyed[o][0]}, {_json(keyed[o][1])}]" for o in table)
        parts.append(f' "outcomes": {_listed(outcomes)}')
        parts.append(f' "configurations": {configurations}')
        return "{\n" + ",\n".join(parts) + "\n}\n"

    def write(self, path: Path) -> None:
        """Replace `path` atomically (a snapshot is read by tests while it may be rewritten)."""
        import os
        import tempfile

        path.parent.mkdir(parents=True, exist_ok=True)
        handle, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(self.to_text())
            os.replace(staging, path)
        except BaseException:
            Path(staging).unlink(missing_ok=True)
            raise


def _nested(grid: Grid, ids: list[int]) -> str:
    """`{"sm90": {"training": {"110111": [ids, one a line]}}}`, in the grid's order."""
    settings = grid.settings()
    lines = ["{"]
    position = 0
    for a, architecture in enumerate(grid.architectures):
        lines.append(f'  "{sm(architecture)}": {{')
        for m, mode in enumerate(grid.modes):
            lines.append(f'   "{mode}": {{')
            for s, setting in enumerate(settings):
                count = len(grid.rows_of(setting))
                block = ",\n".join(map(str, ids[position : position + count]))
                position += count
                comma = "," if s < len(settings) - 1 else ""
                lines.append(f'    "{_bits(setting)}": [\n{block}\n    ]{comma}')
            lines.append("   }" + ("," if m < len(grid.modes) - 1 else ""))
        lines.append("  }" + ("," if a < len(grid.architectures) - 1 else ""))
    lines.append(" }")
    return "\n".join(lines)


def _bits(switches: tuple[bool, ...]) -> str:
    return "".join("1" if on else "0" for on in switches)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)


def _listed(items: Iterable[str], indent: str = " ") -> str:
    """A JSON list, one item per line under `indent` (configurations: none, to stay small)."""
    prefix = f"{indent} " if indent else ""
    body = ",\n".join(f"{prefix}{item}" for item in items)
    return f"[\n{body}\n{indent}]" if body else "[]"


def _factor_json(factor: Factor) -> dict[str, Any]:
    data = {
        "keyword": factor.keyword,
        "default": encode(factor.default),
        "levels": [encode(level) for level in factor.levels],
        "compared": list(factor.compared),
    }
    if factor.cuts:
        data["cuts"] = [[encode(value), side] for value, side in factor.cuts]
    if factor.stated:
        data["stated"] = True
    if factor.one_sided:
        data["one_sided"] = list(factor.one_sided)
    if factor.dropped:
        data["dropped"] = [[encode(value), reason] for value, reason in factor.dropped]
    return data


def _grid_text(grid: Grid) -> str:
    fields = [
        f'  "strength": {grid.strength}',
        f'  "architectures": {_json([sm(a) for a in grid.architectures])}',
        f'  "architecture_comparisons":'
        f' {_listed(map(json.dumps, grid.architecture_comparisons), "  ")}',
        f'  "modes": {_json({mode: MODES[mode] for mode in grid.modes})}',
        f'  "switches": {_json({s.name: s.off for s in grid.switches})}',
        f'  "factors": {_listed((_json(_factor_json(f)) for f in grid.factors), "  ")}',
        f'  "pairs": {_listed((_json([*pair, line]) for pair, line in grid.pairs), "  ")}',
        f'  "singles": {grid.singles}',
        f'  "pair_settings": {_json([_bits(setting) for setting in grid.pair_settings])}',
        f'  "rows": {_listed((_json(list(row)) for row in grid.rows), "  ")}',
    ]
    return "{\n" + ",\n".join(fields) + "\n }"


def _grid_of(data: dict[str, Any]) -> Grid:
    factors = tuple(
        Factor(
            keyword=factor["keyword"],
            default=decode(factor["default"]),
            levels=tuple(decode(level) for level in factor["levels"]),
            compared=tuple(factor["compared"]),
            one_sided=tuple(factor.get("one_sided", ())),
            dropped=tuple((decode(v), reason) for v, reason in factor.get("dropped", ())),
            cuts=tuple((decode(v), side) for v, side in factor.get("cuts", ())),
            stated=factor.get("stated", False),
        )
        for factor in data["factors"]
    )
    rows = tuple(tuple(row) for row in data["rows"])
    for row in rows:
        if len(row) != len(factors) or any(
            not 0 <= level <= len(factor.levels) for level, factor in zip(row, factors)
        ):
            raise ValueError(f"grid row {list(row)} does not fit the factors")
    modes = tuple(data["modes"])
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        raise ValueError(f"unknown mode {unknown[0]!r}")
    return Grid(
        architectures=tuple(architecture_of(name) for name in data["architectures"]),
        architecture_comparisons=tuple(data["architecture_comparisons"]),
        modes=modes,
        switches=tuple(Switch(name, off) for name, off in data["switches"].items()),
        factors=factors,
        rows=rows,
        singles=data["singles"],
        pair_settings=tuple(tuple(bit == "1" for bit in bits) for bits in data["pair_settings"]),
        pairs=tuple(((a, b), line) for a, b, line in data["pairs"]),
        strength=data["strength"],
    )


def parse(text: str, where: object) -> Snapshot:
    """The snapshot in `text`; `SnapshotError` naming `where` and the cause otherwise."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise SnapshotError(where, f"not JSON (line {error.lineno}: {error.msg})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SnapshotError(where, f'not a selection snapshot (no "format": {FORMAT!r})')
    try:
        grid = _grid_of(data["grid"])
        log: Sequence[str] = data["log"]
        table = [
            Outcome(Pick.from_json(pick), tuple(log[i] for i in ids))
            for pick, ids in data["outcomes"]
        ]
        nested = data["configurations"]
        outcomes = []
        for architecture in grid.architectures:
            for mode in grid.modes:
                for setting in grid.settings():
                    where = f"{sm(architecture)} {mode} {_bits(setting)}"
                    ids = nested[sm(architecture)][mode][_bits(setting)]
                    count = len(grid.rows_of(setting))
                    if len(ids) != count:
                        raise ValueError(f"{where}: {len(ids)} outcomes for {count} rows")
                    outcomes.extend(table[i] for i in ids)
        return Snapshot(
            te_version=data["te_version"],
            selector=data["selector"],
            sha256=data["sha256"],
            fused_assumption=data["fused_assumption"],
            grid=grid,
            outcomes=outcomes,
        )
    except (KeyError, IndexError, TypeError, ValueError) as error:
        cause = f"missing {error.args[0]!r}" if isinstance(error, KeyError) else str(error)
        raise SnapshotError(where, f"not a valid selection snapshot: {cause}") from None


def read(path: Path) -> Snapshot:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        cause = error.strerror if isinstance(error, OSError) else "not UTF-8"
        raise SnapshotError(path, f"cannot read: {cause}") from None
    return parse(text, path)


def looks_like_snapshot(path: Path) -> bool:
    """A `.json` file: what `diff` reads as a snapshot rather than a selector source."""
    return path.suffix == ".json"
