#include "core/model/candidates.h"

#include <algorithm>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model/model_json.h"
#include "core/model/profile_testutil.h"
#include "core/sim/sim.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {

// gtest prints a Candidate by its fields (ADL finds it here, in Candidate's namespace).
static void PrintTo(const Candidate& c, std::ostream* os) {
  *os << "{tensor " << c.tensor << ", open " << c.open << ", close " << c.close
      << (c.wraps ? ", wraps" : "") << (c.tail ? ", tail" : "") << ", producer " << c.producer
      << (c.recomputable ? ", recomputable" : "") << (c.recompute_only ? ", recompute only" : "")
      << "}";
}

namespace {

// The intervals that matter on a machine of `capacity` bytes whose copies take no time: the
// capacity rule alone (Note [Intervals that matter]); capacity <= 0 keeps every interval.
std::vector<Candidate> Matter(const Profile& p, int64_t capacity, int64_t min_bytes = 0) {
  MachineModel m;
  m.name = "free-copies";
  m.memory_bytes = std::max<int64_t>(capacity, 0);
  return FindCandidates(p, &m, min_bytes);
}

using ::pooch::testing::ProfileBuilder;
using ::pooch::testing::RandomProfile;
using ::pooch::testing::TestMachine;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

Candidate Plain(TensorId tensor, OpIndex open, OpIndex close, OpIndex producer = -1,
                bool recomputable = false) {
  return {.tensor = tensor,
          .open = open,
          .close = close,
          .wraps = false,
          .producer = producer,
          .recomputable = recomputable};
}
Candidate Wrap(TensorId tensor, OpIndex open, OpIndex close) {
  return {.tensor = tensor, .open = open, .close = close, .wraps = true};
}
Candidate Tail(TensorId tensor, OpIndex open, OpIndex close) {
  return {.tensor = tensor, .open = open, .close = close, .tail = true};
}

// Seven ops; x (100 B) is used at ops 0, 1, 3 and 6, the persistent w (10 B) at 0 and 3, b
// (1000 B) at 4 and 5 only; op 2 holds a 500 B workspace. In-core bytes per op:
//   op     0    1    2    3    4     5     6
//   bytes  110  110  610  110  1110  1110  110
struct Small {
  Profile profile;
  TensorId x, w, b;
};

Small MakeSmall() {
  ProfileBuilder pb("small");
  Small s;
  s.x = pb.Tensor("x", 100);
  s.w = pb.Tensor("w", 10, /*persistent=*/true);
  s.b = pb.Tensor("b", 1000);
  pb.Op("produce", OpKind::kConv, Phase::kForward, 1, {s.w}, {s.x});                // 0
  pb.Op("use1", OpKind::kActivation, Phase::kForward, 1, {s.x}, {});                // 1
  pb.Op("scratch", OpKind::kOther, Phase::kForward, 1, {}, {}, /*workspace=*/500);  // 2
  pb.Op("use3", OpKind::kConv, Phase::kForward, 1, {s.x, s.w}, {});                 // 3
  pb.Op("make_b", OpKind::kOther, Phase::kForward, 1, {}, {s.b});                   // 4
  pb.Op("read_b", OpKind::kOther, Phase::kBackward, 1, {s.b}, {});                  // 5
  pb.Op("use6", OpKind::kConv, Phase::kBackward, 1, {s.x}, {});                     // 6
  s.profile = pb.Finish();
  return s;
}

TEST(CandidatesTest, IntervalsBetweenConsecutiveUses) {
  const Small s = MakeSmall();
  ASSERT_TRUE(s.profile.Validate().ok()) << s.profile.Validate();
  // x: (0, 1) are adjacent uses, no interval; (1, 3) and (3, 6) are. Nothing before its first
  // use (its write) or after its last. w: (0, 3), plus the wrap from its last use (3) to its
  // first use in the next iteration (0). b: adjacent uses only. Its producer (op 0) rebuilds x:
  // w, its only input, is never written.
  EXPECT_THAT(FindCandidates(s.profile), ElementsAre(Plain(s.w, 0, 3), Plain(s.x, 1, 3, 0, true),
                                                     Plain(s.x, 3, 6, 0, true), Wrap(s.w, 3, 0)));
}

// Note [Tails]: x is read last at op 1; held by the program through op 3, it has a tail from
// op 1 to its free after op 3, when memory is short in it. In-core bytes per op with the tail:
// 100, 100, 1100, 1100.
TEST(CandidatesTest, ATensorHeldAfterItsLastUseHasATail) {
  ProfileBuilder pb("tail");
  const TensorId x = pb.Tensor("x", 100);
  const TensorId y = pb.Tensor("y", 1000);
  pb.Op("make_x", OpKind::kOther, Phase::kForward, 1, {}, {x});  // 0
  pb.Op("read_x", OpKind::kOther, Phase::kForward, 1, {x}, {});  // 1
  pb.Op("make_y", OpKind::kOther, Phase::kForward, 1, {}, {y});  // 2
  pb.Op("read_y", OpKind::kOther, Phase::kForward, 1, {y}, {});  // 3
  Profile p = pb.Finish();
  EXPECT_THAT(FindCandidates(p), IsEmpty());  // freed at its last use: no tail
  p.tensors[x].free_after = 3;
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  EXPECT_THAT(FindCandidates(p), ElementsAre(Tail(x, 1, 3)));
  EXPECT_THAT(FindCandidates(p, nullptr, /*min_bytes=*/101), IsEmpty());
  // On a machine, tails come with the short intervals (Note [Short intervals]), when memory is
  // short in them: ops 2 and 3 exceed 1000, no op exceeds 1100.
  for (int64_t capacity : {1000, 1100}) {
    const MachineModel m = TestMachine(capacity);
    EXPECT_THAT(FindCandidates(p, &m, 0), IsEmpty());
    EXPECT_EQ(FindCandidates(p, &m, 0, /*long_only=*/false),
              capacity == 1000 ? std::vector<Candidate>{Tail(x, 1, 3)} : std::vector<Candidate>{})
        << capacity;
  }
}

// Note [Intervals that matter]: an interval is long enough to hide x's copy out and back (1 MiB:
// 2 x 66.5 us on the test machine) by the ops inside it. Op 1 is a read-back whose measured
// duration holds its wait behind swaps; the simulator gives it its 4 bytes' time (Note [Program
// copies] in core/sim/sim.cc), and so does this.
TEST(CandidatesTest, AProgramCopyLastsItsBytesTime) {
  ProfileBuilder pb("read-back");
  const TensorId x = pb.Tensor("x", 1 << 20);
  const TensorId y = pb.Tensor("y", 1 << 20);
  pb.Op("make_x", OpKind::kOther, Phase::kForward, 1, {}, {x});       // 0
  pb.Op("read_back", OpKind::kCopy, Phase::kForward, 500, {}, {});    // 1
  pb.Op("make_y", OpKind::kOther, Phase::kForward, 1, {}, {y});       // 2
  pb.Op("read_x_y", OpKind::kOther, Phase::kForward, 1, {x, y}, {});  // 3
  Profile p = pb.Finish();
  const MachineModel m = TestMachine(int64_t{3} << 19);  // 1.5 MiB: x and y do not fit together
  EXPECT_THAT(FindCandidates(p, &m, 0), ElementsAre(Plain(x, 0, 3, 0, true)));
  p.ops[1].to_host_bytes = 4;
  EXPECT_THAT(FindCandidates(p, &m, 0), IsEmpty());
  EXPECT_THAT(FindCandidates(p, &m, 0, /*long_only=*/false), ElementsAre(Plain(x, 0, 3, 0, true)));
  EXPECT_NEAR(OpUs(p.ops[1], m), ToHostUs(4, m), 1e-9);
  EXPECT_EQ(OpUs(p.ops[0], m), 1);
}

TEST(CandidatesTest, InCoreBytesPerOp) {
  const Small s = MakeSmall();
  EXPECT_THAT(InCoreBytesPerOp(s.profile), ElementsAre(110, 110, 610, 110, 1110, 1110, 110));
}

TEST(CandidatesTest, CapacityKeepsIntervalsOverlappingAnOverCapacityOp) {
  const Small s = MakeSmall();
  // 1000: only ops 4 and 5 exceed it. x's (3, 6) spans them, and so does w's wrap (ops 4-6 come
  // after its last use); x's (1, 3) and w's (0, 3) contain only op 1 and 2.
  EXPECT_THAT(Matter(s.profile, 1000), ElementsAre(Plain(s.x, 3, 6, 0, true), Wrap(s.w, 3, 0)));
  // Exceeding is strict: op 2 holds exactly 610.
  EXPECT_EQ(Matter(s.profile, 610), Matter(s.profile, 1000));
  // 609: op 2 now exceeds it, so the intervals around it matter too.
  EXPECT_EQ(Matter(s.profile, 609), FindCandidates(s.profile));
  // No op holds more than 1110: no interval matters.
  EXPECT_THAT(Matter(s.profile, 1110), IsEmpty());
  // capacity <= 0 keeps everything.
  EXPECT_EQ(Matter(s.profile, 0), Matter(s.profile, -1));
  EXPECT_EQ(Matter(s.profile, 0).size(), 4u);
}

TEST(CandidatesTest, IntervalMattersOnlyThroughItsInnerOps) {
  // y is used at ops 0 and 2; op 0 holds a huge workspace, op 2 too: the ends of the interval
  // are over capacity but the op inside it (1) is not, so dropping y during it saves nothing
  // where memory is short.
  ProfileBuilder pb("ends");
  const TensorId y = pb.Tensor("y", 100);
  pb.Op("w", OpKind::kOther, Phase::kForward, 1, {}, {y}, /*workspace=*/1000);  // 0
  pb.Op("idle", OpKind::kOther, Phase::kForward, 1, {}, {});                    // 1
  pb.Op("r", OpKind::kOther, Phase::kForward, 1, {y}, {}, /*workspace=*/1000);  // 2
  const Profile p = pb.Finish();
  ASSERT_THAT(InCoreBytesPerOp(p), ElementsAre(1100, 100, 1100));
  EXPECT_THAT(FindCandidates(p), ElementsAre(Plain(y, 0, 2, 0, true)));
  EXPECT_THAT(Matter(p, 500), IsEmpty());
  EXPECT_THAT(Matter(p, 99), ElementsAre(Plain(y, 0, 2, 0, true)));
}

TEST(CandidatesTest, WrapMattersWhenMemoryIsShortBeforeTheFirstUseOrAfterTheLast) {
  // The persistent w is used at op 2 only; a 1000 B workspace at op 0 (before the use) or at
  // op 4 (after it) makes its wrap interval matter at capacity 500; at op 2 itself it does not.
  for (int at : {0, 2, 4}) {
    ProfileBuilder pb("wrap");
    const TensorId w = pb.Tensor("w", 10, /*persistent=*/true);
    for (int i = 0; i < 5; ++i) {
      pb.Op("op", OpKind::kOther, Phase::kOther, 1,
            i == 2 ? std::vector<TensorId>{w} : std::vector<TensorId>{}, {}, i == at ? 1000 : 0);
    }
    const Profile p = pb.Finish();
    // Used once: the wrap runs from that use to the same op in the next iteration.
    EXPECT_THAT(FindCandidates(p), ElementsAre(Wrap(w, 2, 2))) << at;
    if (at == 2) {
      EXPECT_THAT(Matter(p, 500), IsEmpty());
    } else {
      EXPECT_THAT(Matter(p, 500), ElementsAre(Wrap(w, 2, 2))) << at;
    }
  }
}

TEST(CandidatesTest, IntervalMustHideItsOwnCopies) {
  // x (1600 B) is written by op 0 and read by op 2; at 16 GB/s with 1 us latency each way its
  // copy out and back takes 2 * (0.1 + 1) = 2.2 us, so the idle op 1 must take at least that.
  for (const double idle_us : {2.1, 2.2, 50.0}) {
    ProfileBuilder pb("short");
    const TensorId x = pb.Tensor("x", 1600);
    pb.Op("w", OpKind::kOther, Phase::kForward, 1, {}, {x});
    pb.Op("idle", OpKind::kOther, Phase::kForward, idle_us, {}, {});
    pb.Op("r", OpKind::kOther, Phase::kForward, 1, {x}, {});
    const Profile p = pb.Finish();
    MachineModel m;
    m.memory_bytes = 1;  // every op is over capacity
    m.h2d_gbps = m.d2h_gbps = 16;
    m.h2d_latency_us = m.d2h_latency_us = 1;
    const size_t expected = idle_us >= 2.2 - 1e-9 ? 1 : 0;
    EXPECT_EQ(FindCandidates(p, &m).size(), expected) << idle_us;
    EXPECT_EQ(FindCandidates(p).size(), 1u);  // without a machine, every interval
  }
}

TEST(CandidatesTest, ShortRecomputableIntervalIsOfferedWhenRebuildingIsCheaperThanMoving) {
  // x (1600 B) is written by op 0 from a and read by op 2; its copy out and back takes 2.2 us
  // and the idle op 1 takes 2.1 us: too short to swap. Offered for recomputation only when
  // replaying op 0 takes less than the 2.2 us, op 0 is replayable, and short_recomputable asks.
  MachineModel m;
  m.memory_bytes = 1;  // every op is over capacity
  m.h2d_gbps = m.d2h_gbps = 16;
  m.h2d_latency_us = m.d2h_latency_us = 1;
  for (const double writer_us : {1.0, 2.1, 2.2, 50.0}) {
    for (const bool replayable : {true, false}) {
      ProfileBuilder pb("short");
      const TensorId a = pb.Tensor("a", 16, /*persistent=*/true);
      const TensorId x = pb.Tensor("x", 1600);
      pb.Op("w", OpKind::kActivation, Phase::kForward, writer_us, {a}, {x}, 0, replayable);
      pb.Op("idle", OpKind::kOther, Phase::kForward, 2.1, {}, {});
      pb.Op("r", OpKind::kOther, Phase::kForward, 1, {x}, {});
      const Profile p = pb.Finish();
      const std::string at = absl::StrCat(writer_us, " us, replayable ", replayable);
      EXPECT_THAT(FindCandidates(p, &m, /*min_bytes=*/100), IsEmpty()) << at;
      const std::vector<Candidate> offered =
          FindCandidates(p, &m, /*min_bytes=*/100, /*long_only=*/true,
                         /*short_recomputable=*/true);
      if (replayable && writer_us < 2.2 - 1e-9) {
        Candidate expected = Plain(x, 0, 2, 0, true);
        expected.recompute_only = true;
        EXPECT_THAT(offered, ElementsAre(expected)) << at;
      } else {
        EXPECT_THAT(offered, IsEmpty()) << at;
      }
      // Without long_only every interval is offered, none for recomputation only.
      const std::vector<Candidate> all =
          FindCandidates(p, &m, 100, /*long_only=*/false, /*short_recomputable=*/true);
      ASSERT_EQ(all.size(), 1u) << at;
      EXPECT_FALSE(all[0].recompute_only) << at;
    }
  }
}

TEST(CandidatesTest, ShortIntervalOfAChainIsOfferedByTheWholeChainsCost) {
  // x (1600 B) is written whole by op 0, its bias added in place by op 1 (0.5 us), read by op 3;
  // its copy out and back takes 2.2 us and the idle op 2 takes 2.1 us. Its rebuild replays the
  // chain (0, 1): offered for recomputation only when the two links together take less than the
  // copy, though op 1 alone always does (Note [Intervals that matter], Note [Chains]).
  MachineModel m;
  m.memory_bytes = 1;  // every op is over capacity
  m.h2d_gbps = m.d2h_gbps = 16;
  m.h2d_latency_us = m.d2h_latency_us = 1;
  for (const double first_us : {1.0, 1.6, 1.8, 50.0}) {
    ProfileBuilder pb("short-chain");
    const TensorId a = pb.Tensor("a", 16, /*persistent=*/true);
    const TensorId b = pb.Tensor("b", 16, /*persistent=*/true);
    const TensorId x = pb.Tensor("x", 1600);
    const OpIndex w = pb.Op("w", OpKind::kConv, Phase::kForward, first_us, {a}, {x});  // 0
    pb.op(w).overwrites = {x};
    pb.Op("bias", OpKind::kAdd, Phase::kForward, 0.5, {b, x}, {x});  // 1
    pb.Op("idle", OpKind::kOther, Phase::kForward, 2.1, {}, {});     // 2
    pb.Op("r", OpKind::kOther, Phase::kForward, 1, {x}, {});         // 3
    const Profile p = pb.Finish();
    ASSERT_TRUE(p.Validate().ok()) << p.Validate();
    const std::vector<Candidate> offered =
        FindCandidates(p, &m, /*min_bytes=*/100, /*long_only=*/true, /*short_recomputable=*/true);
    if (first_us + 0.5 < 2.2 - 1e-9) {
      Candidate expected = Plain(x, 1, 3, 1, true);
      expected.recompute_only = true;
      EXPECT_THAT(offered, ElementsAre(expected)) << first_us;
    } else {
      EXPECT_THAT(offered, IsEmpty()) << first_us;
    }
  }
}

TEST(CandidatesTest, MinBytes) {
  const Small s = MakeSmall();
  // w (10 B) is too small at 11; x (100 B) stays up to min_bytes 100 and goes at 101.
  EXPECT_THAT(Matter(s.profile, 0, 11),
              ElementsAre(Plain(s.x, 1, 3, 0, true), Plain(s.x, 3, 6, 0, true)));
  EXPECT_EQ(Matter(s.profile, 0, 100), Matter(s.profile, 0, 11));
  EXPECT_THAT(Matter(s.profile, 0, 101), IsEmpty());
  EXPECT_THAT(Matter(s.profile, 1000, 11), ElementsAre(Plain(s.x, 3, 6, 0, true)));
  // An empty tensor is never a candidate, whatever min_bytes.
  ProfileBuilder pb("empty");
  const TensorId e = pb.Tensor("e", 0);
  pb.Op("a", OpKind::kOther, Phase::kForward, 1, {}, {e});
  pb.Op("b", OpKind::kOther, Phase::kForward, 1, {}, {});
  pb.Op("c", OpKind::kOther, Phase::kForward, 1, {e}, {});
  EXPECT_THAT(FindCandidates(pb.Finish(), 0, 0), IsEmpty());
}

TEST(CandidatesTest, PersistentTensorWrapsAndNeverRecomputes) {
  // w: read at 1 (forward) and 3 (backward), updated in place at 5 by its only writer; the
  // iteration has 7 ops. (1, 3): its writer comes after the interval opens (the value came from
  // the previous iteration's update), so there is no producer. (3, 5): no producer either. The
  // wrap (5 -> 1) is never recomputable, although op 5 is w's only writer: that write happened
  // in the previous iteration.
  ProfileBuilder pb("persistent");
  const TensorId w = pb.Tensor("w", 64, /*persistent=*/true);
  const TensorId dw = pb.Tensor("dw", 64, /*persistent=*/true);
  pb.Op("first", OpKind::kOther, Phase::kForward, 1, {}, {});           // 0
  pb.Op("fwd", OpKind::kConv, Phase::kForward, 1, {w}, {});             // 1
  pb.Op("mid", OpKind::kOther, Phase::kForward, 1, {}, {});             // 2
  pb.Op("bwd", OpKind::kConv, Phase::kBackward, 1, {w}, {dw});          // 3
  pb.Op("mid2", OpKind::kOther, Phase::kBackward, 1, {}, {});           // 4
  pb.Op("update", OpKind::kOptimizer, Phase::kOther, 1, {w, dw}, {w});  // 5
  pb.Op("last", OpKind::kOther, Phase::kOther, 1, {}, {});              // 6
  const Profile p = pb.Finish();
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  // dw: written at 3, read at 5: (3, 5), produced by op 3 (its only writer), which reads w, and
  // w is not written before op 5 (op 5's own write comes with the read): recomputable. Its wrap
  // runs from 5 to 3.
  EXPECT_THAT(FindCandidates(p),
              ElementsAre(Plain(w, 1, 3), Plain(w, 3, 5), Plain(dw, 3, 5, 3, true), Wrap(w, 5, 1),
                          Wrap(dw, 5, 3)));

  // Used at the first and the last op only: the interval between them, no wrap.
  ProfileBuilder pb2("ends");
  const TensorId v = pb2.Tensor("v", 64, /*persistent=*/true);
  pb2.Op("a", OpKind::kOther, Phase::kForward, 1, {v}, {});
  pb2.Op("b", OpKind::kOther, Phase::kForward, 1, {}, {});
  pb2.Op("c", OpKind::kOther, Phase::kForward, 1, {v}, {});
  EXPECT_THAT(FindCandidates(pb2.Finish()), ElementsAre(Plain(v, 0, 2)));

  // The mini-batch: there before the iteration but freed in it, so it has no wrap.
  ProfileBuilder pb3("input");
  const TensorId in = pb3.Tensor("in", 64);
  pb3.MarkInput(in);
  pb3.Op("a", OpKind::kOther, Phase::kForward, 1, {}, {});
  pb3.Op("b", OpKind::kOther, Phase::kForward, 1, {in}, {});
  pb3.Op("c", OpKind::kOther, Phase::kForward, 1, {}, {});
  pb3.Op("d", OpKind::kOther, Phase::kForward, 1, {in}, {});
  pb3.Op("e", OpKind::kOther, Phase::kForward, 1, {}, {});
  const Profile p3 = pb3.Finish();
  ASSERT_EQ(p3.tensors[in].alloc_before, kBeforeIteration);
  EXPECT_THAT(FindCandidates(p3), ElementsAre(Plain(in, 1, 3)));
}

TEST(CandidatesTest, SoleReplayableWriterIsARecomputableProducer) {
  for (bool replayable : {true, false}) {
    ProfileBuilder pb("sole");
    const TensorId w = pb.Tensor("w", 64, /*persistent=*/true);
    const TensorId x = pb.Tensor("x", 64);
    const TensorId y = pb.Tensor("y", 64);
    pb.Op("x", OpKind::kOther, Phase::kForward, 1, {}, {x});                    // 0
    pb.Op("y", OpKind::kConv, Phase::kForward, 1, {x, w}, {y}, 0, replayable);  // 1
    pb.Op("a", OpKind::kOther, Phase::kForward, 1, {y}, {});                    // 2
    pb.Op("b", OpKind::kOther, Phase::kForward, 1, {}, {});                     // 3
    pb.Op("c", OpKind::kOther, Phase::kForward, 1, {y, x}, {});  // 4: x still allocated
    const Profile p = pb.Finish();
    ASSERT_TRUE(p.Validate().ok()) << p.Validate();
    const std::vector<Candidate> cands = Matter(p, 0, 64);
    // w is read once (its wrap runs from op 1 to op 1); x: (1, 4), produced by op 0; y: (2, 4),
    // produced by op 1, whose inputs are still there at op 4 and never written.
    EXPECT_THAT(cands,
                ElementsAre(Wrap(w, 1, 1), Plain(x, 1, 4, 0, true), Plain(y, 2, 4, 1, replayable)))
        << "replayable " << replayable;
  }
}

TEST(CandidatesTest, InPlaceSecondWriterMeansNoProducer) {
  // t is written at 0 and again in place at 1 (an in-place ReLU, a skip addition into it):
  // replaying either writer alone would not rebuild it. (The in-place op also reads t, which a
  // replay could not have either.)
  ProfileBuilder pb("inplace");
  const TensorId t = pb.Tensor("t", 64);
  pb.Op("conv", OpKind::kConv, Phase::kForward, 1, {}, {t});          // 0
  pb.Op("relu_", OpKind::kActivation, Phase::kForward, 1, {t}, {t});  // 1
  pb.Op("a", OpKind::kOther, Phase::kForward, 1, {}, {});             // 2
  pb.Op("b", OpKind::kOther, Phase::kBackward, 1, {t}, {});           // 3
  const Profile p = pb.Finish();
  EXPECT_THAT(FindCandidates(p), ElementsAre(Plain(t, 1, 3)));

  // A writer that reads what it writes (a persistent tensor's in-place update) is its only
  // writer and precedes the interval, but replaying it would update twice: not recomputable.
  ProfileBuilder pb2("update");
  const TensorId w = pb2.Tensor("w", 64, /*persistent=*/true);
  pb2.Op("update", OpKind::kOptimizer, Phase::kOther, 1, {w}, {w});  // 0
  pb2.Op("a", OpKind::kOther, Phase::kOther, 1, {}, {});             // 1
  pb2.Op("use", OpKind::kOther, Phase::kOther, 1, {w}, {});          // 2
  pb2.Op("z", OpKind::kOther, Phase::kOther, 1, {}, {});             // 3
  const std::vector<Candidate> cands = FindCandidates(pb2.Finish());
  ASSERT_EQ(cands.size(), 2u);
  EXPECT_EQ(cands[0], Plain(w, 0, 2, /*producer=*/0, /*recomputable=*/false));
  EXPECT_EQ(cands[1], Wrap(w, 2, 0));
}

TEST(CandidatesTest, InputWrittenBetweenProducerAndCloseIsNotRecomputable) {
  // y = f(s) at 0; s is updated in place at 4. Replaying f before op 3 reads the s it read the
  // first time; before op 6 it would read the updated s. So y's interval (1, 3) is
  // recomputable and (3, 6) is not: soundness is per interval.
  ProfileBuilder pb("stale");
  const TensorId s = pb.Tensor("s", 64, /*persistent=*/true);
  const TensorId y = pb.Tensor("y", 64);
  pb.Op("f", OpKind::kConv, Phase::kForward, 1, {s}, {y});       // 0
  pb.Op("a", OpKind::kOther, Phase::kForward, 1, {y}, {});       // 1
  pb.Op("b", OpKind::kOther, Phase::kForward, 1, {}, {});        // 2
  pb.Op("c", OpKind::kOther, Phase::kForward, 1, {y}, {});       // 3
  pb.Op("upd", OpKind::kOptimizer, Phase::kOther, 1, {s}, {s});  // 4
  pb.Op("d", OpKind::kOther, Phase::kBackward, 1, {}, {});       // 5
  pb.Op("e", OpKind::kOther, Phase::kBackward, 1, {y}, {});      // 6
  const Profile p = pb.Finish();
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  const std::vector<Candidate> cands = Matter(p, 0, 64);
  std::vector<Candidate> of_y;
  for (const Candidate& c : cands) {
    if (c.tensor == y) of_y.push_back(c);
  }
  EXPECT_THAT(of_y, ElementsAre(Plain(y, 1, 3, 0, true), Plain(y, 3, 6, 0, false)));
  const ReplayFacts facts = ComputeReplayFacts(p);
  EXPECT_EQ(facts.stable_until[0], 4);
  EXPECT_TRUE(facts.SoundAt(0, y, 4));  // before op 4 writes s
  EXPECT_FALSE(facts.SoundAt(0, y, 5));
}

// Note [Unprofiled inputs]: f also read a small allocation outside the profile that changes at
// op 2: the same as a write of one of its tensors there.
TEST(CandidatesTest, UnprofiledInputChangedBeforeCloseIsNotRecomputable) {
  for (const OpIndex until : {-1, 2, 3}) {
    ProfileBuilder pb("unprofiled");
    const TensorId s = pb.Tensor("s", 64, /*persistent=*/true);
    const TensorId y = pb.Tensor("y", 64);
    pb.Op("f", OpKind::kConv, Phase::kForward, 1, {s}, {y});  // 0
    pb.Op("a", OpKind::kOther, Phase::kForward, 1, {y}, {});  // 1
    pb.Op("b", OpKind::kOther, Phase::kForward, 1, {}, {});   // 2
    pb.Op("c", OpKind::kOther, Phase::kForward, 1, {y}, {});  // 3
    Profile p = pb.Finish();
    p.ops[0].unprofiled_inputs_until = until;
    ASSERT_TRUE(p.Validate().ok()) << p.Validate();
    const std::vector<Candidate> cands = Matter(p, 0, 64);
    std::vector<Candidate> of_y;
    for (const Candidate& c : cands) {
      if (c.tensor == y) of_y.push_back(c);
    }
    EXPECT_THAT(of_y, ElementsAre(Plain(y, 1, 3, 0, /*recomputable=*/until != 2))) << until;
    EXPECT_EQ(ComputeReplayFacts(p).stable_until[0],
              until == -1 ? std::numeric_limits<OpIndex>::max() : until)
        << until;
  }
}

// conv (op 0) reads the persistent `in` and w and writes x; relu (op 1) reads x and writes a;
// x is freed after op 1 (only relu read it); a is read again at op 4. Replaying relu before op
// 4 needs x, which is gone, but can itself be rebuilt by replaying conv.
struct Relu {
  Profile profile;
  TensorId in, w, x, a;
};

Relu MakeRelu(bool conv_replayable, bool update_w_at_3) {
  ProfileBuilder pb("relu");
  Relu r;
  r.in = pb.Tensor("in", 64, /*persistent=*/true);
  r.w = pb.Tensor("w", 64, /*persistent=*/true);
  r.x = pb.Tensor("x", 1000);
  r.a = pb.Tensor("a", 1000);
  pb.Op("conv", OpKind::kConv, Phase::kForward, 10, {r.in, r.w}, {r.x}, 0, conv_replayable);  // 0
  pb.Op("relu", OpKind::kActivation, Phase::kForward, 2, {r.x}, {r.a});                       // 1
  pb.Op("next", OpKind::kOther, Phase::kForward, 1, {r.a}, {});                               // 2
  if (update_w_at_3) {
    pb.Op("w_", OpKind::kOther, Phase::kForward, 1, {r.w}, {r.w});  // 3
  } else {
    pb.Op("loss", OpKind::kLoss, Phase::kForward, 1, {}, {});  // 3
  }
  pb.Op("relu.backward", OpKind::kActivation, Phase::kBackward, 2, {r.a}, {});  // 4
  r.profile = pb.Finish();
  return r;
}

Candidate IntervalOf(const std::vector<Candidate>& cands, TensorId t) {
  for (const Candidate& c : cands) {
    if (c.tensor == t && !c.wraps) return c;
  }
  ADD_FAILURE() << "no interval of tensor " << t;
  return {};
}

TEST(CandidatesTest, FreedInputRebuiltBySoundReplayIsRecomputable) {
  const Relu r = MakeRelu(/*conv_replayable=*/true, /*update_w_at_3=*/false);
  ASSERT_TRUE(r.profile.Validate().ok()) << r.profile.Validate();
  ASSERT_EQ(r.profile.tensors[r.x].free_after, 1);
  const std::vector<Candidate> cands = Matter(r.profile, 0, 1000);
  ASSERT_EQ(cands.size(), 1u);  // x has adjacent uses only
  EXPECT_EQ(cands[0], Plain(r.a, 2, 4, 1, true));
  const ReplayFacts facts = ComputeReplayFacts(r.profile);
  EXPECT_GE(facts.remat_until[r.x], 4);  // x can be had again up to op 4
  EXPECT_GE(facts.AvailableUntil(r.profile, r.x), 4);

  // The simulator carries it out: a's interval recomputed replays conv, then relu, before op 4.
  const MachineModel m = TestMachine(int64_t{1} << 30);
  Simulator sim(r.profile, m, {.matter_only = false, .min_bytes = 1000});
  ASSERT_EQ(sim.candidates(), cands);
  Plan plan = KeepAllPlan(1);
  plan.decisions[0] = Decision::kRecompute;
  const SimResult& s = sim.Run(plan);
  ASSERT_TRUE(s.feasible) << s.failure;
  EXPECT_EQ(s.recomputed_ops, 2);
  EXPECT_DOUBLE_EQ(s.recompute_us, 12);
}

TEST(CandidatesTest, FreedInputThatCannotBeRebuiltIsNotRecomputable) {
  // conv cannot be replayed: x, once freed, is gone for good.
  const Relu a = MakeRelu(/*conv_replayable=*/false, /*update_w_at_3=*/false);
  EXPECT_EQ(IntervalOf(Matter(a.profile, 0, 1000), a.a), Plain(a.a, 2, 4, 1, false));
  EXPECT_EQ(ComputeReplayFacts(a.profile).remat_until[a.x], -1);
  // conv's weight is updated at op 3: a replay of conv before op 4 would read the new weight.
  const Relu b = MakeRelu(/*conv_replayable=*/true, /*update_w_at_3=*/true);
  ASSERT_TRUE(b.profile.Validate().ok()) << b.profile.Validate();
  EXPECT_EQ(IntervalOf(Matter(b.profile, 0, 1000), b.a), Plain(b.a, 2, 4, 1, false));
  EXPECT_EQ(ComputeReplayFacts(b.profile).remat_until[b.x], 3);
  // The simulator refuses to recompute such an interval.
  const MachineModel m = TestMachine(int64_t{1} << 30);
  Simulator sim(b.profile, m, {.matter_only = false, .min_bytes = 1000});
  ASSERT_EQ(sim.candidates().size(), 1u);
  Plan plan = KeepAllPlan(1);
  plan.decisions[0] = Decision::kRecompute;
  const SimResult& s = sim.Run(plan);
  EXPECT_FALSE(s.feasible);
  EXPECT_THAT(s.failure, ::testing::HasSubstr("cannot be recomputed"));
}

TEST(CandidatesTest, OrderedByOpenThenTensorThenClose) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Profile p = RandomProfile(seed);
    const std::vector<Candidate> cands = FindCandidates(p);
    ASSERT_FALSE(cands.empty());
    for (size_t i = 1; i < cands.size(); ++i) {
      const Candidate& a = cands[i - 1];
      const Candidate& b = cands[i];
      EXPECT_TRUE(a.open < b.open || (a.open == b.open && a.tensor < b.tensor) ||
                  (a.open == b.open && a.tensor == b.tensor && a.close < b.close))
          << "seed " << seed << " at " << i;
    }
    for (const Candidate& c : cands) {
      // Every interval has an op inside it: after open and before close (in the next
      // iteration, for a wrap).
      if (c.wraps) {
        EXPECT_TRUE(c.open < static_cast<OpIndex>(p.ops.size()) - 1 || c.close > 0);
        EXPECT_FALSE(c.recomputable);
      } else {
        EXPECT_GT(c.close, c.open + 1) << "seed " << seed;
      }
      if (c.recomputable) {
        EXPECT_GE(c.producer, 0);
      }
      if (c.producer >= 0) {
        EXPECT_LE(c.producer, c.open);
      }
    }
  }
}

