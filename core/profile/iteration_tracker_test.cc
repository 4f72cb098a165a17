#include "core/profile/iteration_tracker.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using Kind = StreamEvent::Kind;

// Builds event streams: allocation ids are fresh over the whole stream, as the interposer's are.
class StreamBuilder {
 public:
  void Op(uint64_t sig) { events_.push_back({Kind::kOp, sig, 0}); }
  // Allocates under a caller's name (slot) so that a later Free can refer to it.
  // With `sized`, each allocation carries its signature as its bytes (Note [Carried window
  // phase]); without, 0.
  void Alloc(uint64_t sig, int slot) {
    const uint64_t id = next_id_++;
    slots_[slot] = {id, sig};
    events_.push_back({Kind::kAlloc, sig, id, sized ? static_cast<int64_t>(sig) : 0});
  }
  bool sized = false;
  void Free(int slot) {
    auto [id, sig] = slots_.at(slot);
    slots_.erase(slot);
    events_.push_back({Kind::kFree, sig, id});
  }
  // A free of an allocation the stream never showed (made before the tracker started).
  void FreeUnknown(uint64_t sig) { events_.push_back({Kind::kFree, sig, next_id_++}); }
  std::vector<StreamEvent>& events() { return events_; }

 private:
  std::vector<StreamEvent> events_;
  uint64_t next_id_ = 1;
  absl::flat_hash_map<int, std::pair<uint64_t, uint64_t>> slots_;
};

// A small training iteration: forward allocates a feature map per layer, backward frees them.
void SmallIteration(StreamBuilder& b, uint64_t size = 100) {
  b.Op(1);  // zero_grad
  b.Alloc(size, 0);
  b.Op(2 + size);
  b.Alloc(size * 2, 1);
  b.Op(3 + size);
  b.Op(4 + size);  // loss
  b.Free(1);
  b.Op(5 + size);
  b.Free(0);
  b.Op(6);  // optimizer
}
constexpr int kSmallIterationEvents = 10;

struct FeedLog {
  std::vector<IterationTracker::Step> steps;
  std::optional<uint64_t> ready_seq;
  int departed = 0;
};

FeedLog FeedAll(IterationTracker& t, const std::vector<StreamEvent>& events, size_t from = 0) {
  FeedLog log;
  for (size_t i = from; i < events.size(); ++i) {
    IterationTracker::Step s = t.Feed(events[i]);
    EXPECT_EQ(s.seq, i);
    if (s.profile_ready) {
      EXPECT_FALSE(log.ready_seq.has_value()) << "profile_ready twice";
      log.ready_seq = s.seq;
    }
    if (s.departed) ++log.departed;
    log.steps.push_back(s);
  }
  return log;
}

// Every allocation in [first, end) is freed there and every free there frees one made there.
bool Balanced(const std::vector<StreamEvent>& events, uint64_t first, uint64_t end) {
  absl::flat_hash_map<uint64_t, int> count;
  bool any_alloc = false;
  for (uint64_t i = first; i < end; ++i) {
    const StreamEvent& e = events[i];
    if (e.kind == Kind::kAlloc) {
      ++count[e.allocation];
      any_alloc = true;
    } else if (e.kind == Kind::kFree) {
      if (count[e.allocation] != 1) return false;
      count[e.allocation] = 2;
    }
  }
  for (const auto& [id, c] : count) {
    if (c != 2) return false;
  }
  return any_alloc;
}

// A random balanced iteration body over a small alphabet (so that it has inner repeats).
void RandomBody(StreamBuilder& b, std::mt19937_64& rng, int length, int alphabet) {
  std::vector<int> open;
  int slot = 0;
  bool any_alloc = false;
  for (int i = 0; i < length; ++i) {
    const int choice = static_cast<int>(rng() % 3);
    if (choice == 0 || (!any_alloc && i == length - 1)) {
      b.Alloc(1 + rng() % alphabet, slot);
      open.push_back(slot++);
      any_alloc = true;
    } else if (choice == 1 && !open.empty()) {
      const size_t k = rng() % open.size();
      b.Free(open[k]);
      open.erase(open.begin() + static_cast<int64_t>(k));
    } else {
      b.Op(1 + rng() % alphabet);
    }
  }
  for (int s : open) b.Free(s);
}

// A free's distance back to its allocation in events, 0 when the stream does not show it.
int64_t Lifetime(const std::vector<StreamEvent>& ev, size_t free) {
  for (size_t i = free; i-- > 0;) {
    if (ev[i].kind == Kind::kAlloc && ev[i].allocation == ev[free].allocation) {
      return static_cast<int64_t>(free - i);
    }
  }
  return 0;
}

// Note [Carried lifetimes] by its words, for W = [s, s + p) and V = [s - p, s): every free in W
// frees an allocation made in V or W; an allocation of V freed in W has its successor (+p) live
// at W's end; an allocation of W live at W's end has its predecessor (-p) freed in W; each free
// of W frees an allocation as far back as the free a period before it; W makes an allocation.
bool CarriedPeriodic(const std::vector<StreamEvent>& ev, size_t s, size_t p) {
  const size_t end = s + p;
  for (size_t i = s; i < end; ++i) {
    if (ev[i].kind == Kind::kFree && Lifetime(ev, i) != Lifetime(ev, i - p)) return false;
  }
  absl::flat_hash_map<uint64_t, size_t> made;  // allocation id -> index, over [s - p, end)
  absl::flat_hash_map<size_t, size_t> freed_at;
  bool any_alloc = false;
  for (size_t i = s - p; i < end; ++i) {
    if (ev[i].kind == Kind::kAlloc) {
      made[ev[i].allocation] = i;
      any_alloc |= i >= s;
    } else if (ev[i].kind == Kind::kFree) {
      auto it = made.find(ev[i].allocation);
      if (it == made.end()) {
        if (i >= s) return false;  // frees something older than V
        continue;
      }
      freed_at[it->second] = i;
    }
  }
  for (size_t i = s - p; i < end; ++i) {
    if (ev[i].kind != Kind::kAlloc) continue;
    const bool freed_in_w = freed_at.contains(i) && freed_at[i] >= s;
    if (i < s && freed_in_w && freed_at.contains(i + p)) return false;
    if (i >= s && !freed_at.contains(i) && !(freed_at.contains(i - p) && freed_at[i - p] >= s)) {
      return false;
    }
  }
  return any_alloc;
}

// Allocations made in [first, end) and not freed there.
size_t LiveAtEnd(const std::vector<StreamEvent>& ev, uint64_t first, uint64_t end) {
  absl::flat_hash_map<uint64_t, bool> live;
  for (uint64_t i = first; i < end; ++i) {
    if (ev[i].kind == Kind::kAlloc) live[ev[i].allocation] = true;
    if (ev[i].kind == Kind::kFree) live.erase(ev[i].allocation);
  }
  return live.size();
}

// By the definition: the first event n that ends a balanced tandem repeat, smallest period;
// failing that, a carried one (Note [Carried lifetimes]), smallest period.
std::optional<std::pair<uint64_t, uint64_t>> BruteForceDetect(const std::vector<StreamEvent>& ev) {
  auto tandem = [&](size_t s, size_t p) {
    for (size_t i = s; i < s + p; ++i) {
      if (!SameEvent(ev[i], ev[i - p])) return false;
    }
    return true;
  };
  for (size_t n = 0; n < ev.size(); ++n) {
    for (size_t p = 1; 2 * p <= n + 1; ++p) {
      const size_t s = n + 1 - p;
      if (tandem(s, p) && Balanced(ev, s, n + 1)) {
        return std::make_pair(uint64_t{s}, uint64_t{n + 1});
      }
    }
    for (size_t p = 1; 2 * p <= n + 1; ++p) {
      const size_t s = n + 1 - p;
      if (tandem(s, p) && CarriedPeriodic(ev, s, p)) {
        return std::make_pair(uint64_t{s}, uint64_t{n + 1});
      }
    }
  }
  return std::nullopt;
}

