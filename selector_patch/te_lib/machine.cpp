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
//
// TE 2.20+ ask cuDNN one graph at a time (`query_support`: the frontend's own `validate`, then
// the graph's descriptors, engine heuristics and support check): the forward's graph, then, for
// training, the backward's. Where the helper names `query_support` (`seam.py`), the verdict
// assumed is that graph's alone: its first cuDNN backend call ends it as if cuDNN supported it,
// and TE's own code goes on, so the backward graph's frontend checks run too.

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
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
//! Whether any graph's verdict was ever assumed in this process (never, over a real cuDNN).
bool cudnn_ever_asked = false;

//! What the first cuDNN backend call throws: cuDNN's verdict on the graph was asked for.
struct CudnnAsked : std::runtime_error {
  CudnnAsked() : std::runtime_error("cuDNN's support check needs a GPU") {}
};

//! TE's `query_support(Backend, Pass, cudnn_frontend::graph::Graph &, cudnnHandle_t)`.
using QuerySupport = void (*)(int backend, int pass, void *graph, void *handle);
QuerySupport query_support = nullptr;
//! Its first bytes as TE compiled them, and the jump to `assumed_query_support` over them.
std::array<unsigned char, 12> tes_entry{};
std::array<unsigned char, 12> jump_entry{};

void write_entry(const std::array<unsigned char, 12> &bytes) {
  const auto page_size = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<std::uintptr_t>(query_support);
  const auto page = start & ~(page_size - 1);
  const std::size_t length = start + bytes.size() - page;
  if (mprotect(reinterpret_cast<void *>(page), length, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
    throw std::runtime_error("cannot write TE's query_support entry");
  }
  std::memcpy(reinterpret_cast<void *>(start), bytes.data(), bytes.size());
  mprotect(reinterpret_cast<void *>(page), length, PROT_READ | PROT_EXEC);
}

//! TE's `query_support` run as compiled (its entry restored for the call), up to the graph's
//! first cuDNN backend call, which only a GPU answers: assumed supported, TE goes on.
void assumed_query_support(int backend, int pass, void *graph, void *handle) {
  struct Restored {
    Restored() { write_entry(tes_entry); }
    ~Restored() { write_entry(jump_entry); }
  } restored;
  try {
    query_support(backend, pass, graph, handle);
  } catch (const CudnnAsked &) {
  }
}

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

//! cuDNN's own support check was reached (its first graph API call): only a GPU answers.
[[noreturn]] void te_attn_guards_ask_cudnn() {
  cudnn_asked = cudnn_ever_asked = true;
  throw CudnnAsked();
}

//! TE's `query_support` is at `function`: from now on each graph's verdict is assumed alone
//! (`assumed_query_support`; x86-64: `movabs rax, target; jmp rax` over its entry).
void te_attn_guards_assume_per_graph(void *function) {
  query_support = reinterpret_cast<QuerySupport>(function);
  std::memcpy(tes_entry.data(), function, tes_entry.size());
  const auto target = reinterpret_cast<std::uintptr_t>(&assumed_query_support);
  jump_entry = {0x48, 0xb8};
  std::memcpy(jump_entry.data() + 2, &target, sizeof target);
  jump_entry[10] = 0xff;
  jump_entry[11] = 0xe0;
  write_entry(jump_entry);
}

bool te_attn_guards_cudnn_asked() { return cudnn_asked; }

//! Whether TE may hold a graph whose verdict was assumed (its graph cache keeps them).
bool te_attn_guards_cudnn_ever_asked() { return cudnn_ever_asked; }

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
