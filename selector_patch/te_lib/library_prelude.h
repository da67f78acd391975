// Around a call of a release's compiled `nvte_get_fused_attn_backend`, in the helper process.
//
// The call's machine goes to the preloaded machine (`machine.cpp`), which the stub CUDA and
// cuDNN libraries answer from and whose `getenv` then reads the call's environment. What TE
// prints on `std::cout` / `std::cerr` (its warnings) is kept for the call's log: the library
// shares this process's C++ runtime, so its streams are these.

#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

extern "C" void te_attn_guards_enter(int sm_arch, std::size_t cudnn_version,
                                     te_attn_guards::EnvironmentLookup environment);
extern "C" void te_attn_guards_leave();

namespace te_attn_guards {

thread_local std::ostringstream log;

//! One call: the machine entered, TE's standard streams into `log`; all undone on leaving.
class Call {
 public:
  explicit Call(const Machine *machine)
      : out_(std::cout.rdbuf(log.rdbuf())), err_(std::cerr.rdbuf(log.rdbuf())) {
    te_attn_guards_enter(machine->sm_arch, machine->cudnn_version, machine->environment_lookup);
  }
  ~Call() {
    te_attn_guards_leave();
    std::cout.rdbuf(out_);
    std::cerr.rdbuf(err_);
  }

 private:
  std::streambuf *out_;
  std::streambuf *err_;
};

}  // namespace te_attn_guards
