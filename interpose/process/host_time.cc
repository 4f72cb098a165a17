// The process-wide sums of host_time.h.
#include "interpose/process/host_time.h"

namespace pooch::interpose {
namespace {

// Made once and never destroyed (hooks run during exit).
std::array<AtomicCallSum, static_cast<size_t>(HookWork::kCount)>& Sums() {
  static auto* sums = new std::array<AtomicCallSum, static_cast<size_t>(HookWork::kCount)>();
  return *sums;
}

}  // namespace

HookTimes CurrentHookTimes() {
  HookTimes t;
  for (size_t i = 0; i < t.of.size(); ++i) t.of[i] = Sums()[i].Load();
  return t;
}

void AddHookTime(HookWork work, int64_t nanoseconds) {
  Sums()[static_cast<size_t>(work)].Add(nanoseconds);
}

}  // namespace pooch::interpose
