"""Compile a translation unit into a shared library or a program, once per text and compiler.

The unit is a few hundred lines of TE's C++ and takes about half a second to compile, so each
library (and each program: the tests' oracle, TE's query with a `main()`) is cached under the
per-user cache (`sources.cache_dir()/te-cxx/`), named by a hash of the unit's text, the
compiler's identity and the flags: a new release, an edited checkout or a new compiler gets a
library of its own, and an unchanged tree is never compiled twice. Each build is written under
a temporary name and renamed into place, so processes compiling the same unit at once each see
a whole file. The compiler is `$CXX`, else `g++` or `c++` from PATH.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from selector_patch.sources import cache_dir
from selector_patch.te_cxx.errors import CxxError
from selector_patch.te_cxx.translation_unit import TranslationUnit

FLAGS = ("-std=c++17", "-O1", "-shared", "-fPIC", "-w")
#: A program's: the library's without `-shared` and `-fPIC`.
PROGRAM_FLAGS = tuple(flag for flag in FLAGS if flag not in ("-shared", "-fPIC"))
COMPILERS = ("g++", "c++")


@functools.lru_cache(maxsize=1)
def compiler() -> tuple[str, str]:
    """The compiler's path and its `--version` line; a `CxxError` when there is none."""
    configured = os.environ.get("CXX")
    candidates = (configured,) if configured else COMPILERS
    for candidate in candidates:
        path = shutil.which(candidate)
        if path is None:
            continue
        version = subprocess.run(
            [path, "--version"], capture_output=True, text=True, check=False
        ).stdout.partition("\n")[0]
        return path, version
    wanted = f"$CXX ({configured})" if configured else " or ".join(COMPILERS)
    raise CxxError("TE's fused-attention query", f"needs a C++ compiler: no {wanted} on PATH")


def library(unit: TranslationUnit) -> Path:
    """The compiled library of `unit`, compiled now unless the cache has it."""
    return shared_library(unit.text, unit.entry_file, "query", "as TE's query")


def shared_library(
    text: str,
    where: object,
    name: str,
    role: str,
    flags: tuple[str, ...] = (),
    files: tuple[tuple[str, str], ...] = (),
) -> Path:
    """`text` compiled into a shared library named `name-<hash>.so`, unless the cache has it.

    `files` are `(name, text)` written beside the source (a linker version script); `{dir}` in
    `flags` is the directory they are in. A failure is a `CxxError` naming `where` and saying
    the library does not compile `role`.
    """
    return _cached(text, where, (name, ".so"), role, (*FLAGS, *flags), files)


def program(text: str, where: object, name: str, role: str) -> Path:
    """`text` (with a `main()`) compiled into a program named `name-<hash>`, unless the cache
    has it; a failure is a `CxxError` as for `shared_library`."""
    return _cached(text, where, (name, ""), role, PROGRAM_FLAGS, ())


def _cached(
    text: str,
    where: object,
    named: tuple[str, str],
    role: str,
    flags: tuple[str, ...],
    files: tuple[tuple[str, str], ...],
) -> Path:
    """The cache's build of `text` with `flags`, named `<name>-<key><suffix>` (`named`; the key
    hashes what decides the build), compiled and renamed into place first where it lacks it."""
    path, version = compiler()
    key = hashlib.sha256(
        "\0".join((text, version, *flags, *(part for file in files for part in file))).encode()
    ).hexdigest()[:24]
    name, suffix = named
    built = cache_dir() / "te-cxx" / f"{name}-{key}{suffix}"
    if built.is_file():
        return built
    built.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="te-cxx-", dir=built.parent) as scratch:
        source = Path(scratch) / "unit.cpp"
        source.write_text(text, encoding="utf-8")
        for file_name, file_text in files:
            (Path(scratch) / file_name).write_text(file_text, encoding="utf-8")
        output = Path(scratch) / built.name
        result = subprocess.run(
            [
                path,
                *(flag.replace("{dir}", scratch) for flag in flags),
                "-o",
                str(output),
                str(source),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise CxxError(where, f"does not compile {role}: {_first_error(result.stderr)}")
        os.replace(output, built)
    return built


def _first_error(diagnostics: str) -> str:
    for line in diagnostics.splitlines():
        if "error" in line:
            return line.split("error:", 1)[-1].strip()
    return diagnostics.strip().splitlines()[-1] if diagnostics.strip() else "the compiler failed"
