"""The static analysis on every TE release 1.9.0.post1 - 2.20.2, judged by the harness.

The harness runs TE's own selector on a virtual device; the analyzer reads its AST. For every
release and hazard they must agree on applicable / reachable - a disagreement is a bug in one
of them. The issue's expectation is asserted too: TEA001 exists from 2.15.0 (the first FA4
path), TEA002 is reachable from 2.1.0 (whose FA2 head-dim > 192 allowlist admits sm120), TEA005
in 2.15.0 - 2.18.0 only (2.19.0 switches FA4 off below sm90), TEA006 and TEA007 from 2.19.0 on
(2.15.0 - 2.18.0 switch FA4 off for THD with padding between sequences).
"""

from __future__ import annotations

import ast
import functools
import itertools
import subprocess
import sys

import pytest
from packaging.version import Version

from lint_plugin.engine.absint import join
from codemods.apply import transform
from lint_plugin.engine.analysis import (
    _enabled,
    analyze_hazard,
    analyze_hazards,
    selector,
    witness_facts,
)
from lint_plugin.engine.anchors import find_anchor
from lint_plugin.engine.dialect import find_selectors
from lint_plugin.engine.interpreter import Interpreter
from lint_plugin.plugin import TeaChecker
from selector_patch.registry import HAZARDS, Hazard
from selector_patch.sources import CORPUS_RELEASES

FIRST_FA4 = Version("2.15.0")
FIRST_SM120_ALLOWLIST = Version("2.1.0")
#: TE's own FA4 filter below sm90 (2.15 - 2.18 stop at sm80): TEA005 is guarded from here on.
UPSTREAM_SM8X_FILTER = Version("2.19.0")
#: The first release keeping FA4 for THD with padding between sequences (it passes seqused).
FA4_SEQUSED = Version("2.19.0")
HD256_SEQUSED = ("TEA006", "TEA007")


@functools.lru_cache(maxsize=None)
def parsed(path) -> tuple[str, ast.Module, ast.FunctionDef]:
    text = path.read_text()
    module = ast.parse(text)
    return text, module, find_selectors(module)[0]


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_analyzer_agrees_with_harness(version, release, release_reports) -> None:
    _, module, function = parsed(release(version).path)
    verdicts = {h.id: analyze_hazard(module, function, h) for h in HAZARDS}
    for hazard_id, verdict in verdicts.items():
        report = release_reports(version)[hazard_id]
        assert (verdict.applicable, verdict.reachable) == (report.applicable, report.reachable), (
            hazard_id,
            verdict.detail,
        )
    for fa4 in ("TEA001", "TEA003", "TEA004"):
        assert (
            verdicts[fa4].applicable == verdicts[fa4].reachable == (Version(version) >= FIRST_FA4)
        )
    assert verdicts["TEA002"].reachable == (Version(version) >= FIRST_SM120_ALLOWLIST)
    assert verdicts["TEA005"].applicable == (Version(version) >= FIRST_FA4)
    assert verdicts["TEA005"].reachable == (FIRST_FA4 <= Version(version) < UPSTREAM_SM8X_FILTER)
    for hazard_id in HD256_SEQUSED:
        assert verdicts[hazard_id].applicable == (Version(version) >= FIRST_FA4)
        assert verdicts[hazard_id].reachable == (Version(version) >= FA4_SEQUSED)


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_plugin_codes_per_release(version, release) -> None:
    text, module, _ = parsed(release(version).path)
    checker = TeaChecker(module, "utils.py", text.splitlines(keepends=True))
    codes = {message.split()[0] for _, _, message, _ in checker.run()}
    assert ("TEA001" in codes) == (Version(version) >= FIRST_FA4)
    assert ("TEA002" in codes) == (Version(version) >= FIRST_SM120_ALLOWLIST)
    assert ("TEA005" in codes) == (FIRST_FA4 <= Version(version) < UPSTREAM_SM8X_FILTER)
    for hazard_id in HD256_SEQUSED:
        assert (hazard_id in codes) == (Version(version) >= FA4_SEQUSED)
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
        ("TEA006", fa4_enable),  # no filter of 2.20.2 reads pad_between_seqs for FA4
        ("TEA007", fa4_enable),
        ("TEA101", fa4_enable),
        ("TEA002", allowlist),
        ("TEA003", split_kv),
        ("TEA004", split_kv),
        ("TEA102", fa2_enable),
    }


