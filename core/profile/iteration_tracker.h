// IterationTracker: finds training-iteration boundaries in the stream of intercepted events (ops,
// allocations, frees) and follows later iterations against a reference iteration, reporting where
// they depart from it (DESIGN.md, decision 6: identity across iterations comes from the op stream).
// Thread-compatible: the caller serialises all calls (the interposer does, under its own lock).
#ifndef POOCH_CORE_PROFILE_ITERATION_TRACKER_H_
#define POOCH_CORE_PROFILE_ITERATION_TRACKER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

// The interposer feeds every intercepted op, allocation and free in the order they happen; each
// event gets a sequence number 0, 1, 2, ... in Feed order. Two events are "the same" when kind and
// signature are equal; `allocation` ids only pair allocations with their frees (for balance). The
// tracker is in one of three modes:
//
//   kProfiling  looking for iterations: with IterationMarker::kAuto by the period of the stream
//               (Note [Period detection]), with kSync/kNvtx at each MarkBoundary(). The Step or
//               BoundaryResult that completes profile_iterations iterations has profile_ready
//               set; Reference() is then the LAST complete iteration, ReferenceWindow() its
//               [first, end) sequence numbers.
//   kFollowing  each event is compared with the reference: Step::position is its index in the
//               reference iteration and Step::iteration_start marks position 0.
//   kDeparted   an event did not match (Step::departed is set once, on that event), or an
//               explicit boundary came at the wrong place. The departed iteration's events have
//               no position and run in demand mode. Auto: the tracker re-synchronises on the
//               first event equal to Reference()[0] while no more allocations of the departed
//               iteration are live than the reference carries out (reference_carried()).
//               Explicit markers: the next iteration starts at the next boundary.
//
// Note [Period detection]
// ~~~~~~~~~~~~~~~~~~~~~~~
// After event n, the iteration is the smallest period p such that the window W = events
// [n-p+1, n] (1) equals the window V just before it, event for event, and (2) is balanced: every
// allocation made in W is freed in W, every free in W frees an allocation made in W, and W makes
// at least one allocation. Balance rules out the repeats inside one pass: ResNet's forward blocks
// repeat but keep their feature maps, and the backward pass frees maps it did not make. W may be
// a rotation of the program's loop body, which is still one full iteration. A first iteration
// that differs (warm-up allocations never freed, carried tensors made at other distances) only
// delays detection. When no balanced W ends at n, a carried one may (Note [Carried lifetimes]).
// Feed stays near-linear on any stream: the candidate periods are the earlier positions of n's
// event (or of the last allocation, whichever list is shorter), limited by balance to a range
// found in O(1); each costs O(log n) for the free-interval check and O(1) for the tandem test
// (prefix hashes mod 2^61-1); a hit is verified event by event; at most kMaxCandidatesPerEvent
// are tried per event. At most max_detect_events events are kept (a sliding window), so a period
// longer than half of it is never found.
// Limit: a balanced repeat inside an iteration (an optimizer that allocates and frees one
// temporary per parameter) is taken as the period; following then departs at the first event
// outside it, and the caller may re-profile. A chain whose blocks each free the previous block's
// output (a carried repeat) is the same limit under Note [Carried lifetimes]. With
// profile_iterations > 2, the extra windows must repeat too, or the search resumes.
//
// Note [Carried lifetimes]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A Python loop holds some tensors across the iteration boundary (`loss = f(...)` makes the new
// loss before the old one is dropped; the model output; gradients under set_to_none), so no
// window of one period is balanced. Such a window is accepted when its lifetimes repeat with the
// period. With V = [s-p, s) and W = [s, s+p) tandem-equal:
//   (a) every free in W frees an allocation made in V or W (at most one period old);
//   (b) an allocation g of V freed in W has its successor g+p still live at the end of W, and an
//       allocation a of W live at the end of W has its predecessor a-p freed in W;
//   (c) W makes at least one allocation;
//   (d) each free of W frees an allocation as many events back as the free one period earlier
//       does (the lifetimes repeat, not only the events: without it a window whose blocks swap
//       the allocation they carry passes (a) to (c)).
// (b) is not checked on its own: it follows from (a), (d) and W allocating as many as it frees
// (the successors of V's allocations freed in W are live, one each, hence all of W's live
// allocations); the unit tests check the rule as written, (b) included, by brute force. The
// forward blocks of one pass fail the count and a backward pass fails (a), so what balance rules
// out stays ruled out. The rule is tried only when no balanced window ends at n, under the same
// candidate cap, in O(1) per candidate (hashes of events, of lifetimes, the count) plus O(log n)
// for (a).
//
// Note [Carried window phase]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A carried window starts where the fewest bytes of the loop's own allocations are live (the
// first such position on ties): the program's own iteration boundary, where a training loop holds
// its weights and little else. What is live at the reference's start is modelled as existing
// before it, so a window starting inside the forward pass would carry every feature map made so
// far and find no plan. The window is rotated backwards over events already seen (V equals W):
// the reference is [n+1+k-2p, n+1+k-p) for the best phase k. Rotating forwards would need k more
// repeating events, which a program whose iterations differ now and then by a kernel may never
// give. Following starts at position p-k and profile_ready comes when that iteration ends, so a
// plan always starts with an iteration. Balanced windows are not rotated: nothing made in them
// outlives them.
//
// Note [Unmatched ops]
// ~~~~~~~~~~~~~~~~~~~~
// While following (auto marker), an op that is not the reference's at this position is passed
// over, without a position and without departing, up to MaxUnmatchedOps() per iteration (1 % of
// the reference, at least 2); the next event must then match. Programs launch an extra kernel now
// and then (PyTorch's attention backward copies a tensor in some iterations only), and departing
// for it would run those iterations without the plan. It is safe: an op without a position
// carries out no planned action, is made resident on demand like any op, and recomputation's
// rules (Note [Replay] in core/recompute/recomputer.h) hold for every op. Allocations and frees
// must match (the plan's slots follow them), and a missing op departs (skipping ahead would skip
// the reference's planned actions). An iteration that RecordNextIteration() records lists its
// passed ops (ReferenceSkips): without them its window is the reference event for event, so the
// profile made from it keeps the reference's positions.
//
// Note [Switching references]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A program whose iterations change between a few shapes (an image size drawn per iteration, a
// skip pattern) departs from any one reference in most iterations, so the caller keeps the
// references it planned as alternates (KeepReferenceAs, keyed by plan). An event that does not
// match the reference at position p, in an iteration followed from its start, switches to the
// most recently added or used alternate whose first p events are the reference's and whose event
// p is this one: it becomes the reference, the event gets position p and Step::switched names the
// alternate, whose plan the caller carries out from p on. No switch while an iteration is
// recorded or awaited (RecordNextIteration), when the reference was taken mid-iteration, or to or
// from a reference that carries allocations across its boundary (its carried slots would be
// another plan's); an op that fits no alternate is passed over or departs. Each alternate tried
// costs O(p), and an iteration switches to each at most once (one left behind differs from the
// new reference before the point it was left at).
//
// Note [Departed references]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// With explicit markers and SetTakeDeparted(true), an iteration that departs (and fits no
// alternate) becomes the reference at its boundary: its events are collected from its start (the
// prefix it matched, then its own), and the boundary reports profile_ready with from_departure,
// so the caller plans the shape just run instead of waiting for departures to pile up. The caller
// must then keep each iteration's events and times (keeping_iteration()). Not while an iteration
// is recorded or awaited, nor with the auto marker, whose departed iterations have no known end.

