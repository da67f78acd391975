"""The static analysis on every TE release 1.9.0.post1 - 2.20.2, judged by the harness.

The harness runs TE's own selector on a virtual device; the analyzer reads its AST. For every
release and hazard they must agree on applicable / reachable - a disagreement is a bug in one
of them. The issue's expectation is asserted too: TEA001 exists from 2.15.0 (the first FA4
path), TEA002 is reachable from 2.1.0 (whose FA2 head-dim > 192 allowlist admits sm120).
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys

import pytest
from packaging.version import Version

from lint_plugin.engine.absint import join
from lint_plugin.engine.analysis import analyze_hazard, selector, witness_facts
from lint_plugin.engine.anchors import find_anchor
from lint_plugin.engine.dialect import find_selectors
from lint_plugin.engine.interpreter import Interpreter
from lint_plugin.plugin import TeaChecker
from selector_patch.registry import HAZARDS, get_hazard
from selector_patch.sources import CORPUS_RELEASES

FIRST_FA4 = Version("2.15.0")
FIRST_SM120_ALLOWLIST = Version("2.1.0")


@functools.lru_cache(maxsize=None)
def parsed(path) -> tuple[str, ast.Module, ast.FunctionDef]:
    text = path.read_text()
    module = ast.parse(text)
    return text, module, find_selectors(module)[0]


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_analyzer_agrees_with_harness(version, release, load_te_selector) -> None:
    from selector_patch.verify import verify_hazard

    _, module, function = parsed(release(version).path)
    for hazard in HAZARDS:
        verdict = analyze_hazard(module, function, hazard)
        report = verify_hazard(load_te_selector(version).loaded, hazard)
        assert (verdict.applicable, verdict.reachable) == (report.applicable, report.reachable), (
            hazard.id,
            verdict.detail,
        )
    verdicts = {h.id: analyze_hazard(module, function, h) for h in HAZARDS}
    for fa4 in ("TEA001", "TEA003", "TEA004"):
        assert (
            verdicts[fa4].applicable == verdicts[fa4].reachable == (Version(version) >= FIRST_FA4)
        )
    assert verdicts["TEA002"].reachable == (Version(version) >= FIRST_SM120_ALLOWLIST)


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_plugin_codes_per_release(version, release) -> None:
    text, module, _ = parsed(release(version).path)
    checker = TeaChecker(module, "utils.py", text.splitlines(keepends=True))
    codes = {message.split()[0] for _, _, message, _ in checker.run()}
    assert ("TEA001" in codes) == (Version(version) >= FIRST_FA4)
    assert ("TEA002" in codes) == (Version(version) >= FIRST_SM120_ALLOWLIST)
    assert not {code for code in codes if code.startswith("TEA9")}


def flake8(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--select=TEA", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_flake8_on_2_20_2_points_where_a_reviewer_would(release) -> None:
    path = release("2.20.2").path
    lines = path.read_text().splitlines()
    result = flake8(str(path))
    assert result.returncode == 1 and not result.stderr
    found = set()
    for row in result.stdout.splitlines():
        line, _col, message = row[len(str(path)) + 1 :].split(":", 2)
        found.add((message.split()[0], lines[int(line) - 1].strip()))
    enable = 'use_flash_attention_{0} = use_flash_attention and int(os.environ.get("{1}", "1"))'
    fa4_enable = enable.format(4, "NVTE_FLASH_ATTN_V4")
    fa2_enable = enable.format(2, "NVTE_FLASH_ATTN_V2")
    allowlist = "and device_compute_capability not in ((8, 0), (9, 0), (10, 0), (12, 0))"
    split_kv = "if use_flash_attention_4 and device_compute_capability < (10, 0):"
    assert found == {
        ("TEA001", fa4_enable),
        ("TEA101", fa4_enable),
        ("TEA002", allowlist),
        ("TEA003", split_kv),
        ("TEA004", split_kv),
        ("TEA102", fa2_enable),
    }


def test_flake8_over_the_whole_wheel_raises_nothing(release) -> None:
    root = release("2.20.2").root
    result = flake8("--jobs=2", str(root / "transformer_engine"))
    assert not result.stderr
    assert "TEA9" not in result.stdout
    reported = {row.split(":", 1)[0] for row in result.stdout.splitlines()}
    assert reported == {str(release("2.20.2").path)}


@pytest.mark.parametrize("version", ["1.12.0", "2.20.2"])
def test_slicing_changes_no_verdict(version, release) -> None:
    """Every witness run gives the same flag value with and without the slice."""
    _, module, function = parsed(release(version).path)
    prepared = selector(module, function)
    for hazard in HAZARDS:
        flag = prepared.dialect.flag(hazard.backend)
        if flag is None:
            continue
        for witness in hazard.witnesses():
            facts = witness_facts(hazard, prepared.dialect, [witness])
            results = []
            for relevant in (None, prepared.slice(frozenset((flag,)))):
                states = Interpreter(prepared.program, facts, relevant=relevant).run()
                results.append(functools.reduce(join, [s.vars[flag] for s in states]).truth)
            assert results[0] == results[1], (hazard.id, witness)


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_anchors(version, release) -> None:
    _, module, function = parsed(release(version).path)
    prepared = selector(module, function)
    dialect = prepared.dialect
    head_dim = find_anchor(prepared, "head_dim", "FA2")
    determinism = find_anchor(prepared, "determinism", "FA4")
    assert head_dim.position == "after" and isinstance(head_dim.statement, ast.If)
    allowlist = ast.unparse(head_dim.statement.test)
    assert "device_compute_capability not in" in allowlist and "192" in allowlist
    recombination = f"{dialect.flag('FA2')} = use_flash_attention and {dialect.flag('FA2')}"
    if Version(version) >= Version("2.2.0"):
        assert determinism.position == "before"
        assert ast.unparse(determinism.statement) == recombination
    else:  # no recombination: after the last determinism filter
        assert determinism.position == "after"
        assert ast.unparse(determinism.statement.test) == "use_fused_attention and deterministic"
    num_splits = find_anchor(prepared, "num_splits", "FA4")
    if Version(version) >= FIRST_FA4:  # right after TE's own FA4 split-KV filter
        assert num_splits.position == "after"
        assert ast.unparse(num_splits.statement.test) == (
            "use_flash_attention_4 and device_compute_capability < (10, 0)"
        )
