"""Guards a fork spells through module-level definitions, on TE 2.20.2's real guarded selector.

A fork maintainer moves a guard's condition out of the selector: the FA2 dropout guard tests
`device_compute_capability in _SMEM_99KB` with `_SMEM_99KB = frozenset({...})` at module level,
and the FA4 determinism guard calls a module-level predicate, or a module-level function with
statements. The harness (`verify`) says each
hazard is not reachable; the static judges (flake8 and the codemod) must agree: silent, and
`already-guarded` with nothing inserted. The small shapes are the rules' own examples
(`lint_plugin.rule_examples`, run by `tests/test_rules.py`).
"""

from __future__ import annotations

import ast

import pytest
from guarded_selectors import patched

from codemods.apply import transform
from lint_plugin.plugin import TeaChecker
from selector_patch.harness.loader import load_selector
from selector_patch.registry import HAZARDS, get_hazard
from selector_patch.verify import verify_hazard

FA2_ARCHITECTURES = "device_compute_capability in ((8, 6), (8, 9), (12, 0), (12, 1))\n    ):"
FA4_GUARD = """    if (
        use_flash_attention_4
        and deterministic
        and requires_backward
        and device_compute_capability in ((12, 0), (12, 1))
    ):"""
SELECTOR = "\n\ndef get_attention_backend("


def _with_module_code(text: str, code: str) -> str:
    assert text.count(SELECTOR) == 1
    return text.replace(SELECTOR, f"\n\n{code}{SELECTOR}")


def frozenset_constant(text: str) -> str:
    """The FA2 dropout guard's architectures in a module-level frozenset."""
    assert text.count(FA2_ARCHITECTURES) == 1
    text = text.replace(FA2_ARCHITECTURES, "device_compute_capability in _SMEM_99KB\n    ):")
    return _with_module_code(text, "_SMEM_99KB = frozenset({(8, 6), (8, 9), (12, 0), (12, 1)})\n")


def module_predicate(text: str) -> str:
    """The FA4 determinism guard's condition in a module-level predicate."""
    assert text.count(FA4_GUARD) == 1
    text = text.replace(
        FA4_GUARD,
        "    if use_flash_attention_4 and requires_backward and _fa4_cannot_run_deterministic(\n"
        "        device_compute_capability, deterministic\n"
        "    ):",
    )
    return _with_module_code(
        text,
        "def _fa4_cannot_run_deterministic(capability, deterministic):\n"
        "    return deterministic and (12, 0) <= capability < (13, 0)\n",
    )


def module_function(text: str) -> str:
    """The FA4 determinism guard's condition in a module-level function with statements, run
    where it is called as TE's own `get_qkv_format` is."""
    assert text.count(FA4_GUARD) == 1
    text = text.replace(
        FA4_GUARD,
        "    if use_flash_attention_4 and requires_backward and _fa4_cannot_run_deterministic(\n"
        "        device_compute_capability, deterministic=deterministic\n"
        "    ):",
    )
    return _with_module_code(
        text,
        "def _fa4_cannot_run_deterministic(capability, family=None, deterministic=True):\n"
        "    major, _ = capability\n"
        "    if not deterministic:\n"
        "        return False\n"
        "    family = str(major)\n"
        "    return family.startswith('12')\n",
    )


VARIANTS = [
    pytest.param(frozenset_constant, "TEA002", id="frozenset-constant"),
    pytest.param(module_predicate, "TEA001", id="module-predicate"),
    pytest.param(module_function, "TEA001", id="module-function"),
]


@pytest.fixture(scope="module")
def guarded(release) -> tuple:
    source = release("2.20.2")
    return source, patched(source.path.read_text())


@pytest.mark.parametrize(("spell", "hazard_id"), VARIANTS)
def test_the_two_judges_agree_on_a_guard_spelt_at_module_level(guarded, spell, hazard_id):
    source, text = guarded
    variant = spell(text)
    checker = TeaChecker(ast.parse(variant), str(source.path), variant.splitlines(True))
    assert [message for *_, message, _ in checker.run()] == []
    assert transform(variant, HAZARDS) == (
        variant,
        {hazard.id: "already-guarded" for hazard in HAZARDS},
    )
    report = verify_hazard(load_selector(source, text=variant), get_hazard(hazard_id))
    assert report.witnesses and report.witness is None
    assert not report.controls.failed
