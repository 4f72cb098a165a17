#include "core/profile/iteration_tracker.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <tuple>

namespace pooch {
namespace {

// Polynomial hashes mod the Mersenne prime 2^61-1: unlike mod 2^64, no known structured
// sequence (Thue-Morse) collides systematically, and a hit is verified anyway.
constexpr uint64_t kMod = (uint64_t{1} << 61) - 1;
constexpr uint64_t kBase = 0x1F3D5B79A2C4E681ULL % kMod;

uint64_t MulMod(uint64_t a, uint64_t b) {
  __extension__ using u128 = unsigned __int128;
  const u128 x = static_cast<u128>(a) * b;
  uint64_t r = static_cast<uint64_t>(x & kMod) + static_cast<uint64_t>(x >> 61);
  if (r >= kMod) r -= kMod;
  return r;
}

uint64_t AddMod(uint64_t a, uint64_t b) {
  uint64_t r = a + b;  // both < 2^61: no overflow
  return r >= kMod ? r - kMod : r;
}

uint64_t SubMod(uint64_t a, uint64_t b) { return a >= b ? a - b : a + kMod - b; }

// SplitMix64's finaliser: spreads kind and signature over the hash's range.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t EventHash(const StreamEvent& e) {
  return Mix(e.signature ^ Mix(static_cast<uint64_t>(e.kind) + 1)) % kMod;
}

}  // namespace

bool SameEvent(const StreamEvent& a, const StreamEvent& b) {
  return a.kind == b.kind && a.signature == b.signature;
}

IterationTracker::IterationTracker(IterationTrackerOptions options) : options_(options) {
  if (options_.max_detect_events < 2) options_.max_detect_events = 2;
}

IterationTracker::Step IterationTracker::Feed(const StreamEvent& e) {
  Step step;
  step.seq = next_seq_++;
  step.signature = e.signature;
  if (options_.marker == IterationMarker::kAuto) return FeedAuto(e, step);
  return FeedExplicit(e, step);
}

// ---- auto marker ----------------------------------------------------------------------------

IterationTracker::Step IterationTracker::FeedAuto(const StreamEvent& e, Step step) {
  if (mode_ != Mode::kProfiling) return FollowAuto(e, step);
  const int64_t n = Append(e);
  if (period_ > 0) {
    // Confirming the extra profiling iterations: each event must repeat the one a period back.
    if (n - period_ >= base_ && SameEvent(At(n).event, At(n - period_).event)) {
      if (--confirm_left_ == 0) step.profile_ready = Detected(n, period_, phase_);
      return step;
    }
    period_ = 0;
    confirm_left_ = 0;
  }
  int64_t p = FindPeriod(n);
  int64_t phase = 0;
  if (p == 0) {
    p = FindCarriedPeriod(n);
    if (p != 0) phase = CarriedPhase(n - p + 1, p);
  }
  if (p == 0) return step;
  const int64_t extra = std::max(options_.profile_iterations, 2) - 2;
  if (extra == 0) {
    step.profile_ready = Detected(n, p, phase);
  } else {
    period_ = p;
    phase_ = phase;
    confirm_left_ = extra * p;
  }
  return step;
}

size_t IterationTracker::MaxUnmatchedOps() const {
  return std::max<size_t>(2, reference_.size() / 100);
}

bool IterationTracker::Detected(int64_t n, int64_t p, int64_t phase) {
  if (phase == 0) {
    TakeReference(n - p + 1, n + 1);
    StartFollowing();
    return true;
  }
  // Note [Carried window phase]: the window that starts `phase` events into [n - p + 1, n] and
  // ends inside it, already seen; following goes on from the event after n, in the middle of the
  // reference, and the profile is ready when that iteration ends.
  const int64_t first = n + 1 + phase - 2 * p;
  TakeReference(first, first + p);
  StartFollowing();
  position_ = static_cast<size_t>(p - phase);
  ready_pending_ = true;
  return false;
}

int64_t IterationTracker::CarriedPhase(int64_t first, int64_t p) const {
  // The level of live bytes relative to first's; a free's bytes are its allocation's, made in
  // the window or the one before it (Note [Carried lifetimes], rule (a)).
  int64_t level = 0;
  int64_t best_level = 0;
  int64_t best = 0;
  for (int64_t i = first; i < first + p - 1; ++i) {
    const Entry& e = At(i);
    if (e.event.kind == StreamEvent::Kind::kAlloc) level += e.event.bytes;
    if (e.event.kind == StreamEvent::Kind::kFree && e.partner >= base_) {
      level -= At(e.partner).event.bytes;
    }
    if (level < best_level) {
      best_level = level;
      best = i + 1 - first;
    }
  }
  return best;
}

