// The machine one call of TE's fused-attention query runs on, as the harness passes it.
//
// The same for TE's query compiled from source (`prelude.h` answers from it) and for a
// release's compiled library (`te_lib/library_prelude.h` hands it to the stub libraries).

#include <cstddef>

namespace te_attn_guards {

//! Copies the value of `name` into `buffer` (at most `size` bytes); returns its length, or -1
//! when the variable is unset.
using EnvironmentLookup = long (*)(const char *name, char *buffer, std::size_t size);

struct Machine {
  int sm_arch;
  std::size_t cudnn_version;
  EnvironmentLookup environment_lookup;
};

}  // namespace te_attn_guards