// A random body like RandomBody's whose `carried` slots are allocated in one repetition and freed
// in the next, each at a fixed offset of the body (so the lifetimes repeat); repetition 0 frees
// nothing carried (as a first iteration).
void RandomCarriedBody(StreamBuilder& b, std::mt19937_64& rng, int length, int alphabet,
                       int carried, int rep) {
  std::vector<int> alloc_at(static_cast<size_t>(carried));
  std::vector<int> free_at(static_cast<size_t>(carried));
  for (int k = 0; k < carried; ++k) {
    alloc_at[static_cast<size_t>(k)] = static_cast<int>(rng() % static_cast<uint64_t>(length));
    free_at[static_cast<size_t>(k)] = static_cast<int>(rng() % static_cast<uint64_t>(length));
  }
  const uint64_t carried_sig = 1 + rng() % alphabet;
  std::vector<int> open;
  int slot = 0;
  for (int i = 0; i < length; ++i) {
    for (int k = 0; k < carried; ++k) {
      if (free_at[static_cast<size_t>(k)] == i && rep > 0) b.Free(100000 * rep + k);
      if (alloc_at[static_cast<size_t>(k)] == i) b.Alloc(carried_sig, 100000 * (rep + 1) + k);
    }
    const int choice = static_cast<int>(rng() % 3);
    if (choice == 0) {
      b.Alloc(1 + rng() % alphabet, slot);
      open.push_back(slot++);
    } else if (choice == 1 && !open.empty()) {
      const size_t k = rng() % open.size();
      b.Free(open[k]);
      open.erase(open.begin() + static_cast<int64_t>(k));
    } else {
      b.Op(1 + rng() % alphabet);
    }
  }
  for (int s : open) b.Free(s);
}

TEST(IterationTrackerTest, SimpleRepeatIsDetectedAndFollowed) {
  StreamBuilder b;
  for (int i = 0; i < 5; ++i) SmallIteration(b);
  IterationTracker t;
  const std::vector<StreamEvent>& ev = b.events();
  FeedLog log = FeedAll(t, ev);
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(*log.ready_seq, 2u * kSmallIterationEvents - 1);
  EXPECT_EQ(t.ReferenceWindow(),
            std::make_pair(uint64_t{kSmallIterationEvents}, uint64_t{2 * kSmallIterationEvents}));
  ASSERT_EQ(t.Reference().size(), size_t{kSmallIterationEvents});
  for (int i = 0; i < kSmallIterationEvents; ++i) {
    EXPECT_TRUE(SameEvent(t.Reference()[i], ev[kSmallIterationEvents + i]));
  }
  EXPECT_EQ(t.mode(), IterationTracker::Mode::kFollowing);
  EXPECT_EQ(log.departed, 0);
  for (size_t i = 2 * kSmallIterationEvents; i < ev.size(); ++i) {
    const int64_t want = static_cast<int64_t>(i % kSmallIterationEvents);
    EXPECT_EQ(log.steps[i].position, want) << i;
    EXPECT_EQ(log.steps[i].iteration_start, want == 0) << i;
  }
  for (size_t i = 0; i < 2 * kSmallIterationEvents; ++i) EXPECT_EQ(log.steps[i].position, -1);
  EXPECT_EQ(t.iterations_completed(), 3u);
  EXPECT_EQ(t.profiles_made(), 1u);
  EXPECT_EQ(t.departures(), 0u);
}

TEST(IterationTrackerTest, WarmUpIterationDoesNotPreventDetection) {
  StreamBuilder b;
  // Warm-up: weights allocated and never freed, a free of something older, a cuDNN autotune.
  b.Alloc(7000, 100);
  b.Alloc(7001, 101);
  b.FreeUnknown(50);
  b.Op(9000);
  SmallIteration(b, 300);  // the first iteration runs with other sizes
  b.Alloc(7002, 102);      // lazily created optimizer state
  const size_t warm = b.events().size();
  for (int i = 0; i < 4; ++i) SmallIteration(b);
  IterationTracker t;
  FeedLog log = FeedAll(t, b.events());
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(*log.ready_seq, warm + 2 * kSmallIterationEvents - 1);
  EXPECT_EQ(t.ReferenceWindow().first, warm + kSmallIterationEvents);
  EXPECT_EQ(t.Reference().size(), size_t{kSmallIterationEvents});
  EXPECT_TRUE(Balanced(b.events(), t.ReferenceWindow().first, t.ReferenceWindow().second));
  EXPECT_EQ(log.departed, 0);
  EXPECT_EQ(t.iterations_completed(), 2u);
}

// conv-bn-relu x k in forward (same signatures each block), frees in backward: the blocks are
// tandem repeats but not balanced (forward leaves maps live, backward frees maps it did not
// allocate), so the period must be the whole iteration.
void ResNetLikeIteration(StreamBuilder& b, int blocks) {
  b.Op(1);
  for (int k = 0; k < blocks; ++k) {
    b.Alloc(64, 3 * k);
    b.Op(10);  // conv
    b.Alloc(64, 3 * k + 1);
    b.Op(11);  // bn
    b.Alloc(64, 3 * k + 2);
    b.Op(12);  // relu
  }
  b.Op(20);  // loss
  for (int k = blocks - 1; k >= 0; --k) {
    // A gradient temporary, allocated and freed inside the block: the block's window keeps
    // its own allocations balanced, only its frees of feature maps rule it out.
    b.Alloc(32, 100000 + k);
    b.Op(30);
    b.Free(100000 + k);
    b.Free(3 * k + 2);
    b.Op(31);
    b.Free(3 * k + 1);
    b.Op(32);
    b.Free(3 * k);
  }
  b.Op(40);
}

TEST(IterationTrackerTest, RepeatedBlocksInsideAnIterationAreNotThePeriod) {
  constexpr int kBlocks = 6;
  StreamBuilder b;
  for (int i = 0; i < 4; ++i) ResNetLikeIteration(b, kBlocks);
  const size_t len = b.events().size() / 4;
  IterationTracker t;
  FeedLog log = FeedAll(t, b.events());
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(t.Reference().size(), len);
  EXPECT_EQ(*log.ready_seq, 2 * len - 1);
  EXPECT_EQ(log.departed, 0);
  EXPECT_EQ(t.iterations_completed(), 2u);
}

TEST(IterationTrackerTest, ProfileIterationsCountsCompleteWindows) {
  StreamBuilder b;
  for (int i = 0; i < 6; ++i) SmallIteration(b);
  IterationTracker t({.marker = IterationMarker::kAuto, .profile_iterations = 4});
  FeedLog log = FeedAll(t, b.events());
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(*log.ready_seq, 4u * kSmallIterationEvents - 1);
  EXPECT_EQ(t.ReferenceWindow().first, 3u * kSmallIterationEvents);
  EXPECT_EQ(t.iterations_completed(), 2u);
}

