#include "core/profile/op_stream_recorder.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"

namespace pooch {

// Note [Event signatures]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Two iterations of a training loop make the same calls with the same sizes, but not at the same
// addresses (a freed buffer's address is handed to whichever allocation comes next), so a
// signature is built from what repeats: an op's API name and, for each allocation it touches,
// that allocation's size and the access mode; an allocation's size and whether pooch manages it;
// a free's size. Call sites (libunwind) would separate same-sized allocations of different layers
// but cost microseconds per call; sizes and order have been enough for the tracker so far.
// A kernel's accesses are guessed from its parameter words (interpose/hooks/launch/kernel_args.h),
// and a struct parameter may hold stale words that point at whatever was allocated there last (Note
// [Words into freed memory] in core/residency/residency.cc), so they differ between iterations of
// the same op: such an op is signed by its name alone, which is the kernel's (Note [Kernel op
// names] in interpose/hooks/launch/kernel_names.h).
//
// Note [Unprofiled inputs]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Only managed allocations (POOCH_MIN_SWAP_BYTES and up) become tensors of the profile; a
// replay may still read the small ones (a GEMM's 4 KB routed input, a 256 KB hidden layer, a
// convolution's filter). The runtime's lineage sees them (Note [Replay] in
// core/recompute/recomputer.h): when one is written or freed, the recipes that read it are
// forgotten, or their dropped maps rebuilt at once. A planner blind to them plans recomputations
// the runtime then refuses (it forgets their recipes, rebuilds dropped maps early, swaps instead of
// dropping). So each recorded op carries when what it read outside the profile first changes
// (RecordedOp and Op::unprofiled_inputs_until): the first later op that writes one of those
// allocations, or, for a free (or a passed-over op's write) between two ops, the earlier of
// them. The planner ends its replay window there (ReplayFacts::stable_until, Note [Sound
// replays] in core/model/candidates.cc). Memory pooch never allocated is outside both views.
//
// Note [Side outputs]
// ~~~~~~~~~~~~~~~~~~~
// A recipe rebuilds one output and reads only what its call only read, plus that output when
// the call read it too (ReplayRecipe; the cuDNN, cuBLAS and kernel recipe builders): what else
// the call both read and wrote is a side output the replay leaves alone, as batch
// normalisation's recipe passes no running statistics (updating them twice would change
// training). So when an op writes a managed allocation, the output a plan rebuilds through it,
// an unmanaged allocation it reads and writes neither ends its replay window nor makes it a
// reader of that allocation: else every batch normalisation's window would end at itself and
// nothing it feeds (the ReLU after it, replayed from the normalised map it rebuilds) could be
// recomputed, while the runtime's lineage, which watches the recipe's inputs alone, keeps it.
// An op whose only writes are unmanaged rebuilds no tensor of the profile; its in-place
// unmanaged access is its output and ends its window as before.

OpStreamRecorder::OpStreamRecorder(IterationTrackerOptions options)
    : tracker_(options), max_kept_(options.max_detect_events) {}

IterationTracker::Step OpStreamRecorder::Op(const char* name, absl::Span<const Access> accesses,
                                            bool replay_capable, bool exact_accesses,
                                            HostCopyBytes copy) {
  size_t signature = absl::HashOf(std::string_view(name));
  Kept k;
  k.kind = StreamEvent::Kind::kOp;
  k.name = name;
  k.replay_capable = replay_capable;
  k.copy = copy;
  k.guessed = !exact_accesses;
  for (const Access& a : accesses) {
    auto it = live_.find(a.allocation);
    if (it == live_.end()) continue;
    if (exact_accesses) {
      signature = absl::HashOf(signature, it->second.bytes, static_cast<int>(a.mode));
    }
    if (it->second.managed) k.alloc_seqs.push_back(it->second.seq);
    (it->second.managed ? k.accesses : k.unmanaged).push_back(a);
  }
  const IterationTracker::Step step =
      tracker_.Feed({StreamEvent::Kind::kOp, static_cast<uint64_t>(signature), 0});
  k.seq = step.seq;
  k.signature = signature;
  Keep(std::move(k));
  return step;
}

IterationTracker::Step OpStreamRecorder::Alloc(uint64_t allocation, int64_t bytes, bool managed) {
  if (managed) managed_bytes_[allocation] = bytes;
  const uint64_t signature = absl::HashOf(1, bytes, managed);
  const IterationTracker::Step step =
      tracker_.Feed({StreamEvent::Kind::kAlloc, signature, allocation, bytes});
  live_[allocation] = Live{bytes, managed, step.seq};
  Kept k;
  k.seq = step.seq;
  k.signature = signature;
  k.kind = StreamEvent::Kind::kAlloc;
  k.allocation = managed ? allocation : 0;
  Keep(std::move(k));
  return step;
}

std::optional<IterationTracker::Step> OpStreamRecorder::Free(uint64_t allocation) {
  auto it = live_.find(allocation);
  if (it == live_.end()) return std::nullopt;
  const Live live = it->second;
  live_.erase(it);
  const uint64_t signature = absl::HashOf(2, live.bytes, live.managed);
  const IterationTracker::Step step =
      tracker_.Feed({StreamEvent::Kind::kFree, signature, allocation});
  Kept k;
  k.seq = step.seq;
  k.signature = signature;
  k.kind = StreamEvent::Kind::kFree;
  k.allocation = live.managed ? allocation : 0;
  k.freed_unmanaged = live.managed ? 0 : allocation;
  k.alloc_seq = live.seq;
  Keep(std::move(k));
  return step;
}

IterationTracker::BoundaryResult OpStreamRecorder::MarkBoundary() {
  const IterationTracker::BoundaryResult result = tracker_.MarkBoundary();
  // Note [Departed references]: the iteration that ended is not the reference; its events go.
  if (tracker_.keeping_iteration() && !result.profile_ready && !tracker_.recording_next()) {
    DropKept();
  }
  return result;
}

void OpStreamRecorder::Keep(Kept k) {
  // Only profiling needs the events (following compares signatures inside the tracker): keep
  // them until the reference iteration has ended, or while the iteration under way may become
  // the reference (Note [Departed references] in iteration_tracker.h).
  if (!tracker_.Reference().empty() && !tracker_.recording_next() &&
      !tracker_.keeping_iteration() && k.seq >= tracker_.ReferenceWindow().second) {
    return;
  }
  kept_.push_back(std::move(k));
  while (kept_.size() > max_kept_) kept_.pop_front();
}

void OpStreamRecorder::SetDuration(uint64_t seq, double microseconds) {
  if (kept_.empty() || seq < kept_.front().seq) return;
  const size_t i = static_cast<size_t>(seq - kept_.front().seq);
  if (i < kept_.size() && kept_[i].kind == StreamEvent::Kind::kOp) {
    kept_[i].duration_us = microseconds;
  }
}

// Reference's steps: each event of the window in order, then the carried lifetimes.
class OpStreamRecorder::ReferenceWalk {
 public:
  ReferenceWalk(const OpStreamRecorder& recorder, int64_t other_bytes, Positions* positions)
      : recorder_(recorder), positions_(positions) {
    it_.resident_other_bytes = other_bytes;
    if (positions_ != nullptr) *positions_ = Positions{};
  }

