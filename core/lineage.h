// LineageLog: the log of every intercepted op with what it read and wrote, for recomputation
// (a later issue replays the calls that produced a dropped tensor through a Replayer) and for
// debugging (POOCH_LINEAGE_OUT dumps it as JSON at exit).
//
// Each record holds the API call's name, its stream, its read and write sets as address ranges
// with the allocation they fall in, whether those effects are known, and the call's arguments as
// opaque bytes that only the interposer that recorded them can interpret:
//   - cuDNN, cuBLAS, memcpy, memset: effects known; reads and writes are exact.
//   - generic kernel launch: effects unknown (DESIGN.md decision 5); `reads` and `writes` both
//     hold every allocation the launch may touch (found by scanning its parameters), so the
//     outputs of such an op are never recomputed, but its inputs are kept resident.
//
// Note [Lineage bounds]: memory stays bounded three ways, whichever bites first. Records older
// than the last `keep_iterations` iterations are dropped at each MarkIteration (recomputation
// never reaches further back than the previous iteration's forward pass); the total number of
// records is capped by `max_records` and the bytes of recorded arguments by `max_arg_bytes`
// (a program without iteration markers still cannot grow the log without limit). Dropping is
// oldest-first and counted (`dropped` in the JSON).
//
// Thread safety: thread-safe; Append may be called from any hook on any thread.
#ifndef POOCH_CORE_LINEAGE_H_
#define POOCH_CORE_LINEAGE_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "core/device.h"
#include "core/mutex.h"
#include "nlohmann/json.hpp"

namespace pooch {

enum class Effects { kKnown, kUnknown };

struct LineageRange {
  uint64_t allocation = 0;  // the residency manager's AllocationId; 0 = not one of pooch's
  DeviceAddress address = 0;
  int64_t bytes = 0;
};

struct LineageRecord {
  uint64_t seq = 0;        // set by Append: 1, 2, 3, ... over the whole run
  uint64_t iteration = 0;  // set by Append: the number of MarkIteration calls before it
  std::string name;        // the API call: "cudnnConvolutionForward", "cuLaunchKernel", ...
  StreamHandle stream = kDefaultStream;
  std::vector<LineageRange> reads;
  std::vector<LineageRange> writes;
  Effects effects = Effects::kKnown;
  std::string args;  // the recorded call arguments, opaque bytes for the Replayer
};

struct LineageOptions {
  size_t max_records = size_t{1} << 18;
  int64_t max_arg_bytes = int64_t{64} << 20;
  int keep_iterations = 2;  // the current one and the one before
};

class LineageLog {
 public:
  explicit LineageLog(LineageOptions options = {}) : options_(options) {}

  // Appends `record` (seq and iteration are assigned) and returns its seq.
  uint64_t Append(LineageRecord record) ABSL_LOCKS_EXCLUDED(mu_);
  // Starts the next iteration and drops what is older than keep_iterations.
  void MarkIteration() ABSL_LOCKS_EXCLUDED(mu_);

  std::vector<LineageRecord> Snapshot() const ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<LineageRecord> Find(uint64_t seq) const ABSL_LOCKS_EXCLUDED(mu_);
  // The latest record before `before_seq` that writes allocation `id` (the head of a
  // recompute chain); nullopt when it was dropped or never logged.
  std::optional<LineageRecord> LastWriter(uint64_t id, uint64_t before_seq) const
      ABSL_LOCKS_EXCLUDED(mu_);

  struct Counters {
    uint64_t appended = 0;
    uint64_t dropped = 0;
    size_t records = 0;
    int64_t arg_bytes = 0;
    uint64_t iteration = 0;
  };
  Counters counters() const ABSL_LOCKS_EXCLUDED(mu_);

  // {"format": "pooch-lineage", "version": 1, "iteration", "appended", "dropped", "ops": [
  //   {"seq", "iteration", "name", "stream", "effects": "known"|"unknown",
  //    "reads": [{"allocation", "address": "0x...", "bytes"}], "writes": [...],
  //    "args": "<hex>"}]}
  nlohmann::json ToJson() const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status WriteJson(const std::string& path) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void DropOldestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const LineageOptions options_;
  mutable Mutex mu_;
  std::deque<LineageRecord> records_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t iteration_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t arg_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// Re-issues a recorded call (a later issue: recomputation). The interposer implements it: it
// decodes `op.args`, which it wrote, and calls the real API on `stream`.
// Thread safety: implementations must accept calls from any thread.
class Replayer {
 public:
  virtual ~Replayer() = default;
  virtual absl::Status Replay(const LineageRecord& op, StreamHandle stream) = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_LINEAGE_H_