int64_t IterationTracker::Append(const StreamEvent& e) {
  const int64_t n = base_ + static_cast<int64_t>(buffer_.size());
  Entry entry;
  entry.event = e;
  entry.prefix_hash = total_hash_;
  entry.life_prefix_hash = life_total_hash_;
  const uint64_t power = next_power_;
  uint64_t life_hash = EventHash(e);
  entry.allocs_before = alloc_count_;
  entry.frees_before = free_count_;
  levels_[alloc_count_ - free_count_].push_back(n);
  total_hash_ = AddMod(total_hash_, MulMod(EventHash(e), next_power_));
  next_power_ = MulMod(next_power_, kBase);
  if (e.kind == StreamEvent::Kind::kAlloc) {
    // A reused id (the caller's bug, or an id from before a dropped window) replaces the old one.
    auto [it, inserted] = live_.try_emplace(e.allocation, n);
    if (!inserted) {
      live_indices_.erase(it->second);
      it->second = n;
    }
    live_indices_.insert(n);
    last_alloc_ = n;
    ++alloc_count_;
  } else if (e.kind == StreamEvent::Kind::kFree) {
    int64_t g = -1;  // unknown allocation: no window containing this free is balanced
    if (auto it = live_.find(e.allocation); it != live_.end()) {
      g = it->second;
      live_indices_.erase(g);
      live_.erase(it);
    }
    entry.partner = g;
    life_hash = Mix(life_hash ^ Mix(static_cast<uint64_t>(Lifetime(entry, n)))) % kMod;
    ++free_count_;
    while (!free_mins_.empty() && free_mins_.back().partner >= g) free_mins_.pop_back();
    free_mins_.push_back({n, g});
    // No balanced window may start in (g, n]: it would hold the free but not the allocation.
    // Intervals arrive with increasing right ends, so merging happens only at the back.
    int64_t lo = g;
    while (!forbidden_.empty() && forbidden_.back().hi >= lo) {
      lo = std::min(lo, forbidden_.back().lo);
      forbidden_.pop_back();
    }
    forbidden_.push_back({lo, n});
  }
  life_total_hash_ = AddMod(life_total_hash_, MulMod(life_hash, power));
  occurrences_[EventKey{static_cast<uint8_t>(e.kind), e.signature}].push_back(n);
  buffer_.push_back(entry);
  if (buffer_.size() > options_.max_detect_events) DropOldest();
  while (powers_.size() <= buffer_.size() / 2) powers_.push_back(MulMod(powers_.back(), kBase));
  return n;
}

void IterationTracker::DropOldest() {
  const Entry& front = buffer_.front();
  const StreamEvent& e = front.event;
  if (e.kind == StreamEvent::Kind::kAlloc) {
    // A still-live allocation leaves the window: its later free is then of an unknown one.
    if (auto it = live_.find(e.allocation); it != live_.end() && it->second == base_) {
      live_indices_.erase(base_);
      live_.erase(it);
    }
  }
  const EventKey key{static_cast<uint8_t>(e.kind), e.signature};
  auto occ = occurrences_.find(key);
  occ->second.pop_front();
  if (occ->second.empty()) occurrences_.erase(occ);
  auto level = levels_.find(front.allocs_before - front.frees_before);
  level->second.pop_front();
  if (level->second.empty()) levels_.erase(level);
  buffer_.pop_front();
  ++base_;
  while (!forbidden_.empty() && forbidden_.front().hi < base_) forbidden_.pop_front();
  while (!free_mins_.empty() && free_mins_.front().index < base_) free_mins_.pop_front();
}

std::optional<int64_t> IterationTracker::ForbiddenBelow(int64_t a) const {
  auto it = std::lower_bound(forbidden_.begin(), forbidden_.end(), a,
                             [](const Forbidden& f, int64_t v) { return f.hi < v; });
  if (it != forbidden_.end() && it->lo < a) return it->lo;
  return std::nullopt;
}

