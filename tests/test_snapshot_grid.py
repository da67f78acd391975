"""The grid a snapshot asks, derived from the selector: its comparisons, values and rows.

Small selectors written here pin each reading rule (fixit style: each example beside what it
must give); real releases pin that the grid carries their constants, on both sides, with the
derivation recorded.
"""

from __future__ import annotations

import ast
import itertools
import textwrap

import pytest

from selector_patch.snapshot.comparisons import Comparison, Expression, read
from selector_patch.snapshot.covering import pair_rows, singles_of
from selector_patch.snapshot.grid import BUILT
from selector_patch.snapshot.values import categorical_values, holds, ordered_values


def comparisons_of(body: str, **options) -> set[str]:
    source = "def get_attention_backend(attention_params):\n" + textwrap.indent(
        textwrap.dedent(body), "    "
    )
    reading = read(ast.parse(source), params_dialect=True, **options)
    return {comparison.describe() for comparison in reading.comparisons}


#: (selector body, the comparisons it must be read as)
READINGS = [
    # a field, read directly and through the local TE binds it to
    ("if attention_params.head_dim_qk > 192: pass", {"head_dim_qk > 192"}),
    (
        "head_dim_qk = attention_params.head_dim_qk\nif 128 < head_dim_qk: pass",
        {"head_dim_qk > 128"},
    ),
    # a chain is two comparisons; a flipped operand flips the operator
    (
        "d = attention_params.head_dim_v\nif 96 < d <= 128: pass",
        {"head_dim_v > 96", "head_dim_v <= 128"},
    ),
    # TE's padded head dim bounds both head dims; a residue and an element are their own kinds
    (
        "p = max(attention_params.head_dim_qk, attention_params.head_dim_v)\n"
        "if p % 8 != 0 or p > 256: pass",
        {"head_dim_qk % 8 != 0", "head_dim_v % 8 != 0", "head_dim_qk > 256", "head_dim_v > 256"},
    ),
    ("w = attention_params.window_size\nif w[0] != -1: pass", {"window_size[0] != -1"}),
    # hardware queries and NVTE_* variables
    (
        "cc = get_device_compute_capability()\nif cc < (9, 0): pass",
        {"compute_capability < (9, 0)"},
    ),
    (
        "if os.environ.get('NVTE_UnfusedDPA_Emulate_FP8', '0') == '1': pass",
        {"NVTE_UnfusedDPA_Emulate_FP8 == '1'"},
    ),
    # membership in a list of named constants; a substring test of a string input
    (
        "dtype = attention_params.qkv_dtype\nif dtype not in [torch.bfloat16, torch.float16]: pass",
        {"qkv_dtype not in (torch.bfloat16, torch.float16)"},
    ),
    ("m = attention_params.attn_mask_type\nif 'causal' in m: pass", {"'causal' in attn_mask_type"}),
    # not an input, or not a constant: nothing
    ("x = compute()\nif x > 3: pass", set()),
    (
        "a = attention_params.max_seqlen_q\nb = attention_params.max_seqlen_kv\nif a > b: pass",
        set(),
    ),
]


@pytest.mark.parametrize("body, expected", READINGS)
def test_comparisons_are_read_off_the_selector(body, expected) -> None:
    assert comparisons_of(body) == expected


def test_module_constants_and_named_inputs() -> None:
    source = textwrap.dedent(
        """
        LIMIT = 7
        def get_attention_backend(attention_params):
            if attention_params.num_splits != LIMIT:
                pass
            if FlashAttentionUtils.fa4_version < PkgVersion("4.0.0b36"):
                pass
        """
    )
    named = {"FlashAttentionUtils.fa4_version": "flash_attn_4"}
    found = read(ast.parse(source), params_dialect=True, named=named)
    assert {c.describe() for c in found.comparisons} == {
        "num_splits != 7",
        "flash_attn_4 < '4.0.0b36'",
    }


def test_env_reads_stored_only_for_the_log_are_no_input() -> None:
    source = textwrap.dedent(
        """
        def get_attention_backend(attention_params):
            run_config = {}
            run_config["NVTE_FP8_DPA_BWD"] = int(os.getenv("NVTE_FP8_DPA_BWD", "1"))
            use_fused_attention = int(os.environ.get("NVTE_FUSED_ATTN", "1"))
            if use_fused_attention and attention_params.deterministic:
                pass
        """
    )
    found = read(ast.parse(source), params_dialect=True)
    assert found.env == {"NVTE_FUSED_ATTN": "1"}
    assert "deterministic" in found.truth_tested


def test_inputs_that_meet_in_one_condition_are_paired() -> None:
    source = textwrap.dedent(
        """
        def get_attention_backend(attention_params):
            head_dim = max(attention_params.head_dim_qk, attention_params.head_dim_v)
            if head_dim > 192 and attention_params.attention_dropout > 0:
                pass
            if attention_params.softcap != 0.0:
                pass
        """
    )
    pairs = {pair for pair, _ in read(ast.parse(source), params_dialect=True).together}
    assert pairs == {
        ("attention_dropout", "head_dim_qk"),
        ("attention_dropout", "head_dim_v"),
        ("head_dim_qk", "head_dim_v"),
    }


