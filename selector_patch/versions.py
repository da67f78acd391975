"""Release order of version strings, without `packaging` where they are plain.

Importing `packaging.version` compiles PEP 440's regular expression: some 9 M instructions, more
than a fortieth of what TEA may add to a flake8 run, which orders a few plain releases (TE's
flash-attn bounds, `"2.8.4"`; a hazard's fixed release, `"4.0.0b36"`) and nothing else. A plain
release - numbers joined by dots, then at most an `a`, `b` or `rc` pre-release number, then at
most a `.postN` post-release (TE's `2.6.0.post1`, the first release of a C++ fix) - is read
here, in PEP 440's order (trailing zeros do not count, a pre-release comes before its release, a
post-release after it); any other spelling, and any pair with one, is left to
`packaging.version.Version`. So is the analysis's value of a selector's own `PkgVersion("2.4.1")`
(`pkg_version`): a `PlainVersion` where the text is plain.
"""

from __future__ import annotations

import functools
import sys
from operator import eq, ge, gt, le, lt
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


class PlainVersion:
    """A plain release as `packaging.version.Version` holds it: ordered, equal and hashed alike,
    printed in its normal form, with its parts. Against a `packaging` version (a spelling that is
    not plain), it compares as one."""

    __slots__ = ("_text", "_key")

    def __init__(self, text: str) -> None:
        key = _plain_key(text)
        if key is None:
            raise ValueError(f"not a plain release: {text!r}")
        self._text, self._key = text, key

    def _compared(self, other: object, relation: Callable[[Any, Any], bool]) -> bool:
        """`relation` of the two in `packaging`'s order; NotImplemented for what is no version."""
        if type(other) is PlainVersion:
            return relation(self._key, other._key)
        if is_packaging_version(other):
            from packaging.version import Version

            return relation(Version(self._text), other)
        return NotImplemented

    __eq__ = functools.partialmethod(_compared, relation=eq)
    __lt__ = functools.partialmethod(_compared, relation=lt)
    __le__ = functools.partialmethod(_compared, relation=le)
    __gt__ = functools.partialmethod(_compared, relation=gt)
    __ge__ = functools.partialmethod(_compared, relation=ge)

    def __hash__(self) -> int:
        return hash(self._key)

    @property
    def epoch(self) -> int:
        return 0

    @property
    def release(self) -> tuple[int, ...]:
        text = self._text.partition(".post")[0]
        for marker in ("rc", "a", "b"):
            text = text.partition(marker)[0]
        return tuple(int(part) for part in text.split("."))

    @property
    def pre(self) -> tuple[str, int] | None:
        _, rank, number, _ = self._key
        return None if rank == _FINAL else (("a", "b", "rc")[rank], number)

    @property
    def post(self) -> int | None:
        return None if self._key[3] < 0 else self._key[3]

    dev = local = None
    is_devrelease = False

    @property
    def is_prerelease(self) -> bool:
        return self.pre is not None

    @property
    def is_postrelease(self) -> bool:
        return self.post is not None

    @property
    def major(self) -> int:
        return self.release[0]

    @property
    def minor(self) -> int:
        return self.release[1] if len(self.release) > 1 else 0

    @property
    def micro(self) -> int:
        return self.release[2] if len(self.release) > 2 else 0

    @property
    def base_version(self) -> str:
        return ".".join(map(str, self.release))

    def __str__(self) -> str:
        pre = "" if self.pre is None else f"{self.pre[0]}{self.pre[1]}"
        post = "" if self.post is None else f".post{self.post}"
        return f"{self.base_version}{pre}{post}"

    public = property(__str__)

    def __repr__(self) -> str:
        return f"<Version({str(self)!r})>"


def pkg_version(text: str) -> Any:
    """`packaging.version.Version(text)`, a `PlainVersion` where `text` is plain: what the
    analysis folds a selector's `PkgVersion(...)` (or `parse(...)`) on a literal to."""
    if type(text) is str and _plain_key(text) is not None:
        return PlainVersion(text)
    from packaging.version import Version

    return Version(text)


def is_version(obj: Any) -> bool:
    """Whether `obj` is a version `pkg_version` makes."""
    return type(obj) is PlainVersion or is_packaging_version(obj)


def is_packaging_version(obj: Any) -> bool:
    """Whether `obj` is a `packaging.version.Version`: none can be unless the module is loaded."""
    module = sys.modules.get("packaging.version")
    return module is not None and isinstance(obj, module.Version)
