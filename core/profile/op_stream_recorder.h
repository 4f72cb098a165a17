// OpStreamRecorder: what the interposer knows of the program's op stream, kept in the form the
// iteration tracker and the profile builder need. It gives each event its tracker signature,
// feeds the tracker, and while profiling keeps the ops, allocations and frees so that, once the
// tracker has found the reference iteration, Reference() returns it as a RecordedIteration
// (core/profile/profile_builder.h).
//
//   OpStreamRecorder r({.marker = IterationMarker::kAuto, .profile_iterations = 2});
//   r.Alloc(7, 4 << 20, /*managed=*/true);                     // cudaMalloc
//   IterationTracker::Step s = r.Op("cudnnConvolutionForward", {{7, RecordedAccess::kWrite}});
//   r.SetDuration(s.seq, 812.5);                                // measured later with events
//   if (s.profile_ready) absl::StatusOr<RecordedIteration> it = r.Reference(other_bytes);
//
// Allocations are named by ids the caller makes unique over the run (an address is reused after
// a free; an id is not). Signatures (Note [Event signatures] in op_stream_recorder.cc) use the
// API name and sizes, never ids or addresses, so that two iterations compare equal.
//
// Thread safety: thread-compatible; the interposer calls it under its own lock.
#ifndef POOCH_CORE_PROFILE_OP_STREAM_RECORDER_H_
#define POOCH_CORE_PROFILE_OP_STREAM_RECORDER_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/profile/iteration_tracker.h"
#include "core/profile/profile_builder.h"
#include "core/profile/stable_accesses.h"

namespace pooch {

class OpStreamRecorder {
 public:
  struct Access {
    uint64_t allocation = 0;  // an id given to Alloc
    RecordedAccess::Mode mode = RecordedAccess::kRead;
    bool whole = false;  // RecordedAccess::whole
  };

  explicit OpStreamRecorder(IterationTrackerOptions options);

  // `name` is the API function's name and must outlive the recorder (a string literal or the
  // hook table's). Accesses to ids never given to Alloc are ignored (memory pooch does not own).
  // `replay_capable`: the interposer could re-issue this call (RecordedOp::replay_capable).
  // `exact_accesses` false: the accesses were guessed (a kernel's scanned parameter words) and
  // may differ between iterations of the same op, so they stay out of its signature (Note
  // [Event signatures]).
  // `copy`: what it copies between host and device memory (RecordedOp::copy).
  IterationTracker::Step Op(const char* name, absl::Span<const Access> accesses,
                            bool replay_capable = false, bool exact_accesses = true,
                            HostCopyBytes copy = {});
  // `managed`: the residency manager owns it (>= POOCH_MIN_SWAP_BYTES); only managed allocations
  // become tensors of the profile; the others only shape the iteration's signature.
  IterationTracker::Step Alloc(uint64_t allocation, int64_t bytes, bool managed);
  // Unknown ids are ignored (allocations made before pooch started).
  std::optional<IterationTracker::Step> Free(uint64_t allocation);
  // An explicit iteration marker (sync/NVTX); see IterationTracker::MarkBoundary.
  IterationTracker::BoundaryResult MarkBoundary();

  // The measured device time of the op with sequence number `seq`, if it is still kept.
  void SetDuration(uint64_t seq, double microseconds);

  // The reference iteration (after profile_ready) with the durations set so far; ops whose
  // duration is unknown get 0. `other_bytes`: memory not modelled per tensor. FailedPrecondition
  // before the reference exists or when its events are no longer kept.
  // With `positions`, also where the iteration's ops and managed allocations are, as positions
  // in the reference (IterationTracker::Step::position), for the plan's actions.
  // Note [Stable kernel accesses] (stable_accesses.cc): a kernel's guessed accesses that another
  // recorded window of the reference did not make are left out
  // (RecordedIteration::unstable_accesses says how many).
  struct Positions {
    std::vector<int64_t> ops;             // of RecordedIteration::ops[i]
    std::vector<int64_t> managed_allocs;  // of the i-th kAlloc event of the RecordedIteration
    // Note [Carried lifetimes] (iteration_tracker.h): a persistent allocation the reference frees
    // that was made one period before its window -> the position of its successor, the
    // allocation one period later, which the next iteration frees in its place.
    absl::flat_hash_map<uint64_t, int64_t> carried;
  };
  absl::StatusOr<RecordedIteration> Reference(int64_t other_bytes,
                                              Positions* positions = nullptr) const;

  // Forgets the kept events (after the reference was taken, or on Reprofile).
  void DropKept();
  // Drops the reference and profiles again (IterationTracker::Reprofile) from the next event.
  void Reprofile();
  // Keeps the events of the next iteration followed to its end and makes it the reference's
  // window (IterationTracker::RecordNextIteration): the same reference, measured again. The
  // window recorded so far is kept to compare the new one's guessed accesses with.
  void RecordNextIteration();

  // The tracker's alternates (Note [Switching references] in iteration_tracker.h).
  void KeepReferenceAs(uint64_t key) { tracker_.KeepReferenceAs(key); }
  void ForgetAlternate(uint64_t key) { tracker_.ForgetAlternate(key); }
  void SetTakeDeparted(bool on) { tracker_.SetTakeDeparted(on); }

  const IterationTracker& tracker() const { return tracker_; }
  // Events kept for the reference (for tests of the bound).
  size_t kept() const { return kept_.size(); }

 private:
  struct Kept {
    uint64_t seq = 0;
    StreamEvent::Kind kind = StreamEvent::Kind::kOp;
    uint64_t signature = 0;         // the tracker's
    const char* name = nullptr;     // kOp
    std::vector<Access> accesses;   // kOp: managed allocations only
    std::vector<uint64_t> alloc_seqs;  // kOp: each access's allocation's sequence number
    bool guessed = false;           // kOp: the accesses are not exact (scanned words)
    std::vector<Access> unmanaged;  // kOp: the others (Note [Unprofiled inputs])
    double duration_us = 0;         // kOp
    bool replay_capable = false;    // kOp
    HostCopyBytes copy;             // kOp
    uint64_t allocation = 0;        // kAlloc, kFree
    uint64_t alloc_seq = 0;         // kFree: its allocation's sequence number
    uint64_t freed_unmanaged = 0;   // kFree of an allocation that is not managed
  };
  struct Live {
    int64_t bytes = 0;
    bool managed = false;
    uint64_t seq = 0;  // the allocation's sequence number
  };

  // Reference's walk over the kept window (op_stream_recorder.cc).
  class ReferenceWalk;

  void Keep(Kept k);
  // The kept window [first, end) without `skips`, its guessed accesses compared with another
  // recorded window's (Note [Stable kernel accesses]); `accesses` gets what is kept of them.
  RecordedIteration StableWindow(uint64_t first, uint64_t end, int64_t other_bytes,
                                 Positions* positions, IterationAccesses* accesses) const;
  // The kept window of `length` events just before `first`, when it is the same events as
  // [first, first + length).
  bool SameWindowBefore(uint64_t first, uint64_t length) const;

  IterationTracker tracker_;
  size_t max_kept_;
  absl::flat_hash_map<uint64_t, Live> live_;
  // Sizes of managed allocations, kept after their free while their events may be needed.
  absl::flat_hash_map<uint64_t, int64_t> managed_bytes_;
  std::deque<Kept> kept_;  // consecutive sequence numbers, oldest first
  // The window RecordNextIteration measures again (Note [Stable kernel accesses]).
  std::optional<IterationAccesses> previous_;
};

}  // namespace pooch

#endif  // POOCH_CORE_PROFILE_OP_STREAM_RECORDER_H_
