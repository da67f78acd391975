"""Where the miner reads flash-attn-4 from: a directory, or a released wheel in the cache.

The kernel library is read as text and parsed, never imported: importing `flash_attn.cute`
needs the CuTe DSL and a GPU toolchain, and would run its module-level device queries. A
release is fetched the way TE releases are (`pip download --no-deps` into the user cache of
`selector_patch.sources`), so the miner works on any machine that can reach the package index
once.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

from selector_patch.harness.kernels import provide
from selector_patch.sources import SourceError, wheel_tree, wheel_version

#: The backend role TE runs it as.
BACKEND = "FA4"
#: The pip name of the package, and its name in `*.dist-info` directories.
DISTRIBUTION = "flash-attn-4"
DIST_INFO_NAME = "flash_attn_4"
#: The CuTe implementation, relative to the directory holding `flash_attn/`.
PACKAGE = Path("flash_attn", "cute")
#: Entries of the miner's per-node caches (`parse`'s trees, and what is read off their modules
#: and functions): some 60 modules and 1,000 functions a release, so the last four releases
#: mined (some 80 MB of trees each).
MODULE_CACHE = 256
FUNCTION_CACHE = 4096


@dataclass(frozen=True)
class KernelSource:
    """A `flash_attn/cute/` tree and the flash-attn-4 version it is."""

    #: The directory holding `flash_attn/`.
    root: Path
    version: str

    @property
    def package(self) -> Path:
        return self.root / PACKAGE

    @property
    def label(self) -> str:
        """What reports call it: `flash-attn-4 4.0.0b36 (<root>/flash_attn/cute)`."""
        return f"{DISTRIBUTION} {self.version} ({self.package})"

    def describe(self) -> dict[str, str]:
        """The same, for JSON reports."""
        return {"package": DISTRIBUTION, "version": self.version, "root": str(self.root)}

    def files(self) -> list[Path]:
        """The package's modules, in a stable order."""
        return sorted(self.package.glob("*.py"))

    def relative(self, path: Path) -> str:
        """`flash_attn/cute/interface.py`: how evidence names a file, whatever the root."""
        return path.relative_to(self.root).as_posix()


@functools.lru_cache(maxsize=MODULE_CACHE)
def parse(text: str) -> ast.Module:
    """A module's tree, one per text: a kernel release is mined through each TE release's
    calls, and what the miner reads off its modules and functions without TE's calls is cached
    per node (`functools.lru_cache` on the node), so the trees must be the same objects. No
    reader changes a tree (conditions are rewritten on copies: `conditions.plain`)."""
    return ast.parse(text)


def from_release(version: str) -> KernelSource:
    """Released flash-attn-4 `version`, downloaded into the cache on first use."""
    root = wheel_tree(DISTRIBUTION, version)
    if not (root / PACKAGE).is_dir():
        raise SourceError(f"{DISTRIBUTION}=={version}", f"the wheel has no {PACKAGE.as_posix()}/")
    return KernelSource(root, version)


def from_directory(path: Path) -> KernelSource:
    """An installed copy or an unpacked wheel: `site-packages/`, `flash_attn/` or `cute/` itself.

    The version comes from the `flash_attn_4-*.dist-info` beside `flash_attn/`: evidence states
    the kernel versions it affects, and the harness installs that version on its virtual device.
    """
    path = path.expanduser().resolve()
    for root in (path, path.parent, path.parent.parent):
        if (root / PACKAGE).is_dir() and path in (root, root / PACKAGE.parent, root / PACKAGE):
            break
    else:
        raise SourceError(path, f"no {PACKAGE.as_posix()}/ here (give the directory holding it)")
    version = wheel_version(root, DIST_INFO_NAME)
    if version is None:
        raise SourceError(
            root, f"no {DIST_INFO_NAME}-*.dist-info beside flash_attn/: cannot tell the version"
        )
    provide(DISTRIBUTION, version, root)  # the harness's FA4 of that version is this tree
    return KernelSource(root, version)