// No op's name or phase enters the candidates (Note [Idle intervals]).
TEST(CandidatesTest, NamesAndPhasesDoNotMatter) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Profile p = RandomProfile(seed);
    Profile renamed = p;
    for (size_t i = 0; i < renamed.ops.size(); ++i) {
      renamed.ops[i].name = i % 2 ? "cudnnConvolutionBackwardData" : "void at::native::kernel";
      renamed.ops[i].phase = i % 3 ? Phase::kBackward : Phase::kOther;
    }
    EXPECT_EQ(FindCandidates(renamed), FindCandidates(p)) << seed;
    const int64_t peak = [&] {
      int64_t m = 0;
      for (int64_t b : InCoreBytesPerOp(p)) m = std::max(m, b);
      return m;
    }();
    EXPECT_EQ(Matter(renamed, peak * 3 / 4, 8 << 10), Matter(p, peak * 3 / 4, 8 << 10)) << seed;
  }
}

TEST(CandidatesTest, LabelPhasesByPeak) {
  // Small's in-core bytes peak first at op 4 (1110 B at ops 4 and 5): ops 0-4 are forward, 5
  // and 6 backward, whatever the ops were labelled before and whatever their names say.
  Small s = MakeSmall();
  s.profile.ops[1].name = "cudnnConvolutionBackwardData";
  for (Op& op : s.profile.ops) op.phase = Phase::kOther;
  LabelPhasesByPeak(s.profile);
  std::vector<Phase> phases;
  for (const Op& op : s.profile.ops) phases.push_back(op.phase);
  const Phase f = Phase::kForward, b = Phase::kBackward;
  EXPECT_THAT(phases, ElementsAre(f, f, f, f, f, b, b));

  // A workspace can be the peak: with 2000 B at op 1 the forward ends there.
  s.profile.ops[1].workspace_bytes = 2000;
  LabelPhasesByPeak(s.profile);
  phases.clear();
  for (const Op& op : s.profile.ops) phases.push_back(op.phase);
  EXPECT_THAT(phases, ElementsAre(f, f, b, b, b, b, b));

  // A classic training iteration: the forward ops are labelled forward (the peak is at the turn
  // or just after it, where the first gradients are allocated before any map is freed), and the
  // optimizer updates at the end backward.
  const Profile p = RandomProfile(5);
  Profile labelled = p;
  LabelPhasesByPeak(labelled);
  OpIndex loss = -1;
  for (OpIndex i = 0; i < static_cast<OpIndex>(p.ops.size()); ++i) {
    if (p.ops[i].name == "loss") loss = i;
  }
  ASSERT_GE(loss, 0);
  int updates = 0;
  for (OpIndex i = 0; i < static_cast<OpIndex>(p.ops.size()); ++i) {
    if (i <= loss) {
      EXPECT_EQ(labelled.ops[i].phase, Phase::kForward) << i;
    }
    if (p.ops[i].kind == OpKind::kOptimizer) {
      EXPECT_EQ(labelled.ops[i].phase, Phase::kBackward) << i;
      ++updates;
    }
  }
  EXPECT_GT(updates, 0);
}

