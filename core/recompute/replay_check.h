// replay_check.h: POOCH_CHECK_REPLAYS, the replay check: every map the Recomputer drops is
// copied to host memory, and the bytes its replay rebuilds are compared with the copy.
//
// Note [Replay check]
// ~~~~~~~~~~~~~~~~~~~
// A recipe is exact by construction (core/lineage/replay_recipe.h), but the construction rests on
// what pooch inferred: a kernel's verdict (what it writes, that it is deterministic: Note [Kernel
// recipes] in interpose/hooks/launch/kernel_replay.h), that every write to a recipe's inputs was
// seen. The check tests those inferences where they matter, on a GPU (and on simgpu's math mode):
//   - before a drop, the map's bytes are copied to the host after every use queued so far, on
//     any stream (ResidencyManager::WaitForUses), the map pinned while the copy runs;
//   - after the replay's inputs are resident and its output restored, the output is filled with
//     the copy's complement, so that no byte equals the copy unless the replay wrote it;
//   - after the replay's links, on the replay's stream, the output is read back and compared.
// A byte the replay wrote with another value than the dropped map held is a mismatch; so is a
// replay that wrote none of the map's bytes (a recipe writing elsewhere). A byte left unwritten
// (still the complement; a wrong byte that happens to be the complement is taken for one) is only
// counted: the program never reads bytes the map's first writer left unwritten (Note [First
// writers] in core/profile/profile_builder.cc; padding after a tensor, as with PyTorch's rounded
// sizes), and which bytes those were is not known. A mismatch is reported by the owner's callback
// (the process prints one `pooch: replay check: ...` line and exits 70) and fails the replay.
// Costs: host memory for the maps dropped and not yet rebuilt (at most what the plan holds dropped
// at once), one pinned staging buffer of the largest map, and three copies with a host wait per
// drop and replay. Under dtr eviction drops maps inside the manager, where nothing is copied: those
// replays are counted as unchecked.
//
// Thread safety: none; the Recomputer calls it under its lock.
#ifndef POOCH_CORE_RECOMPUTE_REPLAY_CHECK_H_
#define POOCH_CORE_RECOMPUTE_REPLAY_CHECK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/device/device.h"
#include "core/residency/residency.h"

namespace pooch {

class ReplayCheck {
 public:
  // Told the one line of a mismatch ("pooch: replay check: ..." without the "pooch: "). The
  // process prints it and exits; if it returns, the replay fails with the line.
  using OnMismatch = std::function<void(const std::string& line)>;

  ReplayCheck(Device& device, OnMismatch on_mismatch)
      : device_(device), on_mismatch_(std::move(on_mismatch)) {}
  ~ReplayCheck();
  ReplayCheck(const ReplayCheck&) = delete;
  ReplayCheck& operator=(const ReplayCheck&) = delete;

  // Right before `manager` drops the allocation at `base`: copies its bytes when it is resident
  // (the manager drops nothing else), replacing an older copy.
  absl::Status Keep(ResidencyManager& manager, DeviceAddress base);
  // The allocation at `base` will not be rebuilt (its recipe went, or it was not dropped).
  void Forget(DeviceAddress base);

  // A replay of `base` (`bytes` long) is about to be issued on `stream`, its output restored
  // and pinned: fills it with the copy's complement. False when there is no copy to check
  // against (the replay is counted unchecked).
  absl::StatusOr<bool> Prime(DeviceAddress base, int64_t bytes, StreamHandle stream);
  // After the replay's links were queued on `stream` (REQUIRES: Prime returned true): compares
  // the rebuilt bytes with the copy, which goes. `calls`: the links, for the line.
  absl::Status Verify(DeviceAddress base, StreamHandle stream, absl::string_view calls);
  // A replay of a map dropped with no copy (Prime returned false).
  void CountUnchecked() { ++stats_.unchecked; }

  struct Stats {
    int64_t checked = 0;          // replays compared, bit for bit
    int64_t checked_bytes = 0;    // their maps' bytes
    int64_t unwritten_bytes = 0;  // of which the replays left unwritten
    int64_t unchecked = 0;        // replays of maps dropped without a copy
    int64_t peak_held_bytes = 0;  // host bytes of the copies held at once, at most
  };
  const Stats& stats() const { return stats_; }

 private:
  // A pinned buffer of at least `bytes`.
  absl::StatusOr<uint8_t*> Staging(int64_t bytes);
  absl::StatusOr<StreamHandle> Stream();
  // Waits on the host for the work queued on `stream`.
  absl::Status Finish(StreamHandle stream);

  Device& device_;
  OnMismatch on_mismatch_;
  absl::flat_hash_map<DeviceAddress, std::vector<uint8_t>> copies_;
  int64_t held_bytes_ = 0;
  void* staging_ = nullptr;
  int64_t staging_bytes_ = 0;
  StreamHandle stream_ = 0;  // for the copies before drops; created on first use
  EventHandle event_ = 0;
  Stats stats_;
};

}  // namespace pooch

#endif  // POOCH_CORE_RECOMPUTE_REPLAY_CHECK_H_
