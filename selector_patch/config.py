"""`[tool.te-attn-guards]` in the target's `pyproject.toml`: one loader for every tool.

The lint plugin, the codemod and the runtime patch must agree on which hazards exist, which to
skip and which functions are selectors, or a fork would get a guard inserted that its linter
then flags (or the reverse). So all three call `load_config`, and a bad table fails the same
way everywhere: a `ConfigError` naming the file and the key.

    [tool.te-attn-guards]
    selector-functions = ["get_attention_backend"]
    skip = ["TEA002"]
    te-version = "2.20.2"             # the release a selector file alone came from (`sources`)
    [[tool.te-attn-guards.hazards]]   # same schema as `Hazard.to_mapping()`
    id = "TEA010"
    ...
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Mapping, Sequence

from selector_patch import registry
from selector_patch.project import (
    DEFAULT_SELECTOR_FUNCTIONS,
    TABLE,
    TE_VERSION_KEY,
    ConfigError,
    project_table,
)
from selector_patch.records import TupleRecord
from selector_patch.registry import HAZARDS, Hazard
from selector_patch.versions import valid as valid_version

KEYS = ("hazards", "skip", "selector-functions", "te-cxx", "te-fixes", TE_VERSION_KEY)


class Config(TupleRecord):
    hazards: tuple[Hazard, ...] = HAZARDS
    #: The ids of TE's own later fixes skipped (`te_fixes`).
    skipped_fixes: frozenset[str] = frozenset()
    selector_functions: tuple[str, ...] = DEFAULT_SELECTOR_FUNCTIONS
    #: The `pyproject.toml` the settings came from, if any.
    path: Path | None = None

    @property
    def te_fixes(self) -> tuple[Hazard, ...]:
        """TE's own later fixes not skipped. The runtime patch always guards them; the codemod
        and flake8 do where `te-fixes = true` (or `codemods.apply --te-fixes`) puts them in
        `hazards`: their witness runs more than double the analysis of a selector (TE 2.20.2),
        which flake8 pays on every commit that touches one (and only then loads them)."""
        return tuple(h for h in registry.TE_FIXES if h.id not in self.skipped_fixes)


def select_hazards(config: Config, ids: Sequence[str] = ()) -> tuple[Hazard, ...]:
    """The configured hazards, limited to `ids` when given; an unknown id is a `ConfigError`."""
    known = {hazard.id: hazard for hazard in config.hazards}
    unknown = [hazard_id for hazard_id in ids if hazard_id not in known]
    if unknown:
        raise ConfigError(f"unknown hazard {unknown[0]!r}; known: {', '.join(known)}")
    return tuple(known[i] for i in dict.fromkeys(ids)) or config.hazards


def with_te_fixes(config: Config) -> tuple[Hazard, ...]:
    """The configured hazards and TE's own later fixes not skipped, each once."""
    ids = {hazard.id for hazard in config.hazards}
    return (*config.hazards, *(hazard for hazard in config.te_fixes if hazard.id not in ids))


def load_config(start: Path | str | None) -> Config:
    """Settings for a target file or directory; defaults when no table applies."""
    pyproject, table = project_table(start)
    if pyproject is None:
        return Config()
    return _validated(pyproject, pyproject.stat().st_mtime_ns, table is not None)


@functools.lru_cache(maxsize=64)
def _validated(pyproject: Path, _mtime: int, configured: bool) -> Config:
    """Validated once per file version: flake8 asks for every file it checks."""
    if not configured:
        return Config(path=pyproject)
    try:
        return config_from_table(project_table(pyproject)[1], pyproject)
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
    known = [h.id for h in (*HAZARDS, *registry.TE_FIXES, *extra)]
    duplicates = sorted({i for i in known if known.count(i) > 1})
    if duplicates:
        raise ValueError(f"hazards: id {duplicates[0]} is declared twice")
    skip = _array(table, "skip", str)
    for index, hazard_id in enumerate(skip):
        if hazard_id not in known:
            raise ValueError(f"skip[{index}]: unknown hazard {hazard_id!r}")
    guard_fixes = table.get("te-fixes", False)
    if not isinstance(guard_fixes, bool):
        raise ValueError("te-fixes: expected true or false (guard TE's own later fixes too)")
    skipped_fixes = frozenset(h.id for h in registry.TE_FIXES if h.id in skip)
    functions = tuple(_array(table, "selector-functions", str))
    if not isinstance(table.get("te-cxx", ""), str):
        raise ValueError("te-cxx: expected a directory path (the per-release TE C++ trees)")
    te_version = table.get(TE_VERSION_KEY, "0")
    if not (isinstance(te_version, str) and valid_version(te_version)):
        raise ValueError(f"{TE_VERSION_KEY}: expected a TE version such as 2.20.2")
    config = Config(
        hazards=tuple(h for h in (*HAZARDS, *extra) if h.id not in skip),
        skipped_fixes=skipped_fixes,
        selector_functions=functions or DEFAULT_SELECTOR_FUNCTIONS,
        path=path,
    )
    return config._replace(hazards=config.hazards + config.te_fixes) if guard_fixes else config


def _array(table: Mapping[str, Any], key: str, kind: type) -> list:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise ValueError(f"{key}: expected an array, got {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, kind):
            expected = "a table" if kind is dict else kind.__name__
            raise ValueError(f"{key}[{index}]: expected {expected}, got {item!r}")
    return value
