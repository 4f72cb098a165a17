// CopyTimes (copy_times.h; Note [Copy times]).
#include "core/measure/copy_times.h"

namespace pooch {

void CopyTimes::NoteAllocation(AllocationId manager_id, uint64_t recorder_id) {
  if (recorder_id_of_.size() >= kMaxKept) recorder_id_of_.clear();
  recorder_id_of_[manager_id] = recorder_id;
}

void CopyTimes::OnOp(ResidencyManager& manager) {
  if (++ops_since_taken_ >= kTakeEvery) Take(manager);
}

void CopyTimes::Take(ResidencyManager& manager) {
  ops_since_taken_ = 0;
  for (const CopyTiming& t : manager.TakeCopyTimings()) {
    timings_.push_back(t);
    if (timings_.size() > kMaxKept) timings_.pop_front();
  }
}

void CopyTimes::Attribute(BuiltProfile& built) const {
  absl::flat_hash_map<uint64_t, size_t> tensor_of;  // recorder's allocation id -> tensor
  for (size_t t = 0; t < built.tensor_allocation.size(); ++t) {
    tensor_of[built.tensor_allocation[t]] = t;
  }
  struct Sum {
    double us[2] = {0, 0};
    int n[2] = {0, 0};
  };
  absl::flat_hash_map<size_t, Sum> sums;
  for (const CopyTiming& c : timings_) {
    auto id = recorder_id_of_.find(c.allocation);
    if (id == recorder_id_of_.end()) continue;
    auto t = tensor_of.find(id->second);
    if (t == tensor_of.end()) continue;
    const int d = c.direction == CopyTiming::Direction::kToHost ? 0 : 1;
    sums[t->second].us[d] += c.microseconds;
    ++sums[t->second].n[d];
  }
  for (const auto& [t, sum] : sums) {
    Tensor& tensor = built.profile.tensors[t];
    if (sum.n[0] > 0) tensor.swap_out_us = sum.us[0] / sum.n[0];
    if (sum.n[1] > 0) tensor.swap_in_us = sum.us[1] / sum.n[1];
  }
}

MachineModel CopyTimes::Machine(int64_t memory_bytes, bool* assumed) const {
  MachineModel m;
  m.name = "measured";
  m.memory_bytes = memory_bytes;
  double bytes[2] = {0, 0}, us[2] = {0, 0};
  for (const CopyTiming& t : timings_) {
    const int d = t.direction == CopyTiming::Direction::kToHost ? 0 : 1;
    bytes[d] += static_cast<double>(t.bytes);
    us[d] += t.microseconds;
  }
  *assumed = false;
  auto gbps = [&](int d) {
    if (us[d] <= 0) {
      *assumed = true;
      return kAssumedLinkGbps;
    }
    return bytes[d] / us[d] / 1000.0;  // bytes per µs is MB/s
  };
  m.d2h_gbps = gbps(0);
  m.h2d_gbps = gbps(1);
  return m;
}

void CopyTimes::Clear() {
  timings_.clear();
  recorder_id_of_.clear();
}

}  // namespace pooch
