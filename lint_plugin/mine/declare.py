"""Hazard declarations for the user's `pyproject.toml`, from UNGUARDED verdicts.

A finding is only useful if the tools act on it, so each UNGUARDED candidate that no known
hazard already states is printed as a `[[tool.te-attn-guards.hazards]]` table (the schema of
`Hazard.to_mapping()`), under the first free `TEA0NN` id: the lint plugin, the codemod and the
runtime patch read it through `selector_patch.config`. Refusals that give the same hazard (FA4
refuses split-KV on SM 12.x twice, in the tile heuristic and in the kernel dispatch) make one
declaration; the others are named in its evidence. The standard library reads TOML but does not
write it; the few value shapes of a hazard are written here.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Sequence

from lint_plugin.mine.candidates import same_hazard
from lint_plugin.mine.crosscheck import UNGUARDED, Verdict
from selector_patch.config import TABLE
from selector_patch.registry import Hazard

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def declarations(verdicts: Sequence[Verdict], taken: Iterable[str]) -> dict[tuple, Hazard]:
    """Per candidate key (architectures, triggers): the declared hazard of new UNGUARDED ones."""
    first: dict[tuple, Hazard] = {}
    others: dict[tuple, list[str]] = {}
    for verdict in verdicts:
        if verdict.status != UNGUARDED or verdict.matches is not None:
            continue
        hazard = verdict.hazard
        key = same_hazard(hazard)
        if key in first:
            others[key].append(f"{hazard.evidence.file}:{hazard.evidence.line}")
        else:
            first[key], others[key] = hazard, []
    used = set(taken)
    free = (f"TEA0{n:02d}" for n in range(1, 100) if f"TEA0{n:02d}" not in used)
    declared = {}
    for key, hazard in first.items():
        evidence = hazard.evidence
        if others[key]:
            also = f"; also {', '.join(others[key])}"
            evidence = evidence.replace(reference=evidence.reference + also)
        hazard_id = next(free, None)
        if hazard_id is None:
            raise ValueError("no free TEA0NN hazard id left")
        declared[key] = hazard.replace(id=hazard_id, evidence=evidence)
    return declared


def hazard_tables(hazards: Iterable[Hazard]) -> str:
    """The `[[tool.te-attn-guards.hazards]]` tables declaring `hazards`."""
    return "\n".join(_table(f"tool.{TABLE}.hazards", hazard.to_mapping()) for hazard in hazards)


def _table(name: str, mapping: dict[str, Any]) -> str:
    """An array-of-tables entry; its dict values follow as sub-tables of that entry."""
    lines = [f"[[{name}]]"]
    for key, value in mapping.items():
        if not isinstance(value, dict):
            lines.append(f"{_key(key)} = {_value(value, multiline=True)}")
    for key, value in mapping.items():
        if isinstance(value, dict):
            lines += ["", f"[{name}.{_key(key)}]"]
            lines += [f"{_key(k)} = {_value(v)}" for k, v in value.items()]
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return key if BARE_KEY.fullmatch(key) else json.dumps(key)


def _value(value: Any, multiline: bool = False) -> str:
    """A TOML value; arrays of tables one element a line when `multiline`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON's escapes are TOML basic-string escapes
    if isinstance(value, (list, tuple)):
        items = [_value(item) for item in value]
        if multiline and any(isinstance(item, dict) for item in value):
            return "[\n" + "".join(f"    {item},\n" for item in items) + "]"
        return f"[{', '.join(items)}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {value!r}")
