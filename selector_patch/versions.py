"""Release order of version strings, without `packaging` where they are plain.

Importing `packaging.version` compiles PEP 440's regular expression: some 9 M instructions, more
than a fortieth of what TEA may add to a flake8 run, which orders a few plain releases (TE's
flash-attn bounds, `"2.8.4"`; a hazard's fixed release, `"4.0.0b36"`) and nothing else. A plain
release - numbers joined by dots, then at most an `a`, `b` or `rc` pre-release number, then at
most a `.postN` post-release (TE's `2.6.0.post1`, the first release of a C++ fix) - is read
here, in PEP 440's order (trailing zeros do not count, a pre-release comes before its release, a
post-release after it); any other spelling, and any pair with one, is left to
`packaging.version.Version`.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

#: A pre-release's rank; a release without one comes after all of them.
_PRE = {"a": 0, "b": 1, "rc": 2}
_FINAL = 3


@functools.lru_cache(maxsize=256)
def _plain_key(text: str) -> tuple[tuple[int, ...], int, int, int] | None:
    """`text` as (release, pre-release rank, pre-release number, post-release number or -1),
    where it is plain (read without a regular expression: compiling one costs more than all
    this reads)."""
    text, posted, post = text.partition(".post")
    if posted and not _is_number(post):
        return None
    release, rank, number = text, _FINAL, "0"
    for marker in ("rc", "a", "b"):
        head, found, tail = text.partition(marker)
        if found:
            release, rank, number = head, _PRE[marker], tail
            break
    parts = release.split(".")
    if not all(_is_number(part) for part in (*parts, number)):
        return None
    numbers = [int(part) for part in parts]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers), rank, int(number), int(post) if posted else -1


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


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


#: The operators of a PEP 440 specifier's clauses, longer first (`clauses`).
_OPERATORS = ("===", "~=", "==", "!=", "<=", ">=", "<", ">")


def clauses(specifier: str) -> list[tuple[str, str]]:
    """`specifier`'s clauses as `SpecifierSet` splits them (at commas), each as (operator,
    version text), read without a regular expression: `(===|~=|...)\\s*(\\S+)`. A clause
    without an operator, or with a space inside its version, is left out."""
    found = []
    for clause in (part.strip() for part in specifier.split(",")):
        for operator in _OPERATORS:
            version = clause[len(operator) :].lstrip()
            if clause.startswith(operator) and version and not any(c.isspace() for c in version):
                found.append((operator, version))
                break
    return found


@functools.lru_cache(maxsize=64)
def satisfies(version: str, specifier: str) -> bool:
    """Whether `version` is in the PEP 440 `specifier`, pre-releases included (TE's own
    `>=2.2,!=2.4.*`): read here where `version` and every clause are plain - an inclusive
    comparison, or `==` / `!=` of a release or of a release prefix (`2.4.*`) - and by
    `packaging.specifiers` otherwise, whose import costs a flake8 run more than its analysis of
    the hazard that asks."""
    mine = _plain_key(version)
    found = clauses(specifier)
    if mine is not None and len(found) == specifier.count(",") + 1:
        answers = [_plain_clause(mine, version, *clause) for clause in found]
        if None not in answers:
            return all(answers)
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    return Version(version) in SpecifierSet(specifier, prereleases=True)


def _plain_clause(key: tuple, version: str, operator: str, bound: str) -> bool | None:
    """One clause of `satisfies` for a plain `version` (`key` its `_plain_key`), None where the
    clause is not plain."""
    if bound.endswith(".*") and operator in ("==", "!="):
        prefix = bound[:-2].split(".")
        if not all(_is_number(part) for part in prefix):
            return None
        release = key[0] + (0,) * len(prefix)  # its trailing zeros count again here
        return (tuple(release[: len(prefix)]) == tuple(map(int, prefix))) == (operator == "==")
    if operator not in ("==", "!=", "<=", ">=") or _plain_key(bound) is None:
        return None
    difference = compare(version, bound)
    if operator == "==":
        return difference == 0
    if operator == "!=":
        return difference != 0
    return difference <= 0 if operator == "<=" else difference >= 0


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
