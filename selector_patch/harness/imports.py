"""A private import system for one loaded selector.

The selector file runs as if it lived at its path inside its TE tree (relative imports resolve
against its package), but nothing it imports touches `sys.modules`: its `__builtins__` carry an
`__import__` that answers from a per-load table. Two releases, or a release and its mutant, can
then be loaded side by side in one process. What the table answers:

- `transformer_engine_torch`, `flash_attn*` / `flashattn*`: stand-ins (the machine lacks them),
  those whose functions TE's import-time code wires in answered by `kernels` for the machine
  pinned at the time of the import;
- `transformer_engine.*`: opaque modules, except `EXECUTED_MODULES`, which run from the tree's
  own source because the selector passes and compares the enum members they map to (TE's dtype,
  layout, mask, bias and backend names), and modules `register`ed (the selector's own module,
  for the kernel wiring that imports it);
- `torch`, `os`, `logging`, `warnings`, `importlib.metadata`: the views given by the loader;
- anything else: the real import.

The same `__builtins__` carry the loader's replacements for builtins (`print`, so that what the
selector prints is captured; see `logs`).

Executed modules get unique private names. They are entered in `sys.modules` only while their
body runs (`dataclasses` looks the defining module up there), then removed.
"""

from __future__ import annotations

import ast
import builtins
import functools
import itertools
import sys
import types
from pathlib import Path
from typing import Any, Callable, Mapping

from selector_patch.harness.compiled import compiled
from selector_patch.harness.opaque import OpaqueModule

TE_PACKAGE = "transformer_engine"
EXTENSION = "transformer_engine_torch"
#: TE modules run from source: they map TE's names to the extension's enum members
#: (`FusedAttnBackend`, the layout / mask / bias / softmax dicts, `TE_DType`), or define the FP8
#: recipes whose methods the selector calls (see `recipes`).
EXECUTED_MODULES = frozenset(
    {
        "transformer_engine.pytorch.cpp_extensions.fused_attn",
        "transformer_engine.pytorch.constants",
        "transformer_engine.common.recipe",
    }
)

#: TE functions the selector calls that compute from their arguments alone, run from the tree's
#: source while the rest of their (heavy) module stays opaque: TE 2.20's `cp_per_step_configs`,
#: the context-parallel steps its fused-attention query is asked for.
EXECUTED_FUNCTIONS = {
    "transformer_engine.pytorch.attention.dot_product_attention.context_parallel": (
        "cp_per_step_configs",
    ),
}

_private_names = (f"_te_attn_guards_module_{n}" for n in itertools.count())


def _is_missing_from_machine(name: str) -> bool:
    top = name.partition(".")[0]
    return top in (TE_PACKAGE, EXTENSION) or top.startswith(("flash_attn", "flashattn"))


