"""Where a TE attention selector comes from: a checkout, a file, the installed TE, or a release.

Every tool in this project takes one *source spec* and needs the same three answers: which file
holds `get_attention_backend`, which directory holds the `transformer_engine/` package around
it (so the file's sibling imports resolve), and which TE version that is. `resolve` answers them
once for all callers. Released selectors are fetched with `pip download --no-deps` (every TE
release on PyPI is a pure-Python wheel) into a per-user cache and reused afterwards; nothing here
imports TE. What only a download needs (archives, pip, temporary directories) is imported
where it is used: resolving a checkout or a file is on every pre-commit run's path.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, NamedTuple

from selector_patch.versions import valid as valid_version

if TYPE_CHECKING:
    import tarfile

#: Every TE release on PyPI from the first with today's selector shape to the newest studied.
CORPUS_RELEASES: tuple[str, ...] = (
    "1.9.0.post1", "1.10.0", "1.11.0", "1.12.0", "1.13.0",
    "2.1.0", "2.2.0", "2.3.0", "2.4.0", "2.5.0", "2.6.0", "2.6.0.post1", "2.7.0", "2.8.0",
    "2.9.0", "2.10.0", "2.11.0", "2.12.0", "2.13.0", "2.14.0", "2.14.1", "2.15.0", "2.16.0",
    "2.16.1", "2.17.0", "2.17.1", "2.18.0", "2.19.0", "2.20.2",
)  # fmt: skip

#: Where the selector lives, relative to the directory holding `transformer_engine/`, newest
#: layout first: 2.3+, then 2.2, then 1.9 - 2.1. TE 2.2 still ships an `attention.py` beside
#: its new `dot_product_attention/utils.py`, so the first candidate that defines the selector wins.
SELECTOR_PATHS: tuple[str, ...] = (
    "transformer_engine/pytorch/attention/dot_product_attention/utils.py",
    "transformer_engine/pytorch/dot_product_attention/utils.py",
    "transformer_engine/pytorch/attention.py",
)

SELECTOR_DEFINITION = "def get_attention_backend("
DISTRIBUTION = "transformer_engine"
#: The version file of a TE source checkout, relative to the checkout root.
CHECKOUT_VERSION_FILE = "build_tools/VERSION.txt"
CACHE_VARIABLE = "TE_ATTN_GUARDS_CACHE"


class SourceError(Exception):
    """A spec that names no usable selector; `str()` is one line, `"<path or spec>: <cause>"`."""

    def __init__(self, where: object, cause: str) -> None:
        super().__init__(f"{where}: {cause}")


class SelectorSource(NamedTuple):
    """A resolved selector file and what is known around it."""

    #: The file that defines `get_attention_backend`.
    path: Path
    #: The directory holding `transformer_engine/`, or None for a file outside any TE tree.
    root: Path | None
    te_version: str | None
    #: "checkout" | "file" | "installed" | "release"
    origin: str
    #: For a file alone: the selector of `root` it stands in for (`matching`); else None.
    placed: Path | None = None
    #: For a file alone placed in a release's tree by inference: what that rests on, one
    #: sentence every result carries (`matching.Match.statement`); else None.
    assumption: str | None = None

    @property
    def position(self) -> Path:
        """Where the selector's module lives in `root`: the file, or the one it stands in for."""
        return self.placed or self.path

    @property
    def relative(self) -> str | None:
        """The file's path in its own TE tree; None for a file alone."""
        if self.root is None or self.placed is not None:
            return None
        return self.path.relative_to(self.root).as_posix()


