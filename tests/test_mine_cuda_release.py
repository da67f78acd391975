"""The CUDA miner on the real pair: flash-attn 2.8.3's sdist (fetched into the cache) and TE.

The acceptance criteria: on its own (TEA002 switched off) the miner finds seed 001 - the
head-dim-256 dropout backward that launches no kernel - unguarded on sm120 and guarded where
TE's FA2 head-dim allowlist already excludes the GPU; with the registry it names TEA002; TE 1.13
guards it; the analyzer and the harness agree on every verdict; and across 2.7.2.post1, 2.7.3
and 2.8.3 the case turns from a refusal into a silent no-op.
"""

from __future__ import annotations

import tomllib

import pytest

from lint_plugin.mine import history
from lint_plugin.mine.__main__ import EXIT_UNGUARDED, main
from lint_plugin.mine.candidates import matches
from lint_plugin.mine.crosscheck import DISAGREEMENT, GUARDED, UNGUARDED, Judges, crosscheck
from lint_plugin.mine.cuda.source import DISTRIBUTION, from_release
from lint_plugin.mine.declare import declarations, hazard_tables
from lint_plugin.mine.findings import UNMAPPED
from lint_plugin.mine.findings import NO_LAUNCH
from selector_patch.config import TABLE, config_from_table
from selector_patch.registry import HAZARDS
from selector_patch.sources import cache_dir
from selector_patch.verify import verify_hazard

RELEASES = ("2.7.2.post1", "2.7.3", "2.8.3")
SM = {"sm86": (8, 6), "sm89": (8, 9), "sm120": (12, 0), "sm121": (12, 1)}


@pytest.fixture(scope="module")
def mined(mined_kernel):
    """Each release mined once per test run (`mined_kernel`: 2.8.3 is judged after the codemod
    too, `test_mine_after_codemod`)."""
    return {version: mined_kernel(DISTRIBUTION, version) for version in RELEASES}


@pytest.fixture(scope="module")
def judges(release):
    return Judges(release("2.20.2"))


@pytest.fixture(scope="module")
def verdicts(mined, judges):
    return {v: crosscheck(mined[v].cases, judges, known=()) for v in RELEASES}


def seed(verdicts):
    (verdict,) = [
        v
        for v in verdicts
        if v.case.site.kind == NO_LAUNCH and v.case.site.function == "run_mha_bwd_hdim256"
    ]
    return verdict


def test_the_sdist_is_fetched_into_the_shared_cache():
    source = from_release("2.8.3")
    assert source.root == cache_dir() / "sdists" / DISTRIBUTION / "2.8.3"
    assert (source.root / "csrc" / "flash_attn" / "flash_api.cpp").is_file()
    assert [backend.role for backend in source.backends()] == ["FA2"]  # no FA3 C++ in sdists


def test_seed_001_is_unguarded_on_sm120_and_guarded_where_the_allowlist_excludes(verdicts):
    verdict = seed(verdicts["2.8.3"])
    case = verdict.case
    assert case.site.file == "csrc/flash_attn/src/flash_bwd_launch_template.h"
    assert case.site.text == "if constexpr (!Is_dropout) {...} (no else)"
    assert [str(t) for t in case.triggers] == [
        "attention_dropout > 0.0",
        "training == True",
        "padded_head_dim > 192",
        "backward == True",
    ]
    assert verdict.status == UNGUARDED
    assert verdict.by_arch == {
        SM["sm86"]: GUARDED,
        SM["sm89"]: GUARDED,
        SM["sm120"]: UNGUARDED,
        SM["sm121"]: GUARDED,
    }
    assert verdict.witness.compute_capability == (12, 0)
    shapes = {(s["head_dim_qk"], s["head_dim_v"]) for s in verdict.hazard.witness_shapes}
    assert shapes == {(256, 256), (224, 224), (192, 256)}


def test_with_the_registry_it_is_tea002(verdicts):
    assert matches(seed(verdicts["2.8.3"]).hazard, HAZARDS) == "TEA002"


def test_its_declaration_loads(verdicts):
    taken = [hazard.id for hazard in HAZARDS]
    declared = list(declarations(verdicts["2.8.3"], taken=taken).values())
    (hazard,) = [h for h in declared if h.evidence.line == seed(verdicts["2.8.3"]).case.site.line]
    table = tomllib.loads(hazard_tables([hazard]))["tool"][TABLE]
    assert config_from_table(table).hazards == (*HAZARDS, hazard)


def test_te_1_13_guards_it(mined, release):
    (case,) = [c for c in mined["2.8.3"].cases if c.site.kind == NO_LAUNCH]
    judges = Judges(release("1.13.0"))
    (verdict,) = crosscheck([case], judges, known=())
    assert verdict.status == GUARDED
    # TE 1.13 accepts flash-attn <= 2.6.3, so 2.8.3 is refused at import; with a release it
    # accepts, its head-dim allowlist (sm80 / sm90 only above 192) guards the case, while FA2
    # stays selectable for the controls around it.
    accepted = verdict.hazard.replace(kernel_version="2.6.3")
    report = verify_hazard(judges.selector, accepted)
    assert not report.reachable and report.controls.passed and not report.controls.failed


def test_analyzer_and_harness_agree_and_nothing_is_dropped(mined, verdicts):
    for version in RELEASES:
        found = verdicts[version]
        assert len(found) == len(mined[version].cases)
        assert DISAGREEMENT not in {v.status for v in found}
        for verdict in found:
            assert (verdict.status == UNMAPPED) == (verdict.case.unmapped is not None)
            assert verdict.detail
    # Every refusal of 2.8.3 is judged: its fp16/bf16 checks are `qkv_dtype` triggers now.
    assert {v.status for v in verdicts["2.8.3"]} == {GUARDED, UNGUARDED}


def test_across_releases_the_refusal_becomes_a_silent_no_op(verdicts):
    releases = [history.Release(v, verdicts[v]) for v in RELEASES]
    found = {
        (c["version"], c["change"], c["kind"], c["function"]): c for c in history.changes(releases)
    }
    appears = found["2.7.3", "appears", "no-launch", "run_mha_bwd_hdim256"]
    assert appears["after"] == "sm86, sm89, sm120, sm121"
    gone = found["2.7.3", "disappears", "refusal", "mha_bwd"]
    assert gone["words"] == (
        "FlashAttention backward for head dim > 192 with dropout requires A100/A800 or H100/H800"
    )
    assert gone["before"] == "sm86, sm87, sm89"
    assert not [key for key in found if key[0] == "2.8.3" and key[1] != "changes architectures"]


def test_the_command_says_when_a_finding_is_a_registry_hazard(capsys):
    code = main(["--te", "2.20.2", "--flash-attn", "2.8.3"])
    text = capsys.readouterr().out
    assert code == EXIT_UNGUARDED
    block = text[text.index("run_mha_bwd_hdim256") :].splitlines()
    assert block[2].strip().endswith("(= TEA002)")
    assert block[3].strip() == "per architecture: UNGUARDED on sm120; guarded on sm86, sm89, sm121"
    assert "[[tool.te-attn-guards.hazards]]" not in text  # nothing new to declare