// Note [Chains]: y is written whole by conv, has a bias added in place, then a ReLU in place;
// `change` names the input of a link that op 4 writes ("" for none).
struct BiasChain {
  Profile profile;
  TensorId in = 0, w = 0, b = 0, y = 0;
};
BiasChain MakeBiasChain(const std::string& change, bool conv_whole = true,
                        bool bias_replayable = true) {
  ProfileBuilder pb("bias-chain");
  BiasChain c;
  c.in = pb.Tensor("in", 64, /*persistent=*/true);
  c.w = pb.Tensor("w", 64, /*persistent=*/true);
  c.b = pb.Tensor("b", 64, /*persistent=*/true);
  c.y = pb.Tensor("y", 1000);
  const OpIndex conv = pb.Op("conv", OpKind::kConv, Phase::kForward, 10, {c.in, c.w}, {c.y});  // 0
  if (conv_whole) pb.op(conv).overwrites = {c.y};
  pb.Op("bias", OpKind::kAdd, Phase::kForward, 1, {c.b, c.y}, {c.y}, 0, bias_replayable);  // 1
  pb.Op("relu_", OpKind::kActivation, Phase::kForward, 2, {c.y}, {c.y});                   // 2
  pb.Op("next", OpKind::kOther, Phase::kForward, 1, {c.y}, {});                            // 3
  const TensorId changed = change == "in" ? c.in : change == "b" ? c.b : -1;
  if (changed >= 0) {
    pb.Op("update", OpKind::kOther, Phase::kForward, 1, {changed}, {changed});  // 4
  } else {
    pb.Op("loss", OpKind::kLoss, Phase::kForward, 1, {}, {});  // 4
  }
  pb.Op("relu_.backward", OpKind::kActivation, Phase::kBackward, 2, {c.y}, {});  // 5
  c.profile = pb.Finish();
  return c;
}