TEST(IterationTrackerTest, VaryingBatchDepartsAndResynchronises) {
  // As cnn_train --vary-batch: every third iteration runs a smaller batch (other sizes), and a
  // zero_grad op of the same signature starts it, so the departure is mid-iteration.
  StreamBuilder b;
  std::vector<size_t> starts;
  constexpr int kIters = 13;  // ends with a normal iteration
  for (int i = 0; i < kIters; ++i) {
    starts.push_back(b.events().size());
    SmallIteration(b, i % 3 == 2 ? 50 : 100);
  }
  IterationTracker t;
  FeedLog log = FeedAll(t, b.events());
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(*log.ready_seq, starts[2] - 1);
  int small = 0;
  starts.push_back(b.events().size());
  for (int i = 2; i < kIters; ++i) {
    const bool is_small = i % 3 == 2;
    small += is_small;
    // The first event matches, the second (an allocation of another size) departs.
    EXPECT_TRUE(log.steps[starts[i]].iteration_start) << i;
    EXPECT_EQ(log.steps[starts[i]].position, 0) << i;
    EXPECT_EQ(log.steps[starts[i] + 1].departed, is_small) << i;
    if (is_small) {
      for (size_t k = starts[i] + 1; k < starts[i + 1]; ++k) {
        EXPECT_EQ(log.steps[k].position, -1) << k;
      }
    } else {
      for (size_t k = starts[i]; k < starts[i] + kSmallIterationEvents; ++k) {
        EXPECT_EQ(log.steps[k].position, static_cast<int64_t>(k - starts[i])) << k;
        EXPECT_FALSE(log.steps[k].departed);
      }
    }
  }
  EXPECT_EQ(log.departed, small);
  EXPECT_EQ(t.departures(), static_cast<uint64_t>(small));
  EXPECT_EQ(t.iterations_completed(), static_cast<uint64_t>(kIters - 2 - small));
  EXPECT_EQ(t.mode(), IterationTracker::Mode::kFollowing);
}

TEST(IterationTrackerTest, NoResyncWhileAllocationsOfTheDepartedIterationAreLive) {
  StreamBuilder b;
  SmallIteration(b);
  SmallIteration(b);
  // A departing iteration that holds an allocation across a zero_grad-like op (signature 1 is
  // Reference()[0]): re-synchronising there would be wrong.
  b.Op(1);
  b.Alloc(999, 7);
  b.Op(1);
  b.Free(7);
  const size_t resync = b.events().size();
  SmallIteration(b);
  IterationTracker t;
  FeedLog log = FeedAll(t, b.events());
  EXPECT_EQ(log.departed, 1);
  EXPECT_EQ(log.steps[resync - 2].position, -1);  // the second Op(1): allocation 7 still live
  EXPECT_TRUE(log.steps[resync].iteration_start);
  EXPECT_EQ(t.iterations_completed(), 1u);
}

// A Python training step (Note [Carried lifetimes]): the loss and the model output are held by
// variables across the loop, so each is freed in the next iteration, after its successor was
// made; `size` varies the batch.
void PythonIteration(StreamBuilder& b, int i, uint64_t size = 100) {
  const int cur = 2 * (i % 2);
  const int prev = 2 - cur;
  b.Op(1);  // zero_grad
  b.Alloc(size, 10);
  b.Op(2 + size);  // forward: a saved activation
  b.Alloc(size / 2, 20 + cur);
  b.Op(3 + size);  // the output
  b.Alloc(8, 21 + cur);
  b.Op(4 + size);                // the loss
  if (i > 0) b.Free(21 + prev);  // `loss = ...` drops the old loss
  if (i > 0) b.Free(20 + prev);  // `out = ...` drops the old output
  b.Op(5 + size);                // backward
  b.Free(10);
  b.Op(6);  // optimizer
}

TEST(IterationTrackerTest, CarriedLossIsTheIteration) {
  StreamBuilder b;
  std::vector<size_t> starts;
  for (int i = 0; i < 6; ++i) {
    starts.push_back(b.events().size());
    PythonIteration(b, i);
  }
  const size_t len = b.events().size() - starts.back();
  IterationTracker t;
  const std::vector<StreamEvent>& ev = b.events();
  FeedLog log = FeedAll(t, ev);
  ASSERT_TRUE(log.ready_seq.has_value());
  const auto [first, end] = t.ReferenceWindow();
  EXPECT_EQ(end - first, len);
  EXPECT_FALSE(Balanced(ev, first, end));  // the strict rule alone could not have taken it
  // The output, the loss and, when W is a rotation starting in backward, the activation.
  EXPECT_GE(t.reference_carried(), 2u);
  EXPECT_EQ(t.reference_carried(), LiveAtEnd(ev, first, end));
  EXPECT_EQ(t.ReferenceWindow(), BruteForceDetect(ev));
  EXPECT_EQ(log.departed, 0);
  for (size_t i = end; i < ev.size(); ++i) {
    EXPECT_EQ(log.steps[i].position, static_cast<int64_t>((i - end) % len)) << i;
  }
  EXPECT_EQ(t.iterations_completed(), (ev.size() - end) / len);
}

// Bytes of the allocations live before event i, over the whole stream.
int64_t LiveBytesBefore(const std::vector<StreamEvent>& ev, size_t i) {
  absl::flat_hash_map<uint64_t, int64_t> live;
  for (size_t k = 0; k < i; ++k) {
    if (ev[k].kind == Kind::kAlloc) live[ev[k].allocation] = ev[k].bytes;
    if (ev[k].kind == Kind::kFree) live.erase(ev[k].allocation);
  }
  int64_t bytes = 0;
  for (const auto& [id, b] : live) bytes += b;
  return bytes;
}

// Note [Carried window phase]: with sizes known, the carried window found above is rotated to
// start where the least is live (around the optimizer step), not in the backward pass.
TEST(IterationTrackerTest, CarriedWindowStartsWhereTheLeastIsLive) {
  for (int profile_iterations : {2, 3}) {
    StreamBuilder b;
    b.sized = true;
    std::vector<size_t> starts;
    for (int i = 0; i < 8; ++i) {
      starts.push_back(b.events().size());
      PythonIteration(b, i);
    }
    const std::vector<StreamEvent>& ev = b.events();
    const size_t len = ev.size() - starts.back();
    // Without sizes the same stream is detected in the backward pass (the brute force's window).
    std::vector<StreamEvent> unsized = ev;
    for (StreamEvent& e : unsized) e.bytes = 0;
    const auto plain = BruteForceDetect(unsized);
    ASSERT_TRUE(plain.has_value());

    IterationTracker t({.profile_iterations = profile_iterations});
    FeedLog log = FeedAll(t, ev);
    ASSERT_TRUE(log.ready_seq.has_value());
    const auto [first, end] = t.ReferenceWindow();
    EXPECT_EQ(end - first, len);
    // The window ends before detection; the profile is ready at the end of the iteration
    // followed from there.
    EXPECT_GE(*log.ready_seq + 1, end);
    EXPECT_LE(*log.ready_seq + 1, end + len);
    EXPECT_EQ((*log.ready_seq + 1 - first) % len, 0u);
    // Strictly less is live than at the unrotated start (the activation is).
    EXPECT_LT(LiveBytesBefore(ev, first), LiveBytesBefore(ev, plain->first)) << first;
    // The least live of all rotations, independently of how the tracker computes it.
    for (size_t s = first; s < first + len; ++s) {
      EXPECT_LE(LiveBytesBefore(ev, first), LiveBytesBefore(ev, s)) << s;
    }
    EXPECT_EQ(t.reference_carried(), LiveAtEnd(ev, first, end));
    EXPECT_EQ(log.departed, 0);
    for (size_t i = *log.ready_seq + 1 - len; i < ev.size(); ++i) {
      if (log.steps[i].position < 0) continue;  // detected later than this
      EXPECT_EQ(log.steps[i].position, static_cast<int64_t>((i - first) % len)) << i;
      EXPECT_EQ(log.steps[i].iteration_start, (i - first) % len == 0) << i;
    }
    for (size_t i = *log.ready_seq + 1; i < ev.size(); ++i) {
      EXPECT_EQ(log.steps[i].position, static_cast<int64_t>((i - first) % len)) << i;
    }
    // Only iterations followed from their start count.
    EXPECT_EQ(t.iterations_completed(), (ev.size() - *log.ready_seq - 1) / len);
  }
}

