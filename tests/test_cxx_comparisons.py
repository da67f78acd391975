"""The C++ fused query's constants in the grid: TE 2.10's #2344 refusals and TE 2.6's #1937.

Read from the releases' own C++ (`../shared/te-cxx`): the cuDNN versions the query names, and
each refusal needing three inputs or more at once as one row of the grid that sets them all.
"""

from __future__ import annotations

from selector_patch.snapshot.cxx_comparisons import comparisons, conditions, cudnn
from selector_patch.te_cxx.locate import QUERY_FILE


def query(te_cxx, version: str) -> str:
    return (te_cxx / version / QUERY_FILE).read_text()


def test_cudnn_versions_read_as_tuples() -> None:
    assert cudnn(91400) == (9, 14, 0) and cudnn(91001) == (9, 10, 1) and cudnn(8906) == (8, 9, 6)


def test_te_2_6_names_the_cudnn_versions_it_refuses(te_cxx) -> None:
    def named(version: str) -> set:
        found = comparisons(query(te_cxx, version))
        return {c.value for c in found if c.input == "cudnn_version"}

    assert {(9, 10, 0), (9, 10, 1)} <= named("2.6.0.post1")
    assert (9, 10, 1) not in named("2.5.0")


def test_te_2_10_refusals_are_conditions_of_all_their_inputs(te_cxx) -> None:
    found = described(te_cxx, "2.10.0")
    nan = {
        "cudnn_version == (9, 14, 0)",
        "max_seqlen_kv > 1024",
        "window_size[0] != -1",
        "attn_mask_type != 'causal'",
        "attn_mask_type != 'causal_bottom_right'",
    }
    graphs = {"cudnn_version <= (9, 15, 0)", "max_seqlen_kv % 128 != 0", "cuda_graph == True"}
    assert nan in found
    assert any(graphs <= condition for condition in found)
    assert not any(graphs <= condition for condition in described(te_cxx, "2.9.0"))


def described(te_cxx, version: str) -> list[set[str]]:
    found = conditions(query(te_cxx, version))
    return [{atom.describe() for atom in condition} for condition in found]


def test_a_negated_group_of_a_support_condition_is_a_refusal(te_cxx) -> None:
    """#1960 (TE 2.6): `!((cudnn == 91100 || cudnn == 91200) && is_training && sm_arch_ == 90
    && head_dim_qk >= 128 && head_dim_v >= 128 && !(qk == 192 && v == 128) && qk != v)`: the
    first side of the `||`, and not the negated pair inside."""
    mla = {
        "cudnn_version == (9, 11, 0)", "compute_capability == (9, 0)", "head_dim_qk >= 128",
        "head_dim_v >= 128",
    }  # fmt: skip
    assert mla in described(te_cxx, "2.6.0.post1")
    assert not described(te_cxx, "2.5.0")