TEST(CandidatesTest, MapWrittenWholeThenInPlaceIsRecomputableAsAChain) {
  const BiasChain c = MakeBiasChain("");
  ASSERT_TRUE(c.profile.Validate().ok()) << c.profile.Validate();
  // Its only interval: after the chain's last link (relu_) and its read, to backward.
  EXPECT_THAT(Matter(c.profile, 0, 1000), ElementsAre(Plain(c.y, 3, 5, 2, true)));
  const ReplayFacts facts = ComputeReplayFacts(c.profile);
  EXPECT_THAT(facts.Chain(c.y, 2), ElementsAre(0, 1, 2));  // conv, bias, relu_
  EXPECT_THAT(facts.Chain(c.y, 1), ElementsAre(0, 1));
  EXPECT_DOUBLE_EQ(facts.ReplayUs(c.profile, nullptr, c.y, 2), 13);  // the links' sum

  // The simulator replays the chain before op 5: one replay, its links' time.
  const MachineModel m = TestMachine(int64_t{1} << 30);
  Simulator sim(c.profile, m, {.matter_only = false, .min_bytes = 1000});
  Plan plan = KeepAllPlan(1);
  plan.decisions[0] = Decision::kRecompute;
  const SimResult& s = sim.Run(plan);
  ASSERT_TRUE(s.feasible) << s.failure;
  EXPECT_EQ(s.recomputed_ops, 1);
  EXPECT_DOUBLE_EQ(s.recompute_us, 13);
}

