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
  tests `deterministic` and switches a backend off;
- "num_splits": right after TE's split-KV filter for the hazard's backend - the innermost `if`
  that switches its flag off under a test of `num_splits` (its own, or an enclosing one's);
  where there is none, where a "determinism" guard goes;
- "compute_capability": right after TE's compute-capability filter for the hazard's backend -
  the last `if` of the selector's own body whose test reads the compute capability and nothing
  else but backend flags, and that switches the backend's flag off (TE 2.15 - 2.18's `< (8, 0)`
  for FA4, where TE 2.19 raised the bound to `(9, 0)`); where the backend has none, after the
  last such filter of any backend; where there is none at all, where a "determinism" guard
  goes;
- "fused_backend": right after the statement of the selector's own body that asks TE's C++
  fused-attention query (`get_fused_attn_backend`, called on the extension or through TE's
  `_get_fused_attn_backend` helper), where TE puts its cuDNN filters; where the selector asks
  none, where a "determinism" guard goes.

A selector that cannot tell a backward from a forward gets its backward signal where TE upstream
has it (`backward_signal`): a `requires_backward` field at the end of `AttentionParams`'s
fields, whose default asks autograd when `DotProductAttention` builds the params (so the field
joins the equality TE's backend cache compares), `import dataclasses` beside the module's other
dataclasses import, and the selector's own local right after it reads `is_training`. A selector
whose params lack TE 2.10's `cuda_graph` gets the capture signal in the same places
(`capture_signal`): the field, whose default asks TE's own `is_graph_capturing()` when the params
are built, and its local.

Statements are recognised by the names they read and write, never by comments or spelling.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import NamedTuple

from lint_plugin.engine.analysis import Selector
from lint_plugin.engine.dialect import COMPUTE_CAPABILITY_QUERY, Dialect
from lint_plugin.engine.program import DEFINITIONS, Program, function_index, statements
from selector_patch.registry import SECTIONS


@dataclass(frozen=True)
class Anchor:
    statement: ast.stmt
    #: "before" or "after" `statement`.
    position: str


def find_anchor(prepared: Selector, section: str, role: str) -> Anchor | None:
    """Where a guard of `section` for the backend of `role` goes in the selector; None when no
    such place exists.

    `prepared` is the analysis's (`analysis.selector`): the facts about each statement that
    the analysis computed are the ones looked at here.
    """
    if section == "determinism":
        return _determinism(prepared.function, prepared.dialect, prepared.program)
    if section == "head_dim":
        return _head_dim(prepared.function, prepared.dialect, prepared.program)
    if section == "num_splits":
        return _num_splits(prepared.function, prepared.dialect, prepared.program, role) or (
            _determinism(prepared.function, prepared.dialect, prepared.program)
        )
    if section == "fused_backend":
        return _fused_backend(prepared.function) or (
            _determinism(prepared.function, prepared.dialect, prepared.program)
        )
    if section == "compute_capability":
        return _compute_capability(prepared.function, prepared.dialect, prepared.program, role) or (
            _determinism(prepared.function, prepared.dialect, prepared.program)
        )
    raise ValueError(f"unknown section {section!r}; known: {', '.join(SECTIONS)}")


def _num_splits(
    function: ast.FunctionDef, dialect: Dialect, program: Program, role: str
) -> Anchor | None:
    flag = dialect.flag(role)
    names = program.derived_names({"num_splits"})
    found: list[tuple[int, ast.If]] = []

    def visit(body: list[ast.stmt], depth: int, under_test: bool) -> None:
        for stmt in body:
            if isinstance(stmt, DEFINITIONS):
                continue
            tests = isinstance(stmt, ast.If) and bool(_reads(stmt.test, program) & names)
            if (
                isinstance(stmt, ast.If)
                and (tests or under_test)
                and flag in program.body_kills(stmt)
            ):
                found.append((depth, stmt))
            for block in program.blocks(stmt):
                visit(block, depth + 1, under_test or tests)

    visit(function.body, 0, False)
    if not found:
        return None
    deepest = max(depth for depth, _ in found)
    return Anchor([stmt for depth, stmt in found if depth == deepest][-1], "after")


#: TE's C++ fused-attention query, by the name it is called by (extension or helper).
FUSED_QUERY = "get_fused_attn_backend"


def _fused_backend(function: ast.FunctionDef) -> Anchor | None:
    for stmt in function.body:
        for node in ast.walk(stmt):
            called = getattr(node, "func", None)
            name = getattr(called, "attr", None) or getattr(called, "id", None)
            if isinstance(node, ast.Call) and name and name.endswith(FUSED_QUERY):
                return Anchor(stmt, "after")
    return None


def _compute_capability(
    function: ast.FunctionDef, dialect: Dialect, program: Program, role: str
) -> Anchor | None:
    flags = set(dialect.roles().values())
    capability = _capability_names(program)
    filters = [
        stmt
        for stmt in function.body
        if isinstance(stmt, ast.If)
        and (reads := _reads(stmt.test, program) - flags)
        and reads <= capability
        and program.body_kills(stmt) & flags
    ]
    own = [stmt for stmt in filters if dialect.flag(role) in program.body_kills(stmt)]
    chosen = own or filters
    return Anchor(chosen[-1], "after") if chosen else None


@dataclass(frozen=True)
class SignalPlaces:
    """Where the statements that let a selector see a backward, or a capture, go.

    A selector that takes `AttentionParams` gets the field (so TE's backend cache, which
    compares the params, tells the calls apart) and reads it; one that takes keyword inputs
    (TE before 1.9) has no dataclass to hold it and asks autograd itself, first thing.
    """

    #: The selector's local: after its read of `is_training`, else before its first statement.
    local: Anchor
    #: The last field of `AttentionParams`, the new field after it (None: keyword inputs).
    last_field: ast.stmt | None = None
    #: How the module calls `dataclasses.field`.
    field_function: str = "dataclasses.field"
    #: After this module statement goes `import dataclasses`; None when no import is needed.
    import_after: ast.stmt | None = None


def backward_signal(prepared: Selector) -> SignalPlaces | str:
    """The places of the backward signal, or why there are none (a one-line reason)."""
    dialect, function = prepared.dialect, prepared.function
    params_class = dialect.params_class
    if "torch" not in dialect.module_imports:
        return "the module does not import torch, whose autograd state the signal reads"
    if params_class is None:
        if not prepared.program.inputs:
            return "the selector takes no AttentionParams dataclass to carry `requires_backward`"
        return SignalPlaces(_first_statement(function))
    fields = _fields(params_class)
    if not fields:
        return "`AttentionParams` declares no fields to place `requires_backward` beside"
    return _field_places(prepared, fields[-1])


def capture_signal(prepared: Selector) -> SignalPlaces | str:
    """The places of the capture signal (the same as the backward signal's, for `cuda_graph`),
    or why there are none: TE before 1.9 takes keyword inputs and no dataclass to carry it."""
    fields = _fields(prepared.dialect.params_class) if prepared.dialect.can_signal_capture else []
    if not fields:
        return "the params have no `cuda_graph`, and no dataclass fields and `te` to add it with"
    return _field_places(prepared, fields[-1])


def _fields(params_class: ast.ClassDef) -> list[ast.stmt]:
    return [
        stmt
        for stmt in params_class.body
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
    ]


def _field_places(prepared: Selector, last_field: ast.stmt) -> SignalPlaces | str:
    """A new params field after `last_field`, with `dataclasses.field` at hand, and its local
    right after the selector reads `is_training` (else first thing in the selector)."""
    dialect, function = prepared.dialect, prepared.function
    parameter = prepared.program.parameter
    reads = [
        stmt
        for stmt in function_index(function).assignments
        if isinstance(stmt.value, ast.Attribute)
        and stmt.value.attr == "is_training"
        and isinstance(stmt.value.value, ast.Name)
        and stmt.value.value.id == parameter
    ]
    local = Anchor(reads[0], "after") if reads else _first_statement(function)
    imports = _dataclasses_imports(dialect.module)
    if imports.field is not None:
        return SignalPlaces(local, last_field, imports.field)
    if imports.module is not None:
        return SignalPlaces(local, last_field, f"{imports.module}.field")
    after = imports.statement or _last_import(dialect.module, dialect.params_class)
    if after is None:
        return "the module imports nothing before `AttentionParams` to place an import beside"
    return SignalPlaces(local, last_field, import_after=after)


def _first_statement(function: ast.FunctionDef) -> Anchor:
    """Before the function's first statement after its docstring and `global` declarations."""
    body = function.body
    docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    rest = body[1:] if docstring and len(body) > 1 else body
    statements = [stmt for stmt in rest if not isinstance(stmt, (ast.Global, ast.Nonlocal))]
    return Anchor((statements or rest)[0], "before")


class _DataclassesImports(NamedTuple):
    """How a module's top-level imports name `dataclasses` and its `field`."""

    #: `import dataclasses [as x]`
    module: str | None
    #: `from dataclasses import field [as x]`
    field: str | None
    #: The first `from dataclasses import ...`, beside which a new import goes.
    statement: ast.stmt | None


def _dataclasses_imports(module: ast.Module) -> _DataclassesImports:
    name = field = statement = None
    for node in module.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "dataclasses":
                    name = alias.asname or alias.name
        elif isinstance(node, ast.ImportFrom) and node.module == "dataclasses" and not node.level:
            statement = statement or node
            for alias in node.names:
                if alias.name == "field":
                    field = alias.asname or alias.name
    return _DataclassesImports(name, field, statement)


def _last_import(module: ast.Module, before: ast.stmt) -> ast.stmt | None:
    imports = [
        node
        for node in module.body[: module.body.index(before)]
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    return imports[-1] if imports else None


def _head_dim(function: ast.FunctionDef, dialect: Dialect, program: Program) -> Anchor | None:
    flag = dialect.flag("FA2")
    if flag is None:
        return None
    head_dims = program.derived_names(set(dialect.head_dim_fields))
    capability = _capability_names(program)
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
    deterministic = program.derived_names({dialect.input_expression("deterministic")})
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


def _capability_names(program: Program) -> set[str]:
    """Names holding (or computed from) the hardware query's compute capability."""
    return program.derived_names(set(program.results_of(COMPUTE_CAPABILITY_QUERY)))


def _reads(node: ast.AST, program: Program) -> set[str]:
    names, fields = program.reads(node)
    return set(names) | fields


def _compares(test: ast.AST, names: set[str], program: Program) -> bool:
    """Whether `test` contains a comparison that reads one of `names`."""
    return any(
        isinstance(node, ast.Compare) and _reads(node, program) & names for node in ast.walk(test)
    )
