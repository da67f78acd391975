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
    (case,) = mine("if arch // 10 == 12:\n    assert page_table is None, 'paged KV'\n")
    paged = next(f for f in FEATURES if "page_table" in f.values)
    assert case.labels == (paged.label,) and case.unmapped == f"needs {paged.label}: {paged.why}"


def test_fp8_is_the_fp8_qkv_dtype():
    (case,) = mine("if arch // 10 == 12:\n    assert not is_fp8, 'FP8'\n")
    assert case.triggers == (Condition("qkv_dtype", "==", "float8_e4m3fn"),)
    assert case.unmapped is None


def test_test_on_variables_outside_the_table_is_unmapped_naming_them():
    (case,) = mine(
        "if arch // 10 == 9:\n    assert head_dim <= 256 and is_sm90_range, 'head dim'\n"
    )
    assert case.unmapped == (
        "its test reads `is_sm90_range`, which the feature table does not cover"
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


def test_head_dims_are_judged_per_dim_in_runs_of_padded_head_dim_bounds():
    """`_validate_head_dims`: the head dims and `alignment` (16 // the plain dtype's size) are
    bound per dim; where it fires becomes runs, each a pair of `padded_head_dim` bounds."""
    code = textwrap.dedent(
        """
        def _validate_head_dims(head_dim, head_dim_v, arch, alignment):
            is_sm90_range = 8 <= head_dim <= 256 and 8 <= head_dim_v <= 256
            is_standard = 8 <= head_dim <= 128 and 8 <= head_dim_v <= 128
            is_hd256 = head_dim == 256 and head_dim_v == 256
            if arch // 10 == 9:
                assert is_sm90_range and head_dim % alignment == 0, "not on SM90"
            elif arch // 10 == 10:
                assert (is_standard or is_hd256) and head_dim_v % alignment == 0, "not on SM100"
        """
    )
    found = [
        case
        for refusal in refusals(code, "flash_attn/cute/interface.py")
        for case in cases(refusal, "4.0.0b36")
    ]
    bounds = {
        (case.architectures, case.triggers, tuple(map(tuple, map(dict.items, case.witness_shapes))))
        for case in found
    }
    above = lambda low: Condition("padded_head_dim", ">", low)  # noqa: E731
    at_most = lambda high: Condition("padded_head_dim", "<=", high)  # noqa: E731
    sm90 = ((9, 0),)
    sm10x = ((10, 0), (10, 3))
    assert {(archs, triggers) for archs, triggers, _ in bounds} == {
        (sm90, (above(256),)),
        (sm10x, (above(128), at_most(248))),
        (sm10x, (above(256),)),
    }
    assert all(case.unmapped is None for case in found)
    shapes = {triggers: witness for _, triggers, witness in bounds}
    assert shapes[(above(256),)][0] == (("head_dim_qk", 512), ("head_dim_v", 512))
