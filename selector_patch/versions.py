"""Release order of version strings, without `packaging` where they are plain.

Importing `packaging.version` compiles PEP 440's regular expression: some 9 M instructions, more
than a fortieth of what TEA may add to a flake8 run, which orders a few plain releases (TE's
flash-attn bounds, `"2.8.4"`; a hazard's fixed release, `"4.0.0b36"`) and nothing else. A plain
release - numbers joined by dots, then at most an `a`, `b` or `rc` pre-release number - is read
here, in PEP 440's order (trailing zeros do not count, a pre-release comes before its release);
any other spelling, and any pair with one, is left to `packaging.version.Version`.
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Any, Callable

_PLAIN = re.compile(r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?")
#: A pre-release's rank; a release without one comes after all of them.
_PRE = {"a": 0, "b": 1, "rc": 2, None: 3}


@functools.lru_cache(maxsize=256)
def _plain_key(text: str) -> tuple[tuple[int, ...], int, int] | None:
    match = _PLAIN.fullmatch(text)
    if match is None:
        return None
    release = [int(part) for part in match[1].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    return tuple(release), _PRE[match[2]], int(match[3] or 0)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as version `a` is older than, the same as or newer than `b` (PEP 440).
    Raises `packaging.version.InvalidVersion` for a string that is no version."""
    mine, theirs = _plain_key(a), _plain_key(b)
    if mine is None or theirs is None:
        from packaging.version import Version

        mine, theirs = Version(a), Version(b)  # type: ignore[assignment]
    return (mine > theirs) - (mine < theirs)  # type: ignore[operator]


#: A sort key that orders version strings (`min(versions, key=order)`).
order = functools.cmp_to_key(compare)


def valid(text: str) -> bool:
    """Whether `text` is a PEP 440 version."""
    if _plain_key(text) is not None:
        return True
    from packaging.version import InvalidVersion, Version

    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def is_packaging_version(obj: Any) -> bool:
    """Whether `obj` is a `packaging.version.Version`: none can be unless the module is loaded."""
    module = sys.modules.get("packaging.version")
    return module is not None and isinstance(obj, module.Version)


def lazy(module: str, name: str) -> Callable[..., Any]:
    """`module.name`, imported when first called (a pure function a selector's module imports,
    such as `packaging.version.Version`, which its code may never call)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(__import__(module, fromlist=[name]), name)(*args, **kwargs)

    call.__qualname__ = call.__name__ = name
    return call
