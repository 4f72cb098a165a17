// copy_times.h: the swap copies' timings taken while a program is profiled, and what they say
// about the link and about each profiled tensor (Note [Copy times]).
//
// Note [Copy times]
// ~~~~~~~~~~~~~~~~~
// The manager times its swap copies while the program is profiled (ResidencyManager::
// SetTimeCopies; on from the start, off once a profile is made, on again to re-profile: each
// timing holds two events until taken, which a long run must not accumulate). The plan executor
// takes the timings every kTakeEvery ops and at the end, keeping the latest kMaxKept. They give
// the machine's link bandwidth each way, and each tensor of the reference iteration that was
// swapped while profiled gets its own mean copy times (Tensor::swap_out_us, swap_in_us), which
// the simulator prefers to bytes over bandwidth.
//
// Thread safety: none; the plan executor calls it under its lock.
#ifndef POOCH_CORE_MEASURE_COPY_TIMES_H_
#define POOCH_CORE_MEASURE_COPY_TIMES_H_

#include <cstdint>
#include <deque>

#include "absl/container/flat_hash_map.h"
#include "core/model/model.h"
#include "core/profile/profile_builder.h"
#include "core/residency/residency.h"

namespace pooch {

class CopyTimes {
 public:
  // How often (in ops) the timings are taken, and how many are kept.
  static constexpr int64_t kTakeEvery = 4096;
  static constexpr size_t kMaxKept = size_t{1} << 16;
  // PCIe gen3 x16, the planner's v100-pcie3 figure (core/model/machines.cc), used for a
  // direction whose copies were not measured while profiling (no swap happened), and said so in
  // the summary.
  static constexpr double kAssumedLinkGbps = 16.0;

  // The manager's id `manager_id` of an allocation is the op-stream recorder's `recorder_id`
  // (both allocation ids), so that its copies can be found.
  void NoteAllocation(AllocationId manager_id, uint64_t recorder_id);
  // Called on every op while profiling: takes the manager's timings every kTakeEvery ops.
  void OnOp(ResidencyManager& manager);
  // Takes the timings the manager holds now.
  void Take(ResidencyManager& manager);
  // Gives each tensor of `built` that was swapped while profiled its mean copy times.
  void Attribute(BuiltProfile& built) const;
  // The machine as measured: `memory_bytes`, and the copies' bandwidth each way, or
  // kAssumedLinkGbps for a direction with no copy (then *assumed is true).
  MachineModel Machine(int64_t memory_bytes, bool* assumed) const;
  // Forgets the timings and the allocations (a profile was made).
  void Clear();

 private:
  std::deque<CopyTiming> timings_;
  absl::flat_hash_map<uint64_t, uint64_t> recorder_id_of_;  // manager id -> recorder id
  int64_t ops_since_taken_ = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_MEASURE_COPY_TIMES_H_