@pytest.mark.parametrize("version", ["1.12.0", "2.1.0", "2.15.0", "2.20.2"])
def test_slicing_changes_no_verdict(version, release) -> None:
    """Every witness run gives the same flag value with and without the slice, and with the
    slice of a flash backend's runs, which never binds the other backends' flags and reads them
    as unknown (`Selector.run_slice`), and executes far fewer statements."""
    _, module, function = parsed(release(version).path)
    prepared = selector(module, function)
    for hazard in HAZARDS:
        flag = prepared.dialect.flag(hazard.backend)
        if flag is None:
            continue
        for witness in hazard.witnesses():
            facts = witness_facts(hazard, prepared.dialect, [witness])
            flash_slice, cut = prepared.run_slice(hazard.backend, facts)
            assert cut.unbound == {"use_fused_attention", "use_unfused_attention"}
            results, statements = [], []
            for relevant, known in ((None, facts), (prepared.relevant, facts), (flash_slice, cut)):
                interpreter = Interpreter(prepared.program, known, relevant=relevant)
                states = interpreter.run()
                results.append(functools.reduce(join, [s.vars[flag] for s in states]).truth)
                statements.append(interpreter.statements)
            assert results[0] == results[1] == results[2], (hazard.id, witness)
            assert statements[0] > statements[1] > statements[2], (hazard.id, witness)


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
    architecture = find_anchor(prepared, "compute_capability", "FA4")
    assert architecture.position == "after"
    if Version(version) >= FIRST_FA4:  # right after TE's own FA4 architecture filter
        assert dialect.flag("FA4") in prepared.program.body_kills(architecture.statement)
        floor = "(9, 0)" if Version(version) >= UPSTREAM_SM8X_FILTER else "(8, 0)"
        assert ast.unparse(architecture.statement.test) == f"device_compute_capability < {floor}"
    else:  # after the last architecture filter: FA3's (its sm90+ filter of its module global
        # in 1.11 - 2.1, `roles.GATED_FLAGS`), TE 1.9 / 1.10's one for all
        last = "!= (9, 0)" if Version(version) >= Version("2.2.0") else "< (9, 0)"
        if Version(version) < Version("1.11.0"):
            last = "< (8, 0)"
        assert ast.unparse(architecture.statement.test) == f"device_compute_capability {last}"


def moved_registry() -> list[Hazard]:
    """The registry, then each of its hazards moved to sm80, sm86, sm89, sm90 and sm100 as a
    hazard of its own: architectures where TE filters a backend out, and ones where it keeps it.
    """
    archs = ((8, 0), (8, 6), (8, 9), (9, 0), (10, 0))
    moved = [
        hazard.replace(id=f"TEA{10 + index:03d}", architectures=(arch,))
        for index, (arch, hazard) in enumerate(itertools.product(archs, HAZARDS))
    ]
    return [*HAZARDS, *moved]


def one_by_one(module: ast.Module, function: ast.FunctionDef, hazard: Hazard):
    """The verdict by its definition, without a strategy: every witness run alone, in order;
    the first that reaches the backend is the one reported (delegates are not needed here).
    """
    prepared = selector(module, function)
    flag = prepared.dialect.flag(hazard.backend)
    if flag is None:
        return False, None
    for witness in prepared.witnesses(hazard):
        facts = witness_facts(hazard, prepared.dialect, [witness])
        if _enabled(prepared, hazard.backend, flag, facts):
            return True, witness
    return False, None


@pytest.mark.parametrize("patch", [False, True], ids=["unpatched", "codemod"])
@pytest.mark.parametrize("version", ["1.12.0", "2.3.0", "2.17.1", "2.20.2"])
def test_the_strategy_changes_no_verdict(version, patch, release) -> None:
    """However `analyze_hazards` orders and shares its runs (joint runs across hazards, blocks
    of architectures, what it learns from earlier hazards), each verdict and the witness it
    reports are those of running every witness alone, in order: on real selectors, with the
    registry and each of its hazards moved to five other architectures beside it."""
    text = release(version).path.read_text()
    if patch:
        text = transform(text, HAZARDS)[0]
    module = ast.parse(text)
    (function,) = find_selectors(module)
    hazards = moved_registry()
    for expect_guarded in (False, True):
        verdicts = analyze_hazards(module, function, hazards, expect_guarded=expect_guarded)
        for hazard, verdict in zip(hazards, verdicts):
            expected = one_by_one(module, function, hazard)
            assert (verdict.reachable, verdict.witness) == expected, (hazard.id, expect_guarded)
