"""Where a new filter belongs in a selector, found by what the code does.

The codemod places a hazard's guard by meaning (`Hazard.section`):

- "head_dim": right after TE's FA2 head-dim filter - the `if` that switches the FA2 flag off
  on a comparison of a head-dim quantity (`fa2_padded_head_dim`, `head_dim_qk`, TE 1.9's
  `head_dim`, or anything computed from them), preferring the one that also tests the compute
  capability (the allowlist the guard complements);
- "determinism": before the statement that recombines the flash flags
  (`use_flash_attention_4 = use_flash_attention and use_flash_attention_4`: a backend flag
  assigned from an `and` of itself and another backend flag), so the guard sits inside TE's
  determinism filters; where no such statement exists (TE 1.x), after the last `if` that
  tests `deterministic` and switches a backend off.

Statements are recognised by the names they read and write, never by comments or spelling.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from lint_plugin.engine.analysis import Selector
from lint_plugin.engine.dialect import COMPUTE_CAPABILITY_QUERY, Dialect
from lint_plugin.engine.program import Program, function_index, statements

SECTIONS = ("determinism", "head_dim")


@dataclass(frozen=True)
class Anchor:
    statement: ast.stmt
    #: "before" or "after" `statement`.
    position: str


def find_anchor(prepared: Selector, section: str) -> Anchor | None:
    """Where a guard of `section` goes in the selector; None when no such place exists.

    `prepared` is the analysis's (`analysis.selector`): the facts about each statement that
    the analysis computed are the ones looked at here.
    """
    if section == "determinism":
        return _determinism(prepared.function, prepared.dialect, prepared.program)
    if section == "head_dim":
        return _head_dim(prepared.function, prepared.dialect, prepared.program)
    raise ValueError(f"unknown section {section!r}; known: {', '.join(SECTIONS)}")


def derived_names(function: ast.FunctionDef, program: Program, seeds: set[str]) -> set[str]:
    """Local names whose value is computed from `seeds` (names, or `AttentionParams` fields).

    A name is derived when some assignment to it reads a seed or a derived name; the closure
    follows `x = attention_params.head_dim_qk` and `fa2_padded_head_dim = max(...)` alike.
    """
    derived = set(seeds)
    assignments = [
        (program.assigned(node), set(program.reads(node.value)[0]) | program.reads(node.value)[1])
        for node in function_index(function).assignments
    ]
    changed = True
    while changed:
        changed = False
        for targets, reads in assignments:
            if reads & derived and not targets <= derived:
                derived |= targets
                changed = True
    return derived


def _head_dim(function: ast.FunctionDef, dialect: Dialect, program: Program) -> Anchor | None:
    flag = dialect.flag("FA2")
    if flag is None:
        return None
    head_dims = derived_names(function, program, set(dialect.head_dim_fields))
    capability = _capability_names(function, program)
    candidates = [
        stmt
        for stmt in statements(function.body)
        if isinstance(stmt, ast.If)
        and flag in program.body_kills(stmt)
        and _compares(stmt.test, head_dims, program)
    ]
    if not candidates:
        return None
    allowlists = [stmt for stmt in candidates if _reads(stmt.test, program) & capability]
    return Anchor((allowlists or candidates)[-1], "after")


def _determinism(function: ast.FunctionDef, dialect: Dialect, program: Program) -> Anchor | None:
    flags = set(dialect.roles().values())
    gates = set(dialect.backend_flags)
    for stmt in statements(function.body):
        if _recombines(stmt, flags, gates):
            return Anchor(stmt, "before")
    deterministic = derived_names(function, program, {dialect.input_expression("deterministic")})
    filters = [
        stmt
        for stmt in function.body
        if isinstance(stmt, ast.If)
        and _reads(stmt.test, program) & deterministic
        and program.kills(stmt) & flags
    ]
    return Anchor(filters[-1], "after") if filters else None


def _recombines(stmt: ast.stmt, flags: set[str], gates: set[str]) -> bool:
    """`flag = gate and flag`: a backend flag re-derived from itself and another switch."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id in flags
        and isinstance(stmt.value, ast.BoolOp)
        and isinstance(stmt.value.op, ast.And)
    ):
        return False
    operands = {o.id for o in stmt.value.values if isinstance(o, ast.Name)}
    target = stmt.targets[0].id
    return target in operands and bool(operands & (gates - {target}))


def _capability_names(function: ast.FunctionDef, program: Program) -> set[str]:
    """Names holding (or computed from) the hardware query's compute capability."""
    seeds = {
        target
        for node in function_index(function).assignments
        if isinstance(node.value, ast.Call) and _callee(node.value) == COMPUTE_CAPABILITY_QUERY
        for target in program.assigned(node)
    }
    return derived_names(function, program, seeds)


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _reads(node: ast.AST, program: Program) -> set[str]:
    names, fields = program.reads(node)
    return set(names) | fields


def _compares(test: ast.AST, names: set[str], program: Program) -> bool:
    """Whether `test` contains a comparison that reads one of `names`."""
    return any(
        isinstance(node, ast.Compare) and _reads(node, program) & names for node in ast.walk(test)
    )
