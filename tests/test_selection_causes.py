"""Why a pick changed: the explaining TE line, the cause it names, and its class with a reason.

Outcomes are written here as TE logs them (lines from TE 2.17.1 / 2.18.0 / 2.10.0), so each
rule is checked on TE's own words without running a selector.
"""

from __future__ import annotations

import pytest

from selector_patch.selection_diff.causes import OFF, ON, SILENT, explain, key_of
from selector_patch.selection_diff.classify import FIX, POLICY, REGRESSION, classify
from selector_patch.selection_diff.grouping import group, tally
from selector_patch.snapshot.outcome import Outcome, Pick

FA4 = Pick("FlashAttention", "FA4", "4.0.0b24", ("FlashAttention", "FusedAttention"))
FA2 = Pick("FlashAttention", "FA2", "2.8.3", ("FlashAttention", "FusedAttention"))
FUSED = Pick("FusedAttention", available=("FusedAttention",), fused="F16_arbitrary_seqlen")
UNFUSED = Pick("UnfusedDotProductAttention", available=("UnfusedDotProductAttention",))
SELECTED = "Selected backend = FlashAttention (4.0.0b24)."
V4_SWITCH = "Disabling FlashAttention 4 due to NVTE_FLASH_ATTN=0 or NVTE_FLASH_ATTN_V4=0"
V2_SWITCH = "Disabling FlashAttention 2 due to NVTE_FLASH_ATTN=0 or NVTE_FLASH_ATTN_V2=0"
SM100_HD256 = (
    "Disabling FlashAttention 4 as SM100 head_dim=256 does not support sliding-window/local"
    " attention yet. Found: window_size = (0, 0)."
)
CUDNN_NAN = (
    "Warning: Given combination of attention mask (non-causal) and max_seqlen_kv (> 1024) does"
    " not support fused attention for cuDNN 9.14.0.  Please upgrade your cuDNN version if"
    " possible."
)
FUSED_GENERIC = "Disabling FusedAttention as no backend supports the provided input"


def test_a_backend_switched_off_is_explained_by_the_line_only_side_b_logged() -> None:
    a = Outcome(FA4, ("Disabling FlashAttention 3 for compute capability != sm90", SELECTED))
    b = Outcome(FA2, (V4_SWITCH, "Disabling FlashAttention 3 for compute capability != sm90"))
    found = explain(a, b)
    assert (found.line, found.side, found.direction) == (V4_SWITCH, "b", OFF)
    assert found.backend == "FlashAttention 4"


def test_the_line_naming_side_as_pick_wins_over_other_new_lines() -> None:
    found = explain(Outcome(FA2, ()), Outcome(UNFUSED, (V4_SWITCH, V2_SWITCH)))
    assert found.line == V2_SWITCH


def test_a_backend_switched_on_is_explained_by_the_line_side_a_no_longer_logs() -> None:
    found = explain(Outcome(UNFUSED, (SM100_HD256,)), Outcome(FA4, ()))
    assert (found.line, found.side, found.direction) == (SM100_HD256, "a", ON)


def test_a_cxx_warning_explains_fused_attention_better_than_the_generic_line() -> None:
    found = explain(Outcome(FUSED, ()), Outcome(UNFUSED, (FUSED_GENERIC, CUDNN_NAN)))
    assert found.line == CUDNN_NAN and found.backend == "FusedAttention"


def test_a_change_no_line_explains_is_silent() -> None:
    found = explain(Outcome(FA4, (SELECTED,)), Outcome(FA2, ()))
    assert found.line == SILENT and classify(found).kind == POLICY


def test_one_rule_stated_per_flash_attention_version_is_one_cause() -> None:
    assert key_of(V4_SWITCH) == key_of(V2_SWITCH)
    assert key_of(SM100_HD256) == key_of(SM100_HD256.replace("(0, 0)", "(8, 8)"))
    assert key_of(SM100_HD256) != key_of(V4_SWITCH)


@pytest.mark.parametrize(
    "line, direction, kind",
    [
        (V4_SWITCH, OFF, POLICY),
        ("Disabling FlashAttention 4 to prefer FlashAttention 3 on SM90", ON, POLICY),
        (CUDNN_NAN, OFF, FIX),
        (CUDNN_NAN, ON, REGRESSION),
        ("Disabling FusedAttention for KV caching for sm89 due to known issues", OFF, FIX),
        (SM100_HD256, OFF, FIX),
        (SM100_HD256, ON, POLICY),
    ],
)
def test_each_change_is_classified_with_its_reason(line, direction, kind) -> None:
    backend = "FusedAttention" if "Fused" in line or "cuDNN" in line else "FlashAttention 4"
    verdict = classify(explain_line(line, direction, backend))
    assert verdict.kind == kind
    assert backend in verdict.reason


def test_a_case_an_earlier_fix_closed_reopened_is_a_regression_whatever_it_says() -> None:
    reopened = explain_line(SM100_HD256, ON, "FlashAttention 4")
    verdict = classify(reopened, reopens="2.18.0's fix")
    assert verdict == (REGRESSION, "re-opens 2.18.0's fix")


def explain_line(line: str, direction: str, backend: str):
    from selector_patch.selection_diff.causes import Explanation

    return Explanation(line, key_of(line), "b" if direction == OFF else "a", direction, backend)


def test_regions_are_grouped_by_cause_fixes_first_with_their_numbers() -> None:
    def difference(line: str, direction: str, count: int) -> dict:
        found = explain_line(line, direction, "FlashAttention 4")
        return {
            "explanation": found._asdict(),
            "configurations": count,
            "hazards": [],
            "conditions": ["training"],
        }

    regrouped, causes = group(
        [
            difference(V4_SWITCH, OFF, 50),
            difference(SM100_HD256, OFF, 3),
            difference(V2_SWITCH, OFF, 7),
        ]
    )
    assert [c["class"] for c in causes] == [FIX, POLICY]
    assert causes[0]["regions"] == [1] and causes[1]["regions"] == [2, 3]
    assert causes[1]["configurations"] == 57
    assert [d["cause"] for d in regrouped] == [1, 2, 2]
    assert tally(causes) == "2 causes: 1 fix, 1 policy"


def test_a_generic_fused_refusal_is_one_cause_per_input_its_regions_state() -> None:
    def difference(conditions: list[str]) -> dict:
        found = explain_line(FUSED_GENERIC, OFF, "FusedAttention")
        return {
            "explanation": found._asdict(),
            "configurations": 1,
            "hazards": [],
            "conditions": conditions,
        }

    _regrouped, causes = group(
        [
            difference(["training", "(9, 10, 0) <= cudnn_version <= (9, 10, 1)"]),
            difference(["core_attention_bias_type='alibi'", "NVTE_FUSED_ATTN unset"]),
            difference(["cudnn_version=(9, 10, 0)"]),
        ]
    )
    assert [c["cause"] for c in causes] == [
        f"{FUSED_GENERIC} [cudnn_version]",
        f"{FUSED_GENERIC} [core_attention_bias_type]",
    ]