def resolve(spec: str, te_version: str | None = None) -> SelectorSource:
    """Resolve a directory, a `.py` file, `installed` or a release version such as `2.17.1`.

    A file outside any TE tree is placed in a release's tree (`matching`): `te_version`'s, else
    that of the `te-version` key of its `[tool.te-attn-guards]`, else the one it matches."""
    path = Path(spec).expanduser()
    if path.is_dir():
        root = _tree_root(path)
        return SelectorSource(_find_selector(root, spec), root, _tree_version(root), "checkout")
    if path.is_file():
        source = _from_file(path)
        return _placed(source, te_version) if source.root is None else source
    if spec == "installed":
        return _from_installed()
    if valid_version(spec):
        root = _release_tree(spec)
        return SelectorSource(_find_selector(root, spec), root, _tree_version(root), "release")
    raise SourceError(spec, "no such file or directory, and not `installed` or a TE version")


def cache_dir() -> Path:
    """The per-user cache of extracted releases (`$TE_ATTN_GUARDS_CACHE` overrides it)."""
    configured = os.environ.get(CACHE_VARIABLE)
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "te-attn-guards"


def _tree_root(directory: Path) -> Path:
    """The directory holding `transformer_engine/`: `directory` itself or its parent."""
    directory = directory.resolve()
    if directory.name == "transformer_engine" and not (directory / "transformer_engine").is_dir():
        return directory.parent
    return directory


def _find_selector(root: Path, where: object) -> Path:
    for relative in SELECTOR_PATHS:
        candidate = root / relative
        if candidate.is_file() and SELECTOR_DEFINITION in read_text(candidate):
            return candidate
    raise SourceError(
        where, f"no TE attention selector found (looked for {', '.join(SELECTOR_PATHS)})"
    )


def read_text(path: Path) -> str:
    """A selector's text, or a `SourceError` that says exactly why it is not one."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SourceError(path, f"cannot read: {error.strerror}") from None
    nul = data.find(b"\0")
    if nul >= 0:
        raise SourceError(path, f"binary file (NUL byte at offset {nul})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SourceError(
            path, f"not UTF-8 (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None


def _from_file(path: Path) -> SelectorSource:
    """A bare `.py` file; when it sits at a known place in a TE tree, that tree is its root."""
    path = path.resolve()
    if path.suffix != ".py":
        raise SourceError(path, "not a Python file")
    if SELECTOR_DEFINITION not in read_text(path):
        raise SourceError(path, "defines no get_attention_backend()")
    for relative in SELECTOR_PATHS:
        parts = Path(relative).parts
        if path.parts[-len(parts) :] == parts:
            root = Path(*path.parts[: -len(parts)])
            return SelectorSource(path, root, _tree_version(root), "file")
    return SelectorSource(path, None, None, "file")


def recorded_release(path: Path | str) -> str | None:
    """The TE release recorded by the tree a selector file sits in, if any: a file alone is not
    placed (`resolve` would compare it with every release), so flake8 can afford to ask."""
    try:
        return _from_file(Path(path)).te_version
    except (SourceError, OSError):
        return None


def _placed(source: SelectorSource, te_version: str | None) -> SelectorSource:
    """A file alone, in the tree of the release named for it or the one it matches."""
    from selector_patch.matching import NO_TREE, OVERRIDE, nearest
    from selector_patch.project import TE_VERSION_KEY, ConfigError, project_table

    if te_version is None:
        try:
            _, table = project_table(source.path)
        except ConfigError as error:
            raise SourceError(source.path, str(error)) from None
        te_version = (table or {}).get(TE_VERSION_KEY)
    if te_version is not None:
        if not (isinstance(te_version, str) and valid_version(te_version)):
            raise SourceError(source.path, f"{TE_VERSION_KEY} {te_version!r}: not a TE version")
        return _in_release(source, te_version, None)
    releases = {
        version: functools.partial(_release_selector_text, version)
        for version in reversed(CORPUS_RELEASES)
    }
    match = nearest(read_text(source.path), releases)
    if match is None:
        return source._replace(assumption=NO_TREE.format(override=OVERRIDE))
    placed = _in_release(source, match.version, match.statement(source.path.name))
    # An edited file is not that release: its version (and so that release's C++, whose
    # arguments it may not pass) is not claimed for it, and cuDNN's answer is stated as assumed.
    return placed if match.exact else placed._replace(te_version=None)


@functools.lru_cache(maxsize=64)
def _release_selector_text(version: str) -> str:
    """Read once per process: a file alone is compared with every release."""
    return read_text(resolve(version).path)


def _in_release(source: SelectorSource, version: str, assumption: str | None) -> SelectorSource:
    release = resolve(version)
    return source._replace(
        root=release.root, te_version=version, placed=release.path, assumption=assumption
    )


def _tree_version(root: Path) -> str | None:
    """The TE version recorded beside a tree: wheel metadata, else a checkout's VERSION.txt."""
    version = wheel_version(root, DISTRIBUTION)
    if version:
        return version
    version_file = root / CHECKOUT_VERSION_FILE
    if version_file.is_file():
        return read_text(version_file).strip() or None
    return None