// Note [Carried window phase]: a program whose iterations now and then run one more kernel
// (PyTorch's attention backward does) still gives two equal iterations in a row; the rotated
// window must not depend on the events after them repeating too.
TEST(IterationTrackerTest, CarriedWindowPhaseNeedsNoFurtherRepeat) {
  StreamBuilder b;
  b.sized = true;
  for (int i = 0; i < 10; ++i) PythonIteration(b, i);
  std::vector<StreamEvent> ev = b.events();
  IterationTracker probe;
  size_t n = 0;
  while (n < ev.size() && probe.profiles_made() == 0) probe.Feed(ev[n++]);
  ASSERT_GT(probe.profiles_made(), 0u);
  const size_t detected = n - 1;
  // The window is rotated: it ends before the event that found it.
  ASSERT_LT(probe.ReferenceWindow().second, detected + 1);
  // One odd kernel right after the detection: the reference stands, the kernel is passed over
  // (Note [Unmatched ops]).
  ev.insert(ev.begin() + static_cast<int64_t>(detected) + 1, StreamEvent{Kind::kOp, 99, 0});
  IterationTracker t;
  FeedLog log = FeedAll(t, ev);
  EXPECT_EQ(t.profiles_made(), 1u);
  EXPECT_EQ(t.ReferenceWindow(), probe.ReferenceWindow());
  EXPECT_EQ(log.steps[detected + 1].position, -1);
  EXPECT_EQ(log.departed, 0);
  EXPECT_EQ(t.unmatched_ops(), 1u);
  ASSERT_TRUE(log.ready_seq.has_value());
  const auto [first, end] = t.ReferenceWindow();
  const size_t len = end - first;
  for (size_t i = *log.ready_seq + 1; i < ev.size(); ++i) {
    EXPECT_EQ(log.steps[i].position, static_cast<int64_t>((i - 1 - first) % len)) << i;
  }
}

// Note [Unmatched ops]: up to MaxUnmatchedOps() extra ops an iteration are passed over (2 for
// this 12-event iteration); one more departs, and so does a missing op or an extra allocation.
TEST(IterationTrackerTest, UnmatchedOpsArePassedOverWithinABudget) {
  struct Case {
    const char* name;
    std::vector<StreamEvent> extra;  // inserted at the start of the 7th iteration's 4th event
    bool erase = false;              // instead: that event is erased (an op)
    bool departs;
    uint64_t unmatched;
  };
  const std::vector<Case> cases = {
      {"two ops", {{Kind::kOp, 97, 0}, {Kind::kOp, 98, 0}}, false, false, 2},
      {"three ops", {{Kind::kOp, 97, 0}, {Kind::kOp, 98, 0}, {Kind::kOp, 99, 0}}, false, true, 2},
      {"an allocation", {{Kind::kAlloc, 77, 5000}}, false, true, 0},
      // The op after the missing one is passed over, then the free after it departs.
      {"a missing op", {}, true, true, 1},
  };
  for (const Case& c : cases) {
    StreamBuilder b;
    std::vector<size_t> starts;
    for (int i = 0; i < 10; ++i) {
      starts.push_back(b.events().size());
      SmallIteration(b);
    }
    std::vector<StreamEvent> ev = b.events();
    const int64_t at = static_cast<int64_t>(starts[6]) + 4;
    ASSERT_EQ(ev[static_cast<size_t>(at)].kind, Kind::kOp);
    if (c.erase) {
      ev.erase(ev.begin() + at);
    } else {
      ev.insert(ev.begin() + at, c.extra.begin(), c.extra.end());
    }
    IterationTracker t;
    FeedLog log = FeedAll(t, ev);
    ASSERT_TRUE(log.ready_seq.has_value()) << c.name;
    ASSERT_LT(*log.ready_seq, starts[6]) << c.name;
    EXPECT_EQ(log.departed > 0, c.departs) << c.name;
    EXPECT_EQ(t.unmatched_ops(), c.unmatched) << c.name;
    if (!c.departs) {
      EXPECT_EQ(t.iterations_completed(), 10u - (*log.ready_seq + 1) / kSmallIterationEvents)
          << c.name;
    }
  }
}

TEST(IterationTrackerTest, TwoCarriedTensorsWithDifferentLifetimes) {
  // One tensor freed early in the next iteration (before its successor is made), one late
  // (after): both cross the boundary with the period.
  StreamBuilder b;
  for (int i = 0; i < 6; ++i) {
    b.Op(1);
    if (i > 0) b.Free(1000 + i - 1);  // early
    b.Alloc(64, 10);
    b.Op(2);
    b.Alloc(16, 2000 + i);  // late-freed
    b.Op(3);
    b.Free(10);
    if (i > 0) b.Free(2000 + i - 1);
    b.Alloc(32, 1000 + i);  // early-freed, made at the end
    b.Op(4);
  }
  IterationTracker t;
  const std::vector<StreamEvent>& ev = b.events();
  FeedLog log = FeedAll(t, ev);
  ASSERT_TRUE(log.ready_seq.has_value());
  const auto [first, end] = t.ReferenceWindow();
  EXPECT_EQ(end - first, 10u);  // 4 ops, 3 allocations, 3 frees
  EXPECT_GE(t.reference_carried(), 1u);
  EXPECT_EQ(t.reference_carried(), LiveAtEnd(ev, first, end));
  EXPECT_EQ(t.ReferenceWindow(), BruteForceDetect(ev));
  EXPECT_EQ(log.departed, 0);
  EXPECT_GE(t.iterations_completed(), 2u);
}

// ResNet's forward blocks keep their maps (rule (b)) and its backward blocks free maps of the
// forward pass (rule (a)): with a carried loss as well, the period is still the whole
// iteration. In backward each block also frees the gradient the previous block made (a chain
// carried from block to block), which alone would repeat with the block.
void ResNetCarriedIteration(StreamBuilder& b, int blocks, int i) {
  b.Op(1);
  for (int k = 0; k < blocks; ++k) {
    b.Alloc(64, 3 * k);
    b.Op(10);
    b.Alloc(64, 3 * k + 1);
    b.Op(11);
  }
  b.Alloc(8, 5000 + i);
  b.Op(20);  // loss
  if (i > 0) b.Free(5000 + i - 1);
  b.Alloc(64, 9000 + blocks);
  for (int k = blocks - 1; k >= 0; --k) {
    b.Alloc(64, 9000 + k);  // this block's input gradient
    b.Op(30);
    b.Free(9000 + k + 1);  // the output gradient, made by the block before
    b.Free(3 * k + 1);
    b.Op(31);
    b.Free(3 * k);
  }
  b.Free(9000);
  b.Op(40);
}

