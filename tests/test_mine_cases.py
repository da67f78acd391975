"""Refusals in selector terms: the feature table decides polarity by evaluation, not spelling."""

from __future__ import annotations

import textwrap

from lint_plugin.mine.cute.cases import cases
from lint_plugin.mine.cute.extract import refusals
from lint_plugin.mine.cute.features import FEATURES
from selector_patch.scenario import Condition

SM12X = ((12, 0), (12, 1))


def mine(body: str, function: str = "_flash_attn_fwd"):
    """The cases of the one refusal in `body`, the body of a kernel function."""
    code = f"def {function}(arch):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    (refusal,) = refusals(code, "flash_attn/cute/interface.py")
    return cases(refusal, "4.0.0b36")


def summary(found):
    return [(case.architectures, list(case.labels), case.triggers, case.unmapped) for case in found]


def test_deterministic_backward():
    found = mine(
        """
        if arch // 10 == 12:
            assert deterministic is False, "deterministic backward not supported on SM 12.0"
        """,
        function="_flash_attn_bwd",
    )
    assert summary(found) == [
        (
            SM12X,
            ["deterministic"],
            (Condition("deterministic", "==", True), Condition("backward", "==", True)),
            None,
        )
    ]


def test_spellings_of_split_kv_all_mean_num_splits_above_one():
    for test in ("not is_split_kv", "num_splits <= 1", "not (num_splits > 1)"):
        found = mine(f"if arch // 10 == 12:\n    assert {test}, 'no split-KV'\n")
        assert summary(found) == [(SM12X, ["split-KV"], (Condition("num_splits", ">", 1),), None)]


def test_polarity_comes_from_evaluation():
    # Refuses when determinism is *off*: the plain call already trips it.
    found = mine(
        """
        if arch // 10 == 12:
            if not deterministic:
                raise ValueError("needs determinism")
        """
    )
    assert summary(found) == [(SM12X, [], (), None)]


def test_two_variables_of_one_feature_make_one_trigger():
    found = mine(
        """
        if arch // 10 == 12:
            assert score_mod is None and score_mod_bwd is None, "score_mod backward"
        """,
        function="_flash_attn_bwd",
    )
    assert summary(found) == [
        (
            SM12X,
            ["score_mod"],
            (Condition("has_score_mod", "==", True), Condition("backward", "==", True)),
            None,
        )
    ]


def test_feature_the_vocabulary_cannot_say_is_unmapped_with_the_row_reason():
    (case,) = mine("if arch // 10 == 12:\n    assert not is_fp8, 'FP8'\n")
    fp8 = next(f for f in FEATURES if "is_fp8" in f.values)
    assert case.labels == (fp8.label,) and case.unmapped == f"needs FP8 inputs: {fp8.why}"


def test_test_on_variables_outside_the_table_is_unmapped_naming_them():
    (case,) = mine(
        "if arch // 10 == 9:\n    assert head_dim <= 256 and is_sm90_range, 'head dim'\n"
    )
    assert case.unmapped == (
        "its test reads `head_dim`, `is_sm90_range`, which the feature table does not cover"
    )


def test_unknown_names_on_the_outer_path_only_mean_some_call_gets_there():
    found = mine(
        """
        if compile_key not in _flash_attn_fwd.compile_cache:
            if arch // 10 == 12:
                assert not is_split_kv, "SplitKV not supported on SM 12.0"
        """
    )
    assert summary(found) == [(SM12X, ["split-KV"], (Condition("num_splits", ">", 1),), None)]


def test_architecture_alone():
    found = mine('assert arch // 10 in [8, 9, 10, 11, 12], "Unsupported compute capability"\n')
    assert summary(found) == [(((7, 0), (7, 5)), [], (), None)]


def test_a_refusal_that_needs_two_features():
    (case,) = mine(
        """
        if learnable_sink is not None and deterministic:
            assert arch // 10 != 12, "no deterministic sink on SM 12.x"
        """
    )
    assert set(case.labels) == {"deterministic", "learnable softmax sink"}
    assert set(case.triggers) == {
        Condition("deterministic", "==", True),
        Condition("softmax_type", "==", "learnable"),
    }


def test_architectures_with_different_triggers_are_different_cases():
    found = mine(
        """
        if arch // 10 == 12 or (arch // 10 == 9 and deterministic):
            raise NotImplementedError("no")
        """
    )
    assert summary(found) == [
        (((9, 0),), ["deterministic"], (Condition("deterministic", "==", True),), None),
        (SM12X, [], (), None),
    ]
