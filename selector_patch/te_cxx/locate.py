"""Where the C++ of a selector's TE comes from: the source's own tree, else a directory of trees.

A checkout holds `transformer_engine/common/` beside its Python; that C++ is the selector's own,
whatever version it calls itself. A released wheel holds none, so its C++ is looked up by
version in a directory laid out like `../shared/te-cxx` (`<version>/transformer_engine/common/
...`, one tree per release). That directory is named, most specific first, by the caller
(`--te-cxx DIR` on the command lines, the `te_cxx` ini key of the pytest plugin), by the
environment variable `TE_ATTN_GUARDS_TE_CXX`, or by `te-cxx` in the `[tool.te-attn-guards]`
table of the working directory's `pyproject.toml` (relative to that file). For a release the
directory lacks, no C++ is at hand: the release's compiled library answers instead
(`selector_patch.te_lib`), or, failing that, an assumption the results state. A directory that
is named but does not exist is an error, not an assumption.
"""

from __future__ import annotations

import os
from pathlib import Path

from selector_patch.te_cxx.errors import CxxError

TE_CXX_VARIABLE = "TE_ATTN_GUARDS_TE_CXX"
#: The project-table key naming the directory of per-release trees.
TE_CXX_KEY = "te-cxx"
#: What makes a directory a tree with the query (relative to the directory holding
#: `transformer_engine/`).
QUERY_FILE = Path("transformer_engine/common/fused_attn/fused_attn.cpp")


def configured_trees(explicit: str | os.PathLike | None = None) -> Path | None:
    """The directory of per-release trees in effect: `explicit`, else the environment
    variable, else the working directory's project table; None when none names one."""
    if explicit is not None:
        return _existing(Path(explicit).expanduser(), "--te-cxx")
    variable = os.environ.get(TE_CXX_VARIABLE)
    if variable:
        return _existing(Path(variable).expanduser(), TE_CXX_VARIABLE)
    from selector_patch.project import project_table

    pyproject, table = project_table(Path.cwd())
    if pyproject is None or not table or TE_CXX_KEY not in table:
        return None
    value = table[TE_CXX_KEY]
    if not isinstance(value, str):
        raise CxxError(pyproject, f"[tool.te-attn-guards].{TE_CXX_KEY}: expected a directory path")
    return _existing(pyproject.parent / value, f"{pyproject}: [tool.te-attn-guards].{TE_CXX_KEY}")


def name_trees(directory: str | os.PathLike) -> None:
    """A command line's `--te-cxx DIR`: the directory of trees for every selector this process
    loads (a `CxxError` when it does not exist). It stands in for the environment variable, so
    the commands' own processes see it too."""
    os.environ[TE_CXX_VARIABLE] = str(configured_trees(directory))


#: What a command line says of `--te-cxx`.
OPTION_HELP = (
    "directory of per-release TE C++ trees (<version>/transformer_engine/common/...) whose"
    f" fused-attention query answers; default ${TE_CXX_VARIABLE}"
)


def _existing(directory: Path, named_by: str) -> Path:
    if not directory.is_dir():
        raise CxxError(directory, f"no such directory (named by {named_by})")
    return directory


def locate(root: Path | None, te_version: str | None, trees: Path | None) -> Path | None:
    """The tree whose C++ answers for a selector: its own `root` when that holds the query,
    else `trees/<te_version>`; None when neither has it."""
    if root is not None and (root / QUERY_FILE).is_file():
        return root
    if trees is not None and te_version:
        candidate = trees / te_version
        if (candidate / QUERY_FILE).is_file():
            return candidate
    return None