TEST(IterationTrackerTest, ResNetBlocksAreNotTheCarriedPeriod) {
  constexpr int kBlocks = 6;
  StreamBuilder b;
  std::vector<size_t> starts;
  for (int i = 0; i < 5; ++i) {
    starts.push_back(b.events().size());
    ResNetCarriedIteration(b, kBlocks, i);
  }
  const size_t len = b.events().size() - starts.back();
  IterationTracker t;
  FeedLog log = FeedAll(t, b.events());
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(t.Reference().size(), len);
  EXPECT_GE(t.reference_carried(), 1u);
  EXPECT_EQ(t.reference_carried(),
            LiveAtEnd(b.events(), t.ReferenceWindow().first, t.ReferenceWindow().second));
  EXPECT_EQ(t.ReferenceWindow(), BruteForceDetect(b.events()));
  EXPECT_EQ(log.departed, 0);
}

TEST(IterationTrackerTest, BackwardChainWithoutForwardFreesIsACarriedRepeat) {
  // The known limit (Note [Period detection]): a backward pass that frees only the gradient of
  // the block before (its forward maps stay, e.g. kept by the program) repeats with the block.
  // The tracker takes the block, and following departs when the pass ends.
  StreamBuilder b;
  b.Alloc(64, 9000 + 20);
  for (int k = 19; k >= 0; --k) {
    b.Alloc(64, 9000 + k);
    b.Op(30);
    b.Free(9000 + k + 1);
    b.Op(31);
  }
  b.Free(9000);
  b.Op(40);
  b.Op(41);
  IterationTracker t;
  FeedLog log = FeedAll(t, b.events());
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(t.Reference().size(), 4u);
  EXPECT_EQ(log.departed, 1);
}

TEST(IterationTrackerTest, CarriedLifetimesMustRepeatNotOnlyEvents) {
  // Blocks of the same four events whose lifetimes alternate: even blocks carry their first
  // allocation into the next block, odd blocks their second. One block is a tandem repeat that
  // allocates as much as it frees and frees nothing older than the block before, but its carry
  // is not periodic (rule b); two blocks are the period.
  StreamBuilder b;
  b.Alloc(5, 999);
  int carried = 999;
  for (int i = 0; i < 12; ++i) {
    const int x = 2 * i;
    const int y = 2 * i + 1;
    b.Alloc(5, x);
    b.Alloc(5, y);
    b.Free(carried);
    b.Free(i % 2 == 0 ? y : x);
    carried = i % 2 == 0 ? x : y;
  }
  IterationTracker t;
  FeedLog log = FeedAll(t, b.events());
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(t.Reference().size(), 8u) << t.ReferenceWindow().first;
  EXPECT_EQ(t.ReferenceWindow(), BruteForceDetect(b.events()));
  EXPECT_EQ(log.departed, 0);
}

TEST(IterationTrackerTest, CarriedReferenceDepartsAndResynchronises) {
  // Every fifth iteration runs a smaller batch: it departs, and so would the one after it, which
  // frees the small batch's output; following resumes on an event equal to Reference()[0]
  // although allocations of the departed iteration (output, loss) are still live there.
  StreamBuilder b;
  std::vector<size_t> starts;
  constexpr int kIters = 17;  // ends two iterations after a small one
  auto small = [](int i) { return i % 5 == 4; };
  for (int i = 0; i < kIters; ++i) {
    starts.push_back(b.events().size());
    PythonIteration(b, i, small(i) ? 50 : 100);
  }
  starts.push_back(b.events().size());
  const size_t len = starts[2] - starts[1];  // every iteration but the first has this length
  IterationTracker t;
  const std::vector<StreamEvent>& ev = b.events();
  FeedLog log = FeedAll(t, ev);
  ASSERT_TRUE(log.ready_seq.has_value());
  const auto [first, end] = t.ReferenceWindow();
  ASSERT_EQ(end - first, len);
  // Found on iterations 2 and 3, perhaps rotated: iteration 1 frees the first iteration's
  // tensors, which were made at other distances back (the first iteration is shorter).
  ASSERT_LE(end, starts[4]);
  EXPECT_GT(t.reference_carried(), 0u);
  uint64_t small_after = 0;
  for (int i = 4; i < kIters; ++i) {
    if (small(i)) {
      ++small_after;
      continue;
    }
    if (small(i - 1)) continue;  // frees the small batch's tensors: departs or re-synchronises
    // Two iterations after a small one: followed again, at the positions of the period.
    for (size_t k = starts[i]; k < starts[i + 1]; ++k) {
      EXPECT_EQ(log.steps[k].position, static_cast<int64_t>((k - first) % len)) << i << " " << k;
    }
  }
  // One departure per small iteration: the iteration after it departed with it or re-synced.
  EXPECT_EQ(t.departures(), small_after);
  EXPECT_EQ(t.mode(), IterationTracker::Mode::kFollowing);
}

TEST(IterationTrackerTest, SyncMarkers) {
  StreamBuilder b;
  IterationTracker t({.marker = IterationMarker::kSync, .profile_iterations = 2});
  auto feed_iteration = [&](uint64_t size) {
    const size_t from = b.events().size();
    SmallIteration(b, size);
    return FeedAll(t, b.events(), from);
  };
  // Set-up before the first boundary is not an iteration.
  b.Alloc(5000, 90);
  b.Op(77);
  FeedAll(t, b.events());
  EXPECT_FALSE(t.MarkBoundary().profile_ready);
  EXPECT_FALSE(t.MarkBoundary().profile_ready);  // empty iteration: ignored
  feed_iteration(300);
  EXPECT_FALSE(t.MarkBoundary().profile_ready);
  const uint64_t second = b.events().size();
  feed_iteration(100);
  IterationTracker::BoundaryResult r = t.MarkBoundary();
  EXPECT_TRUE(r.profile_ready);
  EXPECT_EQ(t.ReferenceWindow(), std::make_pair(second, second + kSmallIterationEvents));
  EXPECT_EQ(t.Reference()[1].signature, 100u);  // the last iteration, not the first
  EXPECT_EQ(t.mode(), IterationTracker::Mode::kFollowing);

  FeedLog log = feed_iteration(100);
  EXPECT_TRUE(log.steps[0].iteration_start);
  EXPECT_EQ(log.steps.back().position, kSmallIterationEvents - 1);
  r = t.MarkBoundary();
  EXPECT_TRUE(r.completed);
  EXPECT_FALSE(r.departed);

  // A boundary too early departs at the boundary.
  b.Op(1);
  FeedAll(t, b.events(), b.events().size() - 1);
  r = t.MarkBoundary();
  EXPECT_TRUE(r.departed);
  EXPECT_FALSE(r.completed);

  // A mismatching event departs on the event; the next boundary starts afresh.
  log = feed_iteration(50);
  EXPECT_EQ(log.departed, 1);
  EXPECT_TRUE(log.steps[1].departed);
  EXPECT_EQ(t.mode(), IterationTracker::Mode::kDeparted);
  r = t.MarkBoundary();
  EXPECT_FALSE(r.departed);  // already reported on the event
  EXPECT_FALSE(r.completed);

  // An iteration longer than the reference departs on its extra event.
  log = feed_iteration(100);
  EXPECT_EQ(log.departed, 0);
  b.Op(1);
  log = FeedAll(t, b.events(), b.events().size() - 1);
  EXPECT_EQ(log.departed, 1);
  t.MarkBoundary();

  log = feed_iteration(100);
  EXPECT_EQ(log.departed, 0);
  EXPECT_TRUE(t.MarkBoundary().completed);
  EXPECT_EQ(t.iterations_completed(), 2u);
  EXPECT_EQ(t.departures(), 3u);
}