class PrivateImports:
    """The module table of one loaded selector and the `__import__` that serves it."""

    def __init__(
        self,
        root: Path | None,
        *,
        views: Mapping[str, types.ModuleType],
        builtin_overrides: Mapping[str, Callable[..., Any]],
        answers: Mapping[str, Callable[..., Any]],
        preset: Mapping[str, types.ModuleType],
        kernels: Callable[[str], types.ModuleType | None],
    ) -> None:
        self.root = root
        self.views = dict(views)
        self.answers = dict(answers)
        self.modules: dict[str, types.ModuleType] = dict(preset)
        self.kernels = kernels
        self.builtins = {**vars(builtins), **builtin_overrides, "__import__": self.import_}

    def import_(self, name, globals=None, locals=None, fromlist=(), level=0):
        absolute = self._absolute(name, globals, level)
        if absolute in self.views:
            return self.views[absolute]
        top = absolute.partition(".")[0]
        if top in self.views and not fromlist:
            builtins.__import__(absolute)  # make the real submodule importable off the view
            return self.views[top]
        if not _is_missing_from_machine(absolute):
            return builtins.__import__(absolute, globals, locals, fromlist, 0)
        kernel = self.kernels(absolute) if fromlist else None
        if kernel is not None:  # not kept: the next machine may have another release
            return kernel
        module = self._module(absolute)
        if not fromlist:
            return self.modules[top]
        for item in fromlist:
            if item != "*" and item not in module.__dict__ and self._in_tree(f"{absolute}.{item}"):
                self._module(f"{absolute}.{item}")
        return module

    @staticmethod
    def _absolute(name: str, globals: Mapping[str, Any] | None, level: int) -> str:
        if level == 0:
            return name
        package = (globals or {}).get("__package__") or ""
        base = package.rsplit(".", level - 1)[0] if level > 1 else package
        return f"{base}.{name}" if name else base

    def _module(self, name: str) -> types.ModuleType:
        """The module `name` and its parents, created on first import, linked as attributes."""
        module = self.modules.get(name)
        if module is not None:
            return module
        parent_name, _, leaf = name.rpartition(".")
        parent = self._module(parent_name) if parent_name else None
        module = self._execute(name) if name in EXECUTED_MODULES else None
        if module is None:
            module = OpaqueModule(name, self.answers)
            self._define(module, name, EXECUTED_FUNCTIONS.get(name, ()))
        self.modules[name] = module
        if parent is not None:
            setattr(parent, leaf, module)
        return module

    def register(self, name: str, module: types.ModuleType) -> None:
        """Answer imports of `name` with `module`, linked as an attribute of its parent."""
        parent_name, _, leaf = name.rpartition(".")
        self.modules[name] = module
        if parent_name:
            setattr(self._module(parent_name), leaf, module)

    def _source_path(self, name: str) -> Path | None:
        if self.root is None:
            return None
        base = self.root.joinpath(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def _in_tree(self, name: str) -> bool:
        return self._source_path(name) is not None

    def _define(self, module: types.ModuleType, name: str, functions: tuple[str, ...]) -> None:
        """Run just the definitions of `functions` from the module's source, onto `module`."""
        path = self._source_path(name) if functions else None
        if path is None:
            return
        code, defined = _definitions(path.read_text(encoding="utf-8"), str(path), functions)
        namespace = {"__builtins__": self.builtins, "__name__": name}
        exec(code, namespace)
        for function in defined:
            setattr(module, function, namespace[function])

    def _execute(self, name: str) -> types.ModuleType | None:
        path = self._source_path(name)
        if path is None:
            return None
        module = self.new_module(path, package=name.rpartition(".")[0])
        self.modules[name] = module  # visible to its own (circular) imports
        execute(compiled(path.read_text(encoding="utf-8"), str(path)), module)
        return module

    def new_module(self, path: Path, *, package: str) -> types.ModuleType:
        """An empty module under a fresh private name that imports through this table."""
        module = types.ModuleType(next(_private_names))
        module.__file__ = str(path)
        module.__package__ = package
        module.__builtins__ = self.builtins
        return module


@functools.lru_cache(maxsize=1024)  # code objects: a session cycles through 29 releases' files
def _definitions(
    text: str, filename: str, functions: tuple[str, ...]
) -> tuple[types.CodeType, tuple[str, ...]]:
    """The module-level definitions of `functions` in `text`, compiled alone (once per text,
    as `compiled` does), and the names of those it defines."""
    kept = [
        node
        for node in ast.parse(text, filename).body
        if isinstance(node, ast.FunctionDef) and node.name in functions
    ]
    code = compile(ast.Module(body=kept, type_ignores=[]), filename, "exec")
    return code, tuple(node.name for node in kept)


def dotted_name(path: Path, root: Path | None) -> str:
    """The dotted name a file of a TE tree is imported as (its stem alone outside a tree)."""
    if root is None:
        return path.stem
    return ".".join(path.relative_to(root).with_suffix("").parts)


def execute(code: types.CodeType, module: types.ModuleType) -> None:
    """Run a module body, registered in `sys.modules` under its private name only meanwhile."""
    sys.modules[module.__name__] = module
    try:
        exec(code, module.__dict__)
    finally:
        del sys.modules[module.__name__]