bool IterationTracker::TandemHashEqual(int64_t s, int64_t p) const {
  // Windows [s-p, s) and [s, s+p) with s+p the end of the buffer: with H relative to one
  // origin, equal windows satisfy (H(s) - H(s-p)) * B^p == H(s+p) - H(s).
  const uint64_t h_s = At(s).prefix_hash;
  const uint64_t first = SubMod(h_s, At(s - p).prefix_hash);
  const uint64_t second = SubMod(total_hash_, h_s);
  return MulMod(first, powers_[static_cast<size_t>(p)]) == second;
}

bool IterationTracker::LifetimesHashEqual(int64_t s, int64_t p) const {
  const uint64_t h_s = At(s).life_prefix_hash;
  const uint64_t first = SubMod(h_s, At(s - p).life_prefix_hash);
  const uint64_t second = SubMod(life_total_hash_, h_s);
  return MulMod(first, powers_[static_cast<size_t>(p)]) == second;
}

int64_t IterationTracker::Lifetime(const Entry& free, int64_t index) {
  return free.partner < 0 ? 0 : index - free.partner;
}

bool IterationTracker::LifetimesExact(int64_t s, int64_t p) const {
  for (int64_t i = s; i < s + p; ++i) {
    if (At(i).event.kind == StreamEvent::Kind::kFree &&
        Lifetime(At(i), i) != Lifetime(At(i - p), i - p)) {
      return false;
    }
  }
  return true;
}

bool IterationTracker::TandemExact(int64_t s, int64_t p) const {
  for (int64_t i = s; i < s + p; ++i) {
    if (!SameEvent(At(i).event, At(i - p).event)) return false;
  }
  return true;
}

int64_t IterationTracker::FindPeriod(int64_t n) const {
  if (last_alloc_ < base_) return 0;  // no allocation in the window: nothing is balanced
  const int64_t size = n - base_ + 1;
  // A window [j+1, n] must contain an allocation: j+1 <= last_alloc_; must not contain a live
  // one: j >= max live index; and fit twice: n - j <= size / 2.
  const int64_t j_hi = std::min(last_alloc_ - 1, n - 1);
  int64_t j_lo = n - size / 2;
  if (!live_indices_.empty()) j_lo = std::max(j_lo, *live_indices_.rbegin());
  if (j_hi < j_lo) return 0;
  // Every candidate p repeats both the last event (at n - p) and the last allocation, which W
  // holds (at last_alloc_ - p): walk whichever of the two occurrence lists is shorter in range.
  const auto [first, last, anchor] = CandidatesFor(n, n - j_hi, n - j_lo);
  int tried = 0;
  // From the nearest occurrence back: the smallest period first.
  for (auto it = last; it != first && tried < kMaxCandidatesPerEvent; ++tried) {
    --it;
    ++detect_work_;
    const int64_t p = anchor - *it;
    const int64_t s = n - p + 1;
    if (std::optional<int64_t> lo = ForbiddenBelow(s)) {
      // Every start in (lo, s] is forbidden too: jump to the candidates that start at or
      // before lo (s = *it + n - anchor + 1), so a long unbalanced stretch (a backward pass of
      // identical blocks) costs one step, not one per block.
      it = std::upper_bound(first, it, *lo - 1 - (n - anchor));
      continue;
    }
    if (!TandemHashEqual(s, p)) continue;
    if (!TandemExact(s, p)) continue;
    return p;
  }
  return 0;
}

IterationTracker::Candidates IterationTracker::CandidatesFor(int64_t n, int64_t p_min,
                                                             int64_t p_max) const {
  auto range_of = [&](int64_t anchor) {
    const StreamEvent& e = At(anchor).event;
    const std::deque<int64_t>& positions =
        occurrences_.find(EventKey{static_cast<uint8_t>(e.kind), e.signature})->second;
    return std::make_pair(std::lower_bound(positions.begin(), positions.end(), anchor - p_max),
                          std::upper_bound(positions.begin(), positions.end(), anchor - p_min));
  };
  Candidates c;
  std::tie(c.first, c.last) = range_of(n);
  c.anchor = n;
  if (last_alloc_ != n) {
    auto [alloc_first, alloc_last] = range_of(last_alloc_);
    if (alloc_last - alloc_first < c.last - c.first) {
      c.first = alloc_first;
      c.last = alloc_last;
      c.anchor = last_alloc_;
    }
  }
  return c;
}

std::optional<int64_t> IterationTracker::MinPartnerFrom(int64_t s) const {
  auto it = std::lower_bound(free_mins_.begin(), free_mins_.end(), s,
                             [](const FreeMin& f, int64_t v) { return f.index < v; });
  if (it == free_mins_.end()) return std::nullopt;
  return it->partner;
}