TEST(IterationTrackerTest, AutoModeIgnoresMarkBoundary) {
  StreamBuilder b;
  for (int i = 0; i < 3; ++i) SmallIteration(b);
  IterationTracker t;
  for (const StreamEvent& e : b.events()) {
    t.Feed(e);
    IterationTracker::BoundaryResult r = t.MarkBoundary();
    EXPECT_FALSE(r.profile_ready || r.completed || r.departed);
  }
  EXPECT_EQ(t.iterations_completed(), 1u);
}

TEST(IterationTrackerTest, ReprofileFindsTheNewIteration) {
  StreamBuilder b;
  for (int i = 0; i < 3; ++i) SmallIteration(b);
  IterationTracker t;
  FeedAll(t, b.events());
  ASSERT_EQ(t.mode(), IterationTracker::Mode::kFollowing);
  t.Reprofile();
  EXPECT_EQ(t.mode(), IterationTracker::Mode::kProfiling);
  EXPECT_TRUE(t.Reference().empty());
  const size_t from = b.events().size();
  for (int i = 0; i < 3; ++i) ResNetLikeIteration(b, 3);
  const size_t len = (b.events().size() - from) / 3;
  FeedLog log = FeedAll(t, b.events(), from);
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(*log.ready_seq, from + 2 * len - 1);
  EXPECT_EQ(t.ReferenceWindow(), std::make_pair(uint64_t{from + len}, uint64_t{from + 2 * len}));
  EXPECT_EQ(t.profiles_made(), 2u);
  EXPECT_EQ(t.iterations_completed(), 1u + 1u);
}

// RecordNextIteration moves the reference's window to the next iteration followed to its end;
// one that departs on the way is not taken, and the reference's events stay what they were.
TEST(IterationTrackerTest, RecordNextIterationTakesTheNextFullIteration) {
  StreamBuilder b;
  for (int i = 0; i < 2; ++i) SmallIteration(b);
  IterationTracker t;
  ASSERT_TRUE(FeedAll(t, b.events()).ready_seq.has_value());
  const std::vector<StreamEvent> reference = t.Reference();
  t.RecordNextIteration();
  EXPECT_TRUE(t.recording_next());
  size_t from = b.events().size();
  SmallIteration(b, 50);  // departs on its second event
  FeedLog log = FeedAll(t, b.events(), from);
  EXPECT_EQ(log.departed, 1);
  EXPECT_FALSE(log.ready_seq.has_value());
  EXPECT_TRUE(t.recording_next());
  // An op the reference lacks, in the iteration being recorded, is passed over (Note [Unmatched
  // ops]) without a departure, and listed: without it the window is the reference's.
  from = b.events().size();
  SmallIteration(b);
  b.events().insert(b.events().begin() + static_cast<int64_t>(from) + 2,
                    StreamEvent{Kind::kOp, 77, 0});
  log = FeedAll(t, b.events(), from);
  EXPECT_EQ(log.departed, 0);
  EXPECT_EQ(t.unmatched_ops(), 1u);
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(*log.ready_seq, from + kSmallIterationEvents);
  EXPECT_EQ(t.ReferenceWindow(), std::make_pair(uint64_t{from}, uint64_t{from + 11}));
  EXPECT_THAT(t.ReferenceSkips(), ::testing::ElementsAre(uint64_t{from + 2}));
  EXPECT_FALSE(t.recording_next());
  ASSERT_EQ(t.Reference().size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    EXPECT_TRUE(SameEvent(t.Reference()[i], reference[i]));
  }
  EXPECT_EQ(t.profiles_made(), 1u);  // measured again, not detected again
  // Once taken, later iterations are followed without another profile_ready.
  from = b.events().size();
  SmallIteration(b);
  log = FeedAll(t, b.events(), from);
  EXPECT_FALSE(log.ready_seq.has_value());
  EXPECT_EQ(t.iterations_completed(), 2u);
}

TEST(IterationTrackerTest, RecordNextIterationWithSyncMarkers) {
  StreamBuilder b;
  IterationTracker t({.marker = IterationMarker::kSync, .profile_iterations = 1});
  auto feed_iteration = [&](uint64_t size) {
    const size_t from = b.events().size();
    SmallIteration(b, size);
    FeedAll(t, b.events(), from);
    return from;
  };
  t.MarkBoundary();
  feed_iteration(100);
  ASSERT_TRUE(t.MarkBoundary().profile_ready);
  t.RecordNextIteration();
  feed_iteration(100);
  b.Op(1);  // one event too many: departs
  FeedAll(t, b.events(), b.events().size() - 1);
  IterationTracker::BoundaryResult r = t.MarkBoundary();
  EXPECT_FALSE(r.profile_ready);
  EXPECT_TRUE(t.recording_next());
  const uint64_t from = feed_iteration(100);
  r = t.MarkBoundary();
  EXPECT_TRUE(r.completed);
  EXPECT_TRUE(r.profile_ready);
  EXPECT_EQ(t.ReferenceWindow(), std::make_pair(from, from + kSmallIterationEvents));
  EXPECT_FALSE(t.recording_next());
}

TEST(IterationTrackerTest, RecordNextIterationIsANoOpWhileProfiling) {
  IterationTracker t;
  t.RecordNextIteration();
  EXPECT_FALSE(t.recording_next());
}

TEST(IterationTrackerTest, MemoryStaysBoundedWithoutAPeriod) {
  constexpr size_t kMax = 1000;
  IterationTracker t({.marker = IterationMarker::kAuto, .max_detect_events = kMax});
  std::mt19937_64 rng(7);
  StreamBuilder b;
  for (int i = 0; i < 10000; ++i) {
    b.Alloc(rng(), 0);
    b.Op(rng());
    b.Free(0);
  }
  FeedLog log = FeedAll(t, b.events());
  EXPECT_FALSE(log.ready_seq.has_value());
  EXPECT_LE(t.detect_events_held(), kMax);
  EXPECT_EQ(t.mode(), IterationTracker::Mode::kProfiling);
  // The search goes on in the sliding window.
  const size_t from = b.events().size();
  for (int i = 0; i < 3; ++i) SmallIteration(b);
  log = FeedAll(t, b.events(), from);
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(*log.ready_seq, from + 2 * kSmallIterationEvents - 1);
  EXPECT_EQ(t.detect_events_held(), 0u);  // freed once following
}

TEST(IterationTrackerTest, ExplicitMarkersBoundAnIterationWithoutBoundaries) {
  IterationTracker t({.marker = IterationMarker::kSync, .max_detect_events = 100});
  StreamBuilder b;
  t.MarkBoundary();
  for (int i = 0; i < 20; ++i) SmallIteration(b);  // 200 events: more than the bound
  FeedAll(t, b.events());
  EXPECT_FALSE(t.MarkBoundary().profile_ready);  // dropped, not an iteration
  const size_t from = b.events().size();
  SmallIteration(b);
  FeedAll(t, b.events(), from);
  EXPECT_FALSE(t.MarkBoundary().profile_ready);
  const size_t from2 = b.events().size();
  SmallIteration(b);
  FeedAll(t, b.events(), from2);
  EXPECT_TRUE(t.MarkBoundary().profile_ready);
  EXPECT_EQ(t.Reference().size(), size_t{kSmallIterationEvents});
}

