"""Inputs a selector cannot tell apart: witnesses that differ only in them run alike.

TEA003 and TEA004 ask FA4 on SM 12.x with `num_splits` 2 and 0. TE's selector reads `num_splits`
only in `num_splits != 1` and in a log message: 2 and 0 take every branch alike and leave every
flag alike, so the second witness's run would repeat the first's, with the same answer, the same
enabling line and the same filters letting it through (`analysis`: the runs' outcomes are kept
and reused). `indistinct` is what makes that safe, read off the source: every read of the input
- the argument's attribute, or the local assigned from it once and never rebound - is formatted
into a string, or compared by one operator with a literal that gives each value the same
answer. An input read in any other way (tested for truth, computed with, passed on) makes the
witnesses run apart.
"""

from __future__ import annotations

import ast
from typing import Any, Collection

from lint_plugin.engine.interpret.folding import compare_objects
from lint_plugin.engine.program import Program, descendants, function_index


def indistinct(program: Program, field: str, values: Collection[Any]) -> bool:
    """Whether the selector's every read of the `AttentionParams` field `field` gives each of
    `values` the same outcome (see the module docstring)."""
    parameter = program.parameter
    if parameter is None:
        return False

    def reads_field(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == field
            and isinstance(node.value, ast.Name)
            and node.value.id == parameter
        )

    locals_ = set()
    for node in function_index(program.function).assignments:
        if reads_field(node.value):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                return False
            locals_.add(node.targets[0].id)
    bits = program.names.bits(locals_)
    parts = [  # the statements and heads that read the field, or read or bind its locals
        part
        for part, facts in function_index(program.function).leaves
        if facts.loads & bits or facts.stores & bits or field in facts.fields
    ]
    stores: list[str] = []
    reads: list[ast.AST] = []
    alike: set[ast.AST] = set()
    for part in parts:
        for node in (
            n for whole in (part if type(part) is list else [part]) for n in descendants(whole)
        ):
            if isinstance(node, ast.Assign) and reads_field(node.value):
                alike.add(node.value)
            elif isinstance(node, ast.Name):
                (reads if isinstance(node.ctx, ast.Load) else stores).append(node)
            elif reads_field(node):
                reads.append(node)
            elif isinstance(node, ast.FormattedValue):
                alike.add(node.value)
            elif isinstance(node, ast.Compare) and len(node.ops) == 1:
                left, right = node.left, node.comparators[0]
                for side, other, first in ((left, right, True), (right, left, False)):
                    if isinstance(other, ast.Constant) and _same_answer(
                        node.ops[0], other.value, values, first
                    ):
                        alike.add(side)
    if sum(name.id in locals_ for name in stores) != len(locals_):
        return False  # a local rebound after it was read from the field
    uses = [node for node in reads if not isinstance(node, ast.Name) or node.id in locals_]
    return all(node in alike for node in uses)


def _same_answer(op: ast.cmpop, literal: Any, values: Collection[Any], first: bool) -> bool:
    """Whether `value op literal` (or `literal op value`) is the same for every value."""
    answers = {
        compare_objects(op, value, literal) if first else compare_objects(op, literal, value)
        for value in values
    }
    return len(answers) == 1 and None not in answers
