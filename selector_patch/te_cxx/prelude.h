// The machine around TE's fused-attention query, for a CPU-only build of that query alone.
//
// TE's query (`nvte_get_fused_attn_backend`) asks the machine three things: the current device
// and its compute capability (`cuda::current_device`, `cuda::sm_arch`, defined in TE's
// `util/cuda_runtime.cpp` over the CUDA runtime) and cuDNN's version (`cudnnGetVersion`, from
// libcudnn). It reads the process environment (`std::getenv`, through TE's `getenv<T>`) and
// prints warnings on `std::cout`. Everything else it does is TE's own code, compiled from the
// release's sources after this prelude. Here the three machine answers are the virtual device's
// for the call in flight, the environment is the one the Python side of the same call sees (the
// harness's scoped view, asked back through `environment_lookup`), and what TE prints is kept
// for the call's log. `translation_unit.py` redirects TE's `std::getenv`, `std::cout` and
// `std::cerr` to `te_attn_guards::environment` and `te_attn_guards::log`.

// `machine.h` comes first: the machine a call passes.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace te_attn_guards {

thread_local const Machine *machine = nullptr;
thread_local std::ostringstream log;
thread_local std::string environment_value;

//! `std::getenv` for TE's code: the variable as the Python side of this call reads it.
inline const char *environment(const char *name) {
  std::array<char, 4096> buffer{};
  const long length = machine->environment_lookup(name, buffer.data(), buffer.size());
  if (length < 0) {
    return nullptr;
  }
  environment_value.assign(buffer.data(), static_cast<std::size_t>(length));
  return environment_value.c_str();
}

}  // namespace te_attn_guards

inline std::size_t cudnnGetVersion() { return te_attn_guards::machine->cudnn_version; }

namespace transformer_engine {
namespace cuda {

inline int current_device() { return 0; }  // the virtual machine has one GPU, device 0

inline int sm_arch(int /*device_id*/ = -1) { return te_attn_guards::machine->sm_arch; }

}  // namespace cuda

//! TE's `util/string.h` (not in the trees): the message of an `NVTE_ERROR` / `NVTE_CHECK`.
template <typename... Ts>
inline std::string concat_strings(const Ts &...parts) {
  std::ostringstream message;
  (message << ... << parts);
  return message.str();
}

}  // namespace transformer_engine
