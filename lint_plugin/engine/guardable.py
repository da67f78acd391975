"""Where a selector could guard a hazard: what orders its witness runs.

The analysis first tries a hazard's witnesses in one run where that may prove them all guarded
(`analysis._Strategy`). Such a run proves a witness guarded only where some filter switches the
backend off for it, and a filter that does reads one of the hazard's inputs, in its own test or
one it is nested in (TE's FA2 head-dim allowlist, `fa2_padded_head_dim > 192 and
device_compute_capability not in (...)`; TE 2.15's FA4 filter for THD with padding between
sequences; the codemod's guards): `guard_paths` finds those tests, and the strategy asks them of
each witness. Where none can
hold for a witness (TE 2.20.2's SM 10.x head-dim-256 filters test head dim 512, or cross-attention,
or a sliding window, none of which the seqused hazards' witnesses ask for), the witnesses most
likely reach the backend, and the first runs alone: TEA006 is then decided in one run, not two.

Only a prediction, read off the source: a guard spelt otherwise (an early `return`, the
architecture read through a name it is not derived to) costs a run more, never a verdict.
"""

from __future__ import annotations

import ast
from typing import Iterable

from lint_plugin.engine.program import DEFINITIONS, Program


def guard_paths(
    program: Program, flags: Iterable[str], inputs: Iterable[str]
) -> list[tuple[ast.expr, ...]]:
    """The tests on the way to each `if` that can switch one of `flags` off, its own last, where
    together they read one of the `inputs` (an `if` in another's `else` is on its way without
    that one's test)."""
    names = program.names
    found: list[tuple[ast.expr, ...]] = []
    _visit(program, names.bits(flags), names.bits(inputs), found, program.function.body, (), 0)
    return found


def _visit(
    program: Program,
    killed: int,
    read: int,
    found: list[tuple[ast.expr, ...]],
    body: list[ast.stmt],
    tests: tuple[ast.expr, ...],
    reads: int,
) -> None:
    """`guard_paths` of `body`, reached under `tests`, which read `reads`. (A function of its
    own, not a closure: a recursive closure is a cycle, which would keep the program alive until
    a collection of the cyclic garbage.)"""
    for stmt in body:
        if isinstance(stmt, DEFINITIONS) or not program.kill_bits(stmt) & killed:
            continue  # nothing in it switches a flag off: no path ends there
        if isinstance(stmt, ast.If):
            path, path_reads = (*tests, stmt.test), reads | program.read_bits(stmt.test)
            if path_reads & read and any(program.kill_bits(inner) & killed for inner in stmt.body):
                found.append(path)
            _visit(program, killed, read, found, stmt.body, path, path_reads)
            _visit(program, killed, read, found, stmt.orelse, tests, reads)
        else:
            for block in program.blocks(stmt):
                _visit(program, killed, read, found, block, tests, reads)
