"""The kernel packages as TE's import-time code sees them: stand-ins carrying their own decisions.

TE imports a handful of names from the installed flash-attn packages. Most are kernels the
machine cannot run and the selector never calls; they stay opaque. Two are decisions TE wires in
at import and then asks while selecting:

- FA4's `_validate_head_dims` (`flash_attn/cute/interface.py`), which TE 2.16+ install as
  `FlashAttentionUtils.v4_validate_head_dims`: the installed release's own function, read from
  its wheel (fetched into the cache, as the miner fetches it) and run alone, with its module's
  standard-library imports (4.0.0b26+ decorate it with `functools.lru_cache`), because the rest
  of that module is the CUDA DSL;
- the signatures of FA3's interface functions, which TE 2.19+ probe for `softcap`: functions
  with the installed FA3's own signatures, read from the flash-attention release its `hopper/`
  was built from (FA3 calls itself 3.0.0b1 in every such release, so its version names no
  source), which raise if called.

Every other name either module defines is opaque, and a name it does not define is missing, as
importing it from the real module would fail (TE 2.19+ catch that `ImportError` and report FA4
as installed but unusable). `kernel_module` answers an import of such a module for the machine
pinned at that moment. A kernel tree a caller has at hand for a version (the miner's
`--kernel-source`) answers for that version in place of the released wheel (`provide`).
"""

from __future__ import annotations

import ast
import builtins
import functools
import sys
import types
from pathlib import Path

import torch

from selector_patch.harness.opaque import OpaqueModule
from selector_patch.sources import read_text, sdist_tree, wheel_tree

FA4_DISTRIBUTION = "flash-attn-4"
FA4_INTERFACE = "flash_attn.cute.interface"
#: What TE 2.16+ take from FA4's interface and run: its own functions.
FA4_DECISIONS = ("_validate_head_dims",)
#: Where TE has imported FA3's interface from (`flash_attn_3` in TE 2.3 - 2.14).
FA3_INTERFACES = frozenset(
    {
        "flash_attn_interface",
        "flash_attn_3.flash_attn_interface",
        "flashattn_hopper.flash_attn_interface",
    }
)
FA3_SOURCE_FILE = "hopper/flash_attn_interface.py"
#: Kernel trees at hand, by (distribution, version): the directory holding `flash_attn/`.
_PROVIDED: dict[tuple[str, str], Path] = {}
#: flash-attn's setup.py, run by pip to read the sdist's metadata, must not compile.
SKIP_BUILD = {"FLASH_ATTENTION_SKIP_CUDA_BUILD": "TRUE"}


def _is_standard_library(node: ast.stmt) -> bool:
    if isinstance(node, ast.Import):
        return all(alias.name.partition(".")[0] in sys.stdlib_module_names for alias in node.names)
    return (
        isinstance(node, ast.ImportFrom)
        and node.level == 0
        and node.module.partition(".")[0] in sys.stdlib_module_names
    )


def _parsed(path: Path) -> ast.Module:
    """The kernel module's tree, parsed once per module built (what it defines, its standard
    imports and its decisions are all read from it)."""
    return ast.parse(read_text(path), str(path))


def _function_defs(tree: ast.Module, names: tuple[str, ...] | None) -> list[ast.FunctionDef]:
    return [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and (names is None or node.name in names)
    ]


def _standard_imports(tree: ast.Module) -> list[ast.stmt]:
    return [node for node in tree.body if _is_standard_library(node)]


def _defined_names(tree: ast.Module) -> frozenset[str]:
    """The names a module's body binds: what `from module import name` can find."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
        else:
            names.update(
                n.id
                for n in ast.walk(node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
    return frozenset(names)


class KernelModule(OpaqueModule):
    """A kernel module's stand-in: its `decisions` real, its other names opaque, and nothing
    that the module does not define."""

    def __init__(
        self, name: str, path: Path, tree: ast.Module, decisions: dict[str, types.FunctionType]
    ) -> None:
        super().__init__(name, decisions)
        self.__file__ = str(path)
        self._defined = _defined_names(tree)

    def __getattr__(self, name: str):
        if name not in self.__dict__["_defined"]:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        return super().__getattr__(name)


def provide(distribution: str, version: str, root: Path) -> None:
    """Let the tree at `root` (holding `flash_attn/`) answer for `distribution` `version`."""
    _PROVIDED[(distribution, version)] = root
    fa4_interface.cache_clear()


def _defined(
    nodes: list[ast.FunctionDef], tree: ast.Module, path: Path
) -> dict[str, types.FunctionType]:
    """Run the function definitions alone, after their module's standard-library imports, in a
    namespace of builtins and torch (defaults such as `qkv_dtype=torch.bfloat16` name it)."""
    namespace: dict = {"__builtins__": builtins, "__name__": path.stem, "torch": torch}
    module = ast.Module([*_standard_imports(tree), *nodes], [])
    exec(compile(module, str(path), "exec"), namespace)
    return {node.name: namespace[node.name] for node in nodes}


@functools.lru_cache(maxsize=None)
def fa4_interface(version: str) -> KernelModule:
    """`flash_attn.cute.interface` of flash-attn-4 `version`: its own `_validate_head_dims`."""
    root = _PROVIDED.get((FA4_DISTRIBUTION, version)) or wheel_tree(FA4_DISTRIBUTION, version)
    path = root / "flash_attn" / "cute" / "interface.py"
    tree = _parsed(path)
    decisions = _defined(_function_defs(tree, FA4_DECISIONS), tree, path)
    return KernelModule(FA4_INTERFACE, path, tree, decisions)


def _signature_only(node: ast.FunctionDef, where: str) -> ast.FunctionDef:
    """The definition with its own parameters and defaults, no decorators or annotations, and
    a body that raises."""
    message = f"{node.name} of {where} cannot run on the virtual device (no GPU)"
    body = [ast.Raise(ast.Call(ast.Name("RuntimeError", ast.Load()), [ast.Constant(message)], []))]
    arguments = node.args
    for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        argument.annotation = None
    for argument in (arguments.vararg, arguments.kwarg):
        if argument is not None:
            argument.annotation = None
    stand_in = ast.FunctionDef(node.name, arguments, body, [], None)
    return ast.fix_missing_locations(ast.copy_location(stand_in, node))


@functools.lru_cache(maxsize=None)
def fa3_interface(name: str, source: str) -> KernelModule:
    """FA3's interface module as built from flash-attention `source`'s `hopper/`."""
    path = sdist_tree("flash-attn", source, SKIP_BUILD) / FA3_SOURCE_FILE
    where = f"FA3 from flash-attn {source}"
    tree = _parsed(path)  # its definitions are made stand-ins in place: this build's own tree
    definitions = [_signature_only(node, where) for node in _function_defs(tree, None)]
    return KernelModule(name, path, tree, _defined(definitions, tree, path))


def kernel_module(
    name: str, installed: dict[str, str | None], fa3_source: str
) -> KernelModule | None:
    """The stand-in for kernel module `name` on a machine with `installed` (role -> version),
    or None where an opaque module does (nothing of it decides)."""
    if name == FA4_INTERFACE and installed.get("FA4"):
        return fa4_interface(installed["FA4"])
    if name in FA3_INTERFACES and installed.get("FA3"):
        return fa3_interface(name, fa3_source)
    return None
