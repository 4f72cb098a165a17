// hooks.cc: the exported hooks, the real-function resolution and the driver look-up table, all
// generated from hooked_symbols.def.
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "absl/types/span.h"
#include "core/base/log.h"
#include "interpose/symbols/errors.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

#define POOCH_EXPORT __attribute__((visibility("default")))

namespace pooch::interpose {
namespace {

std::atomic<bool> g_missing_logged[kFunctionCount];

void* Lookup(FunctionId id) {
  const FunctionInfo& info = kFunctions[Index(id)];
  void* fn = dlsym(RTLD_NEXT, info.name);
  if (fn == nullptr) {
    // The library may be loaded with RTLD_LOCAL (a Python extension's dependency): find it by
    // soname; load it only if the program has not.
    void* lib = dlopen(Soname(info.library), RTLD_LAZY | RTLD_NOLOAD);
    if (lib == nullptr) lib = dlopen(Soname(info.library), RTLD_LAZY | RTLD_LOCAL);
    if (lib != nullptr) {
      fn = dlsym(lib, info.name);
      dlclose(lib);  // drops our reference only; the program's (or the lookup's) stays
    }
  }
  if (fn != nullptr && info.hooked && fn == HookAddress(id)) fn = nullptr;  // never ourselves
  return fn;
}

}  // namespace

const char* Soname(Library library) {
  switch (library) {
    case Library::CUDART:
      return "libcudart.so.13";
    case Library::CUDA:
      return "libcuda.so.1";
    case Library::CUDNN:
      return "libcudnn.so.9";
    case Library::CUBLAS:
      return "libcublas.so.13";
    case Library::CUBLASLT:
      return "libcublasLt.so.13";
    case Library::NCCL:
      return "libnccl.so.2";
  }
  return "";
}

const FunctionInfo kFunctions[kFunctionCount] = {
#define POOCH_HOOK(lib, ret, name, params, args) {#name, Library::lib, true},
#include "interpose/symbols/hooked_symbols.def"
#define POOCH_HOOK(lib, ret, name, params, args)
#define POOCH_REAL(lib, ret, name, params) {#name, Library::lib, false},
#include "interpose/symbols/hooked_symbols.def"
};

void* ResolveReal(FunctionId id) {
  const int i = Index(id);
  void* fn = Lookup(id);
  if (fn != nullptr) {
    internal::g_real[i].store(fn, std::memory_order_release);
  } else if (!g_missing_logged[i].exchange(true)) {
    LogLine("cannot find the real %s in %s (%s); %s returns an error", kFunctions[i].name,
            Soname(kFunctions[i].library), "not loaded or too old", kFunctions[i].name);
  }
  return fn;
}

namespace {

struct DriverEntry {
  const char* query;  // the name cuGetProcAddress is asked for
  int version;        // lowest CUDA version that gets this hook
  FunctionId id;
};

constexpr DriverEntry kDriverEntries[] = {
#define POOCH_HOOK(lib, ret, name, params, args)
#define POOCH_DRIVER_HOOK(ret, name, params, args, query, version) \
  {#query, version, FunctionId::name},
#define POOCH_DRIVER_HOOK_PT(ret, name, params, args, query, version)
#include "interpose/symbols/hooked_symbols.def"
};

// What a per-thread-default-stream look-up hands out (Note [Per-thread default stream] in
// interpose/process/streams.h).
constexpr DriverEntry kPerThreadDriverEntries[] = {
#define POOCH_HOOK(lib, ret, name, params, args)
#define POOCH_DRIVER_HOOK(ret, name, params, args, query, version)
#define POOCH_DRIVER_HOOK_PT(ret, name, params, args, query, version) \
  {#query, version, FunctionId::name},
#include "interpose/symbols/hooked_symbols.def"
};

}  // namespace

void* HookAddress(FunctionId id) {
  switch (id) {
// The cast picks the C signature where a C++ header overloads the name (cublasGemmEx).
#define POOCH_HOOK(lib, ret, name, params, args) \
  case FunctionId::name:                         \
    return reinterpret_cast<void*>(static_cast<ret(*) params>(&::name));
#include "interpose/symbols/hooked_symbols.def"
    default:
      return nullptr;
  }
}

void* DriverHookFor(const char* symbol, int cuda_version, bool per_thread) {
  if (symbol == nullptr) return nullptr;
  const DriverEntry* best = nullptr;
  for (const DriverEntry& e : per_thread ? absl::Span<const DriverEntry>(kPerThreadDriverEntries)
                                         : absl::Span<const DriverEntry>(kDriverEntries)) {
    if (e.version <= cuda_version && std::strcmp(e.query, symbol) == 0 &&
        (best == nullptr || e.version > best->version)) {
      best = &e;
    }
  }
  return best != nullptr ? HookAddress(best->id) : nullptr;
}

CallCounts Calls(FunctionId id) {
  const int i = Index(id);
  if (i >= kHookCount) return {};
  return {internal::g_top_calls[i].load(std::memory_order_relaxed),
          internal::g_nested_calls[i].load(std::memory_order_relaxed)};
}

void internal::LogCall(FunctionId id) {
  Log(Severity::kDebug, "call %s", kFunctions[Index(id)].name);
}

// The default intercepts: forward. Weak, so that <library>_hooks.cc can replace any of them.
namespace intercept {
#define POOCH_HOOK(lib, ret, name, params, args) \
  __attribute__((weak)) ret name params { return real::name() args; }
#include "interpose/symbols/hooked_symbols.def"
}  // namespace intercept

}  // namespace pooch::interpose

// The exported hooks. Each one: counts the call and guards re-entry, finds the real function
// (or returns the API's "not initialized" code), then forwards or intercepts.
#define POOCH_HOOK(lib, ret, name, params, args)                                           \
  extern "C" POOCH_EXPORT ret name params {                                                \
    namespace pi = ::pooch::interpose;                                                     \
    pi::HookScope scope(pi::FunctionId::name);                                             \
    const auto real = pi::real::name();                                                    \
    if (real == nullptr) return pi::NotInitialized<ret>();                                 \
    if (pi::ShouldIntercept(pi::FunctionId::name, scope)) return pi::intercept::name args; \
    return real args;                                                                      \
  }
#include "interpose/symbols/hooked_symbols.def"