  // `accesses`, when not null, gets the ops' signatures and access keys (Note [Stable kernel
  // accesses]).
  RecordedIteration Walk(uint64_t first, uint64_t end, absl::Span<const uint64_t> skips,
                         IterationAccesses* accesses) && {
    accesses_ = accesses;
    if (accesses_ != nullptr) {
      *accesses_ = IterationAccesses{};
      accesses_->first = first;
    }
    // Note [Unmatched ops]: ops passed over in a recorded window are not the reference's; without
    // them the window's events are the reference's, position for position.
    size_t next_skip = 0;
    for (uint64_t seq = first; seq < end; ++seq) {
      if (next_skip < skips.size() && skips[next_skip] == seq) {
        ++next_skip;
        Skipped(At(seq));
        continue;
      }
      ++position_;
      const Kept& k = At(seq);
      switch (k.kind) {
        case StreamEvent::Kind::kOp:
          AddOp(k);
          break;
        case StreamEvent::Kind::kAlloc:
          AddAlloc(k);
          break;
        case StreamEvent::Kind::kFree:
          AddFree(k, first);
          break;
      }
    }
    if (positions_ != nullptr) PairCarried();
    return std::move(it_);
  }

 private:
  const Kept& At(uint64_t seq) const {
    return recorder_.kept_[static_cast<size_t>(seq - recorder_.kept_.front().seq)];
  }

  // A managed allocation used in the window but not made in it is persistent.
  void NoteOutside(uint64_t a) {
    if (allocated_here_.contains(a) || !persistent_.insert(a).second) return;
    auto bytes = recorder_.managed_bytes_.find(a);
    it_.persistent.push_back({a, bytes == recorder_.managed_bytes_.end() ? 0 : bytes->second});
  }

  // Note [Unprofiled inputs]: `allocation` changes before op `until`; its readers so far must
  // replay before then.
  void Changed(uint64_t allocation, int until) {
    auto readers = unprofiled_readers_.find(allocation);
    if (readers == unprofiled_readers_.end()) return;
    for (int op : readers->second) {
      int& u = it_.ops[static_cast<size_t>(op)].unprofiled_inputs_until;
      u = u < 0 ? until : std::min(u, until);
    }
    unprofiled_readers_.erase(readers);
  }

