"""The project a file belongs to: its nearest `pyproject.toml` and its `[tool.te-attn-guards]`
table, found and read once per directory and file version.

flake8 runs the TEA plugin on every file of a commit, and most files define no selector. To
tell, the plugin needs only the table's `selector-functions`; this module answers that with the
standard library alone (no registry, no analysis, and no TOML parser at all for a
`pyproject.toml` that does not mention the table), so a file without a selector costs next to
nothing. `selector_patch.config` validates the whole table on top of the same reading.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

TABLE = "te-attn-guards"
#: The table's key naming the release a selector file alone came from.
TE_VERSION_KEY = "te-version"
DEFAULT_SELECTOR_FUNCTIONS = ("get_attention_backend",)


class ConfigError(Exception):
    """One line: `<pyproject path>: [tool.te-attn-guards].<key>: <cause>`."""


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


def project_table(start: Path | str | None) -> tuple[Path | None, dict[str, Any] | None]:
    """The nearest `pyproject.toml` and its `[tool.te-attn-guards]` table (None: no table).

    Raises `ConfigError` for a file that cannot be read or parsed.
    """
    pyproject = find_pyproject(Path(start).resolve()) if start is not None else None
    if pyproject is None:
        return None, None
    return pyproject, _table(pyproject, pyproject.stat().st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _table(pyproject: Path, _mtime: int) -> dict[str, Any] | None:
    """Parsed once per file version, and only when the file names the table at all."""
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{pyproject}: cannot read: {error}") from None
    if TABLE not in text:
        return None
    import tomllib  # only a project that configures te-attn-guards pays for the parser

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{pyproject}: cannot read: {error}") from None
    return document.get("tool", {}).get(TABLE)


def selector_functions(start: Path | str | None) -> tuple[str, ...] | None:
    """The configured selector names for a file, or the defaults; None when the table cannot
    be read or its `selector-functions` is malformed (`config.load_config` says why)."""
    try:
        _, table = project_table(start)
    except ConfigError:
        return None
    names = (table or {}).get("selector-functions", list(DEFAULT_SELECTOR_FUNCTIONS))
    if not (isinstance(names, list) and all(isinstance(name, str) for name in names)):
        return None
    return tuple(names) or DEFAULT_SELECTOR_FUNCTIONS