def test_a_kv_cache_meets_every_input_of_te_s_kv_cache_section() -> None:
    """TE 2.4's sm89 filter is `cudnn_version < (9, 11, 0)` nested in `if inference_params is
    not None:`: with the cache a block input the two meet, an input outside the block does not,
    and without it they are two separate conditions."""
    source = textwrap.dedent(
        """
        def get_attention_backend(attention_params):
            inference_params = attention_params.inference_params
            cudnn_version = get_cudnn_version()
            if inference_params is not None:
                if attention_params.context_parallel:
                    pass
                if cudnn_version < (9, 11, 0):
                    pass
            if attention_params.softcap != 0.0:
                pass
        """
    )
    tree = ast.parse(source)
    blocked = {pair for pair, _ in read(tree, params_dialect=True, blocks=BUILT).together}
    assert blocked == {
        ("context_parallel", "inference_params"), ("cudnn_version", "inference_params"),
    }  # fmt: skip
    assert read(tree, params_dialect=True).together == ()


def test_the_keyword_dialect_reads_parameters_as_inputs() -> None:
    source = (
        "def get_attention_backend(head_dim=64, deterministic=False):\n"
        "    if head_dim > 192: pass\n"
    )
    found = read(ast.parse(source), params_dialect=False)
    assert [c.describe() for c in found.comparisons] == ["head_dim > 192"]


def cut(input: str, op: str, value) -> Comparison:
    return Comparison(input, op, value, 1, "")


#: (default, comparisons, values besides the default): one value per cell the constants cut.
ORDERED = [
    # both sides of a threshold: 192 is below the cut of `> 192`, one step above it is not
    (128, [cut("d", ">", 192)], (193,)),
    # a residue test keeps the step aligned, and adds a value off the alignment
    (128, [cut("d", ">", 192), Comparison("d", "!=", 0, 1, "", modulus=8)], (129, 200)),
    # an equality is a cell of its own; the cell above it gets a value too
    (128, [cut("d", "==", 256), Comparison("d", "!=", 0, 1, "", modulus=8)], (129, 256, 264)),
    # `>=` puts the constant in the upper cell
    (128, [cut("d", ">=", 256)], (256,)),
    # inputs that are never negative get no negative value
    (1, [cut("n", "!=", 1)], (0, 2)),
    # versions: the last component steps
    ((9, 10, 0), [cut("v", "<", (9, 18, 1))], ((9, 18, 1),)),
    ((9, 10, 0), [cut("v", "in", ((9, 23, 0), (9, 23, 1)))], ((9, 23, 0), (9, 23, 1), (9, 23, 2))),
    # floats step by a tenth
    (0.0, [cut("p", "!=", 0.0)], (0.1,)),
]


@pytest.mark.parametrize("default, comparisons, expected", ORDERED)
def test_ordered_values_cover_each_cell(default, comparisons, expected) -> None:
    values = ordered_values(default, comparisons)
    assert values.levels == expected
    everything = (default, *values.levels)
    for comparison in comparisons:
        answers = {holds(comparison, value) for value in everything}
        assert answers == {True, False}, comparison.describe()


def test_a_second_selectors_threshold_is_in_the_union_on_both_sides() -> None:
    """`x > 192` in one selector, `x > 256` in another: the union's values put x on both sides
    of each, with a value where the two answer differently."""
    first, second = cut("d", ">", 192), cut("d", ">", 256)
    values = (128, *ordered_values(128, [first, second]).levels)
    for comparison in (first, second):
        assert {holds(comparison, value) for value in values} == {True, False}
    assert any(holds(first, value) != holds(second, value) for value in values)
    assert 256 in values  # the second's own boundary value, which the first alone lacks
    assert 256 not in ordered_values(128, [first]).levels


def test_unordered_values_are_the_constants_and_one_sided_ones_are_said() -> None:
    values = categorical_values(
        "causal", [cut("m", "==", "arbitrary"), cut("m", "in", ("padding",))], False
    )
    assert values.levels == ("arbitrary", "padding") and values.one_sided == ()
    lonely = categorical_values("vanilla", [cut("s", "!=", "vanilla")], False)
    assert lonely.levels == () and lonely.one_sided == ("s != 'vanilla'",)
    named = categorical_values(
        Expression("torch.bfloat16"),
        [cut("t", "not in", (Expression("torch.bfloat16"), Expression("torch.float16")))],
        False,
    )
    assert named.levels == (Expression("torch.float16"),)


def test_rows_hold_each_value_alone_and_each_pair_of_values_of_paired_inputs() -> None:
    sizes = [3, 2, 4]
    singles = singles_of(sizes)
    assert singles[0] == (0, 0, 0)
    assert all(sum(1 for level in row if level) == 1 for row in singles[1:])
    assert {(i, row[i]) for row in singles[1:] for i in range(3) if row[i]} == {
        (i, level) for i, size in enumerate(sizes) for level in range(1, size)
    }
    pairs = pair_rows(sizes, [(2, 0)])
    assert sorted((row[0], row[2]) for row in pairs) == list(
        itertools.product(range(1, 3), range(1, 4))
    )
    assert all(row[1] == 0 for row in pairs)  # at most two inputs off their default
