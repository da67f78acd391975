"""The miner on the real pair: flash-attn-4 4.0.0b36 (fetched into the cache) against TE 2.20.2.

The acceptance criteria of the miner: on its own (registry entry switched off) it finds the
SM 12.x deterministic-backward refusal as UNGUARDED, reports it guarded once the codemod has
run, and the analyzer and the harness agree on every verdict.
"""

from __future__ import annotations

import json
import tomllib

import pytest

from codemods.apply import transform
from lint_plugin.mine.__main__ import EXIT_UNGUARDED, main
from lint_plugin.mine.crosscheck import DISAGREEMENT, GUARDED, UNGUARDED, Judges, crosscheck
from lint_plugin.mine.declare import declarations, hazard_tables
from lint_plugin.mine.cute.kernel import DISTRIBUTION, from_release
from lint_plugin.mine.findings import INTERNAL, UNREACHABLE
from selector_patch.config import TABLE, config_from_table
from selector_patch.registry import HAZARDS
from selector_patch.sources import cache_dir, read_text

FA4 = "4.0.0b36"
TE = "2.20.2"
DETERMINISTIC = "deterministic backward not supported on SM 12.0"


@pytest.fixture(scope="module")
def kernel():
    return from_release(FA4)


@pytest.fixture(scope="module")
def te(release):
    return release(TE)


@pytest.fixture(scope="module")
def found(mined_kernel):
    """The kernel's cases through TE's calls, mined once per test run (`mined_kernel`)."""
    return mined_kernel(DISTRIBUTION, FA4, TE)


@pytest.fixture(scope="module")
def verdicts(kernel, found, te):
    return crosscheck(found, Judges(te), known=())


def deterministic(verdicts):
    (verdict,) = [v for v in verdicts if v.case.site.message == DETERMINISTIC]
    return verdict


def test_wheel_is_fetched_into_the_shared_cache(kernel):
    assert kernel.root == cache_dir() / "wheels" / DISTRIBUTION / FA4
    assert kernel.version == FA4
    assert (kernel.package / "interface.py").is_file()


def test_finds_the_deterministic_backward_refusal_on_its_own(capsys):
    code = main(["--te", TE, "--flash-attn-4", FA4, "--json", "--skip-hazard", "TEA001"])
    report = json.loads(capsys.readouterr().out)
    assert code == EXIT_UNGUARDED
    (verdict,) = [v for v in report["verdicts"] if v["message"] == DETERMINISTIC]
    assert verdict["status"] == UNGUARDED and verdict["matches"] is None
    assert verdict["file"] == "flash_attn/cute/interface.py"
    assert verdict["function"] == "_flash_attn_bwd" and verdict["direction"] == "backward"
    assert verdict["text"] == f'assert deterministic is False, "{DETERMINISTIC}"'
    assert verdict["architectures"] == [[12, 0], [12, 1]]
    assert verdict["triggers"] == ["deterministic == True", "backward == True"]
    witness = verdict["witness"]
    assert witness["compute_capability"] == [12, 0] and witness["deterministic"] is True
    declaration = verdict["declaration"]
    assert declaration["id"] not in {hazard.id for hazard in HAZARDS}
    assert declaration["architectures"] == [[12, 0], [12, 1]]


def test_says_when_a_finding_is_a_registry_hazard(capsys):
    code = main(["--te", TE, "--flash-attn-4", FA4])
    text = capsys.readouterr().out
    assert code == EXIT_UNGUARDED
    block = text[text.index(DETERMINISTIC) :]
    assert (
        block.splitlines()[1].strip()
        == "when: deterministic == True and backward == True  (= TEA001)"
    )
    # Known to the registry: nothing new to declare for it.
    assert f"({DETERMINISTIC})" not in text


def test_analyzer_and_harness_agree_on_every_verdict(verdicts):
    statuses = [v.status for v in verdicts]
    assert DISAGREEMENT not in statuses, [v.detail for v in verdicts if v.status == DISAGREEMENT]
    # Agreement is not vacuous: both judges had guarded and unguarded candidates to decide.
    assert {GUARDED, UNGUARDED} <= set(statuses)


def test_every_refusal_has_a_verdict_and_every_unjudged_one_its_class_and_a_reason(found, verdicts):
    assert len(verdicts) == len(found)
    for verdict in verdicts:
        judged = verdict.case.unmapped is None
        assert judged or verdict.status == verdict.case.standing
        assert verdict.detail
    assert {UNREACHABLE, INTERNAL} <= {v.status for v in verdicts}


def test_guarded_once_the_codemod_has_run(kernel, found, te, verdicts):
    """After the codemod nothing the miner finds is UNGUARDED: the deterministic backward
    (TEA001) and the split-KV forward (TEA003) refusals are both guarded."""
    patched, statuses = transform(read_text(te.path), HAZARDS)
    assert statuses["TEA001"] == statuses["TEA003"] == "inserted"
    after = crosscheck(found, Judges(te, text=patched), known=HAZARDS)
    assert deterministic(after).status == GUARDED
    assert UNGUARDED not in {v.status for v in after}
    assert {"TEA001", "TEA003"} <= {v.matches for v in after}
    for before, now in zip(verdicts, after):
        if before.status == GUARDED:
            assert now.status == GUARDED


def test_declared_hazards_load_and_the_codemod_guards_them(kernel, found, te, verdicts):
    declared = list(declarations(verdicts, taken=[h.id for h in HAZARDS]).values())
    assert declared
    table = tomllib.loads(hazard_tables(declared))["tool"][TABLE]
    config = config_from_table(table)
    assert config.hazards == (*HAZARDS, *declared)
    patched, statuses = transform(read_text(te.path), config.hazards)
    # A declaration that repeats a registry hazard (TEA001 here: `verdicts` were judged without
    # the registry) is covered by the registry guard instead of getting a second copy.
    assert set(statuses.values()) == {"inserted", "already-guarded"}, statuses
    after = crosscheck(found, Judges(te, text=patched), known=config.hazards)
    assert UNGUARDED not in {v.status for v in after}