int64_t IterationTracker::FindCarriedPeriod(int64_t n) const {
  if (last_alloc_ < base_) return 0;  // (c): W must make an allocation
  const int64_t p_min = n - last_alloc_ + 1;
  const int64_t p_max = (n - base_ + 1) / 2;
  if (p_max < p_min) return 0;
  // W makes as many allocations as it frees (rules a and b together): its start s has the
  // current net count of allocations. Walk whichever is shorter: the starts at that level, or the
  // occurrences of the anchor event; a position x of the list walked gives p = off - x.
  const int64_t net = alloc_count_ - free_count_;
  auto level = levels_.find(net);
  if (level == levels_.end()) return 0;
  auto [first, last, off] = CandidatesFor(n, p_min, p_max);
  {
    const std::deque<int64_t>& starts = level->second;
    auto level_first = std::lower_bound(starts.begin(), starts.end(), n + 1 - p_max);
    auto level_last = std::upper_bound(starts.begin(), starts.end(), n + 1 - p_min);
    if (level_last - level_first < last - first) {
      first = level_first;
      last = level_last;
      off = n + 1;
    }
  }
  int tried = 0;
  for (auto it = last; it != first && tried < kMaxCandidatesPerEvent; ++tried) {
    --it;
    ++detect_work_;
    const int64_t p = off - *it;
    const int64_t s = n - p + 1;
    if (!LifetimesHashEqual(s, p)) continue;  // implies TandemHashEqual but for collisions
    const int64_t allocs = alloc_count_ - At(s).allocs_before;
    if (allocs == 0 || allocs != free_count_ - At(s).frees_before) continue;
    if (std::optional<int64_t> m = MinPartnerFrom(s); m.has_value() && *m < s - p) {
      // (a) fails: a free in W frees an allocation older than V. Every longer window holds that
      // free too, so only periods with s - p = n + 1 - 2p <= m can pass; an unknown or dropped
      // partner fails them all.
      if (*m < base_) return 0;
      const int64_t need = (n + 2 - *m) / 2;
      it = std::upper_bound(first, it, off - need);
      continue;
    }
    if (!TandemExact(s, p) || !LifetimesExact(s, p)) continue;
    return p;
  }
  return 0;
}

void IterationTracker::TakeReference(int64_t first, int64_t end) {
  reference_.clear();
  reference_.reserve(static_cast<size_t>(end - first));
  for (int64_t i = first; i < end; ++i) reference_.push_back(At(i).event);
  reference_window_ = {static_cast<uint64_t>(first), static_cast<uint64_t>(end)};
  reference_skips_.clear();
  // Allocations made in the window and not freed in it: those still live now, less the ones
  // made after the window (a window that ends before the latest event: Detected()), plus the
  // window's own freed after it.
  int64_t carried = std::distance(live_indices_.lower_bound(end), live_indices_.end());
  carried = std::distance(live_indices_.lower_bound(first), live_indices_.end()) - carried;
  for (int64_t i = end; i < base_ + static_cast<int64_t>(buffer_.size()); ++i) {
    const Entry& e = At(i);
    carried += e.event.kind == StreamEvent::Kind::kFree && e.partner >= first && e.partner < end;
  }
  reference_carried_ = static_cast<size_t>(carried);
  ++profiles_made_;
}

void IterationTracker::StartFollowing() {
  mode_ = Mode::kFollowing;
  position_ = 0;
  live_since_start_.clear();
  ClearDetection();
}

void IterationTracker::ClearDetection() {
  // swap with empties so the memory of a large detection window is returned.
  std::deque<Entry>().swap(buffer_);
  base_ = static_cast<int64_t>(next_seq_);
  total_hash_ = 0;
  life_total_hash_ = 0;
  next_power_ = 1;
  absl::flat_hash_map<uint64_t, int64_t>().swap(live_);
  live_indices_.clear();
  last_alloc_ = -1;
  absl::flat_hash_map<EventKey, std::deque<int64_t>>().swap(occurrences_);
  forbidden_.clear();
  free_mins_.clear();
  absl::flat_hash_map<int64_t, std::deque<int64_t>>().swap(levels_);
  alloc_count_ = 0;
  free_count_ = 0;
  period_ = 0;
  confirm_left_ = 0;
}

void IterationTracker::TrackLive(const StreamEvent& e) {
  if (e.kind == StreamEvent::Kind::kAlloc) {
    live_since_start_.insert(e.allocation);
  } else if (e.kind == StreamEvent::Kind::kFree) {
    live_since_start_.erase(e.allocation);  // frees of older allocations do not matter
  }
}

