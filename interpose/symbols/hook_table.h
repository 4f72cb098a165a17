// hook_table.h: what is generated from hooked_symbols.def: the hook ids, the real functions
// behind the hooks (and the other CUDA functions pooch calls), the driver look-up table, the
// per-hook call counters and the re-entry guard.
//
// Real functions are found lazily on first use and cached: dlsym(RTLD_NEXT, name), then
// dlopen(soname, RTLD_NOLOAD) and dlsym on that handle (a library the program loaded with
// RTLD_LOCAL), then dlopen(soname). A function that cannot be found is looked for again on the
// next call (the program may load its library later); a hook whose real function is missing
// returns its API's "not initialized" code after one "pooch:" line, never calls through null.
//
//   if (auto real = real::cudaMalloc()) return real(ptr, size);
//
// Thread safety: everything here may be used from any thread; resolution races are benign
// (both threads store the same pointer).
#ifndef POOCH_INTERPOSE_SYMBOLS_HOOK_TABLE_H_
#define POOCH_INTERPOSE_SYMBOLS_HOOK_TABLE_H_

#include <atomic>
#include <cstdint>

#include "core/base/log.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

enum class Library : uint8_t { CUDART, CUDA, CUDNN, CUBLAS, CUBLASLT, NCCL };

// The soname a library's real functions are looked up in ("libcudart.so.13").
const char* Soname(Library library);

// One id per line of hooked_symbols.def: the hooks (0 .. kHookCount - 1), then, after
// kHookCount, the functions pooch only calls.
enum class FunctionId : uint16_t {
#define POOCH_HOOK(lib, ret, name, params, args) name,
#include "interpose/symbols/hooked_symbols.def"
  kHookCount,
#define POOCH_HOOK(lib, ret, name, params, args)
#define POOCH_REAL(lib, ret, name, params) name,
#include "interpose/symbols/hooked_symbols.def"
  kCount,
};
inline constexpr int kHookCount = static_cast<int>(FunctionId::kHookCount);
inline constexpr int kFunctionCount = static_cast<int>(FunctionId::kCount) - 1;

// Index into the tables below (hooks 0..kHookCount-1, then the reals).
constexpr int Index(FunctionId id) {
  const int i = static_cast<int>(id);
  return i < kHookCount ? i : i - 1;
}

struct FunctionInfo {
  const char* name;  // the exported symbol name
  Library library;
  bool hooked;  // exported by libpooch.so
};
extern const FunctionInfo kFunctions[kFunctionCount];

// The real function's address, resolved on first use; nullptr when it cannot be found (logged
// once per function).
void* ResolveReal(FunctionId id);

namespace internal {
inline std::atomic<void*> g_real[kFunctionCount];
inline std::atomic<uint64_t> g_top_calls[kHookCount];
inline std::atomic<uint64_t> g_nested_calls[kHookCount];
// The "call NAME" line of POOCH_LOG=debug.
void LogCall(FunctionId id);
// How many hooks this thread is inside (HookScope). Defined here, inline and constant-initialised,
// so that every hook reads it directly (defined in one .cc, it would be reached through a TLS
// wrapper function: an extra call on every hook). initial-exec: libpooch.so is preloaded, so its
// TLS is in the static block and a hook pays no __tls_get_addr call.
__attribute__((tls_model("initial-exec"))) inline thread_local int g_hook_depth = 0;
// The hook the program itself called on this thread (the outermost HookScope), for the
// profiler's op names.
__attribute__((tls_model("initial-exec"))) inline thread_local FunctionId g_top_function{};
// Note [Opaque calls] (interpose/process/opaque.h): the name of the opaque function the program
// called, while it runs (opaque hooks have no FunctionId); null otherwise.
__attribute__((tls_model("initial-exec"))) inline thread_local const char* g_top_opaque = nullptr;
// Note [Kernel op names] (interpose/hooks/launch/kernel_names.h): the name of the kernel the
// outermost launch hook runs, while it runs; null otherwise.
__attribute__((tls_model("initial-exec"))) inline thread_local const char* g_op_name = nullptr;
}  // namespace internal

inline void* Real(FunctionId id) {
  void* fn = internal::g_real[Index(id)].load(std::memory_order_acquire);
  return fn != nullptr ? fn : ResolveReal(id);
}

// Typed accessors: real::cudaMalloc() returns cudaError_t (*)(void**, size_t) or nullptr.
namespace real {
#define POOCH_HOOK(lib, ret, name, params, args) \
  using name##_fn = ret(*) params;               \
  inline name##_fn name() { return reinterpret_cast<name##_fn>(Real(FunctionId::name)); }
#define POOCH_REAL(lib, ret, name, params) \
  using name##_fn = ret(*) params;         \
  inline name##_fn name() { return reinterpret_cast<name##_fn>(Real(FunctionId::name)); }
#include "interpose/symbols/hooked_symbols.def"
}  // namespace real

// The address of libpooch's exported hook for `id` (a hooked id).
void* HookAddress(FunctionId id);

// The hook a driver look-up should return instead of the real entry point, or nullptr when
// pooch does not hook it: `symbol` as cuGetProcAddress takes it (the base name, "cuMemAlloc"),
// `cuda_version` as in cudaTypedefs.h (12000 for 12.0),
// `per_thread` for CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (the POOCH_DRIVER_HOOK_PT lines).
void* DriverHookFor(const char* symbol, int cuda_version, bool per_thread);

// Driver look-ups whose answer pooch could not name (lookup_hooks.cc, Note [Opaque calls]).
uint64_t UnclassifiedLookups();

// Calls of each hook since start-up: `top` made by the program, `nested` made while another
// hook of the same thread was running (a library's internal calls, e.g. cuDNN's cudaMalloc).
// Exact for one thread; concurrent calls of the same hook may lose a count (hooks.cc).
struct CallCounts {
  uint64_t top = 0;
  uint64_t nested = 0;
};
CallCounts Calls(FunctionId id);

// Re-entry guard: one per hook call. The outermost hook on a thread is "top"; hooks entered
// while it runs (cudart calling the driver, cuDNN calling cudart) only forward.
class HookScope {
 public:
  // Inline: this is most of what a pass-through hook costs (hook_overhead_bench: 2-4 ns).
  explicit HookScope(FunctionId id) : top_(internal::g_hook_depth++ == 0) {
    // A plain load and store, not a locked add: counting is statistics, and a lost increment
    // when two threads call the same hook at once costs less than a locked instruction on
    // every call. Exact for single-threaded callers (the tests).
    std::atomic<uint64_t>& counter =
        (top_ ? internal::g_top_calls : internal::g_nested_calls)[Index(id)];
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (top_) {
      internal::g_top_function = id;
      if (LogEnabled(Severity::kDebug)) internal::LogCall(id);
    }
  }
  ~HookScope() { --internal::g_hook_depth; }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;

  bool top() const { return top_; }
  // The outermost hook running on this thread (meaningful inside a HookScope).
  static FunctionId Current() { return internal::g_top_function; }
  // Its name: an opaque hook's (Note [Opaque calls]) or kFunctions'.
  static const char* CurrentName();

 private:
  bool top_;
};

inline const char* HookScope::CurrentName() {
  if (const char* opaque = internal::g_top_opaque) return opaque;
  if (const char* op = internal::g_op_name) return op;
  return kFunctions[Index(internal::g_top_function)].name;
}

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_SYMBOLS_HOOK_TABLE_H_