namespace pooch {

// POOCH_ITERATION_MARKER: how iteration boundaries are found (DESIGN.md, decision 6).
//   kAuto  from the repetition of the op stream
//   kSync  each device-wide synchronisation (cudaDeviceSynchronize) ends an iteration
//   kNvtx  NVTX ranges named by the program
enum class IterationMarker { kAuto, kSync, kNvtx };

struct StreamEvent {
  enum class Kind : uint8_t { kOp, kAlloc, kFree };
  Kind kind = Kind::kOp;
  // Equal for "the same" event across iterations: the caller hashes the API name, call site and
  // sizes (for kAlloc the size and call site; for kFree the size).
  uint64_t signature = 0;
  // kAlloc/kFree: an id unique over the run, equal in an allocation and its free; 0 for kOp.
  uint64_t allocation = 0;
  // kAlloc: its bytes, to place a carried window where the least is carried (Note [Carried
  // window phase]); 0 when unknown. Not part of "the same".
  int64_t bytes = 0;
};

// Same kind and signature (allocation ids are ignored).
bool SameEvent(const StreamEvent& a, const StreamEvent& b);

struct IterationTrackerOptions {
  IterationMarker marker = IterationMarker::kAuto;
  // POOCH_PROFILE_ITERS: complete iterations seen before the reference is taken. Auto needs at
  // least 2 (detection sees two), so smaller values count as 2 there; explicit markers at least 1.
  int profile_iterations = 2;
  // Bound on events kept while profiling (auto: the detection window; explicit markers: the
  // events of one iteration, which is dropped as "not an iteration" when it grows beyond this).
  size_t max_detect_events = size_t{1} << 20;
};

class IterationTracker {
 public:
  // The most candidate periods tried per event (Note [Period detection]).
  static constexpr int kMaxCandidatesPerEvent = 512;
  enum class Mode { kProfiling, kFollowing, kDeparted };

