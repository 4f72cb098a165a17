#include "tests/simgpu/device/time/hazards.h"

#include <utility>
#include <vector>

namespace simgpu {
namespace {

bool Unfinished(const Use& u, uint64_t stream, double t_ns) {
  return u.op != nullptr && u.stream != stream && u.end_ns > t_ns;
}

}  // namespace

std::optional<Race> HazardTracker::Check(uint64_t lo, uint64_t hi, bool write, uint64_t stream,
                                         double ready_ns) const {
  std::optional<Race> race;
  uses_.ForEachOverlap(lo, hi, [&](uint64_t a, uint64_t, const Uses& u) {
    if (race) return;
    uint64_t at = a < lo ? lo : a;
    if (Unfinished(u.write, stream, ready_ns)) {
      race = Race{at, u.write, true};
    } else if (write && Unfinished(u.read, stream, ready_ns)) {
      race = Race{at, u.read, false};
    }
  });
  return race;
}

void HazardTracker::Record(uint64_t lo, uint64_t hi, bool write, uint64_t stream, double end_ns,
                           const char* op) {
  // Give every byte of [lo, hi) a segment, then update the pieces.
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  uint64_t at = lo;
  uses_.ForEachOverlap(lo, hi, [&](uint64_t a, uint64_t b, const Uses&) {
    if (a > at) gaps.emplace_back(at, a);
    if (b > at) at = b;
  });
  if (at < hi) gaps.emplace_back(at, hi);
  for (const auto& [a, b] : gaps) uses_.Assign(a, b, Uses{});
  Use use{op, stream, end_ns};
  uses_.ForEachSplit(lo, hi, [&](uint64_t, uint64_t, Uses& u) {
    Use& slot = write ? u.write : u.read;
    if (slot.op == nullptr || end_ns >= slot.end_ns) slot = use;
  });
}

std::optional<Race> HazardTracker::CheckRelease(uint64_t lo, uint64_t hi, uint64_t stream,
                                                double t_ns) const {
  std::optional<Race> race;
  uses_.ForEachOverlap(lo, hi, [&](uint64_t a, uint64_t, const Uses& u) {
    if (race) return;
    uint64_t at = a < lo ? lo : a;
    if (Unfinished(u.write, stream, t_ns)) {
      race = Race{at, u.write, true};
    } else if (Unfinished(u.read, stream, t_ns)) {
      race = Race{at, u.read, false};
    }
  });
  return race;
}

void HazardTracker::Reset(uint64_t lo, uint64_t hi, const Use& release) {
  if (release.op == nullptr) {
    uses_.Erase(lo, hi);
  } else {
    uses_.Assign(lo, hi, Uses{release, Use{}});
  }
}

}  // namespace simgpu
