// hazards.h: the race checker (DESIGN.md Decision 8).
//
// simgpu runs ops eagerly on the CPU in issue order, so a missing event wait never corrupts data
// here; it would on a GPU. The checker finds it by virtual time. For every byte range it keeps
// the op that last wrote it and the read that ends last, with their streams and end times. An
// op on stream S that may start (by explicit ordering: stream order, event waits, host
// synchronisation; not engine contention) at time t races with
//   - a write on another stream ending after t (read-after-write, write-after-write), and,
//     when the op writes, a read on another stream ending after t (write-after-read).
// Keeping only the latest-ending read is exact: if that read is on S, every other read ends
// before S's stream time and hence before t.
// Releasing memory (free, unmap) at time t races with any use ending after t.
//
// Thread safety: none; the device's mutex guards it.
#ifndef SIMGPU_DEVICE_HAZARDS_H_
#define SIMGPU_DEVICE_HAZARDS_H_

#include <cstdint>
#include <optional>

#include "tests/simgpu/device/memory/interval_map.h"

namespace simgpu {

// A stream id that differs from every stream: the host (for synchronous releases).
inline constexpr uint64_t kHostStreamId = ~uint64_t{0};

struct Use {
  const char* op = nullptr;  // nullptr: none
  uint64_t stream = 0;
  double end_ns = 0;
};

struct Race {
  uint64_t addr;  // first byte of the conflicting range
  Use earlier;    // the unfinished use
  bool earlier_write;
};

class HazardTracker {
 public:
  // The first race of an access to [lo, hi) by an op on `stream` that may start at `ready_ns`.
  std::optional<Race> Check(uint64_t lo, uint64_t hi, bool write, uint64_t stream,
                            double ready_ns) const;

  // Records that an op on `stream` reads or writes [lo, hi) until `end_ns`.
  void Record(uint64_t lo, uint64_t hi, bool write, uint64_t stream, double end_ns, const char* op);

  // Memory [lo, hi) is released at `t_ns` by `stream` (kHostStreamId: the host). Returns the
  // first use from another stream still unfinished then, if any.
  std::optional<Race> CheckRelease(uint64_t lo, uint64_t hi, uint64_t stream, double t_ns) const;

  // Forgets [lo, hi); if `release` has an op, remembers it as a write (a stream-ordered free:
  // reuse of the range on another stream before the free happens is a race).
  void Reset(uint64_t lo, uint64_t hi, const Use& release);

  size_t segments() const { return uses_.size(); }

 private:
  struct Uses {
    Use write;
    Use read;
  };
  IntervalMap<Uses> uses_;
};

}  // namespace simgpu

#endif  // SIMGPU_DEVICE_HAZARDS_H_