IterationTracker::Step IterationTracker::FollowAuto(const StreamEvent& e, Step step) {
  if (mode_ == Mode::kDeparted) {
    // Note [Carried lifetimes]: the departed iteration may carry out as many allocations as the
    // reference does; more means it is still inside something longer.
    if (live_since_start_.size() > reference_carried_ || !SameEvent(e, reference_[0])) {
      TrackLive(e);
      return step;
    }
    mode_ = Mode::kFollowing;  // re-synchronised: e is position 0 of a new iteration
    position_ = 0;
  }
  if (position_ == 0) {
    live_since_start_.clear();
    unmatched_in_iteration_ = 0;
  }
  TrackLive(e);
  if (!SameEvent(e, reference_[position_]) && !TrySwitch(e, &step) &&
      e.kind == StreamEvent::Kind::kOp && unmatched_in_iteration_ < MaxUnmatchedOps()) {
    // Note [Unmatched ops]: an op the reference does not have here is passed over (and left out
    // of a recorded window).
    if (record_next_ == RecordNext::kRecording) recording_skips_.push_back(step.seq);
    ++unmatched_in_iteration_;
    ++unmatched_ops_;
    return step;
  }
  if (!SameEvent(e, reference_[position_])) {
    step.departed = true;
    ++departures_;
    mode_ = Mode::kDeparted;
    if (record_next_ == RecordNext::kRecording) record_next_ = RecordNext::kWaiting;
    return step;
  }
  step.position = static_cast<int64_t>(position_);
  step.iteration_start = position_ == 0;
  if (step.iteration_start && record_next_ != RecordNext::kNo) {
    record_next_ = RecordNext::kRecording;
    next_first_ = step.seq;
    recording_skips_.clear();
  }
  if (++position_ == reference_.size()) {
    if (ready_pending_) {
      // Note [Carried window phase]: the first iteration followed to its end is the one the
      // detection window was rotated into; it completes profiling rather than counting.
      ready_pending_ = false;
      step.profile_ready = true;
    } else {
      ++iterations_completed_;
    }
    position_ = 0;
    if (record_next_ == RecordNext::kRecording) {
      TakeRecordedWindow(step.seq + 1);
      step.profile_ready = true;
    }
  }
  return step;
}

// ---- explicit markers -----------------------------------------------------------------------

IterationTracker::Step IterationTracker::FeedExplicit(const StreamEvent& e, Step step) {
  const bool first_of_iteration = at_boundary_;
  at_boundary_ = false;
  if (mode_ == Mode::kProfiling) {
    if (in_iteration_ && !overflowed_) {
      current_.push_back(e);
      if (current_.size() > options_.max_detect_events) {
        overflowed_ = true;  // not an iteration we can hold; wait for the next boundary
        std::vector<StreamEvent>().swap(current_);
      }
    }
    return step;
  }
  step.iteration_start = first_of_iteration;
  if (first_of_iteration && record_next_ != RecordNext::kNo) {
    record_next_ = RecordNext::kRecording;
    next_first_ = step.seq;
    recording_skips_.clear();
  }
  if (mode_ == Mode::kDeparted) {
    if (collecting_) {
      current_.push_back(e);
      if (current_.size() > options_.max_detect_events) {
        collecting_ = false;  // not an iteration we can hold
        std::vector<StreamEvent>().swap(current_);
      }
    }
    return step;
  }
  if ((position_ < reference_.size() && SameEvent(e, reference_[position_])) ||
      TrySwitch(e, &step)) {
    step.position = static_cast<int64_t>(position_++);
    return step;
  }
  step.departed = true;
  ++departures_;
  mode_ = Mode::kDeparted;
  Depart(&e);
  if (record_next_ == RecordNext::kRecording) record_next_ = RecordNext::kWaiting;
  return step;
}

void IterationTracker::Depart(const StreamEvent* e) {
  collecting_ = take_departed_ && record_next_ == RecordNext::kNo &&
                options_.marker != IterationMarker::kAuto;
  if (!collecting_) return;
  current_.assign(reference_.begin(), reference_.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                               position_, reference_.size())));
  if (e != nullptr) current_.push_back(*e);
}

