"""What the stub CUDA and cuDNN libraries answer: the machine queries TE's fused query makes.

`nvte_get_fused_attn_backend` asks the machine through TE's `cuda::current_device` (the driver's
`cuCtxGetCurrent`, looked up through `cudaGetDriverEntryPointByVersion` with
`dlsym(RTLD_DEFAULT)`, then `cudaGetDevice`), `cuda::sm_arch` (`cudaGetDeviceCount`,
`cudaGetDeviceProperties`'s `major`/`minor`) and `cudnnGetVersion()`. These entries answer
from the virtual machine (`machine.cpp`); the kernel registrations the library's load-time
initialisers make are accepted and ignored; error strings say where they come from. TE 2.20+
create a cuDNN handle (accepted) and ask cuDNN's own graph support check through the graph API
its frontend looks up in `libcudnn_graph`, after the frontend's own checks: the first such call
notes that the request got that far and throws, since only a GPU's cuDNN can answer (the
machine ends that one graph's question there, `seam`). Every
other entry a stub defines throws (`te_attn_guards_unanswered`), so a query that reaches for
anything else fails loudly instead of deciding on a made-up answer.

`cudaDeviceProp` is read by offset: `major` and `minor` are the two `int`s at bytes 360 and 364
in CUDA 12 and 13 alike (13 dropped `clockRate` before them, and the padding of the
`size_t totalConstMem` that follows makes up for it).
"""

from __future__ import annotations

_PROPERTIES = """(void *properties, int device) {
  int *fields = reinterpret_cast<int *>(static_cast<char *>(properties) + 360);
  fields[0] = te_attn_guards_sm_arch(device) / 10;
  fields[1] = te_attn_guards_sm_arch(device) % 10;
  return 0;
}"""
_ENTRY_POINT = """{
  *function = dlsym(RTLD_DEFAULT, symbol);
  if (status != nullptr) *status = *function == nullptr ? 1 : 0;
  return *function == nullptr ? 500 : 0;
}"""
_MESSAGE = '"an error of te-attn-guards\' CPU-only stub"'

#: Each answered entry's definition, by symbol (the return type and parameters as the C API
#: declares them, with pointers to opaque types as `void *`).
ANSWERS = {
    "cudaGetDeviceCount": "int cudaGetDeviceCount(int *count) {"
    " *count = te_attn_guards_device_count(); return 0; }",
    "cudaGetDevice": "int cudaGetDevice(int *device) {"
    " *device = te_attn_guards_current_device(); return 0; }",
    "cudaGetDeviceProperties": f"int cudaGetDeviceProperties{_PROPERTIES}",
    "cudaGetDeviceProperties_v2": f"int cudaGetDeviceProperties_v2{_PROPERTIES}",
    "cudaDeviceGetAttribute": """int cudaDeviceGetAttribute(int *value, int attribute, int device) {
  if (attribute == 75) { *value = te_attn_guards_sm_arch(device) / 10; return 0; }
  if (attribute == 76) { *value = te_attn_guards_sm_arch(device) % 10; return 0; }
  te_attn_guards_unanswered("cudaDeviceGetAttribute (other than the compute capability)");
}""",
    "cudaGetDriverEntryPointByVersion": "int cudaGetDriverEntryPointByVersion(const char *symbol,"
    " void **function, unsigned int, unsigned long long, int *status) " + _ENTRY_POINT,
    "cudaGetDriverEntryPoint": "int cudaGetDriverEntryPoint(const char *symbol,"
    " void **function, unsigned long long, int *status) " + _ENTRY_POINT,
    "cudaGetLastError": "int cudaGetLastError() { return 0; }",
    "cudaPeekAtLastError": "int cudaPeekAtLastError() { return 0; }",
    "cudaGetErrorString": f"const char *cudaGetErrorString(int) {{ return {_MESSAGE}; }}",
    "cuInit": "int cuInit(unsigned int) { return 0; }",
    "cuCtxGetCurrent": "int cuCtxGetCurrent(void **context) {"
    " static int one_context; *context = &one_context; return 0; }",
    "cuGetErrorString": f"int cuGetErrorString(int, const char **text) {{ *text = {_MESSAGE};"
    " return 0; }",
    "cuGetErrorName": f"int cuGetErrorName(int, const char **text) {{ *text = {_MESSAGE};"
    " return 0; }",
    "cudnnGetVersion": "std::size_t cudnnGetVersion() { return te_attn_guards_cudnn_version(); }",
    "cudnnGetErrorString": f"const char *cudnnGetErrorString(int) {{ return {_MESSAGE}; }}",
    "cudnnCreate": "int cudnnCreate(void **handle) { static int one; *handle = &one; return 0; }",
    "cudnnSetStream": "int cudnnSetStream(void *, void *) { return 0; }",
    "cudnnGetLastErrorString": "void cudnnGetLastErrorString(char *text, std::size_t size) {"
    " if (size > 0) text[0] = '\\0'; }",
    # cuDNN's graph API, which TE 2.20+'s support check drives: the one step a GPU answers
    **{
        function: f"int {function}(...) {{ te_attn_guards_ask_cudnn(); }}"
        for function in (
            "cudnnBackendCreateDescriptor",
            "cudnnBackendDestroyDescriptor",
            "cudnnBackendInitialize",
            "cudnnBackendFinalize",
            "cudnnBackendSetAttribute",
            "cudnnBackendGetAttribute",
            "cudnnBackendExecute",
        )
    },
    "__cudaRegisterFatBinary": "void **__cudaRegisterFatBinary(void *) {"
    " static void *handle; return &handle; }",
    **{
        registration: f"void {registration}(...) {{}}"
        for registration in (
            "__cudaRegisterFatBinaryEnd",
            "__cudaRegisterFunction",
            "__cudaRegisterVar",
            "__cudaRegisterManagedVar",
            "__cudaUnregisterFatBinary",
            "__cudaInitModule",
        )
    },
}

#: The driver's entries TE looks up by name (`cuda_driver::get_symbol`, through the entry point):
#: defined by the unversioned stub whether or not the library also links them.
DRIVER = ("cuInit", "cuCtxGetCurrent", "cuGetErrorString", "cuGetErrorName")

#: What cuDNN's frontend looks up by name (`dlsym`) in `libcudnn_graph`: defined by its stub
#: whether or not the library also links them.
CUDNN_GRAPH = "libcudnn_graph"
GRAPH = tuple(name for name in ANSWERS if name.startswith("cudnnBackend")) + (
    "cudnnGetVersion",
    "cudnnGetErrorString",
    "cudnnGetLastErrorString",
)

#: The machine's functions the answers call (`machine.cpp`, preloaded in the helper process).
MACHINE = """#include <dlfcn.h>

#include <cstddef>

extern "C" {
int te_attn_guards_device_count();
int te_attn_guards_current_device();
int te_attn_guards_sm_arch(int device);
std::size_t te_attn_guards_cudnn_version();
[[noreturn]] void te_attn_guards_unanswered(const char *symbol);
[[noreturn]] void te_attn_guards_ask_cudnn();
"""
