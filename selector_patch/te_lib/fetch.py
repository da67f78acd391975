"""A release's compiled library and public headers, fetched from PyPI once into the cache.

`transformer-engine-cu13==X` (2.9 on) and `transformer-engine-cu12==X` (1.9 on) ship
`libtransformer_engine.so`, which exports TE's fused-attention query, and the public headers
that declare it. The cu13 wheel is the smaller (about 250-280 MB against 730), so it is tried
first. Of the wheel only the library and the headers are kept, under
`cache_dir()/libraries/<version>/` laid out as a checkout lays them out
(`transformer_engine/common/include/transformer_engine/*.h`, and `libtransformer_engine.so`
beside `transformer_engine/`). On a terminal, pip's own output shows the wheel's size before
the download and its progress during it, on stderr; stdout stays the command's result.
`TE_ATTN_GUARDS_OFFLINE=1` fetches nothing: a release not yet in the cache then keeps the
stated assumption; `TE_ATTN_GUARDS_LIBRARIES=2.18.0,2.19.0` uses (and fetches) only those
releases' libraries, whatever the cache holds (a CI's download budget, a suite whose answers
do not depend on what an earlier run fetched). Whatever cannot be had is a `Missing` with its
reason, never an error: the result states it. A wheel that holds no library or no headers
(older cu12 wheels, 2.8.0's among them, ship no headers) is noted in the cache, not fetched
again.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from selector_patch.sources import SourceError, cache_dir, cached_wheel

OFFLINE_VARIABLE = "TE_ATTN_GUARDS_OFFLINE"
LIBRARIES_VARIABLE = "TE_ATTN_GUARDS_LIBRARIES"
DISTRIBUTIONS = ("transformer-engine-cu13", "transformer-engine-cu12")
LIBRARY = "libtransformer_engine.so"
HEADERS = Path("transformer_engine/common/include/transformer_engine")


class Missing(Exception):
    """No compiled library for a release; `str()` says why, in a few words."""


def library(version: str) -> tuple[Path, Path]:
    """The directory holding the release's headers (as `transformer_engine/...`) and its
    library; `Missing` when neither wheel can be had."""
    listed = os.environ.get(LIBRARIES_VARIABLE)
    if listed is not None and version not in listed.split(","):
        raise Missing(f"not among {LIBRARIES_VARIABLE}")
    final = cache_dir() / "libraries" / version
    unusable = final.with_name(f"{version}.unusable")
    if unusable.is_file():
        raise Missing(unusable.read_text(encoding="utf-8").strip())
    if not final.is_dir() and os.environ.get(OFFLINE_VARIABLE):
        raise Missing(f"{OFFLINE_VARIABLE} is set")
    causes, downloaded = [], False
    for distribution in DISTRIBUTIONS:
        try:
            root = cached_wheel(
                final, version, functools.partial(_download, version, distribution), _kept
            )
        except Unusable as error:
            causes.append(f"{distribution}: {str(error).partition(': ')[2]}")
            downloaded = True
            continue
        except SourceError as error:
            causes.append(str(error).partition(": ")[2])
            continue
        return root, root / LIBRARY
    reason = f"no usable compiled library on PyPI ({'; '.join(causes)})"
    if downloaded:  # a release's wheels never change: not fetched again
        unusable.write_text(reason + "\n", encoding="utf-8")
    raise Missing(reason)


class Unusable(SourceError):
    """A wheel that was fetched but holds no library or no headers to call it through."""


def _download(version: str, distribution: str, directory: Path) -> Path:
    """The wheel, through pip (the user's index, proxy and certificates apply)."""
    import subprocess

    terminal = sys.stderr.isatty()
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--dest", str(directory), f"{distribution}=={version}",
    ]  # fmt: skip
    if terminal:
        print(
            f"te-attn-guards: fetching TE {version}'s compiled fused-attention query"
            f" ({distribution}, once, into {cache_dir()}; {OFFLINE_VARIABLE}=1 skips it)",
            file=sys.stderr,
        )
        completed = subprocess.run(command, stdout=sys.stderr, check=False)
        lines = []
    else:
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        lines = (completed.stderr or completed.stdout).strip().splitlines()
    wheels = sorted(directory.glob("*.whl"))
    if completed.returncode != 0 or not wheels:
        cause = lines[-1] if lines else f"pip exit status {completed.returncode}"
        raise SourceError(version, f"{distribution}: {cause}")
    return wheels[0]


def _kept(wheel: Path, tree: Path) -> None:
    """Of `wheel`, the library and the public headers, at their places under `tree`."""
    import zipfile

    try:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
    except zipfile.BadZipFile as error:
        raise SourceError(wheel, f"not a wheel: {error}") from None
    libraries = [n for n in names if n.rsplit("/", 1)[-1] == LIBRARY]
    headers = [n for n in names if f"include/{HEADERS.name}/" in n and n.endswith(".h")]
    if not libraries or not headers:
        missing = "public headers" if libraries else LIBRARY
        raise Unusable(wheel, f"the wheel ships no {missing} (older releases ship no headers)")
    with zipfile.ZipFile(wheel) as archive:
        tree.mkdir(parents=True)
        (tree / HEADERS).mkdir(parents=True)
        with archive.open(libraries[0]) as source, open(tree / LIBRARY, "wb") as target:
            while chunk := source.read(1 << 22):
                target.write(chunk)
        for name in headers:
            (tree / HEADERS / name.rsplit("/", 1)[-1]).write_bytes(archive.read(name))
