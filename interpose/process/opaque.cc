// opaque.cc: the opaque-call counters and messages (opaque.h, Note [Opaque calls]).
#include "interpose/process/opaque.h"

#include <algorithm>
#include <atomic>

#include "absl/container/flat_hash_map.h"
#include "core/base/log.h"
#include "core/base/mutex.h"
#include "interpose/symbols/hook_table.h"

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

uint64_t UnclassifiedCalls() { return g_unclassified.load(std::memory_order_relaxed); }

void LogOpaqueRefused(const char* function, int64_t needed_bytes, int64_t limit_bytes,
                      const absl::Status& status) {
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

}  // namespace pooch::interpose
