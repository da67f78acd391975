"""`[tool.te-attn-guards]` in the target's `pyproject.toml`: one loader for every tool.

The lint plugin, the codemod and the runtime patch must agree on which hazards exist, which to
skip and which functions are selectors, or a fork would get a guard inserted that its linter
then flags (or the reverse). So all three call `load_config`, and a bad table fails the same
way everywhere: a `ConfigError` naming the file and the key.

    [tool.te-attn-guards]
    selector-functions = ["get_attention_backend"]
    skip = ["TEA002"]
    [[tool.te-attn-guards.hazards]]   # same schema as `Hazard.to_mapping()`
    id = "TEA010"
    ...
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from selector_patch.registry import HAZARDS, Hazard

TABLE = "te-attn-guards"
DEFAULT_SELECTOR_FUNCTIONS = ("get_attention_backend",)
KEYS = ("hazards", "skip", "selector-functions")


class ConfigError(Exception):
    """One line: `<pyproject path>: [tool.te-attn-guards].<key>: <cause>`."""


@dataclass(frozen=True)
class Config:
    hazards: tuple[Hazard, ...] = HAZARDS
    selector_functions: tuple[str, ...] = DEFAULT_SELECTOR_FUNCTIONS
    #: The `pyproject.toml` the settings came from, if any.
    path: Path | None = None


def select_hazards(config: Config, ids: Sequence[str] = ()) -> tuple[Hazard, ...]:
    """The configured hazards, limited to `ids` when given; an unknown id is a `ConfigError`."""
    known = {hazard.id: hazard for hazard in config.hazards}
    unknown = [hazard_id for hazard_id in ids if hazard_id not in known]
    if unknown:
        raise ConfigError(f"unknown hazard {unknown[0]!r}; known: {', '.join(known)}")
    return tuple(known[i] for i in dict.fromkeys(ids)) or config.hazards


def find_pyproject(start: Path) -> Path | None:
    """The nearest `pyproject.toml` at or above `start` (a file or a directory)."""
    return _pyproject_above(start if start.is_dir() else start.parent)


@functools.lru_cache(maxsize=256)
def _pyproject_above(directory: Path) -> Path | None:
    """Cached per directory: flake8 asks once for every file it checks."""
    for candidate in (directory, *directory.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate / "pyproject.toml"
    return None


def load_config(start: Path | str | None) -> Config:
    """Settings for a target file or directory; defaults when no table applies."""
    pyproject = find_pyproject(Path(start).resolve()) if start is not None else None
    if pyproject is None:
        return Config()
    return _load(pyproject, pyproject.stat().st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _load(pyproject: Path, _mtime: int) -> Config:
    """Parsed once per file version: flake8 asks for every file it checks."""
    try:
        document = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{pyproject}: cannot read: {error}") from None
    table = document.get("tool", {}).get(TABLE)
    if table is None:
        return Config(path=pyproject)
    try:
        return config_from_table(table, pyproject)
    except ValueError as error:
        raise ConfigError(f"{pyproject}: [tool.{TABLE}].{error}") from None


def config_from_table(table: Mapping[str, Any], path: Path | None = None) -> Config:
    """Validate one `[tool.te-attn-guards]` table; `ValueError` names the bad key."""
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown key; known: {list(KEYS)}")
    extra = tuple(
        Hazard.from_mapping(data, f"hazards[{index}]")
        for index, data in enumerate(_array(table, "hazards", dict))
    )
    known = [h.id for h in HAZARDS] + [h.id for h in extra]
    duplicates = sorted({i for i in known if known.count(i) > 1})
    if duplicates:
        raise ValueError(f"hazards: id {duplicates[0]} is declared twice")
    skip = _array(table, "skip", str)
    for index, hazard_id in enumerate(skip):
        if hazard_id not in known:
            raise ValueError(f"skip[{index}]: unknown hazard {hazard_id!r}")
    functions = tuple(_array(table, "selector-functions", str))
    return Config(
        hazards=tuple(h for h in (*HAZARDS, *extra) if h.id not in skip),
        selector_functions=functions or DEFAULT_SELECTOR_FUNCTIONS,
        path=path,
    )


def _array(table: Mapping[str, Any], key: str, kind: type) -> list:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise ValueError(f"{key}: expected an array, got {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, kind):
            expected = "a table" if kind is dict else kind.__name__
            raise ValueError(f"{key}[{index}]: expected {expected}, got {item!r}")
    return value
