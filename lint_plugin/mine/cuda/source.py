"""Where the miner reads flash-attn 2 and 3's C++ from: a release's sdist, or a source tree.

The sdist (`pip download flash-attn==X`) holds flash-attn 2's `csrc/flash_attn/` and, from
2.7 on, a `hopper/` directory - but only its Python: the released sdists (2.7.2.post1 through
2.8.3.post2 at least) ship none of FA3's C++, so FA3 is mined from a flash-attention checkout
(`--kernel-source`), and a report on a release says that FA3 was not there to read. The
sources are read and parsed, never compiled or imported.
"""

from __future__ import annotations

import email.parser
import re
from dataclasses import dataclass
from pathlib import Path

from lint_plugin.mine.cuda.calls import BACKENDS, Backend
from selector_patch.sources import SourceError, read_text, sdist_tree

DISTRIBUTION = "flash-attn"
#: Tells flash-attn's setup.py, which pip runs to read the sdist's metadata, not to compile.
SKIP_BUILD = {"FLASH_ATTENTION_SKIP_CUDA_BUILD": "TRUE"}
VERSION = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)


@dataclass(frozen=True)
class FlashAttnSource:
    """A flash-attention source tree (an unpacked sdist or a checkout) and its versions."""

    root: Path
    version: str

    def backends(self) -> list[Backend]:
        """The backends whose C++ is in this tree."""
        return [b for b in BACKENDS if (self.root / b.directories[0] / "flash_api.cpp").is_file()]

    def kernel_version(self, backend: Backend) -> str:
        """The version TE sees installed: flash-attn's own, or FA3's `hopper/__init__.py`."""
        if backend.role == "FA2":
            return self.version
        return _module_version(self.root / backend.directories[0] / "__init__.py") or self.version

    @property
    def label(self) -> str:
        return f"{DISTRIBUTION} {self.version} ({self.root})"

    @property
    def notes(self) -> tuple[str, ...]:
        present = {backend.role for backend in self.backends()}
        return tuple(
            f"{backend.role}: no C++ under {backend.directories[0]}/ in this tree, not mined"
            + (" (flash-attn's sdists ship FA3's Python only)" if backend.role == "FA3" else "")
            for backend in BACKENDS
            if backend.role not in present
        )

    def describe(self) -> dict[str, str]:
        return {"package": DISTRIBUTION, "version": self.version, "root": str(self.root)}


def from_release(version: str) -> FlashAttnSource:
    """Released flash-attn `version`'s sdist, downloaded into the cache on first use."""
    root = sdist_tree(DISTRIBUTION, version, SKIP_BUILD)
    source = FlashAttnSource(root, version)
    if not source.backends():
        raise SourceError(f"{DISTRIBUTION}=={version}", "the sdist has no csrc/flash_attn/")
    return source


def from_directory(path: Path) -> FlashAttnSource:
    """An unpacked sdist or a flash-attention checkout; its version from `PKG-INFO` or
    `flash_attn/__init__.py`."""
    root = path.expanduser().resolve()
    source = FlashAttnSource(root, "")
    if not source.backends():
        raise SourceError(root, "no csrc/flash_attn/flash_api.cpp or hopper/flash_api.cpp here")
    version = _sdist_version(root) or _module_version(root / "flash_attn" / "__init__.py")
    if version is None:
        raise SourceError(root, "no PKG-INFO or flash_attn/__init__.py: cannot tell the version")
    return FlashAttnSource(root, version)


def _sdist_version(root: Path) -> str | None:
    metadata = root / "PKG-INFO"
    if not metadata.is_file():
        return None
    return email.parser.Parser().parsestr(read_text(metadata), headersonly=True)["Version"]


def _module_version(path: Path) -> str | None:
    if not path.is_file():
        return None
    match = VERSION.search(read_text(path))
    return match.group(1) if match else None
