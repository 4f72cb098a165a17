// init.cc: start-up (configuration) and the at-exit summary. See runtime_state.h.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/config.h"
#include "interpose/hook_table.h"
#include "interpose/intercept.h"
#include "interpose/log.h"
#include "interpose/managed.h"
#include "interpose/runtime_state.h"

extern char** environ;

namespace pooch::interpose {
namespace {

pooch::Config& MutableConfig() {
  static pooch::Config* config = new pooch::Config();  // never destroyed: hooks may run late
  return *config;
}

Severity ToSeverity(pooch::LogLevel level) {
  switch (level) {
    case pooch::LogLevel::kError:
      return Severity::kError;
    case pooch::LogLevel::kWarn:
      return Severity::kWarn;
    case pooch::LogLevel::kInfo:
      return Severity::kInfo;
    case pooch::LogLevel::kDebug:
      return Severity::kDebug;
  }
  return Severity::kWarn;
}

// POOCH_ITERATION_MARKER=nvtx: NVTX loads its tool from NVTX_INJECTION64_PATH at the program's
// first NVTX call, which comes after this constructor; pooch names itself there
// (interpose/nvtx_injection.cc). Another tool already named keeps its place.
void UseAsNvtxInjection() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&UseAsNvtxInjection), &info) == 0 ||
      info.dli_fname == nullptr) {
    LogLine("POOCH_ITERATION_MARKER=nvtx: cannot find libpooch.so's path; NVTX ranges not read");
    return;
  }
  const char* current = std::getenv("NVTX_INJECTION64_PATH");
  if (current != nullptr && *current != '\0' && std::strcmp(current, info.dli_fname) != 0) {
    LogLine(
        "POOCH_ITERATION_MARKER=nvtx: NVTX_INJECTION64_PATH names another tool (%s); NVTX "
        "ranges not read, no profile will be made",
        current);
    return;
  }
  setenv("NVTX_INJECTION64_PATH", info.dli_fname, 1);
}

// Runs before the program's main (and before the constructors of libraries loaded after us).
__attribute__((constructor)) void Start() {
  absl::StatusOr<pooch::Config> config =
      pooch::LoadConfig([](const char* name) -> const char* { return std::getenv(name); });
  if (!config.ok()) {
    LogLine("%.*s", static_cast<int>(config.status().message().size()),
            config.status().message().data());
    _exit(2);
  }
  MutableConfig() = *std::move(config);
  SetLogThreshold(ToSeverity(MutableConfig().log_level));

  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr && std::strncmp(*e, "POOCH_", 6) == 0) names.emplace_back(*e, eq - *e);
  }
  for (const std::string& unknown : pooch::UnknownPoochVariables(names)) {
    POOCH_LOG_AT(kWarn, "unknown variable %s ignored", unknown.c_str());
  }
  const absl::string_view policy = pooch::PolicyText(MutableConfig());
  POOCH_LOG_AT(kInfo, "loaded, policy %.*s", static_cast<int>(policy.size()), policy.data());
  if (MutableConfig().iteration_marker == pooch::IterationMarker::kNvtx) UseAsNvtxInjection();
  if (MutableConfig().mode != pooch::RunMode::kOff) {
    // Demand swapping under every policy but off; a planner policy adds the profiler and the
    // plan's actions on top (interpose/profiling.h).
    g_managed.store(true, std::memory_order_release);
  }
}

__attribute__((destructor)) void Stop() {
  CloseTrace();
  const pooch::Config& config = MutableConfig();
  if (!config.summary) return;
  const absl::string_view policy = pooch::PolicyText(config);
  LogLine("summary: policy %.*s", static_cast<int>(policy.size()), policy.data());
  if (pooch::ResidencyManager* manager = ExistingManager()) {
    const pooch::ResidencyStats s = manager->Stats();
    LogLine("memory: limit %lld peak_device_bytes %lld peak_host_bytes %lld",
            static_cast<long long>(manager->memory_limit()),
            static_cast<long long>(s.peak_device_bytes), static_cast<long long>(s.peak_host_bytes));
    LogLine(
        "swaps: out %lld (%lld bytes) in %lld (%lld bytes) demand_in %lld cancelled %lld "
        "wait_ms %.3f oom %lld allocations %lld frees %lld",
        static_cast<long long>(s.swap_outs), static_cast<long long>(s.bytes_swapped_out),
        static_cast<long long>(s.swap_ins), static_cast<long long>(s.bytes_swapped_in),
        static_cast<long long>(s.demand_swap_ins), static_cast<long long>(s.cancelled_swap_outs),
        absl::ToDoubleMilliseconds(s.swap_wait), static_cast<long long>(s.out_of_memory),
        static_cast<long long>(s.allocations), static_cast<long long>(s.frees));
    // The reuse cache (core/residency.cc, Note [Reuse cache]): freed chunks handed out again
    // without a device call.
    LogLine("reuse: hits %lld misses %lld cached_bytes %lld", static_cast<long long>(s.reuse_hits),
            static_cast<long long>(s.reuse_misses), static_cast<long long>(s.cached_bytes));
  }
  ReportProfiling();
  if (pooch::SmallAllocator* small = ExistingSmallAllocator()) {
    // Allocations under POOCH_MIN_SWAP_BYTES (core/small_allocator.h): the slabs they live in,
    // and how often an allocation had to wait for freed blocks' work to finish.
    const pooch::SmallAllocatorStats s = small->Stats();
    LogLine(
        "small: slabs %lld slab_bytes %lld peak_slab_bytes %lld live_blocks %lld "
        "live_bytes %lld peak_live_bytes %lld waits %lld",
        static_cast<long long>(s.slabs), static_cast<long long>(s.slab_bytes),
        static_cast<long long>(s.peak_slab_bytes), static_cast<long long>(s.live_blocks),
        static_cast<long long>(s.live_bytes), static_cast<long long>(s.peak_live_bytes),
        static_cast<long long>(s.waits));
  }
  for (int i = 0; i < kHookCount; ++i) {
    const CallCounts calls = Calls(static_cast<FunctionId>(i));
    if (calls.top == 0 && calls.nested == 0) continue;
    LogLine("calls: %s %llu (+%llu nested)", kFunctions[i].name,
            static_cast<unsigned long long>(calls.top),
            static_cast<unsigned long long>(calls.nested));
  }
}

}  // namespace

const pooch::Config& GetConfig() { return MutableConfig(); }

}  // namespace pooch::interpose
