"""TE's C++ fused-attention query: found, compiled and called as TE calls it, or refused in one line.

The query's answers here are TE's own, checked against what its source says for each case (the
comments quote the branch). Broken trees, a missing compiler and a misnamed directory are each
one line naming the file and the cause, exit status 2 from the command line.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from selector_patch.harness import LoadError, load_selector
from selector_patch.harness.device import Machine, VirtualDevice
from selector_patch.harness.extension import EnumMember, extension_module
from selector_patch.scenario import Scenario
from selector_patch.te_cxx import TE_CXX_VARIABLE, CxxError, configured_trees, locate
from selector_patch.te_cxx.query import QueryFailure, load
from selector_patch.te_cxx.translation_unit import build

REPO = Path(__file__).resolve().parents[1]
FUSED_ATTN = Path("transformer_engine/common/fused_attn/fused_attn.cpp")


def _arguments(query, **changes):
    """TE 2.18's query arguments for a BF16 BSHD causal call, by the parameters' names."""
    enums = query.enums
    values = {
        "is_training": True,
        "q_dtype": enums["DType"]["kBFloat16"],
        "kv_dtype": enums["DType"]["kBFloat16"],
        "qkv_layout": enums["NVTE_QKV_Layout"]["NVTE_BSHD_BSHD_BSHD"],
        "bias_type": enums["NVTE_Bias_Type"]["NVTE_NO_BIAS"],
        "attn_mask_type": enums["NVTE_Mask_Type"]["NVTE_CAUSAL_MASK"],
        "softmax_type": enums["NVTE_Softmax_Type"]["NVTE_VANILLA_SOFTMAX"],
        "p_dropout": 0.0,
        "num_attn_heads": 8,
        "num_gqa_groups": 8,
        "max_seqlen_q": 128,
        "max_seqlen_kv": 128,
        "head_dim_qk": 128,
        "head_dim_v": 128,
        "window_size_left": -1,
        "window_size_right": 0,
        "return_max_logit": False,
        "cuda_graph": False,
        "deterministic": False,
        **changes,
    }
    return [values[parameter.name] for parameter in query.parameters]


def _unset(_name: str) -> None:
    return None


def test_the_query_answers_as_its_source_says(te_cxx):
    query = load(te_cxx / "2.18.0")
    backends = query.enums["NVTE_Fused_Attn_Backend"]
    # sm120 + deterministic + is_training: "Deterministic fused attention on SM120 is not supported."
    value, printed = query(120, 91801, _unset, _arguments(query, deterministic=True))
    assert value == backends["NVTE_No_Backend"]
    assert printed == ("Warning: Deterministic fused attention on SM120 is not supported.",)
    assert query(120, 91801, _unset, _arguments(query)) == (
        backends["NVTE_F16_arbitrary_seqlen"],
        (),
    )
    # "9.10.0/9.10.1: known bugs with SDPA F16"
    assert query(90, 91000, _unset, _arguments(query))[0] == backends["NVTE_No_Backend"]
    assert query(90, 91801, _unset, _arguments(query))[0] == backends["NVTE_F16_arbitrary_seqlen"]
    # sm100 deterministic training needs 9.18.1+, no dropout, no bias
    deterministic = _arguments(query, deterministic=True)
    assert query(100, 91700, _unset, deterministic)[0] == backends["NVTE_No_Backend"]
    assert query(100, 91801, _unset, deterministic)[0] == backends["NVTE_F16_arbitrary_seqlen"]
    with_dropout = _arguments(query, deterministic=True, p_dropout=0.1)
    assert query(100, 91801, _unset, with_dropout)[0] == backends["NVTE_No_Backend"]


def test_an_nvte_check_comes_back_as_tes_message(te_cxx):
    query = load(te_cxx / "2.18.0")
    fp16 = query.enums["DType"]["kFloat16"]
    with pytest.raises(QueryFailure, match="Q and KV must have the same data type"):
        query(90, 91801, _unset, _arguments(query, kv_dtype=fp16))


def test_the_query_reads_the_environment_the_call_sees(te_cxx):
    """TE <= 2.15 let NVTE_FUSED_ATTN_BACKEND pick the max512 sub-backend where it applies."""
    query = load(te_cxx / "2.1.0")
    enums = query.enums
    arguments = [
        enums["NVTEDType"]["kNVTEBFloat16"] if p.kind == "enum" and p.enum == "DType" else value
        for p, value in zip(
            query.parameters,
            [
                None,
                None,
                enums["NVTE_QKV_Layout"]["NVTE_BS3HD"],
                enums["NVTE_Bias_Type"]["NVTE_NO_BIAS"],
                enums["NVTE_Mask_Type"]["NVTE_CAUSAL_MASK"],
                0.0,
                8,
                8,
                128,
                128,
                64,
                64,
                -1,
                0,
            ],
        )
    ]
    backends = enums["NVTE_Fused_Attn_Backend"]
    default = query(90, 90100, _unset, arguments)[0]
    chosen = query(90, 90100, {"NVTE_FUSED_ATTN_BACKEND": "0"}.get, arguments)[0]
    assert default == backends["NVTE_F16_arbitrary_seqlen"]
    assert chosen == backends["NVTE_F16_max512_seqlen"]


def test_what_tes_cxx_prints_joins_the_selection_log(te_cxx, release):
    selection = load_selector(release("2.18.0")).select(
        Scenario(compute_capability=(12, 0), cudnn_version=(9, 14, 0))
    )
    assert (
        "Warning: Given combination of sm_arch_ == 120 and cudnn_runtime_version < 91801 is not"
        " supported.  Please upgrade your cuDNN version if possible." in selection.log
    )


def test_arguments_are_converted_as_pybind11_converts_them(te_cxx):
    query = load(te_cxx / "2.18.0")
    device = VirtualDevice(Machine.of(Scenario()))
    tex = extension_module(device, query, print, with_reject_message=False)
    layout, bias = tex.NVTE_QKV_Layout.NVTE_BSHD_BSHD_BSHD, tex.NVTE_Bias_Type.NVTE_NO_BIAS
    mask, softmax = tex.NVTE_Mask_Type.NVTE_CAUSAL_MASK, tex.NVTE_Softmax_Type.NVTE_VANILLA_SOFTMAX
    dtype = tex.DType.kBFloat16
    good = [True, dtype, dtype, layout, bias, mask, softmax, 0.0, 8, 8, 128, 128, 128, 128, -1, 0]
    good += [False, False, False]
    answer = tex.get_fused_attn_backend(*good)
    assert isinstance(answer, EnumMember) and answer.name == "NVTE_F16_arbitrary_seqlen"
    for index, wrong in ((3, bias), (8, -8), (7, "0.0"), (10, 128.0)):  # enum, size_t, float, int
        arguments = list(good)
        arguments[index] = wrong
        with pytest.raises(TypeError, match="incompatible function arguments"):
            tex.get_fused_attn_backend(*arguments)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        tex.get_fused_attn_backend(*good[:-1])
    names = [parameter.name for parameter in query.parameters]  # by keyword, the same
    keywords = dict(zip(names[8:], good[8:]))
    assert tex.get_fused_attn_backend(*good[:8], **keywords) == answer
    with pytest.raises(TypeError, match="incompatible function arguments"):  # a size_t
        tex.get_fused_attn_backend(*good[:8], **{**keywords, names[8]: -8})


def test_only_members_the_python_side_names_exist(te_cxx):
    """pybind11 registers a subset of each C++ enum; TE 2.18+ assert they name all of it."""
    tex = extension_module(
        VirtualDevice(Machine.of(Scenario())),
        load(te_cxx / "2.18.0"),
        print,
        with_reject_message=False,
    )
    assert tex.DType.__members__ == {}
    assert int(tex.DType.kFloat16) == 5  # transformer_engine.h: kFloat16 = 5
    assert set(tex.DType.__members__) == {"kFloat16"}
    with pytest.raises(AttributeError):
        tex.DType.kNotInTheHeader


def _tree_with(te_cxx: Path, tmp_path: Path, old: str, new: str) -> Path:
    trees = tmp_path / "trees"
    shutil.copytree(te_cxx / "2.18.0", trees / "2.18.0")
    path = trees / "2.18.0" / FUSED_ATTN
    path.write_text(path.read_text().replace(old, new, 1))
    return trees


def test_a_tree_that_does_not_compile_is_one_line_naming_it(te_cxx, release, tmp_path):
    trees = _tree_with(
        te_cxx, tmp_path, "NVTE_Fused_Attn_Backend backend =", "NVTE_Fused_Attn_Backend backend = !"
    )
    with pytest.raises(LoadError) as raised:
        load_selector(release("2.18.0"), te_cxx=trees)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(str(trees / "2.18.0" / "transformer_engine"))
    completed = subprocess.run(
        [sys.executable, "-m", "selector_patch", "verify", "2.18.0", "--te-cxx", str(trees)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert completed.returncode == 2, completed.stderr
    assert (
        completed.stderr.count("\n") == 1 and "does not compile as TE's query" in completed.stderr
    )
    assert "Traceback" not in completed.stderr


def test_a_tree_without_the_query_is_one_line(te_cxx, tmp_path):
    trees = _tree_with(te_cxx, tmp_path, "nvte_get_fused_attn_backend(", "renamed_query(")
    shutil.rmtree(trees / "2.18.0" / "transformer_engine" / "pytorch")  # no wrapper either
    with pytest.raises(
        CxxError, match="defines no transformer_engine::pytorch::get_fused_attn_backend"
    ):
        build(trees / "2.18.0")


def test_no_compiler_is_one_line(te_cxx, release, monkeypatch, tmp_path):
    from selector_patch.te_cxx import compiler

    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("TE_ATTN_GUARDS_CACHE", str(tmp_path / "cache"))  # nothing compiled yet
    compiler.compiler.cache_clear()
    load.cache_clear()
    try:
        with pytest.raises(LoadError, match="needs a C\\+\\+ compiler: no \\$CXX"):
            load_selector(release("2.18.0"))
    finally:
        compiler.compiler.cache_clear()
        load.cache_clear()


def test_a_named_directory_must_exist(tmp_path, monkeypatch):
    monkeypatch.setenv(TE_CXX_VARIABLE, str(tmp_path / "missing"))
    with pytest.raises(CxxError, match="no such directory"):
        configured_trees()
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "selector_patch",
            "verify",
            "2.18.0",
            "--te-cxx",
            str(tmp_path / "x"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert completed.returncode == 2 and completed.stderr.count("\n") == 1


def test_a_checkout_answers_with_its_own_cxx(te_cxx, release, tmp_path, monkeypatch):
    """No directory named: a checkout's `transformer_engine/common` is the query."""
    checkout = tmp_path / "TransformerEngine"
    shutil.copytree(release("2.18.0").root / "transformer_engine", checkout / "transformer_engine")
    shutil.copytree(
        te_cxx / "2.18.0" / "transformer_engine",
        checkout / "transformer_engine",
        dirs_exist_ok=True,
    )
    monkeypatch.delenv(TE_CXX_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)
    assert locate(checkout, "2.18.0", configured_trees()) == checkout
    loaded = load_selector(str(checkout))
    assert loaded.fused_assumption is None
    choice = loaded.select(Scenario(compute_capability=(12, 0), deterministic=True))
    assert choice.role == "FA4"  # fused refused by the checkout's C++: seed 000 with nothing set


def test_without_cxx_the_answer_is_a_stated_assumption(release, monkeypatch, tmp_path):
    """No trees, and no compiled library either (offline, nothing cached)."""
    monkeypatch.delenv(TE_CXX_VARIABLE, raising=False)
    monkeypatch.setenv("TE_ATTN_GUARDS_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("TE_ATTN_GUARDS_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    loaded = load_selector(release("2.18.0"))
    assert loaded.fused_assumption == (
        "fused answer assumed: F16_arbitrary_seqlen"
        " (no TE C++ for 2.18.0: TE_ATTN_GUARDS_OFFLINE is set)"
    )
    assert loaded.select(Scenario(compute_capability=(12, 0), deterministic=True)).role == "FUSED"
