"""Generic filter coverage: does every backend have a determinism, dropout and arch filter?

Independent of any known hazard: a non-reference backend flag that the selector can enable
must be switched off by at least one filter whose condition reads `deterministic`, one that
reads `attention_dropout`, and one that reads the compute capability. A filter is an
assignment that can make the flag false - directly, through a local helper such as
`_disable_all_flash_attention()`, or through a flag it is `and`-ed from - and that reaches the
selector's return. Reading an input includes reading it through a value computed from it, so
FusedAttention passing `deterministic=` and `dropout=` into cuDNN's backend query, and being
switched off on that query's answer, counts as delegation.

A filter only counts when it can fire in a plain call: the selector is interpreted once
(`Selector.plain_call`, shared with the hazard analysis) with every optional-feature input
(softcap, FP8, KV cache, context parallelism, ...) at its `AttentionParams` dataclass default
and the inputs a `Scenario` describes left unknown.
Backend flags are tracked for where they are switched off, never for whether they are on, so
each filter is judged by its own condition, not by what earlier filters did. A switch that
depends on another backend's flag (TE 1.x turning FlashAttention off because FusedAttention is
available on Hopper) is a preference between backends, not a filter.
"""

from __future__ import annotations

import ast

from lint_plugin.engine.absint import Site
from lint_plugin.engine.analysis import COMPUTE_CAPABILITY, selector
from lint_plugin.engine.delegation import delegates
from lint_plugin.engine.program import function_index, is_falsy_constant
from selector_patch.records import TupleRecord
from selector_patch.roles import ROLES


class Topic(TupleRecord):
    code: str
    #: What the missing filter is about, in words.
    name: str
    #: The input dependency a filter's condition must carry.
    input: str
    #: Where TE keeps such filters ("Filter: ..." sections).
    section: str


TOPICS: tuple[Topic, ...] = (
    Topic("TEA101", "determinism", "deterministic", "Filter: Determinism"),
    Topic("TEA102", "dropout", "attention_dropout", "Filter: Dropout"),
    Topic("TEA103", "compute capability", COMPUTE_CAPABILITY, "Filter: Compute capability"),
)


class CoverageFinding(TupleRecord):
    code: str
    role: str
    flag: str
    #: The line that enables the flag (1-based) and its column (0-based).
    line: int
    col: int
    detail: str


def analyze_coverage(module: ast.Module, function: ast.FunctionDef) -> list[CoverageFinding]:
    """Missing filter kinds for every non-reference backend the selector can enable, in each
    function that holds its filters (`delegation`)."""
    return [
        finding
        for target in delegates(module, function)
        for finding in _function_coverage(module, target)
    ]


def _function_coverage(module: ast.Module, function: ast.FunctionDef) -> list[CoverageFinding]:
    prepared = selector(module, function)
    dialect = prepared.dialect
    roles = {
        role: flag
        for role, flag in dialect.roles().items()
        if not ROLES[role].reference and _can_enable(function, flag)
    }
    if not roles:
        return []
    findings = []
    for role, flag in roles.items():
        values = [state.vars[flag] for state in prepared.plain_call if flag in state.vars]
        enablers = [site.stmt for value in values for site in value.enablers if site.stmt]
        if not enablers:
            continue
        enable = min(enablers, key=lambda stmt: stmt.lineno)
        filters = prepared.filters(flag)
        for topic in TOPICS:
            if not any(topic.input in site.deps for site in filters):
                findings.append(_finding(topic, role, flag, enable, filters))
    return findings


def _can_enable(function: ast.FunctionDef, flag: str) -> bool:
    """Whether some assignment may make `flag` true (not only ever `False`)."""
    return any(
        not is_falsy_constant(node.value)
        for node in function_index(function).assignments
        if any(isinstance(target, ast.Name) and target.id == flag for target in node.targets)
    )


def _finding(
    topic: Topic, role: str, flag: str, enable: ast.stmt, filters: list[Site]
) -> CoverageFinding:
    detail = (
        f"`{flag}` ({role}) has no {topic.name} filter: of the {len({s.stmt for s in filters})}"
        f" statements that can switch it off in a plain call, none depends on"
        f" `{topic.input}`; add one (TE keeps them under '# {topic.section}')"
    )
    return CoverageFinding(topic.code, role, flag, enable.lineno, enable.col_offset, detail)
