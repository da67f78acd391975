"""A TE git repository's commits as history points: the trees where the selection can change.

Only a commit that touches the selector (any of its homes, `sources.SELECTOR_PATHS`, or the
`dot_product_attention` package beside it) or TE's C++ fused query can change what is picked,
so those are the points, on the first-parent line of the range, after the range's base. Each
is unpacked with `git archive` (the Python and C++ TE's decision needs, and the version file)
into the cache, once per commit, and read as a checkout: its C++ is in place.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from lint_plugin.mine.te_history import Version
from selector_patch.sources import CHECKOUT_VERSION_FILE, SELECTOR_PATHS, SourceError, cache_dir
from selector_patch.te_cxx.locate import QUERY_FILE

#: What can change a pick: the selector's homes and its package, and the fused query's file.
WATCHED = (
    *SELECTOR_PATHS,
    "transformer_engine/pytorch/attention/dot_product_attention",
    QUERY_FILE.as_posix(),
)
#: What a commit's tree needs to be read as a checkout.
UNPACKED = (
    "transformer_engine/__init__.py",
    "transformer_engine/pytorch",
    "transformer_engine/common",
    CHECKOUT_VERSION_FILE,
)


def _git(git_dir: str, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "--git-dir", git_dir, *args], capture_output=True, text=True, check=False
        )
    except OSError as error:
        raise SourceError(git_dir, f"cannot run git: {error}") from None
    if done.returncode != 0:
        cause = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        raise SourceError(git_dir, f"git {args[0]}: {cause}")
    return done.stdout


def git_dir_of(path: str) -> str:
    """The git directory of a repository given by its work tree or its (bare) git dir."""
    candidate = Path(path).expanduser()
    if (candidate / ".git").exists():
        return str(candidate / ".git")
    if not (candidate / "HEAD").is_file():
        raise SourceError(path, "not a git repository (no .git, no HEAD)")
    return str(candidate)


def commits(path: str, revisions: str) -> list[Version]:
    """The range's base, then each first-parent commit of `revisions` (`A..B`) that touches
    `WATCHED`, oldest first, each unpacked."""
    git_dir = git_dir_of(path)
    if ".." not in revisions:
        raise SourceError(revisions, "a revision range is A..B")
    base = revisions.split("..", 1)[0]
    form = "--format=%H%x00%s"
    listed = _git(git_dir, "log", "--first-parent", "--reverse", form, revisions, "--", *WATCHED)
    found = [line.split("\0", 1) for line in listed.splitlines() if line]
    head = _git(git_dir, "log", "-1", form, base).strip().split("\0", 1)
    return [_unpacked(git_dir, sha, subject) for sha, subject in [head, *found]]


def _unpacked(git_dir: str, sha: str, subject: str) -> Version:
    where = cache_dir() / "te-history" / sha
    if not where.is_dir():
        partial = where.with_name(f"{sha}.partial")
        partial.mkdir(parents=True, exist_ok=True)
        present = [p for p in UNPACKED if _git(git_dir, "ls-tree", "--name-only", sha, p).strip()]
        archive = subprocess.run(
            ["git", "--git-dir", git_dir, "archive", "--format=tar", sha, *present],
            capture_output=True,
        )
        unpacked = subprocess.run(
            ["tar", "-x", "-C", str(partial)], input=archive.stdout, capture_output=True
        )
        if archive.returncode or unpacked.returncode:
            raise SourceError(where, f"cannot unpack commit {sha} (git archive, tar)")
        partial.rename(where)
    return Version(sha[:10], str(where), sha, subject)
