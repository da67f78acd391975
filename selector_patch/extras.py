"""The harness extra, and the one line a command says when it is not installed.

A base install (`pip install te-attn-guards`) has the linter and the codemod. Running TE's
selector (`verify`, `table`, `snapshot`, `diff`, the miner's judges, the pytest plugin's
`te_selector`, the codemod's `--emit-tests` and `--selection-diff`) imports torch and numpy,
which `te-attn-guards[harness]` installs. Without them a command says so in one line and exits
2, instead of a `ModuleNotFoundError` traceback from deep inside the harness. Whether they are
installed is asked of the import system (`find_spec`), without importing torch.
"""

from __future__ import annotations

import importlib.util
import sys

#: What the harness imports that a base install lacks.
HARNESS_MODULES = ("torch", "numpy")
INSTALL = "pip install 'te-attn-guards[harness]'"
EXIT_ERROR = 2


def missing_harness() -> str | None:
    """The first harness module that cannot be imported, or None when all can."""
    for name in HARNESS_MODULES:
        try:
            found = importlib.util.find_spec(name)
        except ValueError:  # in sys.modules as None: blocked
            found = None
        if found is None:
            return name
    return None


def without_harness(command: str) -> str | None:
    """`command`'s one line when the harness extra is missing, else None."""
    missing = missing_harness()
    if missing is None:
        return None
    return (
        f"{command}: runs TE's selector, which needs {missing}: install the harness extra"
        f" ({INSTALL})"
    )


def exit_without_harness(command: str) -> None:
    """Exit with `command`'s one line (status 2) when the harness extra is missing."""
    line = without_harness(command)
    if line is not None:
        print(line, file=sys.stderr)
        raise SystemExit(EXIT_ERROR)