TEST(CandidatesTest, ChainIsNotRecomputableWhenALinksInputChanges) {
  for (const char* change : {"in", "b"}) {
    SCOPED_TRACE(change);
    const BiasChain c = MakeBiasChain(change);
    ASSERT_TRUE(c.profile.Validate().ok()) << c.profile.Validate();
    EXPECT_THAT(Matter(c.profile, 0, 1000), ElementsAre(Plain(c.y, 3, 5, 2, false)));
    EXPECT_TRUE(ComputeReplayFacts(c.profile).SoundAt(2, c.y, 4));  // before the change
    EXPECT_FALSE(ComputeReplayFacts(c.profile).SoundAt(2, c.y, 5));
  }
}

TEST(CandidatesTest, ChainNeedsAWholeFirstWriteAndReplayableLinks) {
  // conv may have written part of y only: no chain, as before chains (no producer).
  const BiasChain part = MakeBiasChain("", /*conv_whole=*/false);
  EXPECT_THAT(Matter(part.profile, 0, 1000), ElementsAre(Plain(part.y, 3, 5)));
  EXPECT_TRUE(ComputeReplayFacts(part.profile).Chain(part.y, 2).empty());
  const BiasChain opaque = MakeBiasChain("", true, /*bias_replayable=*/false);
  EXPECT_THAT(Matter(opaque.profile, 0, 1000), ElementsAre(Plain(opaque.y, 3, 5)));
  // A profile written with overwrites reads back the same.
  const BiasChain c = MakeBiasChain("");
  absl::StatusOr<Profile> back = ParseProfileJson(ProfileToJson(c.profile));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, c.profile);
  // overwrites must name a tensor the op writes without reading it.
  Profile bad = c.profile;
  bad.ops[1].overwrites = {c.y};
  EXPECT_FALSE(bad.Validate().ok());
}

}  // namespace
}  // namespace pooch
