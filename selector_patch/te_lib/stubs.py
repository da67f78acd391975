"""Stub libraries for what a release's `libtransformer_engine.so` links against, generated from it.

The library needs the CUDA runtime, cuBLAS, NCCL, the driver and the cuDNN family (`NEEDED`),
with symbols bound to versions named after the libraries (`cudaGetDevice@libcudart.so.13`) or
unversioned (the driver's `cu*`, NCCL, NVRTC). A CPU-only machine has none of them. Which ones,
and which symbols, differ per release and per CUDA major, so they are read off the library
itself with `readelf` (binutils, beside the C++ compiler) and a stub is compiled per needed
soname: the soname, a version script giving the symbols their version, and a definition of
each symbol (`answers.ANSWERS`, else one that throws). Unversioned symbols the library needs
are defined by one more stub, loaded first and globally, so whichever library TE expected them
from, the loader finds them; it also defines the driver entries TE looks up by name, and the
stub of `libcudnn_graph` the graph API cuDNN's frontend looks up there (`answers.GRAPH`). Stubs
are compiled once per text and compiler (`compiler`).
"""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path

from selector_patch.te_cxx.compiler import shared_library
from selector_patch.te_cxx.errors import CxxError
from selector_patch.te_lib.answers import ANSWERS, CUDNN_GRAPH, DRIVER, GRAPH, MACHINE

#: The C and C++ runtimes: real on every machine, never stubbed.
SYSTEM = re.compile(r"^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[-\w]*)\.so")
#: The stub holding the symbols that name no library.
UNVERSIONED = "libte_attn_guards_unversioned.so"
_NEEDED = re.compile(r"\(NEEDED\)\s+Shared library: \[(.+?)\]")
_VERSION_FILE = re.compile(r"Version: \d+\s+File: (\S+)")
_VERSION_NAME = re.compile(r"Name: (\S+)")
_UNDEFINED = re.compile(r"^\s*\d+: 0+\s+\d+\s+(?:FUNC|NOTYPE|OBJECT)\s+GLOBAL\s+\w+\s+UND\s+(\S+)")


def readelf(library: Path, *options: str) -> str:
    try:
        result = subprocess.run(
            ["readelf", "-W", *options, str(library)], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise CxxError(library, "needs readelf (binutils) to read what it links against") from None
    if result.returncode != 0:
        raise CxxError(library, f"readelf cannot read it: {result.stderr.strip()}")
    return result.stdout


def needs(library: Path) -> dict[str, tuple[str | None, tuple[str, ...]]]:
    """Each stubbed soname the library needs, with its symbol version (None: unversioned) and
    the symbols it must define; `UNVERSIONED` holds the symbols that name no library."""
    needed = [n for n in _NEEDED.findall(readelf(library, "-d")) if not SYSTEM.match(n)]
    version_of: dict[str, str] = {}
    file = None
    for line in readelf(library, "-V").splitlines():
        found = _VERSION_FILE.search(line)
        if found:
            file = found.group(1)
            continue
        found = _VERSION_NAME.search(line)
        if found and file in needed:
            version_of[found.group(1)] = file
    symbols: dict[str, set[str]] = defaultdict(set, {UNVERSIONED: set(DRIVER)})
    for line in readelf(library, "--dyn-syms").splitlines():
        found = _UNDEFINED.match(line)
        if not found:
            continue
        name, _, version = found.group(1).partition("@")
        version = version.split(" ")[0]
        if version in version_of:
            symbols[version_of[version]].add(name)
        elif not version:
            symbols[UNVERSIONED].add(name)
    graph = next((soname for soname in needed if soname.startswith(CUDNN_GRAPH)), UNVERSIONED)
    symbols[graph].update(GRAPH)
    versions = {file: version for version, file in version_of.items()}
    return {
        soname: (versions.get(soname), tuple(sorted(symbols.get(soname, ()))))
        for soname in (UNVERSIONED, *needed)
    }


def source(symbols: tuple[str, ...]) -> str:
    """The stub's C++: each symbol answered or throwing."""
    definitions = (
        ANSWERS.get(symbol, f'void {symbol}(...) {{ te_attn_guards_unanswered("{symbol}"); }}')
        for symbol in symbols
    )
    return MACHINE + "\n".join(definitions) + '\n}  // extern "C"\n'


def build(library: Path) -> list[Path]:
    """The compiled stubs for `library`, the unversioned one first."""
    built = []
    for soname, (version, symbols) in needs(library).items():
        files: tuple[tuple[str, str], ...] = ()
        flags = [f"-Wl,-soname,{soname}"]
        if version is not None:
            files = (("version.map", f"{version} {{ global: {'; '.join(symbols)}; }};\n"),)
            flags.append("-Wl,--version-script={dir}/version.map")
        built.append(
            shared_library(
                source(symbols),
                library,
                f"stub-{soname}",
                f"a stub of {soname}",
                tuple(flags),
                files,
            )
        )
    return built
