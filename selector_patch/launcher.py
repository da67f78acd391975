"""`python -m selector_patch run SCRIPT [ARGS ...]`: run a training script with the guards on.

No edit to the script: the runtime patch is installed the moment TE's selector module is
imported (a `sys.meta_path` hook that wraps the module's loader), so TE is imported by the
script itself, after the script has set its `NVTE_*` variables, exactly as without the launcher.
"""

from __future__ import annotations

import importlib.abc
import runpy
import sys
import types

from selector_patch import runtime


class _InstallingLoader(importlib.abc.Loader):
    """Runs the real loader, then installs the patch on the module it produced."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        if callable(module.__dict__.get(runtime.SELECTOR)):
            runtime.install(module)

    def __getattr__(self, name: str):
        return getattr(self._loader, name)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds TE's selector modules through the other finders and wraps their loaders."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in runtime.SELECTOR_MODULES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _InstallingLoader(spec.loader)
                return spec
        return None


def install_on_import() -> None:
    """Patch TE's selector now if it is imported, else as soon as it is."""
    for name in runtime.SELECTOR_MODULES:
        module = sys.modules.get(name)
        if module is not None and callable(module.__dict__.get(runtime.SELECTOR)):
            runtime.install(module)
    if not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


def run(script: str, arguments: list[str]) -> None:
    """Run `script` as `__main__` with `arguments`, the patch installed on TE's import."""
    install_on_import()
    sys.argv = [script, *arguments]
    runpy.run_path(script, run_name="__main__")
