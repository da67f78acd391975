"""Pair each `ast` statement with the libcst node that spells it, without computing positions.

The analyzer works on `ast` (fast, and what flake8 hands it); the codemod edits libcst's
concrete tree. libcst's `PositionProvider` would connect the two but costs a full extra
code-generation pass, more than the rest of the codemod together. Both trees list the same
statements in the same order, so walking them side by side pairs them exactly: a libcst
`SimpleStatementLine` holds one or more `;`-separated ast statements, `elif` is a nested `If`
in both, and every other compound statement has the same blocks under other names.
"""

from __future__ import annotations

import ast
from typing import Iterator, Sequence

import libcst as cst


class AlignmentError(Exception):
    """The two trees disagree, which means they were not parsed from the same code."""


def statement_nodes(
    cst_module: cst.Module | cst.IndentedBlock, statements: Sequence[ast.stmt]
) -> dict[int, cst.CSTNode]:
    """`id(ast statement)` -> the libcst statement (line) that holds it, for the `statements`
    libcst's module (or block) spells and every statement nested in them."""
    pairs: dict[int, cst.CSTNode] = {}
    _pair_body(cst_module.body, statements, pairs)
    return pairs


def _pair_body(
    nodes: Sequence[cst.CSTNode], statements: Sequence[ast.stmt], pairs: dict[int, cst.CSTNode]
) -> None:
    remaining = iter(statements)
    for node in nodes:
        if isinstance(node, cst.SimpleStatementLine):
            for _ in node.body:
                pairs[id(_next(remaining, node))] = node
            continue
        statement = _next(remaining, node)
        pairs[id(statement)] = node
        for cst_block, ast_block in _blocks(node, statement):
            _pair_body(cst_block, ast_block, pairs)
    if next(remaining, None) is not None:
        raise AlignmentError("the libcst tree has fewer statements than the ast")


def _next(remaining: Iterator[ast.stmt], node: cst.CSTNode) -> ast.stmt:
    statement = next(remaining, None)
    if statement is None:
        raise AlignmentError(f"no ast statement left for {type(node).__name__}")
    return statement


def _statements(suite: cst.BaseSuite | None) -> Sequence[cst.CSTNode]:
    """A block's statements; a one-line suite (`if x: y = 1`) counts as one line."""
    if suite is None:
        return ()
    if isinstance(suite, cst.SimpleStatementSuite):
        return (cst.SimpleStatementLine(body=suite.body),)
    return suite.body


def _else(node: cst.Else | cst.If | None) -> Sequence[cst.CSTNode]:
    if isinstance(node, cst.If):  # `elif`: the ast holds it as a one-statement `orelse`
        return (node,)
    return _statements(node.body) if node is not None else ()


def _blocks(node: cst.CSTNode, statement: ast.stmt) -> Iterator[tuple[Sequence, Sequence]]:
    """The (libcst, ast) pairs of nested statement lists of one compound statement."""
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.With)):
        yield _statements(node.body), statement.body
    elif isinstance(node, (cst.If, cst.For, cst.While)):
        yield _statements(node.body), statement.body
        yield _else(node.orelse), statement.orelse
    elif isinstance(node, (cst.Try, cst.TryStar)):
        yield _statements(node.body), statement.body
        for handler, ast_handler in zip(node.handlers, statement.handlers, strict=True):
            yield _statements(handler.body), ast_handler.body
        yield _else(node.orelse), statement.orelse
        yield (_statements(node.finalbody.body) if node.finalbody else ()), statement.finalbody
    elif isinstance(node, cst.Match):
        for case, ast_case in zip(node.cases, statement.cases, strict=True):
            yield _statements(case.body), ast_case.body
    else:
        raise AlignmentError(f"unexpected compound statement {type(node).__name__}")