IterationTracker::BoundaryResult IterationTracker::MarkBoundary() {
  BoundaryResult result;
  if (options_.marker == IterationMarker::kAuto) return result;
  if (!in_iteration_) {
    // The first boundary: what came before it is not an iteration.
    in_iteration_ = true;
    at_boundary_ = true;
    iteration_first_ = next_seq_;
    std::vector<StreamEvent>().swap(current_);
    overflowed_ = false;
    return result;
  }
  if (at_boundary_) return result;  // an empty iteration: ignored
  at_boundary_ = true;
  switch (mode_) {
    case Mode::kProfiling:
      if (!overflowed_) {
        ++iterations_profiled_;
        if (iterations_profiled_ >= std::max(options_.profile_iterations, 1)) {
          reference_ = std::move(current_);
          reference_window_ = {iteration_first_, next_seq_};
          reference_skips_.clear();
          ++profiles_made_;
          result.profile_ready = true;
          mode_ = Mode::kFollowing;
          position_ = 0;
        }
      }
      current_.clear();
      overflowed_ = false;
      iteration_first_ = next_seq_;
      break;
    case Mode::kFollowing:
      if (position_ == reference_.size()) {
        result.completed = true;
        ++iterations_completed_;
        if (record_next_ == RecordNext::kRecording) {
          TakeRecordedWindow(next_seq_);
          result.profile_ready = true;
        }
      } else {
        if (record_next_ == RecordNext::kRecording) record_next_ = RecordNext::kWaiting;
        result.departed = true;
        ++departures_;
        Depart(nullptr);
      }
      position_ = 0;
      break;
    case Mode::kDeparted:
      mode_ = Mode::kFollowing;  // the next iteration starts here even after a departure
      position_ = 0;
      break;
  }
  // Note [Departed references]: the iteration that departed is the reference from here on.
  if (collecting_) {
    collecting_ = false;
    if (!current_.empty()) {
      reference_ = std::move(current_);
      reference_window_ = {iteration_first_, next_seq_};
      reference_skips_.clear();
      ++profiles_made_;
      result.profile_ready = true;
      result.from_departure = true;
    }
    current_.clear();
  }
  iteration_first_ = next_seq_;
  return result;
}

bool IterationTracker::TrySwitch(const StreamEvent& e, Step* step) {
  if (record_next_ != RecordNext::kNo || ready_pending_ || reference_carried_ != 0) return false;
  const size_t p = position_;
  for (auto it = alternates_.rbegin(); it != alternates_.rend(); ++it) {
    if (it->events.size() <= p || !SameEvent(it->events[p], e) ||
        !std::equal(reference_.begin(), reference_.begin() + static_cast<std::ptrdiff_t>(p),
                    it->events.begin(), SameEvent)) {
      continue;
    }
    reference_ = it->events;
    step->switched = true;
    step->switched_to = it->key;
    ++switches_;
    std::rotate(std::prev(it.base()), it.base(), alternates_.end());  // now the most recent
    return true;
  }
  return false;
}

void IterationTracker::KeepReferenceAs(uint64_t key) {
  ForgetAlternate(key);
  if (reference_carried_ != 0) return;  // never switched to (Note [Switching references])
  alternates_.push_back({key, reference_});
  if (alternates_.size() > kMaxAlternates) alternates_.erase(alternates_.begin());
}

void IterationTracker::ForgetAlternate(uint64_t key) {
  std::erase_if(alternates_, [key](const Alternate& a) { return a.key == key; });
}

void IterationTracker::RecordNextIteration() {
  if (mode_ == Mode::kProfiling) return;
  record_next_ = RecordNext::kWaiting;
}

void IterationTracker::TakeRecordedWindow(uint64_t end) {
  // The same reference, measured again: not a new profile (profiles_made() counts detections).
  reference_window_ = {next_first_, end};
  reference_skips_ = std::move(recording_skips_);
  recording_skips_.clear();
  record_next_ = RecordNext::kNo;
}

void IterationTracker::Reprofile() {
  record_next_ = RecordNext::kNo;
  collecting_ = false;
  ready_pending_ = false;
  reference_.clear();
  reference_window_ = {0, 0};
  reference_skips_.clear();
  recording_skips_.clear();
  reference_carried_ = 0;
  mode_ = Mode::kProfiling;
  position_ = 0;
  live_since_start_.clear();
  ClearDetection();
  iterations_profiled_ = 0;
  std::vector<StreamEvent>().swap(current_);
  overflowed_ = false;
  in_iteration_ = in_iteration_ && at_boundary_;
  iteration_first_ = next_seq_;
}

}  // namespace pooch
