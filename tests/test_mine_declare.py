"""Candidate hazards and their declarations, on synthetic kernel modules.

A candidate must look like a registry entry (the deterministic-backward one is TEA001), and a
printed declaration must be accepted by the loader every tool uses, unchanged.
"""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path

from lint_plugin.mine.candidates import candidate, matches
from lint_plugin.mine.cute.cases import cases
from lint_plugin.mine.crosscheck import GUARDED, UNGUARDED, Verdict
from lint_plugin.mine.declare import declarations, hazard_tables
from lint_plugin.mine.cute.extract import refusals
from lint_plugin.mine.cute.kernel import KernelSource
from selector_patch.config import TABLE, config_from_table
from selector_patch.registry import HAZARDS, Hazard

KERNEL = KernelSource(Path("/site-packages"), "4.0.0b36")

MODULE = textwrap.dedent(
    """
    def _get_fwd_config(arch, num_splits):
        assert arch // 10 in [8, 9, 10, 11, 12], "Unsupported compute capability"
        if arch // 10 == 12:
            assert num_splits <= 1, "SM120 forward only supports num_splits=1"

    def _flash_attn_fwd(arch, is_split_kv):
        if arch // 10 == 9:
            assert not is_split_kv, "SplitKV not supported on SM 9.0"
        elif arch // 10 == 12:
            assert not is_split_kv, "SplitKV not supported on SM 12.0 in this PR"

    def _flash_attn_bwd(arch, deterministic):
        if arch // 10 == 12:
            assert deterministic is False, "deterministic backward not supported on SM 12.0"
    """
)


def all_cases():
    return [
        case
        for r in refusals(MODULE, "flash_attn/cute/interface.py")
        for case in cases(r, KERNEL.version)
    ]


def candidates():
    found = all_cases()
    return {case.site.line: candidate(case, found) for case in found}


def test_deterministic_backward_candidate_is_tea001():
    hazard = candidates()[15]
    assert matches(hazard, HAZARDS) == "TEA001"
    assert hazard.section == "determinism"
    assert hazard.message == (
        "Disabling FlashAttention 4 for deterministic backward on sm120, sm121: flash-attn-4"
        " refuses it (deterministic backward not supported on SM 12.0)."
    )
    evidence = hazard.evidence
    assert (evidence.file, evidence.line, evidence.affected) == (
        "flash_attn/cute/interface.py",
        15,
        ">=4.0.0b36",
    )
    assert evidence.text == (
        'assert deterministic is False, "deterministic backward not supported on SM 12.0"'
    )
    assert "branch `arch // 10 == 12`" in evidence.reference


def test_controls_switch_each_trigger_off_and_avoid_refused_architectures():
    controls = {c.name: c for c in candidates()[15].controls}
    assert controls["deterministic=False"].changes == {"deterministic": False}
    assert controls["forward only"].changes == {"backward": False}
    # sm7x refuses everything (line 3); sm8x-sm11x do not refuse deterministic backward.
    assert [name for name in controls if name.startswith("sm")] == [
        "sm80",
        "sm90",
        "sm100",
        "sm110",
    ]
    split = {c.name for c in candidates()[5].controls}
    # Split-KV is refused on sm90 too (line 9), and a forward refusal has no eval control.
    assert split == {"num_splits=1", "sm80", "sm100", "sm110"}


def verdicts(status=UNGUARDED, known=()):
    found = all_cases()
    return [
        Verdict(case, status, hazard, None, matches(hazard, known), "")
        for case in found
        if case.unmapped is None
        for hazard in [candidate(case, found)]
    ]


def test_declarations_take_free_ids_and_merge_refusals_of_one_hazard():
    declared = declarations(verdicts(), taken={"TEA001", "TEA002", "TEA004"})
    hazards = list(declared.values())
    assert [h.id for h in hazards] == ["TEA003", "TEA005", "TEA006", "TEA007"]
    split_sm12x = next(h for h in hazards if h.evidence.line == 5)
    assert split_sm12x.evidence.reference.endswith("; also flash_attn/cute/interface.py:11")


def test_known_and_guarded_hazards_are_not_declared():
    assert declarations(verdicts(GUARDED), taken=()) == {}
    declared = declarations(verdicts(known=HAZARDS), taken=())
    assert all(h.evidence.line != 15 for h in declared.values())


def test_declarations_load_unchanged_through_the_config_loader():
    declared = list(declarations(verdicts(), taken=[h.id for h in HAZARDS]).values())
    document = tomllib.loads(hazard_tables(declared))
    config = config_from_table(document["tool"][TABLE])
    assert config.hazards == (*HAZARDS, *declared)


def test_toml_values_that_need_quoting_survive():
    hazard = candidates()[15]
    hazard = Hazard.from_mapping(
        {**hazard.to_mapping(), "id": "TEA042", "title": 'a "quoted" title\twith a tab'}
    )
    (loaded,) = tomllib.loads(hazard_tables([hazard]))["tool"][TABLE]["hazards"]
    assert Hazard.from_mapping(loaded) == hazard
