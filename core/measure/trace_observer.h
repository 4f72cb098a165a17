// trace_observer.h: POOCH_TRACE, the residency manager's swaps and memory as a Chrome trace.
//
// Track "swap out" and "swap in" hold one interval per copy (from when it was queued to when the
// manager saw it complete, core/residency/residency.h Note [Tracing hooks]); a cancelled swap-out
// is an instant event; the counter "memory" plots device and pinned host bytes. Track "pooch
// runtime" holds the plan executor's instants (core/exec/plan_executor.h): iteration starts, the
// plan, departures.
//
// Thread safety: the manager calls the observer with its mutex held, which serialises the
// callbacks; Close() is called once at exit.
#ifndef POOCH_CORE_MEASURE_TRACE_OBSERVER_H_
#define POOCH_CORE_MEASURE_TRACE_OBSERVER_H_

#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "core/base/trace.h"
#include "core/residency/residency.h"

namespace pooch {

class TraceObserver final : public pooch::ResidencyObserver {
 public:
  explicit TraceObserver(std::unique_ptr<pooch::TraceWriter> writer);

  void OnSwap(const pooch::SwapRecord& record) override;
  void OnMemory(int64_t device_bytes, int64_t host_bytes, absl::Time at) override;
  // An instant on the "pooch runtime" track, now. Safe from any thread (the writer locks).
  void OnRuntime(absl::string_view name, absl::Span<const pooch::TraceArg> args);

  absl::Status Close() { return writer_->Close(); }

 private:
  double Us(absl::Time t) const { return absl::ToDoubleMicroseconds(t - start_); }

  const std::unique_ptr<pooch::TraceWriter> writer_;
  const absl::Time start_;
  // Start of each allocation's copy in flight, by (allocation, direction).
  absl::flat_hash_map<std::pair<pooch::AllocationId, bool>, absl::Time> started_;
};

}  // namespace pooch

#endif  // POOCH_CORE_MEASURE_TRACE_OBSERVER_H_