  // What Feed says about one event.
  struct Step {
    uint64_t seq = 0;              // this event's sequence number
    bool iteration_start = false;  // first event of an iteration (following mode)
    int64_t position = -1;         // index in the reference iteration when following; else -1
    bool profile_ready = false;    // auto: this event completes profiling (Reference() is set)
    bool departed = false;         // first event of an iteration that does not match the reference
    uint64_t signature = 0;        // the event's (Note [Event signatures] in op_stream_recorder.cc)
    // Note [Switching references]: this event switched to the alternate kept under this key.
    bool switched = false;
    uint64_t switched_to = 0;
  };

  // What MarkBoundary says about the iteration it ends (explicit markers).
  struct BoundaryResult {
    bool profile_ready = false;   // this boundary completes profiling (Reference() is set)
    bool completed = false;       // a followed iteration matched the reference to its end
    bool departed = false;        // the iteration departed here (ended early or late) and had
                                  // not departed on an event before
    bool from_departure = false;  // profile_ready: the reference is the departed iteration that
                                  // ended here (Note [Departed references])
  };

  explicit IterationTracker(IterationTrackerOptions options = {});

  Step Feed(const StreamEvent& e);
  // An explicit marker (kSync/kNvtx): an iteration ends here, before the next event. Events
  // before the first boundary are not an iteration; a boundary with no event since the last
  // one is ignored (a program may synchronise twice in a row). Ignored in auto mode.
  BoundaryResult MarkBoundary();

  // Valid once profile_ready was reported: the reference iteration as [first_seq, end_seq) in
  // the event sequence, and its events. Empty before (and after Reprofile, until the next one).
  std::pair<uint64_t, uint64_t> ReferenceWindow() const { return reference_window_; }
  // The events of the window that are not the reference's, by sequence number, increasing: ops
  // passed over in a recorded iteration (Note [Unmatched ops]). Without them the window is the
  // reference event for event.
  const std::vector<uint64_t>& ReferenceSkips() const { return reference_skips_; }
  const std::vector<StreamEvent>& Reference() const { return reference_; }

  // Drops the reference and detects/profiles again from the next event. With explicit markers
  // the next event starts an iteration only if no event came since the last boundary.
  void Reprofile();
  // Keeps the reference's events but moves its window to the next iteration followed from its
  // first event to its end: profile_ready is reported again at that iteration's end (auto: on its
  // last event; explicit: at the boundary that completes it), with ReferenceWindow() updated.
  // An iteration that departs is not taken; the one after it is tried. For a profile measured
  // under different conditions than the one the reference was detected in (§4.2's swap-all
  // iteration: core/exec/plan_executor.cc, Note [Swap-all profiling]). No-op unless following.
  void RecordNextIteration();
  bool recording_next() const { return record_next_ != RecordNext::kNo; }
  // Note [Switching references]: keeps the reference's events as the alternate `key` (replacing
  // one kept under the same key; none for a reference that carries allocations), dropping the
  // oldest beyond kMaxAlternates; and forgets one.
  static constexpr size_t kMaxAlternates = 16;
  void KeepReferenceAs(uint64_t key);
  void ForgetAlternate(uint64_t key);
  size_t alternates() const { return alternates_.size(); }
  // Note [Departed references]: explicit markers only.
  void SetTakeDeparted(bool on) { take_departed_ = on; }
  // The current iteration's events may become the reference at its end: the caller keeps them.
  bool keeping_iteration() const { return take_departed_ && mode_ != Mode::kProfiling; }
  uint64_t switches() const { return switches_; }

