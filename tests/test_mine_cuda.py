"""The CUDA side of the miner on small flash-attn-shaped C++ trees written here.

The shapes are flash-attn 2's: `*_SWITCH` macros from a `static_switch.h` (head dims round up,
224 runs the 256 kernels), a launch template that picks kernels by
`cudaDevAttrMaxSharedMemoryPerBlockOptin` and launches nothing in one arm (`if constexpr
(!Is_dropout)` without an `else`), explicit specializations in a generated `.cu`, and an api
`.cpp` with `TORCH_CHECK` refusals and the pybind11 registration TE's calls reach.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lint_plugin.mine.__main__ import EXIT_UNGUARDED, main
from lint_plugin.mine.cuda import mine
from lint_plugin.mine.cuda.source import from_directory
from lint_plugin.mine.devices import SHARED_MEMORY, SharedMemory
from lint_plugin.mine.findings import NO_LAUNCH, REFUSAL
from selector_patch.scenario import Condition
from selector_patch.sources import SourceError

SWITCH = """
#pragma once
#define BOOL_SWITCH(COND, CONST_NAME, ...)      \\
  [&] {                                         \\
    if (COND) {                                 \\
      constexpr static bool CONST_NAME = true;  \\
      return __VA_ARGS__();                     \\
    } else {                                    \\
      constexpr static bool CONST_NAME = false; \\
      return __VA_ARGS__();                     \\
    }                                           \\
  }()

#ifdef FLASHATTENTION_DISABLE_DROPOUT
  #define DROPOUT_SWITCH(COND, CONST_NAME, ...) \\
  [&] {                                         \\
    constexpr static bool CONST_NAME = false;   \\
    return __VA_ARGS__();                       \\
  }()
#else
  #define DROPOUT_SWITCH BOOL_SWITCH
#endif

#define HEADDIM_SWITCH(HEADDIM, ...)       \\
  [&] {                                    \\
    if (HEADDIM <= 128) {                  \\
      constexpr static int kHeadDim = 128; \\
      return __VA_ARGS__();                \\
    } else if (HEADDIM <= 192) {           \\
      constexpr static int kHeadDim = 192; \\
      return __VA_ARGS__();                \\
    } else if (HEADDIM <= 256) {           \\
      constexpr static int kHeadDim = 256; \\
      return __VA_ARGS__();                \\
    }                                      \\
  }()
"""

LAUNCH = """
#pragma once
#include "static_switch.h"

template<typename Kernel_traits, bool Is_dropout>
void run_flash_bwd(Flash_bwd_params &params, cudaStream_t stream) {
    kernel<<<grid, Kernel_traits::kNThreads, smem, stream>>>(params);
}

template<typename Kernel_traits>
void not_a_launcher(Flash_bwd_params &params) {
    // kernel<<<grid, 128, 0, stream>>>(params);  (a launch in a comment is no launch)
}

template<typename T>
void run_mha_bwd_hdim128(Flash_bwd_params &params, cudaStream_t stream) {
    DROPOUT_SWITCH(params.p_dropout < 1.f, Is_dropout, [&] {
        run_flash_bwd<T, Is_dropout>(params, stream);
    });
}

