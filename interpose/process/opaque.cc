// opaque.cc: the opaque-call counters and messages (opaque.h, Note [Opaque calls]).
#include "interpose/process/opaque.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "absl/container/flat_hash_map.h"
#include "core/base/log.h"
#include "core/base/mutex.h"
#include "interpose/process/opaque_api.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose {
namespace {

// Keyed by the name's text, not its address: a name may come from several translation units.
struct Counts {
  Mutex mu;
  absl::flat_hash_map<std::string, uint64_t> by_name ABSL_GUARDED_BY(mu);
};

Counts& TheCounts() {
  static Counts* counts = new Counts;  // never destroyed: hooks run during exit
  return *counts;
}

}  // namespace

void CountOpaque(const char* function) {
  Counts& c = TheCounts();
  MutexLock lock(&c.mu);
  ++c.by_name[function];
}

std::vector<std::pair<std::string, uint64_t>> OpaqueCounts() {
  Counts& c = TheCounts();
  std::vector<std::pair<std::string, uint64_t>> out;
  {
    MutexLock lock(&c.mu);
    out.assign(c.by_name.begin(), c.by_name.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t OpaqueTotal() {
  uint64_t total = 0;
  for (const auto& [name, count] : OpaqueCounts()) total += count;
  return total;
}

namespace {
std::atomic<uint64_t> g_unclassified{0};
}  // namespace

void CountUnclassified(const char* function) {
  if (g_unclassified.fetch_add(1, std::memory_order_relaxed) == 0) {
    LogLine(
        "%s: a CUDA function classes.tsv does not classify; pooch cannot tell whether it "
        "touches device memory (please report it)",
        function);
  }
}

uint64_t UnclassifiedCalls() {
  return g_unclassified.load(std::memory_order_relaxed) + UnclassifiedLookups();
}

namespace {
std::atomic<uint64_t> g_opaque_refused{0};
}  // namespace

uint64_t OpaqueRefused() { return g_opaque_refused.load(std::memory_order_relaxed); }

void LogOpaqueRefused(const char* function, int64_t needed_bytes, int64_t limit_bytes,
                      const absl::Status& status) {
  g_opaque_refused.fetch_add(1, std::memory_order_relaxed);
  LogLine(
      "%s: pooch cannot see which device memory this call touches, so it must make all %lld "
      "bytes of the program's allocations resident (limit %lld): %.*s; refusing the call. "
      "Raise POOCH_MEMORY_LIMIT, or report the call so that pooch can model it",
      function, static_cast<long long>(needed_bytes), static_cast<long long>(limit_bytes),
      static_cast<int>(status.message().size()), status.message().data());
}

void SynchronizeAfterOpaque() {
  // The real function: the hook would count a call of the program's.
  if (const auto sync = real::cudaDeviceSynchronize()) NoteResult(sync());
}

// ---- opaque_api.h: what the generated hooks call ------------------------------------------

void* OpaqueFunction::Resolve() {
  void* fn = dlsym(RTLD_NEXT, name_);
  if (fn == nullptr) {
    // A library loaded RTLD_LOCAL (a Python extension's dependency): by soname, as hooks.cc.
    void* lib = dlopen(soname_, RTLD_LAZY | RTLD_NOLOAD);
    if (lib == nullptr) lib = dlopen(soname_, RTLD_LAZY | RTLD_LOCAL);
    if (lib != nullptr) {
      fn = dlsym(lib, name_);
      dlclose(lib);  // drops our reference only
    }
  }
  if (fn != nullptr) {
    real_.store(fn, std::memory_order_release);
  } else if (!missing_logged_.exchange(true)) {
    LogLine("cannot find the real %s in %s (not loaded or too old); %s returns an error", name_,
            soname_, name_);
  }
  return fn;
}

int OpaqueNotInitialized(OpaqueApi api) {
  switch (api) {
    case OpaqueApi::kRuntime:
      return NotInitialized<cudaError_t>();
    case OpaqueApi::kDriver:
      return NotInitialized<CUresult>();
    case OpaqueApi::kCudnn:
      return NotInitialized<cudnnStatus_t>();
    case OpaqueApi::kCublas:
      return NotInitialized<cublasStatus_t>();
  }
  return 1;
}

void OpaqueMissing(const OpaqueFunction& f) {
  LogLine(
      "%s: the real function cannot be found and the legacy cuBLAS API cannot report it; "
      "exiting",
      f.name());
  std::abort();
}

OpaqueScope::OpaqueScope(const OpaqueFunction& f) : top_(internal::g_hook_depth++ == 0) {
  intercept_ = top_ && g_managed.load(std::memory_order_acquire);
  if (top_) internal::g_top_opaque = f.name();  // RunOp's messages and the profiler's op name
}

OpaqueScope::~OpaqueScope() {
  if (top_) internal::g_top_opaque = nullptr;
  --internal::g_hook_depth;
}

int OpaqueRun(const OpaqueFunction& f, OpaqueApi api, uintptr_t stream, bool stream_known,
              absl::FunctionRef<int()> call) {
  switch (api) {
    case OpaqueApi::kRuntime:
      return RunOpaque<cudaError_t>(f.name(), stream, stream_known,
                                    [&] { return static_cast<cudaError_t>(call()); });
    case OpaqueApi::kDriver:
      return RunOpaque<CUresult>(f.name(), stream, stream_known,
                                 [&] { return static_cast<CUresult>(call()); });
    case OpaqueApi::kCudnn:
      return RunOpaque<cudnnStatus_t>(f.name(), stream, stream_known,
                                      [&] { return static_cast<cudnnStatus_t>(call()); });
    case OpaqueApi::kCublas:
      return RunOpaque<cublasStatus_t>(f.name(), stream, stream_known,
                                       [&] { return static_cast<cublasStatus_t>(call()); });
  }
  return call();
}

void OpaqueRunOrDie(const OpaqueFunction& f, uintptr_t stream, bool stream_known,
                    absl::FunctionRef<int()> call) {
  bool called = false;
  RunOpaque<cublasStatus_t>(f.name(), stream, stream_known, [&] {
    called = true;
    call();
    return CUBLAS_STATUS_SUCCESS;
  });
  if (!called) {
    LogLine("%s: refused (above), and the legacy cuBLAS API cannot report it; exiting", f.name());
    std::abort();
  }
}

uintptr_t OpaqueCublasStream(const void* handle) {
  cudaStream_t stream = nullptr;
  if (const auto get = real::cublasGetStream_v2()) {
    get(static_cast<cublasHandle_t>(const_cast<void*>(handle)), &stream);
  }
  return reinterpret_cast<uintptr_t>(stream);
}

uintptr_t OpaqueCudnnStream(const void* handle) {
  cudaStream_t stream = nullptr;
  if (const auto get = real::cudnnGetStream()) {
    get(static_cast<cudnnHandle_t>(const_cast<void*>(handle)), &stream);
  }
  return reinterpret_cast<uintptr_t>(stream);
}

}  // namespace pooch::interpose
