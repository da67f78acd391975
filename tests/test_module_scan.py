"""`module_scan`: with the module's source known, a question walks only the statements whose text
names what it asks, and answers as the walk of every statement does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lint_plugin.engine.dialect import Dialect, find_selectors
from lint_plugin.engine.module_scan import ModuleScan, forget_sources, parsed_from
from lint_plugin.rule_examples import te2_example, with_module_code
from selector_patch.sources import resolve

FORK_SHAPES = sorted((Path(__file__).parent / "fork_shapes").glob("*.py"))

#: Module code around a TE 2 selector that changes its constants in the ways a walk must find.
CHANGING = """\
CACHE = {}; LIMIT = 3
BUILT = frozenset({1, 2})
SIZES = (1, 2)
FLAGS = (True,)
REGISTRY = {}


class Holder:
    @staticmethod
    def grow():
        CACHE[1] = 2  # an item assigned


def rebind():
    global LIMIT
    LIMIT = 4


def method_call():
    FLAGS.count(True)


@REGISTRY.get("decorated", staticmethod)  # a method called in a decorator, before the `def`
def decorated():
    pass
"""


def _answers(module: ast.Module, source: str | None) -> dict[str, object]:
    """Every question `Dialect` may ask, about every name and `name.attr` the module holds."""
    forget_sources()
    if source is not None:
        parsed_from(module, source)
    function = find_selectors(module, ("get_attention_backend",))[0]
    scan = ModuleScan(module, function)
    names = {node.id for node in ast.walk(module) if isinstance(node, ast.Name)}
    names |= {
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(module)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
    }
    names |= {"frozenset", "tuple", "set", "never_named"}
    methods = {node.attr for node in ast.walk(module) if isinstance(node, ast.Attribute)}
    answers: dict[str, object] = {}
    for name in sorted(names):
        answers[f"uses {name}"] = name in scan
        answers[f"stores {name}"] = scan.stores(name)
        answers[f"changes {name}"] = scan.changes(name)
    for method in sorted(methods):
        answers[f"calls {method}"] = scan.calls_method(method)
    answers["constants"] = sorted(Dialect(function, module).module_names)
    forget_sources()
    return answers


def _same_answers(source: str) -> None:
    with_text, without = _answers(ast.parse(source), source), _answers(ast.parse(source), None)
    assert with_text == without


def test_the_walk_finds_every_change_of_a_constant() -> None:
    source = with_module_code(CHANGING, te2_example())
    answers = _answers(ast.parse(source), source)
    # CACHE: an item assigned in a method; LIMIT: declared global and stored; FLAGS, REGISTRY:
    # a method called on it; BUILT: built with frozenset, which nothing rebinds here
    assert answers["constants"] == ["BUILT", "SIZES"]
    assert all(answers[f"changes {name}"] for name in ("CACHE", "LIMIT", "FLAGS", "REGISTRY"))
    assert answers["stores LIMIT"] == 2
    _same_answers(source)


def test_a_rebound_builder_leaves_only_literals_constants() -> None:
    source = with_module_code(
        CHANGING + "\n\ndef frozenset(items):\n    return items\n", te2_example()
    )
    assert _answers(ast.parse(source), source)["constants"] == ["SIZES"]
    _same_answers(source)


def test_names_are_read_as_python_spells_them() -> None:
    """NFKC: `ＬＩＭＩＴ` is `LIMIT`; and lines broken by `\\r` count as Python counts them."""
    changed = "LIMIT = 3\n\n\ndef rebind():\n    global ＬＩＭＩＴ\n    ＬＩＭＩＴ = 4\n"
    for source in (
        with_module_code(changed, te2_example()),
        with_module_code(changed, te2_example()).replace("\n", "\r\n"),
        with_module_code(changed, te2_example()).replace("\n", "\r"),
    ):
        answers = _answers(ast.parse(source), source)
        assert answers["changes LIMIT"] and answers["stores LIMIT"] == 2
        assert answers["constants"] == []
        _same_answers(source)


def test_statements_sharing_a_line_are_each_walked() -> None:
    source = with_module_code("A = {}; B = (1,)\n\n\ndef g():\n    A[0] = B\n", te2_example())
    assert _answers(ast.parse(source), source)["constants"] == ["B"]
    _same_answers(source)


@pytest.mark.parametrize("path", FORK_SHAPES, ids=lambda path: path.stem)
def test_fork_shapes_answer_alike(path: Path) -> None:
    _same_answers(path.read_text())


@pytest.mark.parametrize("version", ["1.9.0.post1", "2.1.0", "2.8.0", "2.20.2"])
def test_releases_answer_alike(version: str) -> None:
    """Over every name in the module: TE 2.1's many flash-attn constants, 2.20.2's em dash."""
    _same_answers(resolve(version).path.read_text())


def test_a_question_walks_only_the_statements_naming_it() -> None:
    source = resolve("2.20.2").path.read_text()
    module = ast.parse(source)
    parsed_from(module, source)
    try:
        scan = ModuleScan(module, find_selectors(module, ("get_attention_backend",))[0])
        assert "FlashAttentionUtils.v4_validate_head_dims" in scan
        walked = len(module.body) - len(scan._unwalked)
        assert 0 < walked <= 3  # the FlashAttentionUtils class, the selector's `def`
    finally:
        forget_sources()
