"""What TE's import-time code concludes from the installed kernel packages, run as TE runs it.

From TE 2.2 on, which flash-attn packages the selector may use is decided outside its module:
`backends.py` beside it (`pytorch/attention.py` in TE 2.2) reads their metadata when it is
imported and records its conclusions on `FlashAttentionUtils`: each version; FA2's
`is_installed` only when that version lies in TE's supported range for the device (a Blackwell
one from SM 10.0); FA4's own head-dim validator (2.16+); the CUTLASS DSL gate on FA4 4.0.0b24 and
FA3's `softcap` probe (2.19+). Copying those conclusions by hand would replace TE's decisions
with ours, so the harness runs the very statements: the file's imports and each of its
top-level statements that touches `FlashAttentionUtils` (under the alias the file imports it
as), found by reading the file, in a module of the selector's private import table that sees
the pinned machine's packages (`kernels`). `pinning` runs them once per machine and replays
their effect on each call.

A selector file outside a TE tree has no such file: there the harness records each installed
package's version and calls the matching setter, the part of TE's wiring every dialect shares.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from selector_patch.harness.imports import PrivateImports, dotted_name, execute

UTILS_CLASS = "FlashAttentionUtils"
#: Where TE wires the kernel packages in: beside the selector (2.3+), else TE 2.2's module.
BESIDE_SELECTOR = "backends.py"
TE_2_2_MODULE = "transformer_engine/pytorch/attention.py"


def utils_alias(tree: ast.Module) -> str | None:
    """The name the module binds `FlashAttentionUtils` to (`fa_utils`), if it imports it."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == UTILS_CLASS:
                    return alias.asname or alias.name
    return None


def _touches(node: ast.AST, alias: str) -> bool:
    return any(
        isinstance(child, ast.Attribute)
        and isinstance(child.value, ast.Name)
        and child.value.id == alias
        for child in ast.walk(node)
    )


def wired_attributes(tree: ast.AST, alias: str) -> frozenset[str]:
    """Every `FlashAttentionUtils` attribute the module assigns anywhere (`fa_utils.X = ...`)."""
    return frozenset(
        target.attr
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == alias
    )


class Wiring:
    """The kernel-package statements of one TE file, compiled, runnable per machine."""

    def __init__(self, path: Path, package: str, tree: ast.Module, alias: str) -> None:
        self.path = path
        self.package = package
        self.alias = alias
        statements = [
            node
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            or (
                not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and _touches(node, alias)
            )
        ]
        module = ast.Module(statements, [])
        self.code = compile(module, str(path), "exec")
        #: What the file assigns on `FlashAttentionUtils`, in any statement of it.
        self.attributes = wired_attributes(tree, alias)
        #: What the statements the harness runs assign (all of `attributes`, or TE moved one
        #: where the harness does not look: a test holds every release to it).
        self.run_attributes = wired_attributes(module, alias)

    def run(self, imports: PrivateImports) -> None:
        """Run the statements once, as importing the file would, on the pinned machine."""
        execute(self.code, imports.new_module(self.path, package=self.package))


def find_wiring(selector: Path, root: Path | None) -> Wiring | None:
    """The file that wires the kernel packages into the selector at `selector`, if any."""
    candidates = [selector.parent / BESIDE_SELECTOR]
    if root is not None:
        candidates.append(root / TE_2_2_MODULE)
    for path in candidates:
        if path == selector or not path.is_file():
            continue
        package = dotted_name(path, root).rpartition(".")[0]
        wiring = _wiring(path, package, path.read_text(encoding="utf-8"))
        if wiring is not None:
            return wiring
    return None


@functools.lru_cache(maxsize=256)  # no tree is kept: a session cycles through 29 releases
def _wiring(path: Path, package: str, text: str) -> Wiring | None:
    """The wiring in `text`, the file at `path`, if it imports `FlashAttentionUtils`: parsed
    and compiled once per text (every load of a selector reads it, see `compiled`)."""
    tree = ast.parse(text, str(path))
    alias = utils_alias(tree)
    return None if alias is None else Wiring(path, package, tree, alias)