TEST(IterationTrackerTest, RandomStreamsAgreeWithBruteForce) {
  for (int seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    StreamBuilder b;
    const int warm = static_cast<int>(rng() % 12);
    for (int i = 0; i < warm; ++i) {
      switch (rng() % 4) {
        case 0:
          b.Alloc(1 + rng() % 3, 1000 + i);
          break;  // never freed
        case 1:
          b.FreeUnknown(1 + rng() % 3);
          break;
        default:
          b.Op(1 + rng() % 3);
          break;
      }
    }
    const int reps = 2 + static_cast<int>(rng() % 3);
    const int length = 1 + static_cast<int>(rng() % 12);
    const uint64_t body_seed = rng();
    for (int r = 0; r < reps; ++r) {
      std::mt19937_64 body_rng(body_seed);
      RandomBody(b, body_rng, length, 3);
    }
    const auto want = BruteForceDetect(b.events());
    IterationTracker t;
    FeedLog log = FeedAll(t, b.events());
    ASSERT_EQ(log.ready_seq.has_value(), want.has_value()) << "seed " << seed;
    if (want) {
      EXPECT_EQ(*log.ready_seq, want->second - 1) << "seed " << seed;
      EXPECT_EQ(t.ReferenceWindow(), *want) << "seed " << seed;
    }
  }
}

TEST(IterationTrackerTest, RandomCarriedStreamsAgreeWithBruteForce) {
  int detected = 0;
  int carried_references = 0;
  for (int seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed * 31);
    StreamBuilder b;
    const int warm = static_cast<int>(rng() % 6);
    for (int i = 0; i < warm; ++i) {
      if (rng() % 2 == 0) {
        b.FreeUnknown(1 + rng() % 3);
      } else {
        b.Op(1 + rng() % 3);
      }
    }
    const int reps = 2 + static_cast<int>(rng() % 3);
    const int length = 1 + static_cast<int>(rng() % 10);
    const int carried = 1 + static_cast<int>(rng() % 3);
    const uint64_t body_seed = rng();
    for (int r = 0; r < reps; ++r) {
      std::mt19937_64 body_rng(body_seed);
      RandomCarriedBody(b, body_rng, length, 3, carried, r);
    }
    const auto want = BruteForceDetect(b.events());
    IterationTracker t;
    FeedLog log = FeedAll(t, b.events());
    ASSERT_EQ(log.ready_seq.has_value(), want.has_value()) << "seed " << seed;
    if (want) {
      ++detected;
      EXPECT_EQ(*log.ready_seq, want->second - 1) << "seed " << seed;
      EXPECT_EQ(t.ReferenceWindow(), *want) << "seed " << seed;
      carried_references += t.reference_carried() > 0;
    }
  }
  // The streams exercise the carried rule, not only the balanced one.
  EXPECT_GT(carried_references, 0);
  std::printf("iteration_tracker: %d of 300 carried streams detected, %d with a carry-over\n",
              detected, carried_references);
}

TEST(IterationTrackerTest, RandomIterationsAreFollowedWithoutDeparture) {
  for (int seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    StreamBuilder b;
    // Warm-up: signatures of its own (random), persistent and unknown allocations.
    const int warm = static_cast<int>(rng() % 40);
    for (int i = 0; i < warm; ++i) {
      switch (rng() % 3) {
        case 0:
          b.Alloc(rng() | (uint64_t{1} << 63), 5000 + i);
          break;
        case 1:
          b.FreeUnknown(rng() | (uint64_t{1} << 63));
          break;
        default:
          b.Op(rng() | (uint64_t{1} << 63));
          break;
      }
    }
    const size_t prefix = b.events().size();
    // A body with signatures distinct per position: no repeat shorter than the iteration.
    const int length = 2 + static_cast<int>(rng() % 60);
    const uint64_t body_seed = rng();
    const int reps = 3 + static_cast<int>(rng() % 4);
    for (int r = 0; r < reps; ++r) {
      std::mt19937_64 body_rng(body_seed);
      RandomBody(b, body_rng, length, 1 << 30);
    }
    const size_t body_len = (b.events().size() - prefix) / reps;
    const int profile_iterations = 2 + static_cast<int>(rng() % 2);
    IterationTracker t(
        {.marker = IterationMarker::kAuto, .profile_iterations = profile_iterations});
    const std::vector<StreamEvent>& ev = b.events();
    FeedLog log = FeedAll(t, ev);
    ASSERT_TRUE(log.ready_seq.has_value()) << "seed " << seed;
    const auto [first, end] = t.ReferenceWindow();
    ASSERT_EQ(end - first, body_len) << "seed " << seed;
    EXPECT_EQ(*log.ready_seq, end - 1);
    EXPECT_GE(first, prefix);
    EXPECT_TRUE(Balanced(ev, first, end)) << "seed " << seed;
    for (size_t i = 0; i < body_len; ++i) {
      // A rotation of the body: the same event one iteration later or earlier.
      EXPECT_TRUE(SameEvent(t.Reference()[i], ev[prefix + (first - prefix + i) % body_len]));
    }
    EXPECT_EQ(log.departed, 0) << "seed " << seed;
    for (size_t i = end; i < ev.size(); ++i) {
      EXPECT_EQ(log.steps[i].position, static_cast<int64_t>((i - end) % body_len));
    }
    EXPECT_EQ(t.iterations_completed(), (ev.size() - end) / body_len);
  }
}

// Not a timed test: prints how long detection takes on three ResNet-sized iterations.
TEST(IterationTrackerTest, LargeIterationsPrintDetectionTime) {
  StreamBuilder b;
  constexpr int kBlocks = 1600;  // ~9,600 events an iteration
  for (int i = 0; i < 3; ++i) ResNetLikeIteration(b, kBlocks);
  const size_t len = b.events().size() / 3;
  IterationTracker t;
  const auto start = std::chrono::steady_clock::now();
  FeedLog log = FeedAll(t, b.events());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("iteration_tracker: %zu events (3 iterations of %zu) fed in %.1f ms\n",
              b.events().size(), len, ms);
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(t.Reference().size(), len);
  EXPECT_EQ(log.departed, 0);

  // The worst case the candidate cap is for: one op and one allocation signature repeated
  // (the allocations freed right away with frees that never repeat), so that every earlier op
  // and allocation is a candidate and no balanced or carried window repeats.
  std::mt19937_64 rng(3);
  StreamBuilder adversarial;
  while (adversarial.events().size() < 30000) {
    adversarial.Alloc(5, 0);
    adversarial.events().push_back({Kind::kFree, rng(), adversarial.events().back().allocation});
    for (int k = static_cast<int>(rng() % 100); k >= 0; --k) adversarial.Op(7);
  }
  IterationTracker t2;
  const auto start2 = std::chrono::steady_clock::now();
  log = FeedAll(t2, adversarial.events());
  const double ms2 =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start2).count();
  std::printf(
      "iteration_tracker: adversarial %zu events fed in %.1f ms (%.2f us/event), %.1f candidates "
      "an event\n",
      adversarial.events().size(), ms2, 1000 * ms2 / adversarial.events().size(),
      static_cast<double>(t2.detect_work()) / adversarial.events().size());
  EXPECT_FALSE(log.ready_seq.has_value());
  // Both searches run on every event here (no balanced window, nor a carried one: the frees never
  // repeat), each under the cap (Note [Carried lifetimes]).
  EXPECT_LE(t2.detect_work(), 2 * IterationTracker::kMaxCandidatesPerEvent *
                                  static_cast<uint64_t>(adversarial.events().size()));
  EXPECT_GT(t2.detect_work(), 0u);
}

