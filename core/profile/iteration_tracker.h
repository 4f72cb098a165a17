// IterationTracker: finds training-iteration boundaries in the stream of intercepted events (ops,
// allocations, frees) and follows later iterations against a reference iteration, reporting
// where they depart from it (DESIGN.md, decision 6: identity across iterations comes from the
// op stream).
//
// The interposer feeds every intercepted op, allocation and free, in the order they happen; each
// event gets a sequence number 0, 1, 2, ... in Feed order. The tracker is in one of three modes:
//
//   kProfiling  looking for iterations. With IterationMarker::kAuto it searches the stream for
//               the period (Note [Period detection]); with kSync/kNvtx the caller calls
//               MarkBoundary() where an iteration ends. When profile_iterations iterations are
//               complete, the Step (auto) or BoundaryResult (explicit markers) that completes
//               them has profile_ready set; Reference() is then the LAST complete iteration and
//               ReferenceWindow() its [first, end) sequence numbers.
//   kFollowing  each event is compared with the reference: Step::position is its index in the
//               reference iteration and Step::iteration_start marks position 0.
//   kDeparted   an event did not match (Step::departed is set once, on that event), or an
//               explicit boundary came at the wrong place. The caller must treat the departed
//               iteration as unknown: its events have no position and run in demand mode (the
//               plan is not applied). Auto: the tracker re-synchronises on the first event that
//               equals Reference()[0] while every allocation made since the departed iteration
//               started has been freed; that event is position 0 of a new iteration. Explicit
//               markers: the next iteration starts at the next boundary.
//
// Two events are "the same" when kind and signature are equal; `allocation` ids only pair
// allocations with their frees (for balance) and never take part in the comparison.
//
// Note [Period detection]: after event n, the tracker looks for the smallest period p such that
// the window W = events [n-p+1, n] (1) equals the window V just before it, event for event (a
// tandem repeat), and (2) is balanced: every allocation made in W is freed in W, every free in
// W frees an allocation made in W, and W makes at least one allocation. Balance rules out the
// repeats inside one pass (ResNet's conv-bn-relu blocks repeat in the forward pass but each
// leaves its feature maps allocated; the backward pass frees maps it did not allocate). The
// first n where such a W exists ends detection; W may be a rotation of the program's own loop
// body (it starts wherever the balanced repeat first closes), which is still one full
// iteration. A first iteration that differs (warm-up allocations that are never freed) only
// delays detection: windows after those allocations are still balanced.
// When no balanced W ends at n, a periodic carry-over is accepted instead (Note [Carried
// lifetimes]).
// Cost: candidates p are the earlier positions holding the same event as n (or as the last
// allocation, which W must hold too; whichever list is shorter), restricted by balance to a range
// found in O(1) (W must start after the last still-live allocation and contain at least one
// allocation); each candidate costs O(log n) for the free-interval check (a start inside a
// forbidden stretch skips every candidate in that stretch at once), O(1) for the tandem test
// (polynomial prefix hashes mod 2^61-1), and a hit is verified event by event. At most
// kMaxCandidatesPerEvent candidates are tried per event so an adversarial stream (one event
// repeated forever) cannot make Feed quadratic; the carried search (below) walks at most as
// many again. Memory: at most max_detect_events events are kept;
// beyond it the oldest are dropped and the search goes on in a sliding window (so a period longer
// than half of it is never found).
//
// Note [Carried lifetimes]: a Python loop holds some tensors across the iteration boundary
// (`loss = f(...)` makes the new loss before the old one is dropped; the model output; gradients
// under zero_grad(set_to_none=True)): each is allocated in iteration i and freed in i+1 after its
// successor was allocated, so no window of one period is balanced. Such a window is accepted
// when its lifetimes, those that cross the boundary included, repeat with the period. With
// V = [s-p, s) and W = [s, s+p) tandem-equal:
//   (a) every free in W frees an allocation made in V or W (at most one period old);
//   (b) an allocation g of V freed in W has its successor g+p still live at the end of W, and
//       an allocation a of W live at the end of W has its predecessor a-p freed in W;
//   (c) W makes at least one allocation;
//   (d) each free of W frees an allocation as many events back as the free one period earlier
//       does (Lifetime(): the lifetimes repeat, not only the events; without it a window whose
//       blocks swap which allocation they carry passes (a) to (c)).
// (b) follows from the others and is not checked on its own: W allocates as many as it frees
// (counted in O(1), and a window start with the current net count comes from levels_), which
// with (a) makes W's live allocations as many as its frees of V's allocations; by (d) a free of
// g in W at f repeats one period before (f-p frees g-p), so g+p is not freed in W (its free at
// f' would repeat as f'-p freeing g, which is freed at f): the successors of V's allocations
// freed in W are live, one each, hence all of W's live allocations. The unit tests check the
// rule as written, (b) included, by brute force.
// The forward blocks of one pass fail the count (they keep their maps), a backward pass fails (a)
// (it frees maps made long before), so the repeats balance rules out stay ruled out. The rule is
// tried only when no balanced window ends at n, over the occurrences of n's event or of the
// last allocation, or the window starts at the right net count (whichever list is shortest),
// under the same kMaxCandidatesPerEvent cap: O(1) per candidate for the hashes of events and of
// lifetimes and the count, O(log n) for (a) (a monotone stack of suffix minima of the frees'
// partners; a failure skips every candidate whose period is too short for that partner), and a
// hit is verified event by event. A first iteration that differs also delays detection by the
// iteration that frees its carried tensors (they were made at other distances back).
// Note [Carried window phase]: a carried window is then rotated to start where the fewest bytes
// of the loop's own allocations are live (its smallest level of live bytes, the first such
// position on ties): the program's own iteration boundary, where a training loop holds its
// weights and little else. The reference is what the planner sees as one iteration, and what is
// live at its start is modelled as existing before it (resident at op 0, not a candidate before
// its first use): a window that starts inside the forward pass would carry every feature map made
// so far and find no plan. The window found, W = [n-p+1, n], is rotated backwards: the reference
// is [n+1+k-2p, n+1+k-p) for the best phase k of W, events already seen (V and W are equal, so
// it holds W's events rotated by k). Rotating forwards instead would need k more events that
// repeat, and a program whose iterations differ now and then by a kernel (PyTorch's transformer
// does) may never give them. Following then starts at position p-k, in the middle of the
// reference, and profile_ready is reported when that iteration ends, so that a plan starts with
// an iteration, as always. Balanced windows are not rotated: nothing made in them outlives
// them.
// Following a carried reference: re-synchronisation after a departure allows as many
// allocations of the departed iteration to be live as the reference carries out
// (reference_carried()); with a balanced reference that is none, as before.
//
// Note [Unmatched ops]: while following (auto marker), an op event that is not the one the
// reference has at this position is passed over, without a position and without departing, up
// to MaxUnmatchedOps() per iteration (1 % of the reference, at least 2); the next event must
// then match. A program may launch one more kernel now and then (PyTorch's attention backward
// copies a tensor in some iterations and not in others), and departing for it would run half
// the iterations without the plan. Passing over is safe: an op without a position carries out no
// planned action, its memory is made resident on demand like any op's, and recomputation's
// rules (Note [Replay] in core/exec/recomputer.h) hold for every op. Allocations and frees must
// match: they are what the plan's slots follow. Missing ops are not passed over (the next event
// departs): skipping ahead in the reference would skip its planned actions too. In an iteration
// that RecordNextIteration() is recording, ops passed over are listed (ReferenceSkips): its
// window becomes the reference's, and without them it is the reference event for event, so that
// the profile made from it has the reference's positions. (Departing there, as before, ran a
// program whose extra kernels come in every iteration, PyTorch's transformer under the swap-all
// pass, under demand swapping until it re-profiled, again and again, and it never got its plan.)
//
// Note [Switching references]: a program whose iterations change between a few shapes (an
// image size drawn per iteration, a skip pattern) departs from any one reference in most
// iterations. The caller keeps the references it planned before as alternates
// (KeepReferenceAs, under its own key for the plan). An event that does not match the reference
// at position p, in an iteration followed from its start, switches to an alternate whose first
// p events are the reference's (those this iteration matched) and whose event p is this one:
// the alternate becomes the reference, the event gets position p and Step::switched says which
// alternate, so the caller carries out that plan from p on. The most recently added or used
// alternate that fits is taken. No switch while an iteration is recorded or awaited
// (RecordNextIteration) or the reference is taken mid-iteration, nor to or from a reference
// that carries allocations across its boundary (its carried slots would be another plan's);
// an op that fits no alternate is passed over or departs as before. Comparing the prefix is
// O(p) per alternate tried; an iteration switches to each alternate at most once (one left
// behind differs from the new reference before the point it was left at).
//
// Note [Departed references]: with explicit markers and SetTakeDeparted(true), an iteration that
// departs (and fits no alternate) becomes the reference when its boundary comes: its events are
// collected from its start (the reference's prefix it matched, then its own) and the boundary
// reports profile_ready with from_departure set, so the caller profiles and plans the shape it
// has just run instead of waiting for departures to pile up and profiling again. The caller
// must then keep each iteration's events and times (keeping_iteration()). Not while an
// iteration is recorded or awaited (RecordNextIteration), and not with the auto marker, whose
// departed iterations have no known end.
//
// Known limit: a balanced repeat inside an iteration (e.g. an optimizer that allocates and
// frees one same-size temporary per parameter) is taken as the period; following then departs
// at the first event outside it, which the caller sees as departures (and may Reprofile).
// The same holds for a chain inside a pass whose blocks each free the previous block's output
// after making their own (a carried repeat): the carried rule widens this limit.
// With profile_iterations > 2, the extra windows of profiling must also repeat, or the search
// resumes.
//
// Thread safety: thread-compatible (no internal locking); the caller serialises all calls,
// e.g. under the interposer's own lock.
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
  // iteration: core/exec/profiler.cc, Note [Swap-all profiling]). No-op unless following.
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