  // Changed between two recorded ops: a replay must come before the earlier one.
  void ChangedInGap(uint64_t allocation) {
    Changed(allocation, static_cast<int>(it_.ops.size()) - 1);
  }

  void Skipped(const Kept& skipped) {
    for (const Access& a : skipped.unmanaged) {
      if (a.mode != RecordedAccess::kRead) ChangedInGap(a.allocation);
    }
    if (skipped.freed_unmanaged != 0) ChangedInGap(skipped.freed_unmanaged);
  }

  void AddOp(const Kept& k) {
    RecordedOp op;
    op.name = k.name;
    op.duration_us = k.duration_us;
    op.replay_capable = k.replay_capable;
    op.copy = k.copy;
    for (const Access& a : k.accesses) {
      NoteOutside(a.allocation);
      op.accesses.push_back({a.allocation, a.mode, a.whole});
    }
    const int index = static_cast<int>(it_.ops.size());
    for (const Access& a : k.unmanaged) {
      if (a.mode != RecordedAccess::kRead) Changed(a.allocation, index);
    }
    // Note [Side outputs]: an op that writes a managed allocation rebuilds that one; what it
    // also reads and writes outside the profile is not its replay's input.
    const bool managed_output =
        std::any_of(k.accesses.begin(), k.accesses.end(),
                    [](const Access& a) { return a.mode != RecordedAccess::kRead; });
    for (const Access& a : k.unmanaged) {
      if (a.mode == RecordedAccess::kWrite) continue;
      if (a.mode == RecordedAccess::kReadWrite) {
        if (managed_output) continue;
        // Read and written by the op itself, its output: a replay would read what it wrote.
        op.unprofiled_inputs_until = index;
      }
      unprofiled_readers_[a.allocation].push_back(index);
    }
    it_.events.push_back({RecordedIteration::Event::kOp, static_cast<int>(it_.ops.size()), 0, 0});
    if (positions_ != nullptr) positions_->ops.push_back(position_);
    it_.ops.push_back(std::move(op));
    if (accesses_ != nullptr) NoteKeys(k);
  }

  // Note [Stable kernel accesses]: which tensors the op touched, comparable across windows.
  void NoteKeys(const Kept& k) {
    accesses_->signatures.push_back(k.signature);
    accesses_->guessed.push_back(k.guessed);
    std::vector<AccessKey>& keys = accesses_->keys.emplace_back();
    for (size_t i = 0; i < k.accesses.size(); ++i) {
      auto ordinal = ordinal_.find(k.accesses[i].allocation);
      AccessKey& key = keys.emplace_back();
      key.made_here = ordinal != ordinal_.end();
      key.value = key.made_here ? ordinal->second : k.accesses[i].allocation;
      key.alloc_seq = k.alloc_seqs[i];
    }
  }

  void AddAlloc(const Kept& k) {
    if (k.allocation == 0) return;  // not managed
    ordinal_[k.allocation] = made_here_.size();
    allocated_here_.insert(k.allocation);
    made_here_.push_back({k.allocation, position_});
    if (positions_ != nullptr) positions_->managed_allocs.push_back(position_);
    it_.events.push_back({RecordedIteration::Event::kAlloc, 0, k.allocation,
                          recorder_.managed_bytes_.at(k.allocation)});
  }

  void AddFree(const Kept& k, uint64_t first) {
    if (k.freed_unmanaged != 0) ChangedInGap(k.freed_unmanaged);
    if (k.allocation == 0) return;
    NoteOutside(k.allocation);
    freed_here_.insert(k.allocation);
    if (!allocated_here_.contains(k.allocation) && k.alloc_seq < first) {
      carried_in_.push_back({k.alloc_seq, k.allocation});
    }
    it_.events.push_back({RecordedIteration::Event::kFree, 0, k.allocation, 0});
  }

  // Note [Carried lifetimes]: the successor of a carried-in allocation is the allocation made
  // one period later in its place, the one the next iteration frees where the reference frees
  // it: in a periodic stream the carried-in allocations (by when they were made) and the
  // carried-out ones (by position) pair up in order. A pair of different sizes is no successor.
  void PairCarried() {
    std::vector<const std::pair<uint64_t, int64_t>*> carried_out;
    for (const auto& m : made_here_) {
      if (!freed_here_.contains(m.first)) carried_out.push_back(&m);
    }
    std::vector<std::pair<uint64_t, uint64_t>> in_by_age = std::move(carried_in_);
    std::sort(in_by_age.begin(), in_by_age.end());
    const size_t skip_in =
        in_by_age.size() > carried_out.size() ? in_by_age.size() - carried_out.size() : 0;
    const auto& managed_bytes = recorder_.managed_bytes_;
    for (size_t i = skip_in; i < in_by_age.size(); ++i) {
      const auto& [seq, a] = in_by_age[i];
      const auto& [successor, at_position] = *carried_out[i - skip_in];
      auto bytes_in = managed_bytes.find(a);
      auto bytes_out = managed_bytes.find(successor);
      if (bytes_in != managed_bytes.end() && bytes_out != managed_bytes.end() &&
          bytes_in->second == bytes_out->second) {
        positions_->carried[a] = at_position;
      }
    }
  }