def wheel_version(root: Path, distribution: str) -> str | None:
    """The version in the `<distribution>-*.dist-info` metadata beside a package tree, if any.

    `distribution` is spelt as in the directory name (`transformer_engine`, `flash_attn_4`).
    """
    for metadata in sorted(root.glob(f"{distribution}-*.dist-info/METADATA")):
        for line in read_text(metadata).splitlines():  # the header block, up to a blank line
            if not line.strip():
                break
            name, _, value = line.partition(":")
            if name.strip().lower() == "version" and value.strip():
                return value.strip()
    return None


def _from_installed() -> SelectorSource:
    """The `transformer_engine` distribution of this interpreter, located but never imported."""
    import importlib.metadata

    try:
        distribution = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise SourceError("installed", f"no {DISTRIBUTION} distribution is installed") from None
    recorded = {str(file).replace(os.sep, "/"): file for file in distribution.files or ()}
    for relative in SELECTOR_PATHS:
        if relative in recorded:
            path = Path(distribution.locate_file(recorded[relative])).resolve()
            root = Path(*path.parts[: -len(Path(relative).parts)])
            return SelectorSource(path, root, distribution.version, "installed")
    root = Path(distribution.locate_file("")).resolve()
    return SelectorSource(
        _find_selector(root, "installed"), root, distribution.version, "installed"
    )


def _release_tree(version: str) -> Path:
    """The extracted wheel of TE `version`, downloaded once per cache."""
    return cached_wheel(
        cache_dir() / "releases" / version, version, functools.partial(_download, version)
    )


def wheel_tree(distribution: str, version: str) -> Path:
    """The extracted wheel of another pure-Python distribution (the miner's flash-attn-4).

    Cached beside TE's releases, under `wheels/<distribution>/<version>`; never imported.
    """
    return cached_wheel(
        cache_dir() / "wheels" / distribution / version,
        version,
        functools.partial(_download, version, distribution=distribution),
    )


def sdist_tree(distribution: str, version: str, env: Mapping[str, str]) -> Path:
    """The unpacked source distribution of another package (the miner's flash-attn 2).

    Cached under `sdists/<distribution>/<version>`; its sources are read, never built or
    imported. pip prepares an sdist's metadata even for a download, which runs its setup.py:
    `env` tells it not to compile (flash-attn's `FLASH_ATTENTION_SKIP_CUDA_BUILD`), and
    `--no-build-isolation` keeps pip from installing the build requirements (for flash-attn,
    torch: in an isolated build that is a CUDA build) - the running interpreter's are used.
    pip rather than a hand-made index request, so the user's index, proxy and certificate
    settings apply as for the TE wheels.
    """
    final = cache_dir() / "sdists" / distribution / version
    download = functools.partial(_download, version, distribution=distribution, sdist_env=env)
    return cached_wheel(final, version, download, extract=_extract_sdist)