  Mode mode() const { return mode_; }
  uint64_t iterations_completed() const { return iterations_completed_; }  // followed to the end
  uint64_t departures() const { return departures_; }
  // Ops passed over while following (Note [Unmatched ops]).
  uint64_t unmatched_ops() const { return unmatched_ops_; }
  uint64_t profiles_made() const { return profiles_made_; }
  // Allocations made in the reference iteration and still live at its end (Note [Carried
  // lifetimes]); 0 for a balanced reference and for explicit markers.
  size_t reference_carried() const { return reference_carried_; }
  // Events held for detection now (for tests of the memory bound).
  size_t detect_events_held() const { return buffer_.size(); }
  // Candidates the period searches have tried so far, both rules (for tests of the per-event
  // bound).
  uint64_t detect_work() const { return detect_work_; }

 private:
  struct Entry {
    StreamEvent event;
    uint64_t prefix_hash = 0;       // H(i): hash of all events before this one (absolute positions)
    uint64_t life_prefix_hash = 0;  // the same with each free's Lifetime mixed in
    int64_t partner = -1;           // kFree: index of its allocation, -1 when unknown or dropped
    int64_t allocs_before = 0;      // allocations among the events before this one, since the
                                    // detection started
    int64_t frees_before = 0;       // frees likewise
  };
  // A suffix minimum of the frees' partners: no later free has a partner <= this one's.
  struct FreeMin {
    int64_t index = 0;
    int64_t partner = 0;
  };
  // A maximal run of positions a that no balanced window may start at: (lo, hi].
  struct Forbidden {
    int64_t lo = 0;  // exclusive
    int64_t hi = 0;  // inclusive
  };
  using EventKey = std::pair<uint8_t, uint64_t>;

  Step FeedAuto(const StreamEvent& e, Step step);
  Step FeedExplicit(const StreamEvent& e, Step step);
  Step FollowAuto(const StreamEvent& e, Step step);
  // Appends to the detection buffer; returns the new event's absolute index.
  int64_t Append(const StreamEvent& e);
  void DropOldest();
  // Candidate periods in [p_min, p_max] for a window ending at n: the occurrences [first, last)
  // of the event at `anchor` (n or the last allocation), each giving p = anchor - occurrence.
  struct Candidates {
    std::deque<int64_t>::const_iterator first;
    std::deque<int64_t>::const_iterator last;
    int64_t anchor = 0;  // p = anchor - occurrence
  };
  Candidates CandidatesFor(int64_t n, int64_t p_min, int64_t p_max) const;
  // The smallest valid period ending at index n, or 0.
  int64_t FindPeriod(int64_t n) const;
  // The smallest period ending at n with a periodic carry-over (Note [Carried lifetimes]), or 0.
  int64_t FindCarriedPeriod(int64_t n) const;
  // How many events past `first` the window [first, first + p) is best started (Note [Carried
  // window phase]).
  int64_t CarriedPhase(int64_t first, int64_t p) const;
  // A period p found at event n, its window started `phase` events late: takes the reference
  // and starts following. True when the profile is ready now (phase 0).
  bool Detected(int64_t n, int64_t p, int64_t phase);
  // Ops an iteration may pass over (Note [Unmatched ops]).
  size_t MaxUnmatchedOps() const;
  // The smallest partner of the frees in [s, end of buffer], or nullopt when there is none.
  std::optional<int64_t> MinPartnerFrom(int64_t s) const;
  // When no balanced window may start at `a`: the exclusive low end of the forbidden stretch
  // holding it (every start in (lo, a] is forbidden too).
  std::optional<int64_t> ForbiddenBelow(int64_t a) const;
  bool TandemHashEqual(int64_t s, int64_t p) const;
  bool TandemExact(int64_t s, int64_t p) const;
  // A free's distance back to its allocation in events (0 when unknown): the frees of W and of V
  // must free allocations equally far back (Note [Carried lifetimes]).
  static int64_t Lifetime(const Entry& free, int64_t index);
  bool LifetimesHashEqual(int64_t s, int64_t p) const;
  bool LifetimesExact(int64_t s, int64_t p) const;
  const Entry& At(int64_t i) const { return buffer_[static_cast<size_t>(i - base_)]; }
  void TakeReference(int64_t first, int64_t end);
  void TakeRecordedWindow(uint64_t end);  // RecordNextIteration's iteration ended at `end`
  void StartFollowing();
  void ClearDetection();
  void TrackLive(const StreamEvent& e);
  // Note [Switching references]: `e` does not match the reference at position_; true when an
  // alternate was made the reference (step says which).
  bool TrySwitch(const StreamEvent& e, Step* step);
  // Note [Departed references]: the iteration departs at position_ (after `e`, if any).
  void Depart(const StreamEvent* e);

