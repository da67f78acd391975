// The virtual machine a release's compiled `libtransformer_engine.so` runs on, in the helper
// process (`helper.py`), preloaded (`LD_PRELOAD`) so that its `getenv` is the one TE's code calls.
//
// TE's query asks the machine through the CUDA runtime and cuDNN, whose stub libraries
// (`stubs.py`) answer from here: the current device, its compute capability, cuDNN's version.
// TE caches the device count and each device's compute capability on first use
// (`cuda::sm_arch`), and TE 2.20+ a cuDNN handle per device, checking cuDNN's version once when
// it is made; so each pair of compute capability and cuDNN version asked for gets a virtual
// device of its own, as if each were a machine of its own, and the call in flight makes it
// current. While a call is in flight, `getenv` reads the
// environment the Python side of that call sees (the trampoline's lookup); otherwise it is the
// C library's.

#include <dlfcn.h>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace {

using EnvironmentLookup = long (*)(const char *name, char *buffer, std::size_t size);

constexpr int kDevices = 512;
std::array<int, kDevices> architectures{};
std::array<std::size_t, kDevices> cudnn_versions{};
int devices_made = 0;

thread_local int current = 0;
thread_local std::size_t cudnn_version = 0;
thread_local EnvironmentLookup lookup = nullptr;
thread_local bool cudnn_asked = false;
thread_local std::string environment_value;

}  // namespace

extern "C" {

//! The call in flight runs on the device of compute capability `sm_arch` and this cuDNN, and
//! reads its environment through `environment`.
void te_attn_guards_enter(int sm_arch, std::size_t cudnn, EnvironmentLookup environment) {
  int device = 0;
  while (device < devices_made &&
         (architectures[device] != sm_arch || cudnn_versions[device] != cudnn)) {
    ++device;
  }
  if (device == devices_made) {
    if (devices_made == kDevices) throw std::runtime_error("too many virtual devices");
    architectures[devices_made] = sm_arch;
    cudnn_versions[devices_made++] = cudnn;
  }
  current = device;
  cudnn_version = cudnn;
  lookup = environment;
  cudnn_asked = false;
}

void te_attn_guards_leave() { lookup = nullptr; }

int te_attn_guards_device_count() { return kDevices; }

int te_attn_guards_current_device() { return current; }

int te_attn_guards_sm_arch(int device) {
  if (device < 0 || device >= devices_made) throw std::runtime_error("no such virtual device");
  return architectures[device];
}

std::size_t te_attn_guards_cudnn_version() { return cudnn_version; }

//! cuDNN's own support check was reached (TE 2.20+ create a handle for it): only a GPU answers.
[[noreturn]] void te_attn_guards_ask_cudnn() {
  cudnn_asked = true;
  throw std::runtime_error("cuDNN's support check needs a GPU");
}

bool te_attn_guards_cudnn_asked() { return cudnn_asked; }

//! What every stub entry the query has no business calling does: it throws, and the
//! trampoline reports it as the call's failure.
[[noreturn]] void te_attn_guards_unanswered(const char *symbol) {
  throw std::runtime_error(std::string(symbol) +
                           " was called: te-attn-guards' CPU-only stub has no answer for it");
}

char *getenv(const char *name) {
  if (lookup == nullptr) {
    using Getenv = char *(*)(const char *);
    static const Getenv real = reinterpret_cast<Getenv>(dlsym(RTLD_NEXT, "getenv"));
    return real(name);
  }
  std::array<char, 4096> buffer{};
  const long length = lookup(name, buffer.data(), buffer.size());
  if (length < 0) return nullptr;
  environment_value.assign(buffer.data(), static_cast<std::size_t>(length));
  return environment_value.data();
}

}  // extern "C"
