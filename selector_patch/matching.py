"""Which TE release a selector file alone came from: the tree it would have sat in.

A reviewer's `git show REV:path > upstream.py`, or a fork's `utils.py` downloaded alone, holds
the selector without what TE runs beside it: the kernel wiring (`backends.py`: FA4's own
head-dim validator, FA2's supported versions per device, FA3's softcap probe), the sibling
modules it imports (`FusedAttnBackend`, `cp_per_step_configs`), the release's version (which
TE C++ answers cuDNN's query). Without them its answers differ from the release's, and nothing
would say so. So `sources.resolve` places such a file in a release's tree: the one the user
names, else the one whose selector the file is byte for byte, else the nearest by the lines the
two share, and says which, and on what grounds (`Match.statement`). A file that shares less
than `MIN_SHARE` of its lines with every release (a selector written from scratch, a test's
fixture) came from none: it runs alone, and `NO_TREE` says what that leaves out.

The candidates are the studied releases (`CORPUS_RELEASES`), fetched into the cache as for any
release: the answer is the same on every machine, whatever the cache held before.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Callable, NamedTuple

#: The setting that names the release instead (`--te-version`, or `te-version` in
#: `[tool.te-attn-guards]`), for the statement.
OVERRIDE = "--te-version (or te-version in [tool.te-attn-guards])"
#: The least share of lines a file and a release's selector have in common for the file to be
#: taken as that release's, edited: TE's own releases share 60% and more with their neighbours.
MIN_SHARE = 0.5
#: What a file that matches no release runs without (`Match.statement`'s counterpart).
NO_TREE = (
    "no TE tree: no release's selector shares half its lines, so TE's kernel wiring"
    " (backends.py), sibling modules and C++ do not run beside it; {override} names one"
)


class Match(NamedTuple):
    version: str
    #: The share of the longer file's lines the two have in common (1.0: the same text).
    shared: float
    exact: bool
    #: Lines of the longer of the two that the other lacks.
    differing: int = 0
    #: Older releases whose selector is the same text (a patch release that left it alone).
    also: tuple[str, ...] = ()

    def statement(self, name: str) -> str | None:
        """What the answers rest on, in one sentence; None where the file is one release's."""
        if self.exact:
            if not self.also:
                return None
            return (
                f"TE tree assumed: {self.version}'s, the newest release whose selector {name} is"
                f" ({', '.join(self.also)} too); {OVERRIDE} names another"
            )
        return (
            f"TE tree assumed: {self.version}'s, the release nearest {name} ({self.differing} of"
            f" {name}'s lines differ from it); its kernel wiring and sibling modules answer for"
            f" the file; {OVERRIDE} names another"
        )


def _lines(text: str) -> Counter[str]:
    return Counter(line.strip() for line in text.splitlines() if line.strip())


def nearest(text: str, releases: dict[str, Callable[[], str]]) -> Match | None:
    """The release whose selector `text` is (the newest, where several releases left it alone),
    else the one sharing most of its lines (the newer on a tie), else None where none shares
    `MIN_SHARE`; `releases` maps each version to a reader of its selector's text, newest first."""
    same = [version for version, read in releases.items() if read() == text]
    if same:
        return Match(same[0], 1.0, True, also=tuple(same[1:]))
    best: Match | None = None
    mine = _lines(text)
    size = sum(mine.values())
    for version, read in releases.items():
        other = _counted(read())
        longer = max(size, sum(other.values()), 1)
        if min(size, sum(other.values())) < MIN_SHARE * longer:
            continue  # cannot share enough: not worth the intersection
        common = sum((mine & other).values())
        shared = common / longer
        if shared >= MIN_SHARE and (best is None or shared > best.shared):
            best = Match(version, shared, False, longer - common)
    return best


@functools.lru_cache(maxsize=64)
def _counted(text: str) -> Counter[str]:
    """A release's lines, counted once per process (every file alone is compared with all)."""
    return _lines(text)