def cached_wheel(
    final: Path,
    version: str,
    download: Callable[[Path], Path],
    extract: Callable[[Path, Path], None] | None = None,
) -> Path:
    """`final`, populated on first use with the wheel `download(directory)` fetches.

    Download and extraction happen in a private temporary directory that is renamed into place
    in one step, so concurrent processes never see a half-written release; the loser of a race
    discards its copy and uses the winner's.
    """
    if final.is_dir():
        return final
    import shutil
    import tempfile

    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=final.parent))
    try:
        tree = staging / "tree"
        (extract or _extract)(download(staging / "wheel"), tree)
        try:
            os.rename(tree, final)
        except OSError:
            if not final.is_dir():
                raise
    except OSError as error:
        raise SourceError(version, f"cannot populate {final}: {error}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


def _download(
    version: str,
    directory: Path,
    distribution: str = DISTRIBUTION,
    sdist_env: Mapping[str, str] | None = None,
) -> Path:
    """The wheel of `distribution==version`, or its sdist when `sdist_env` is given."""
    kind = (
        ["--only-binary=:all:"]
        if sdist_env is None
        else ["--no-binary=:all:", "--no-build-isolation"]
    )
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", *kind,
        "--quiet", "--dest", str(directory), f"{distribution.replace('_', '-')}=={version}",
    ]  # fmt: skip
    env = None if sdist_env is None else {**os.environ, **sdist_env}
    import subprocess

    completed = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    wheels = sorted(directory.glob("*.whl" if sdist_env is None else "*.tar.gz"))
    if completed.returncode != 0 or not wheels:
        lines = (completed.stderr or completed.stdout).strip().splitlines()
        cause = lines[-1] if lines else f"exit status {completed.returncode}"
        raise SourceError(version, f"pip download failed: {cause}")
    return wheels[0]


def _extract_sdist(sdist: Path, tree: Path) -> None:
    """An sdist's one top-level directory (`flash_attn-2.8.3/`), unpacked as `tree`."""
    import shutil
    import tarfile

    staging = tree.with_name(tree.name + ".unpacked")
    try:
        with tarfile.open(sdist) as archive:
            if hasattr(tarfile, "data_filter"):
                archive.extractall(staging, filter="data")
            else:
                archive.extractall(staging, members=_data_members(archive))
        entries = list(staging.iterdir())
        if len(entries) != 1 or not entries[0].is_dir():
            raise SourceError(sdist, "not an sdist: it does not hold one top-level directory")
        os.rename(entries[0], tree)
    except tarfile.TarError as error:
        raise SourceError(sdist, f"not an sdist: {error}") from None
    finally:  # empty once renamed; else what an archive refused part-way left
        shutil.rmtree(staging, ignore_errors=True)


def _data_members(archive: "tarfile.TarFile") -> "list[tarfile.TarInfo]":
    """The archive's members, where tarfile has no extraction filters (Python before 3.11.4:
    Debian 12's 3.11.2), checked as its "data" filter checks them: a `TarError` names the first
    that would land or point outside the directory unpacked into (an absolute name is refused
    here, where that filter strips its "/"), or that is a device or a pipe."""
    import posixpath
    import tarfile

    def outside(name: str) -> bool:
        normal = posixpath.normpath(name)
        return posixpath.isabs(name) or normal == ".." or normal.startswith("../")

    members = archive.getmembers()
    for member in members:
        if outside(member.name):
            raise tarfile.TarError(f"{member.name!r} would be unpacked outside its directory")
        if member.issym():
            target = posixpath.join(posixpath.dirname(member.name), member.linkname)
        elif member.islnk():
            target = member.linkname
        elif member.isfile() or member.isdir():
            continue
        else:
            raise tarfile.TarError(f"{member.name!r} is a special file")
        if posixpath.isabs(member.linkname) or outside(target):
            raise tarfile.TarError(f"{member.name!r} links outside its directory")
    return members


def _extract(wheel: Path, tree: Path) -> None:
    import zipfile

    try:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(tree)
    except zipfile.BadZipFile as error:
        raise SourceError(wheel, f"not a wheel: {error}") from None