template<typename T>
void run_mha_bwd_hdim256(Flash_bwd_params &params, cudaStream_t stream) {
    int device;
    cudaGetDevice(&device);
    int max_smem_per_block;
    cudaError status_ = cudaDeviceGetAttribute(
        &max_smem_per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    DROPOUT_SWITCH(params.p_dropout < 1.f, Is_dropout, [&] {
        if (max_smem_per_block >= 144 * 1024) {
            run_flash_bwd<T, Is_dropout>(params, stream);
        } else {  // 99 KB: only works without dropout
            if constexpr (!Is_dropout) {
                run_flash_bwd<T, false>(params, stream);
            }
        }
    });
}
"""

SPECIALIZATIONS = """
#include "launch_template.h"
template<>
void run_mha_bwd_<cutlass::bfloat16_t, 128>(Flash_bwd_params &params, cudaStream_t stream) {
    run_mha_bwd_hdim128<cutlass::bfloat16_t>(params, stream);
}
template<>
void run_mha_bwd_<cutlass::bfloat16_t, 192>(Flash_bwd_params &params, cudaStream_t stream) {
    run_mha_bwd_hdim128<cutlass::bfloat16_t>(params, stream);
}
template<>
void run_mha_bwd_<cutlass::bfloat16_t, 256>(Flash_bwd_params &params, cudaStream_t stream) {
    run_mha_bwd_hdim256<cutlass::bfloat16_t>(params, stream);
}
"""

API = """
#include "src/static_switch.h"

void set_params(Flash_bwd_params &params, const size_t d, float p_dropout) {
    params = {};
    params.d = d;
    // Set this to probability of keeping an element to simplify things.
    params.p_dropout = 1.f - p_dropout;
}

void run_mha_bwd(Flash_bwd_params &params, cudaStream_t stream) {
    HEADDIM_SWITCH(params.d, [&] {
        run_mha_bwd_<cutlass::bfloat16_t, kHeadDim>(params, stream);
    });
}

std::vector<at::Tensor>
mha_bwd(const at::Tensor &dout, const at::Tensor &q, const float p_dropout,
        const bool deterministic) {
    auto [cc_major, cc_minor] = get_compute_capability(get_current_device());
    TORCH_CHECK(cc_major >= 8, "FlashAttention only supports Ampere GPUs or newer.");
    TORCH_CHECK(q.stride(-1) == 1, "Input tensor must have contiguous last dimension");
    bool is_dropout = p_dropout > 0.0;
    const auto sizes = q.sizes();
    const int head_size = sizes[3];
    TORCH_CHECK(head_size <= 256, "FlashAttention backward only supports head dimension at most 256");
    // CHECK_A100
    Flash_bwd_params params;
    set_params(params, head_size, p_dropout);
    auto launch = &run_mha_bwd;
    launch(params, stream);
    return {};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("bwd", &FLASH_NAMESPACE::mha_bwd, "Backward pass");
}
"""

#: flash-attn before 2.7.3 (bbb21d6) refused seed 001's case before dispatching it.
API_WITH_CHECK = API.replace(
    "    // CHECK_A100\n",
    """    if (head_size > 192 && is_dropout) {
        TORCH_CHECK(cc_major == 9 || (cc_major == 8 && cc_minor == 0), "needs A100 or H100");
    }
""",
)

HARDWARE = """
inline std::tuple<int, int> get_compute_capability(int device) {
    int capability_major, capability_minor;
    cudaDeviceGetAttribute(&capability_major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&capability_minor, cudaDevAttrComputeCapabilityMinor, device);
    return {capability_major, capability_minor};
}
"""

DROPOUT = (Condition("attention_dropout", ">", 0.0), Condition("training", "==", True))
BACKWARD = Condition("backward", "==", True)


def tree(root: Path, api: str = API, launch: str = LAUNCH) -> Path:
    """A flash-attention source tree: `csrc/flash_attn/` with `src/`, and a PKG-INFO."""
    source = root / "csrc" / "flash_attn"
    (source / "src").mkdir(parents=True)
    (source / "flash_api.cpp").write_text(textwrap.dedent(api))
    for name, text in {
        "static_switch.h": SWITCH,
        "launch_template.h": launch,
        "flash_bwd_sm80.cu": SPECIALIZATIONS,
        "hardware_info.h": HARDWARE,
    }.items():
        (source / "src" / name).write_text(textwrap.dedent(text))
    # a release TE 2.20.2 supports (its backends.py refuses others)
    (root / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: flash-attn\nVersion: 2.8.3\n")
    return root


def by_kind(cases, kind):
    return [case for case in cases if case.site.kind == kind]


def test_the_launch_less_arm_is_found_on_the_99_kb_gpus_for_dropout_above_head_dim_192(tmp_path):
    found = mine(from_directory(tree(tmp_path)))
    (case,) = by_kind(found.cases, NO_LAUNCH)
    assert case.backend == "FA2" and case.version == "2.8.3"
    assert case.site.file == "csrc/flash_attn/src/launch_template.h"
    assert case.site.function == "run_mha_bwd_hdim256"
    assert case.site.text == "if constexpr (!Is_dropout) {...} (no else)"
    assert case.site.branch == "not (max_smem_per_block >= 144 * 1024)"
    # below 144 KB per block, and not refused first (sm7x by cc_major >= 8)
    assert case.architectures == ((8, 6), (8, 9), (12, 0), (12, 1))
    assert case.triggers == (*DROPOUT, Condition("padded_head_dim", ">", 192), BACKWARD)
    assert case.labels == ("dropout",) and case.unmapped is None
    # 224 rounds up to the 256 kernels; the MLA shape pads to 256
    assert case.witness_shapes == (
        {"head_dim_qk": 256, "head_dim_v": 256},
        {"head_dim_qk": 224, "head_dim_v": 224},
        {"head_dim_qk": 192, "head_dim_v": 256},
    )


def test_the_architectures_come_from_the_shared_memory_table(tmp_path, monkeypatch):
    monkeypatch.setitem(SHARED_MEMORY, (12, 0), SharedMemory(228 * 1024, 227 * 1024))
    (case,) = by_kind(mine(from_directory(tree(tmp_path))).cases, NO_LAUNCH)
    assert case.architectures == ((8, 6), (8, 9), (12, 1))


def test_an_arm_that_launches_either_way_is_no_finding(tmp_path):
    launching = LAUNCH.replace(
        "run_flash_bwd<T, false>(params, stream);\n            }",
        "run_flash_bwd<T, false>(params, stream);\n            } else {\n"
        "                run_flash_bwd<T, true>(params, stream);\n            }",
    )
    assert launching != LAUNCH
    assert by_kind(mine(from_directory(tree(tmp_path, launch=launching))).cases, NO_LAUNCH) == []


def test_refusals_in_the_api_are_stated_in_selector_inputs(tmp_path):
    found = mine(from_directory(tree(tmp_path, api=API_WITH_CHECK)))
    refusals = {case.site.message: case for case in by_kind(found.cases, REFUSAL)}
    ampere = refusals["FlashAttention only supports Ampere GPUs or newer."]
    assert ampere.architectures == ((7, 0), (7, 5)) and ampere.triggers == (BACKWARD,)
    head_dim = refusals["FlashAttention backward only supports head dimension at most 256"]
    assert head_dim.triggers == (Condition("padded_head_dim", ">", 256), BACKWARD)
    a100 = refusals["needs A100 or H100"]
    assert a100.architectures == (
        (8, 6), (8, 7), (8, 9), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1)
    )  # fmt: skip
    assert a100.triggers == (*DROPOUT, Condition("padded_head_dim", ">", 192), BACKWARD)
    # the refusal comes first: the launch-less arm is out of reach
    assert by_kind(found.cases, NO_LAUNCH) == []
    # the stride check fires whatever the selector passes: counted, not listed
    assert "Input tensor must have contiguous last dimension" not in refusals
    assert any("1 checks fire only on what no selector input decides" in n for n in found.notes)


def test_the_sdist_without_fa3_sources_says_so(tmp_path):
    notes = mine(from_directory(tree(tmp_path))).notes
    assert any(note.startswith("FA3: no C++ under hopper/") for note in notes)


def test_a_tree_without_flash_api_is_refused(tmp_path):
    with pytest.raises(SourceError, match="no csrc/flash_attn/flash_api.cpp"):
        from_directory(tmp_path)


def test_flake8s_import_path_does_not_import_tree_sitter():
    code = "import sys, lint_plugin.plugin; print('tree_sitter' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.stdout.strip() == "False", completed.stderr


def test_the_command_mines_a_cpp_tree_and_exits_1_with_a_declaration(tmp_path, release, capsys):
    release("2.20.2")
    args = ["--te", "2.20.2", "--kernel-source", str(tree(tmp_path)), "--json"]
    assert main([*args, "--skip-hazard", "TEA002"]) == EXIT_UNGUARDED
    report = json.loads(capsys.readouterr().out)
    assert report["kernel"]["package"] == "flash-attn" and report["kernel"]["version"] == "2.8.3"
    (verdict,) = [v for v in report["verdicts"] if v["kind"] == NO_LAUNCH]
    assert verdict["by_architecture"] == {
        "sm86": "guarded",
        "sm89": "guarded",
        "sm120": "UNGUARDED",
        "sm121": "guarded",
    }
    assert verdict["declaration"]["architectures"] == [[8, 6], [8, 9], [12, 0], [12, 1]]


FA3_SWITCH = """
#define ARCH_SWITCH(ARCH, ARCH_NAME, ...)                \\
  [&] {                                                  \\
    if (ARCH == 86 || ARCH == 89) {                      \\
      constexpr static int ARCH_NAME = 86;               \\
      return __VA_ARGS__();                              \\
    } else if (ARCH < 90) {                              \\
      constexpr static int ARCH_NAME = 80;               \\
      return __VA_ARGS__();                              \\
    } else {                                             \\
      constexpr static int ARCH_NAME = 90;               \\
      return __VA_ARGS__();                              \\
    }                                                    \\
  }()
"""

FA3_API = """
#include "static_switch.h"

template <int Arch>
void run_flash_fwd(Flash_fwd_params &params, cudaStream_t stream) {
    cutlass::kernel_launch<Kernel>(grid, block, smem, stream, kernel_params, false);
}

void run_mha_fwd(Flash_fwd_params &params, cudaStream_t stream) {
    ARCH_SWITCH(params.arch, Arch, [&] {
        if (params.d <= 256) { return run_flash_fwd<Arch>(params, stream); }
    });
}

std::vector<at::Tensor>
mha_fwd(at::Tensor q, at::Tensor k, at::Tensor v, bool is_causal, int num_splits) {
    auto dprops = at::cuda::getCurrentDeviceProperties();
    TORCH_CHECK(dprops->major >= 8, "FlashAttention only supports Ampere GPUs or newer.");
    auto q_type = q.scalar_type();
    if (dprops->major < 9) {
        TORCH_CHECK(q_type == at::ScalarType::Half || q_type == at::ScalarType::BFloat16,
                    "FlashAttention-3 FP8 requires Hopper");
    }
    int const head_size = q.size(-1);
    TORCH_CHECK(head_size <= 256, "FlashAttention forward only supports head dimension at most 256");
    if (num_splits > 1) {
        TORCH_CHECK(dprops->major == 9, "splits need Hopper");
    }
    Flash_fwd_params params;
    params.d = head_size;
    params.arch = dprops->major * 10 + dprops->minor;
    run_mha_fwd(params, stream);
    return {};
}

TORCH_LIBRARY_IMPL(flash_attn_3, CUDA, m) {
    m.impl("fwd", &mha_fwd);
}
"""


def test_fa3_shapes_device_properties_arch_switch_and_torch_library(tmp_path):
    hopper = tmp_path / "hopper"
    hopper.mkdir()
    (hopper / "static_switch.h").write_text(textwrap.dedent(FA3_SWITCH))
    (hopper / "flash_api.cpp").write_text(textwrap.dedent(FA3_API))
    (hopper / "__init__.py").write_text('__version__ = "3.0.0.b1"\n')
    (tmp_path / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: flash-attn\nVersion: 2.8.3\n")
    found = mine(from_directory(tmp_path))
    assert any(note.startswith("FA2: no C++ under csrc/flash_attn/") for note in found.notes)
    cases = {case.site.message: case for case in found.cases}
    assert {c.backend for c in found.cases} == {"FA3"} and {c.version for c in found.cases} == {
        "3.0.0.b1"
    }
    assert cases["FlashAttention only supports Ampere GPUs or newer."].architectures == (
        (7, 0),
        (7, 5),
    )
    fp8 = cases["FlashAttention-3 FP8 requires Hopper"]
    assert fp8.architectures == ((8, 0), (8, 6), (8, 7), (8, 9))
    assert fp8.labels == ("FP8 inputs",) and fp8.unmapped is None
    assert Condition("qkv_dtype", "==", "float8_e4m3fn") in fp8.triggers
    splits = cases["splits need Hopper"]
    assert splits.architectures == ((8, 0), (8, 6), (8, 7), (8, 9), (10, 0), (10, 3), (11, 0),
                                    (12, 0), (12, 1))  # fmt: skip
    assert splits.triggers == (Condition("num_splits", ">", 1),) and splits.unmapped is None
    assert by_kind(found.cases, NO_LAUNCH) == []  # every arch's kernels launch