  IterationTrackerOptions options_;
  Mode mode_ = Mode::kProfiling;
  uint64_t next_seq_ = 0;

  // Auto detection state, absolute indices are sequence numbers.
  std::deque<Entry> buffer_;
  int64_t base_ = 0;                 // index of buffer_.front()
  uint64_t total_hash_ = 0;          // H(base_ + buffer_.size()), relative to origin base_
  uint64_t life_total_hash_ = 0;     // likewise for life_prefix_hash
  uint64_t next_power_ = 1;          // B^(index of the next event - origin)
  std::vector<uint64_t> powers_{1};  // B^k for the periods a window can hold (<= size / 2)
  absl::flat_hash_map<uint64_t, int64_t> live_;  // allocation id -> index, allocated in buffer
  std::set<int64_t> live_indices_;               // the indices in live_, for their maximum
  int64_t last_alloc_ = -1;                      // index of the latest allocation in buffer
  absl::flat_hash_map<EventKey, std::deque<int64_t>> occurrences_;
  std::deque<Forbidden> forbidden_;  // disjoint, sorted
  std::deque<FreeMin> free_mins_;    // increasing in index and in partner
  int64_t alloc_count_ = 0;          // allocations appended since detection (re)started
  int64_t free_count_ = 0;           // frees likewise
  // Net allocations before each index (allocs_before - frees_before) -> those indices, in order:
  // the starts of windows that allocate as much as they free (Note [Carried lifetimes]).
  absl::flat_hash_map<int64_t, std::deque<int64_t>> levels_;
  mutable uint64_t detect_work_ = 0;  // see detect_work()
  int64_t period_ = 0;                // found period while confirming extra windows
  int64_t phase_ = 0;                 // and its window's phase (Note [Carried window phase])
  int64_t confirm_left_ = 0;          // events still to match before profile_ready

  // Explicit-marker profiling state.
  bool in_iteration_ = false;  // a boundary was seen, so events belong to an iteration
  bool at_boundary_ = true;    // no event since the last boundary (or the start)
  bool overflowed_ = false;    // this iteration grew beyond max_detect_events
  uint64_t iteration_first_ = 0;
  std::vector<StreamEvent> current_;
  int iterations_profiled_ = 0;

  // Following state.
  std::vector<StreamEvent> reference_;
  std::pair<uint64_t, uint64_t> reference_window_{0, 0};
  std::vector<uint64_t> reference_skips_;  // ReferenceSkips
  std::vector<uint64_t> recording_skips_;  // of the iteration being recorded
  size_t reference_carried_ = 0;
  size_t position_ = 0;  // next expected index in reference_
  // The reference was taken mid-iteration (Note [Carried window phase]): profile_ready is
  // reported when the iteration being followed ends.
  bool ready_pending_ = false;
  // RecordNextIteration: waiting for an iteration's first event, or recording from next_first_.
  enum class RecordNext { kNo, kWaiting, kRecording };
  RecordNext record_next_ = RecordNext::kNo;
  uint64_t next_first_ = 0;
  absl::flat_hash_set<uint64_t> live_since_start_;  // allocations of the current iteration

  struct Alternate {
    uint64_t key = 0;
    std::vector<StreamEvent> events;
  };
  std::vector<Alternate> alternates_;  // the most recently added or used last
  uint64_t switches_ = 0;
  bool take_departed_ = false;  // Note [Departed references]
  bool collecting_ = false;     // current_ holds the departed iteration's events so far

  uint64_t iterations_completed_ = 0;
  uint64_t departures_ = 0;
  uint64_t unmatched_ops_ = 0;
  size_t unmatched_in_iteration_ = 0;
  uint64_t profiles_made_ = 0;
};

}  // namespace pooch

#endif  // POOCH_CORE_PROFILE_ITERATION_TRACKER_H_