  const OpStreamRecorder& recorder_;
  Positions* const positions_;  // may be null
  IterationAccesses* accesses_ = nullptr;
  absl::flat_hash_map<uint64_t, uint64_t> ordinal_;  // allocation made here -> its ordinal
  RecordedIteration it_;
  int64_t position_ = -1;
  absl::flat_hash_set<uint64_t> allocated_here_;
  absl::flat_hash_set<uint64_t> persistent_;
  // Note [Carried lifetimes]: allocations freed here that were made before the window, and
  // allocations made here and not freed, each in order: the k-th of one is the k-th of the
  // other one period earlier.
  std::vector<std::pair<uint64_t, uint64_t>> carried_in_;  // alloc_seq, allocation
  std::vector<std::pair<uint64_t, int64_t>> made_here_;    // allocation, position
  absl::flat_hash_set<uint64_t> freed_here_;
  // Note [Unprofiled inputs]: per allocation outside the profile, the recorded ops that read it
  // and have not seen it change since.
  absl::flat_hash_map<uint64_t, std::vector<int>> unprofiled_readers_;
};

absl::StatusOr<RecordedIteration> OpStreamRecorder::Reference(int64_t other_bytes,
                                                              Positions* positions) const {
  if (tracker_.Reference().empty()) {
    return absl::FailedPreconditionError("no reference iteration yet");
  }
  const auto [first, end] = tracker_.ReferenceWindow();
  if (kept_.empty() || kept_.front().seq > first || kept_.back().seq + 1 < end) {
    return absl::FailedPreconditionError(absl::StrCat("the reference iteration's events [", first,
                                                      ", ", end, ") are no longer kept"));
  }
  IterationAccesses accesses;
  return StableWindow(first, end, other_bytes, positions, &accesses);
}

bool OpStreamRecorder::SameWindowBefore(uint64_t first, uint64_t length) const {
  if (kept_.empty() || first < length || kept_.front().seq > first - length) return false;
  const size_t at = static_cast<size_t>(first - kept_.front().seq);
  for (size_t i = 0; i < length; ++i) {
    const Kept& before = kept_[at - length + i];
    const Kept& here = kept_[at + i];
    if (before.kind != here.kind || before.signature != here.signature) return false;
  }
  return true;
}

RecordedIteration OpStreamRecorder::StableWindow(uint64_t first, uint64_t end,
                                                 int64_t other_bytes, Positions* positions,
                                                 IterationAccesses* accesses) const {
  const std::vector<uint64_t>& skips = tracker_.ReferenceSkips();
  RecordedIteration it =
      ReferenceWalk(*this, other_bytes, positions).Walk(first, end, skips, accesses);
  // Note [Stable kernel accesses]: the iteration before this one when it is the same events,
  // then the window measured before (RecordNextIteration).
  const uint64_t length = end - first;
  if (skips.empty() && SameWindowBefore(first, length)) {
    IterationAccesses before;
    ReferenceWalk(*this, 0, nullptr).Walk(first - length, first, {}, &before);
    it.unstable_accesses += KeepStableAccesses(before, *accesses, it);
  }
  if (previous_.has_value()) it.unstable_accesses += KeepStableAccesses(*previous_, *accesses, it);
  return it;
}

void OpStreamRecorder::DropKept() {
  kept_.clear();
  absl::erase_if(managed_bytes_, [&](const auto& entry) { return !live_.contains(entry.first); });
}

void OpStreamRecorder::RecordNextIteration() {
  previous_.reset();
  if (const auto [first, end] = tracker_.ReferenceWindow();
      !tracker_.Reference().empty() && !kept_.empty() && kept_.front().seq <= first &&
      kept_.back().seq + 1 >= end) {
    IterationAccesses accesses;
    StableWindow(first, end, 0, nullptr, &accesses);
    previous_ = std::move(accesses);
  }
  DropKept();
  tracker_.RecordNextIteration();
}

void OpStreamRecorder::Reprofile() {
  previous_.reset();
  DropKept();
  tracker_.Reprofile();
}

}  // namespace pooch
