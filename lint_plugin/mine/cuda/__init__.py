"""The miner's CUDA side: flash-attn 2 and 3's C++ dispatch, read with tree-sitter.

`source` finds the sources (a release's sdist in the cache, or a source tree), `syntax` indexes
them, `calls` says what TE passes to each entry point, `interpreter` runs every entry point TE
reaches for all architectures and inputs at once, and `sites` states where each refusal or
launch-less path fires in selector inputs. `mine` runs them for each backend in the tree.

This package imports tree-sitter; nothing on flake8's import path (`lint_plugin.plugin`)
imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from lint_plugin.mine.cuda.calls import ARGUMENTS, ATTENTION_TENSORS, PINNED, domains
from lint_plugin.mine.cuda.interpreter import Entry, Interpreter
from lint_plugin.mine.cuda.paths import TooManyPaths
from lint_plugin.mine.cuda.sites import Direction, cases
from lint_plugin.mine.cuda.source import FlashAttnSource
from lint_plugin.mine.cuda.syntax import Function, index
from lint_plugin.mine.cuda.values import Sym, Tensor
from lint_plugin.mine.findings import Case


@dataclass(frozen=True)
class Mined:
    cases: tuple[Case, ...]
    #: What the report should say besides the cases (sources absent, sites not listed).
    notes: tuple[str, ...]


def mine(source: FlashAttnSource) -> Mined:
    """Every case of every site of every backend whose C++ is in `source`."""
    found: list[Case] = []
    notes = list(source.notes)
    for backend in source.backends():
        library = index(source.root, backend.directories)
        interpreter = Interpreter(library)
        directions = {flag: Direction(backend, flag) for flag in (False, True)}
        for name in backend.entries:
            function = _entry_function(library, name)
            if function is None:
                notes.append(f"{backend.role}: entry point `{name}` is not registered here")
                continue
            try:
                directions["bwd" in name].leaves += interpreter.run(entry(function))
            except TooManyPaths as error:
                notes.append(f"{backend.role}: entry point `{name}` not mined: {error}")
        version = source.kernel_version(backend)
        independent = 0
        for direction in directions.values():
            finding = cases(direction, version)
            found += finding.cases
            independent += finding.independent
        others = sorted(set(library.entries) - set(backend.entries))
        notes.append(
            f"{backend.role}: {independent} checks fire only on what no selector input decides"
            f" (strides, shapes, sequence lengths) and are not listed"
            + (f"; entry points TE does not call: {', '.join(others)}" if others else "")
        )
    return Mined(tuple(found), tuple(notes))


def _entry_function(library, name: str) -> Function | None:
    target = library.entries.get(name)
    candidates = [f for f in library.functions.get(target, ()) if f.specialization is None]
    return candidates[0] if candidates else None


def entry(function: Function) -> Entry:
    """The entry point as TE calls it: `calls.ARGUMENTS` by parameter name, the attention
    tensors with the call's dtype, every other parameter unknown."""
    arguments = {}
    for parameter in function.params:
        if parameter.name in ARGUMENTS:
            arguments[parameter.name] = ARGUMENTS[parameter.name]
        elif parameter.name in ATTENTION_TENSORS:
            arguments[parameter.name] = Tensor(Sym("dtype"))
    symbols = {v.name for v in arguments.values() if isinstance(v, Sym)} | {"dtype"}
    return Entry(function, arguments, PINNED, domains(symbols))
