// The process-wide sums of host_time.h.
#include "interpose/process/host_time.h"

namespace pooch::interpose {
namespace {

struct AtomicSum {
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> nanoseconds{0};
};

// Made once and never destroyed (hooks run during exit).
std::array<AtomicSum, static_cast<size_t>(HookWork::kCount)>& Sums() {
  static auto* sums = new std::array<AtomicSum, static_cast<size_t>(HookWork::kCount)>();
  return *sums;
}

}  // namespace

HookTimes CurrentHookTimes() {
  HookTimes t;
  for (size_t i = 0; i < t.of.size(); ++i) {
    t.of[i].calls = Sums()[i].calls.load(std::memory_order_relaxed);
    t.of[i].nanoseconds = Sums()[i].nanoseconds.load(std::memory_order_relaxed);
  }
  return t;
}

void AddHookTime(HookWork work, int64_t nanoseconds) {
  AtomicSum& sum = Sums()[static_cast<size_t>(work)];
  sum.calls.fetch_add(1, std::memory_order_relaxed);
  sum.nanoseconds.fetch_add(nanoseconds, std::memory_order_relaxed);
}

}  // namespace pooch::interpose