// Note [Switching references], Note [Departed references]: with sync markers, an iteration of a
// new shape becomes the reference at its end; one of a shape kept as an alternate switches to
// it where it departs, with consecutive positions and no departure.
TEST(IterationTrackerTest, DepartedIterationsBecomeReferencesAndAlternatesAreSwitchedTo) {
  StreamBuilder b;
  IterationTracker t({.marker = IterationMarker::kSync, .profile_iterations = 1});
  auto feed_iteration = [&](uint64_t size) {
    const size_t from = b.events().size();
    SmallIteration(b, size);
    return FeedAll(t, b.events(), from);
  };
  t.MarkBoundary();
  feed_iteration(100);
  ASSERT_TRUE(t.MarkBoundary().profile_ready);
  t.KeepReferenceAs(1);

  // Without SetTakeDeparted a departed iteration is not taken.
  FeedLog log = feed_iteration(200);
  EXPECT_EQ(log.departed, 1);
  EXPECT_FALSE(t.keeping_iteration());
  IterationTracker::BoundaryResult r = t.MarkBoundary();
  EXPECT_FALSE(r.profile_ready);
  EXPECT_EQ(t.Reference()[1].signature, 100u);

  t.SetTakeDeparted(true);
  EXPECT_TRUE(t.keeping_iteration());
  const uint64_t from = b.events().size();
  log = feed_iteration(200);
  EXPECT_EQ(log.departed, 1);
  EXPECT_TRUE(log.steps[1].departed);  // the allocation of another size
  r = t.MarkBoundary();
  EXPECT_TRUE(r.profile_ready);
  EXPECT_TRUE(r.from_departure);
  EXPECT_EQ(t.ReferenceWindow(), std::make_pair(from, from + kSmallIterationEvents));
  ASSERT_EQ(t.Reference().size(), size_t{kSmallIterationEvents});
  for (int i = 0; i < kSmallIterationEvents; ++i) {
    EXPECT_TRUE(SameEvent(t.Reference()[i], b.events()[from + i])) << i;
  }
  t.KeepReferenceAs(2);
  EXPECT_EQ(t.alternates(), 2u);

  // Back to the first shape: it switches at the allocation, the first event that differs.
  const uint64_t departures = t.departures();
  log = feed_iteration(100);
  EXPECT_EQ(log.departed, 0);
  for (int i = 0; i < kSmallIterationEvents; ++i) {
    EXPECT_EQ(log.steps[i].position, i);
    EXPECT_EQ(log.steps[i].switched, i == 1) << i;
  }
  EXPECT_EQ(log.steps[1].switched_to, 1u);
  r = t.MarkBoundary();
  EXPECT_TRUE(r.completed);
  EXPECT_FALSE(r.profile_ready);
  EXPECT_EQ(t.Reference()[1].signature, 100u);
  log = feed_iteration(200);
  EXPECT_EQ(log.steps[1].switched_to, 2u);
  EXPECT_TRUE(t.MarkBoundary().completed);
  EXPECT_EQ(t.departures(), departures);
  EXPECT_EQ(t.switches(), 2u);

  // A shape seen for the first time departs and becomes the reference; a forgotten alternate is
  // not switched to.
  t.ForgetAlternate(1);
  log = feed_iteration(100);
  EXPECT_EQ(log.departed, 1);
  r = t.MarkBoundary();
  EXPECT_TRUE(r.from_departure);
  EXPECT_EQ(t.Reference()[1].signature, 100u);
  EXPECT_EQ(t.switches(), 2u);
}

// An alternate that holds the departing event but not the events matched before it is no
// reference for this iteration: it departs.
TEST(IterationTrackerTest, AnAlternateMustMatchTheWholePrefix) {
  IterationTracker t({.marker = IterationMarker::kSync, .profile_iterations = 1});
  auto feed_ops = [&](std::vector<uint64_t> ops) {
    std::vector<IterationTracker::Step> steps;
    for (uint64_t op : ops) steps.push_back(t.Feed({Kind::kOp, op, 0}));
    return steps;
  };
  t.MarkBoundary();
  feed_ops({1, 6, 8});
  ASSERT_TRUE(t.MarkBoundary().profile_ready);
  t.KeepReferenceAs(1);
  t.SetTakeDeparted(true);
  feed_ops({1, 5, 7});  // departs at 5 (no alternate has 1, 5) and becomes the reference
  ASSERT_TRUE(t.MarkBoundary().from_departure);
  t.KeepReferenceAs(2);
  std::vector<IterationTracker::Step> steps = feed_ops({1, 5, 8});  // 8 is 1's, after 6
  EXPECT_FALSE(steps[2].switched);
  EXPECT_TRUE(steps[2].departed);
  EXPECT_EQ(t.switches(), 0u);
  IterationTracker::BoundaryResult r = t.MarkBoundary();
  ASSERT_TRUE(r.from_departure);  // {1, 5, 8}
  t.KeepReferenceAs(3);
  // Switched to 2 at 7, it departs at 9, past 2's end, and becomes a reference of its own.
  steps = feed_ops({1, 5, 7, 9});
  EXPECT_EQ(steps[2].switched_to, 2u);
  EXPECT_TRUE(steps[3].departed);
  ASSERT_TRUE(t.MarkBoundary().from_departure);
  t.KeepReferenceAs(4);
  steps = feed_ops({1, 5, 8});
  EXPECT_EQ(steps[2].switched_to, 3u);
  EXPECT_TRUE(t.MarkBoundary().completed);
  // 2 and 4 both fit at 7: the more recently kept or used one, 4, is taken, and fits to the end.
  steps = feed_ops({1, 5, 7, 9});
  EXPECT_EQ(steps[2].switched_to, 4u);
  EXPECT_EQ(steps[3].position, 3);
  EXPECT_TRUE(t.MarkBoundary().completed);
  EXPECT_EQ(t.switches(), 3u);
}

// The automatic marker switches too (no departed references: a departed iteration has no
// known end there).
TEST(IterationTrackerTest, TheAutoMarkerSwitchesToAnAlternate) {
  StreamBuilder b;
  for (int i = 0; i < 3; ++i) SmallIteration(b, 100);
  IterationTracker t;
  FeedLog log = FeedAll(t, b.events());
  ASSERT_TRUE(log.ready_seq.has_value());
  t.KeepReferenceAs(1);
  t.Reprofile();
  size_t from = b.events().size();
  for (int i = 0; i < 3; ++i) SmallIteration(b, 200);
  log = FeedAll(t, b.events(), from);
  ASSERT_TRUE(log.ready_seq.has_value());
  EXPECT_EQ(t.Reference()[1].signature, 200u);
  t.KeepReferenceAs(2);
  t.SetTakeDeparted(true);  // no effect with the auto marker
  from = b.events().size();
  SmallIteration(b, 100);
  SmallIteration(b, 200);
  log = FeedAll(t, b.events(), from);
  EXPECT_EQ(log.departed, 0);
  for (int i = 0; i < 2 * kSmallIterationEvents; ++i) {
    EXPECT_EQ(log.steps[i].position, i % kSmallIterationEvents) << i;
  }
  EXPECT_EQ(log.steps[1].switched_to, 1u);
  EXPECT_EQ(log.steps[kSmallIterationEvents + 1].switched_to, 2u);
  EXPECT_EQ(t.switches(), 2u);
  from = b.events().size();
  SmallIteration(b, 300);
  log = FeedAll(t, b.events(), from);
  EXPECT_EQ(log.departed, 1);
  EXPECT_EQ(t.Reference()[1].signature, 200u);  // not taken
}

}  // namespace
}  // namespace pooch
