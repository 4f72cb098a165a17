// Tests of the PlanExecutor (core/exec/plan_executor.h) over a ResidencyManager on a FakeDevice: a
// small training loop whose op stream repeats, run through the executor as the interposer's RunOp
// does (BeforeOp, OpBegin, the op, AfterOp, OpEnd). The ops are device kernels whose outputs
// depend on their inputs' bytes, and the backward ops check what they read, so a plan carried
// out wrongly (a map swapped and not brought back, a wrong address) shows as a wrong byte.
#include "core/exec/plan_executor.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "core/base/trace.h"
#include "core/testing/fake_device.h"
#include "core/measure/trace_observer.h"
#include "core/model/model_json.h"
#include "core/residency/residency.h"
#include "core/small_alloc/small_allocator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using Mode = AccessRange::Mode;
using ::testing::HasSubstr;

constexpr int64_t kG = 64 << 10;  // the fake device's granularity

class PlanExecutorTest : public ::testing::Test {
 protected:
  // A device of 64 granules; the manager's limit is `limit_granules`. With `trace`, the executor
  // writes its instants to an in-memory trace (TraceContents).
  void Start(int64_t limit_granules, Config config, bool trace = false) {
    // A second Start in a test: what uses the old device goes before it does.
    executor_.reset();
    small_.reset();
    manager_.reset();
    FakeDevice::Options device;
    device.granularity = kG;
    device.capacity = 64 * kG;
    device_ = std::make_unique<FakeDevice>(device);
    stream_ = *device_->CreateStream();
    ResidencyOptions options;
    options.memory_limit = limit_granules * kG;
    options.min_swap_bytes = kG;
    options.time_copies = true;
    manager_ = *ResidencyManager::Create(*device_, options);
    SmallAllocatorOptions small;
    small.max_bytes = kG;
    small_ = *SmallAllocator::Create(*device_, std::move(small));
    config_ = std::move(config);
    trace_.reset();
    trace_writer_ = nullptr;
    if (trace) {
      auto writer = std::make_unique<TraceWriter>();
      trace_writer_ = writer.get();
      trace_ = std::make_unique<TraceObserver>(std::move(writer));
    }
    executor_ = std::make_unique<PlanExecutor>(*device_, *manager_, *small_, config_, trace_.get(),
                                               nullptr);
  }

  std::string TraceContents() const {
    return trace_writer_ != nullptr ? trace_writer_->Contents() : "";
  }

  void TearDown() override {
    executor_.reset();
    trace_.reset();
    trace_writer_ = nullptr;
    small_.reset();
    manager_.reset();
    if (device_ != nullptr) {
      EXPECT_THAT(device_->violations(), ::testing::IsEmpty());
    }
  }

  DeviceAddress Alloc(int64_t bytes) {
    absl::StatusOr<DeviceAddress> a = manager_->Allocate(bytes);
    EXPECT_TRUE(a.ok()) << a.status();
    executor_->Alloc(*a, bytes, /*managed=*/true);
    return *a;
  }

  void Free(DeviceAddress a) {
    executor_->Free(a);
    EXPECT_TRUE(manager_->Free(a).ok());
  }

  // One op as RunOp runs it: `out` (2 granules) = in[0] + 1, or, with `expect` >= 0, a
  // backward op that checks in[0] == expect and accumulates into `out` (read-write).
  void Op(const char* name, DeviceAddress in, DeviceAddress out, int expect = -1) {
    const Mode out_mode = expect >= 0 ? Mode::kReadWrite : Mode::kWrite;
    const std::vector<AccessRange> ranges = {{in, 2 * kG, Mode::kRead}, {out, 2 * kG, out_mode}};
    absl::StatusOr<OpTicket> ticket = manager_->BeforeOp(stream_, ranges);
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    ProfiledOp op = executor_->OpBegin(name, stream_, ranges, /*replay_capable=*/false);
    int* wrong = &wrong_bytes_;
    ASSERT_TRUE(device_
                    ->Launch(stream_, {{in, 2 * kG}, {out, 2 * kG}},
                             [in, out, expect, wrong](FakeDevice::Memory& m) {
                               uint8_t first = 0;
                               m.Read(in, &first, 1).IgnoreError();
                               if (expect >= 0) {
                                 if (first != static_cast<uint8_t>(expect)) ++*wrong;
                                 return;
                               }
                               std::vector<uint8_t> data(2 * kG, static_cast<uint8_t>(first + 1));
                               m.Write(out, data.data(), 2 * kG).IgnoreError();
                             })
                    .ok());
    executor_->OpRan(&op, stream_);
    ASSERT_TRUE(manager_->AfterOp(*std::move(ticket)).ok());
    executor_->OpEnd(op, stream_);
  }

  // `n` persistent weights of 2 granules, the e-th filled with 100 + e (written as an op would).
  std::vector<DeviceAddress> Weights(int n) {
    std::vector<DeviceAddress> weights;
    for (int e = 0; e < n; ++e) {
      const DeviceAddress w = Alloc(2 * kG);
      weights.push_back(w);
      const std::vector<AccessRange> ranges = {{w, 2 * kG, Mode::kWrite}};
      absl::StatusOr<OpTicket> t = manager_->BeforeOp(stream_, ranges);
      EXPECT_TRUE(t.ok()) << t.status();
      if (!t.ok()) continue;
      EXPECT_TRUE(device_
                      ->Launch(stream_, {{w, 2 * kG}},
                               [w, e](FakeDevice::Memory& m) {
                                 std::vector<uint8_t> data(2 * kG, static_cast<uint8_t>(100 + e));
                                 m.Write(w, data.data(), 2 * kG).IgnoreError();
                               })
                      .ok());
      EXPECT_TRUE(manager_->AfterOp(*std::move(t)).ok());
    }
    return weights;
  }

  // A kernel whose accesses were guessed from its words (exact_accesses false): it writes `out`,
  // and `stale` (0: none) is a word that points into another allocation it does not use.
  void GuessedOp(const char* name, DeviceAddress out, DeviceAddress stale) {
    std::vector<AccessRange> ranges = {{out, 2 * kG, Mode::kWrite}};
    if (stale != 0) ranges.push_back({stale, 1, Mode::kReadWrite});
    absl::StatusOr<OpTicket> ticket = manager_->BeforeOp(stream_, ranges);
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    ProfiledOp op = executor_->OpBegin(name, stream_, ranges, /*replay_capable=*/false,
                                       /*exact_accesses=*/false, {}, ticket->demand_swapped_in());
    ASSERT_TRUE(device_->Launch(stream_, {{out, 2 * kG}}, [](FakeDevice::Memory&) {}).ok());
    executor_->OpRan(&op, stream_);
    ASSERT_TRUE(manager_->AfterOp(*std::move(ticket)).ok());
    executor_->OpEnd(op, stream_);
  }

  // One training iteration: a chain of `layers` maps in forward, read again in reverse order in
  // backward (each checked), all freed at the end. `seed` is the input's first byte. With
  // `stale` >= 0, a GuessedOp between forward and backward writes the gradient buffer, with a
  // stale word into map `stale` unless it is 0.
  void Iteration(uint8_t seed, int layers = 4, int stale = -1, int stale_ops = 1) {
    const DeviceAddress input = Alloc(2 * kG);
    {  // the input arrives: a copy-like op writing it
      const std::vector<AccessRange> ranges = {{input, 2 * kG, Mode::kWrite}};
      absl::StatusOr<OpTicket> t = manager_->BeforeOp(stream_, ranges);
      ASSERT_TRUE(t.ok());
      ProfiledOp op = executor_->OpBegin("memcpy", stream_, ranges, false);
      ASSERT_TRUE(device_
                      ->Launch(stream_, {{input, 2 * kG}},
                               [input, seed](FakeDevice::Memory& m) {
                                 std::vector<uint8_t> data(2 * kG, seed);
                                 m.Write(input, data.data(), 2 * kG).IgnoreError();
                               })
                      .ok());
      executor_->OpRan(&op, stream_);
      ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
      executor_->OpEnd(op, stream_);
    }
    std::vector<DeviceAddress> maps = {input};
    for (int layer = 0; layer < layers; ++layer) {
      maps.push_back(Alloc(2 * kG));
      Op("ConvolutionForward", maps[layer], maps[layer + 1]);
    }
    const DeviceAddress grad = Alloc(2 * kG);
    for (int k = 0; stale >= 0 && k < stale_ops; ++k) {
      GuessedOp("reduce_kernel", grad, stale > 0 ? maps[stale] : 0);
    }
    // As a framework does, each map is freed once backward no longer needs it: the planner
    // plans idle intervals between uses, not the time a program holds a map after its last use.
    for (int layer = layers; layer >= 1; --layer) {
      Op("ConvolutionBackwardData", maps[layer], grad, static_cast<uint8_t>(seed + layer));
      Free(maps[layer]);
    }
    Free(grad);
    Free(maps[0]);
  }

  // Iterations of two shapes in turn (4 and 3 layers), 8 of each, twice, under swap-all with a
  // re-profile at each departure; with `carried`, each iteration holds an allocation into the
  // next (a loss kept across the loop, Note [Carried lifetimes]). Returns the summary.
  std::string RunTwoShapesInTurn(bool carried) {
    Config c;
    c.mode = RunMode::kPlanned;
    c.planned_policy = Policy::kSwapAll;
    c.reprofile_after = 1;
    Start(/*limit_granules=*/8, c);
    int seed = 0;
    DeviceAddress held = 0;
    for (int round = 0; round < 2; ++round) {
      for (int layers : {4, 3}) {
        for (int i = 0; i < 8; ++i) {
          Iteration(static_cast<uint8_t>(10 * seed++), layers);
          if (!carried) continue;
          const DeviceAddress next = Alloc(kG);
          if (held != 0) Free(held);
          held = next;
        }
      }
    }
    EXPECT_EQ(wrong_bytes_, 0);
    EXPECT_GT(manager_->Stats().planned_swap_outs, 0);
    const std::string summary = Summary();
    EXPECT_THAT(summary, HasSubstr("carried out"));
    return summary;
  }

  std::string Summary() {
    std::string all;
    for (const std::string& line : executor_->SummaryLines()) all += line + "\n";
    return all;
  }

  std::unique_ptr<FakeDevice> device_;
  StreamHandle stream_ = 0;
  std::unique_ptr<ResidencyManager> manager_;
  std::unique_ptr<SmallAllocator> small_;
  std::unique_ptr<TraceObserver> trace_;
  TraceWriter* trace_writer_ = nullptr;  // owned by trace_
  std::unique_ptr<PlanExecutor> executor_;
  Config config_;
  int wrong_bytes_ = 0;
};

TEST_F(PlanExecutorTest, WantedByPlannerPoliciesAndProfileOut) {
  Config c;
  c.mode = RunMode::kPlanned;
  EXPECT_TRUE(PlanExecutor::WantedBy(c));
  c.mode = RunMode::kDemand;
  EXPECT_FALSE(PlanExecutor::WantedBy(c));
  c.profile_out = "/tmp/p.json";
  EXPECT_TRUE(PlanExecutor::WantedBy(c));
}

// Enough memory: the iteration is found, profiled under swap-all, planned and carried out; no
// idle interval matters when everything fits (Note [Intervals that matter]), so the plan decides
// over none.
TEST_F(PlanExecutorTest, FindsTheIterationAndPlansIt) {
  Config c;
  c.mode = RunMode::kPlanned;
  c.planned_policy = Policy::kPooch;
  Start(/*limit_granules=*/48, c);
  for (int i = 0; i < 10; ++i) Iteration(static_cast<uint8_t>(10 * i));
  EXPECT_EQ(wrong_bytes_, 0);
  const std::string summary = Summary();
  EXPECT_THAT(summary, HasSubstr("iterations: marker auto profiles 1"));
  EXPECT_THAT(summary, HasSubstr("profiled_under swap-all"));
  EXPECT_THAT(summary, HasSubstr("plan: policy pooch keep 0 swap 0 recompute 0"));
  EXPECT_THAT(summary, HasSubstr("feasible yes"));
  EXPECT_THAT(summary, HasSubstr("carried out"));
  EXPECT_THAT(summary, HasSubstr("plan_run: swapped_maps 0"));
}

// Too little memory for the forward maps: the plan swaps maps out after their last forward use
// and brings them back for backward, and every byte backward reads is right.
TEST_F(PlanExecutorTest, CarriesOutAPlanThatSwaps) {
  Config c;
  c.mode = RunMode::kPlanned;
  c.planned_policy = Policy::kSwapAll;
  Start(/*limit_granules=*/8, c);
  for (int i = 0; i < 10; ++i) Iteration(static_cast<uint8_t>(10 * i));
  EXPECT_EQ(wrong_bytes_, 0);
  const std::string summary = Summary();
  EXPECT_THAT(summary, HasSubstr("plan: policy swap-all"));
  EXPECT_THAT(summary, HasSubstr("carried out"));
  EXPECT_THAT(summary, ::testing::Not(HasSubstr("plan_run: swapped_maps 0 ")));
  EXPECT_GT(manager_->Stats().planned_swap_outs, 0);
}

// Note [Left-out accesses]: a kernel between forward and backward whose words, from the ninth
// iteration on, also point at the first layer's map, which the plan holds on the host then.
// BeforeOp swaps it in; that is no miss of the plan (the safety net's count and the re-plans are
// those of the same run without the stale word), it is counted apart, the map goes back out
// after the kernel, and every byte backward reads is right.
TEST_F(PlanExecutorTest, ASwapInAtAnAccessTheProfileLeftOutIsNoMiss) {
  std::string summaries[2];
  for (int with_stale : {0, 1}) {
    Config c;
    c.mode = RunMode::kPlanned;
    c.planned_policy = Policy::kSwapAll;
    Start(/*limit_granules=*/8, c);
    for (int i = 0; i < 16; ++i) {
      Iteration(static_cast<uint8_t>(10 * i), 4, with_stale != 0 && i >= 8 ? 1 : 0);
    }
    EXPECT_EQ(wrong_bytes_, 0);
    summaries[with_stale] = Summary();
    EXPECT_THAT(summaries[with_stale], HasSubstr("carried out"));
  }
  const auto field = [](const std::string& summary, const std::string& name) {
    const size_t at = summary.find(" " + name + " ");
    EXPECT_NE(at, std::string::npos) << name << " in " << summary;
    return at == std::string::npos ? -1 : std::stoll(summary.substr(at + name.size() + 2));
  };
  EXPECT_EQ(field(summaries[0], "left_out_swap_ins"), 0) << summaries[0];
  EXPECT_GE(field(summaries[1], "left_out_swap_ins"), 8) << summaries[1];
  EXPECT_GE(field(summaries[1], "sent_back"), 8) << summaries[1];
  EXPECT_EQ(field(summaries[1], "safety_net_swap_ins"), field(summaries[0], "safety_net_swap_ins"))
      << summaries[0] << summaries[1];
  EXPECT_EQ(field(summaries[1], "replans"), field(summaries[0], "replans"));
}

// Note [Left-out accesses]: two kernels in a row carry the same stale word (under PyTorch, ops
// that reuse one by-value struct). The first swaps the map in and it is sent back; the second
// finds the plan's swap-out under way or just done and keeps the map without a swap-in; it is
// sent back too, so that the plan's memory holds up to the map's prefetch.
TEST_F(PlanExecutorTest, EachLeftOutAccessToAMapThePlanHoldsOutSendsItBack) {
  Config c;
  c.mode = RunMode::kPlanned;
  c.planned_policy = Policy::kSwapAll;
  Start(/*limit_granules=*/8, c);
  for (int i = 0; i < 16; ++i) {
    Iteration(static_cast<uint8_t>(10 * i), 4, i >= 8 ? 1 : 0, /*stale_ops=*/2);
  }
  EXPECT_EQ(wrong_bytes_, 0);
  const std::string summary = Summary();
  const auto field = [&summary](const std::string& name) {
    const size_t at = summary.find(" " + name + " ");
    EXPECT_NE(at, std::string::npos) << name << " in " << summary;
    return at == std::string::npos ? -1 : std::stoll(summary.substr(at + name.size() + 2));
  };
  EXPECT_GE(field("left_out_swap_ins"), 8) << summary;
  EXPECT_GE(field("sent_back"), 16) << "both kernels' accesses: " << summary;
}

// Note [Switching references]: iterations of two shapes in turn (RunTwoShapesInTurn). The second
// shape departs and is profiled and planned (a re-profile); when the first comes back, it switches
// to the plan kept for it where it parts from the second, with no re-profile, and so on; every byte
// backward reads is still right.
TEST_F(PlanExecutorTest, ARecurringShapeSwitchesToItsPlan) {
  const std::string summary = RunTwoShapesInTurn(/*carried=*/false);
  EXPECT_THAT(summary, HasSubstr("plan_cache: hits 0 misses 2 entries 2 switches 2"));
  EXPECT_THAT(summary, HasSubstr("departures 1 "));
  EXPECT_THAT(summary, HasSubstr("reprofiles 1 "));
}

// Note [Plan cache]: references that carry an allocation across their boundary are not
// switched between, so each change of shape departs and re-profiles. Each shape is profiled and
// planned once; when it comes back, its plan is carried out from the cache (no swap-all pass).
TEST_F(PlanExecutorTest, ARecurringIterationIsPlannedFromTheCache) {
  const std::string summary = RunTwoShapesInTurn(/*carried=*/true);
  EXPECT_THAT(summary, HasSubstr("plan_cache: hits 2 misses 2 entries 2 switches 0"));
  EXPECT_THAT(summary, HasSubstr("profiled_under cache"));
  EXPECT_THAT(summary, HasSubstr("reprofiles 3"));
}

// Note [Diverged iterations]: every iteration has the same events, and its last op reads one of
// three same-sized weights. When the weight changes between iterations (a routed expert), the
// op touches a weight the profiled iteration did not, and the plan's actions stop for the rest
// of that iteration; when it never changes, no iteration diverges. Every byte is right either
// way, under swap-all (whose plan swaps the maps and the weight).
TEST_F(PlanExecutorTest, AnIterationThatReadsAnotherWeightDivergesFromThePlan) {
  for (bool routed : {false, true}) {
    Config c;
    c.mode = RunMode::kPlanned;
    c.planned_policy = Policy::kSwapAll;
    c.iteration_marker = IterationMarker::kSync;
    c.pilot = PilotMode::kOff;
    Start(/*limit_granules=*/10, c);
    const std::vector<DeviceAddress> weights = Weights(3);
    for (int i = 0; i < 24; ++i) {
      Iteration(static_cast<uint8_t>(10 * i), /*layers=*/3);
      const int chosen = routed ? i % 3 : 0;
      const DeviceAddress out = Alloc(2 * kG);
      Op("expert", weights[static_cast<size_t>(chosen)], out, 100 + chosen);
      Free(out);
      executor_->SyncMarker();
    }
    Free(Alloc(kG));  // the program goes on after its last iteration, as programs do
    EXPECT_EQ(wrong_bytes_, 0);
    const std::string summary = Summary();
    EXPECT_THAT(summary, HasSubstr("carried out"));
    if (routed) {
      EXPECT_THAT(summary, ::testing::ContainsRegex("diverged_iterations [1-9]")) << summary;
      // Each routed iteration swaps its chosen weight in on demand, the last one too (an
      // iteration counted once: a marker's iteration start noted twice reported 0 here).
      EXPECT_THAT(summary, ::testing::ContainsRegex("safety_net_last_iteration [1-9]")) << summary;
      // Note [Measured choice]: the plan was tried, set aside for its samples (every byte still
      // right), and a verdict reached.
      EXPECT_THAT(summary, ::testing::ContainsRegex(
                               "choice: tried 1 followed [01] set_aside [01] set_aside_pilot 0 "
                               "set_aside_iterations ([2-9]|[1-9][0-9])\n"))
          << summary;
      EXPECT_THAT(summary, ::testing::Not(HasSubstr("followed 0 set_aside 0")));
    } else {
      EXPECT_THAT(summary, HasSubstr("diverged_iterations 0"));
      EXPECT_THAT(summary, HasSubstr("choice: tried 0 followed 0 set_aside 0 set_aside_pilot 0 "
                                     "set_aside_iterations 0"));
    }
    TearDown();
  }
}

// Not a planner policy: a profile is made (POOCH_PROFILE_OUT) and planned, never carried out.
TEST_F(PlanExecutorTest, ProfileOutAloneCarriesNothingOut) {
  Config c;
  c.mode = RunMode::kDemand;
  c.profile_out = ::testing::TempDir() + "/plan_executor_test_profile.json";
  Start(/*limit_granules=*/8, c);
  for (int i = 0; i < 6; ++i) Iteration(static_cast<uint8_t>(i));
  EXPECT_EQ(wrong_bytes_, 0);
  const std::string summary = Summary();
  EXPECT_THAT(summary, HasSubstr("not carried out (not a planner policy)"));
  EXPECT_THAT(summary, ::testing::Not(HasSubstr("plan_run:")));
  EXPECT_EQ(manager_->Stats().planned_swap_outs, 0);
}

// Note [Op brackets]: an op's profiled time is its call's alone. The fake device runs every
// stream's work in one queue and only copies take time, so a swap-out issued after an op (the
// swap-all pass's, at each map's last forward use) lands inside the op's bracket when the end
// event is recorded after it, and outside when it is recorded as the call returns.
TEST_F(PlanExecutorTest, AnOpsTimeLeavesOutTheSwapOutsIssuedAfterIt) {
  Config c;
  c.mode = RunMode::kPlanned;
  c.planned_policy = Policy::kSwapAll;
  c.profile_out = ::testing::TempDir() + "/plan_executor_test_brackets.json";
  Start(/*limit_granules=*/8, c);
  for (int i = 0; i < 6; ++i) Iteration(static_cast<uint8_t>(10 * i));
  EXPECT_EQ(wrong_bytes_, 0);
  EXPECT_THAT(Summary(), HasSubstr("profiled_under swap-all"));
  std::ifstream in(c.profile_out);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  absl::StatusOr<Profile> profile = ParseProfileJson(json);
  ASSERT_TRUE(profile.ok()) << profile.status();
  double op_us = 0, swap_out_us = 0;
  for (const pooch::Op& op : profile->ops) op_us += op.duration_us;
  for (const Tensor& t : profile->tensors) swap_out_us += std::max(t.swap_out_us, 0.0);
  EXPECT_GT(profile->ops.size(), 0u);
  EXPECT_GT(swap_out_us, 0) << "the pass swapped nothing out: the test shows nothing";
  EXPECT_EQ(op_us, 0) << "swap-outs were counted as op time";
}

// Note [Pilot model]: a mixture of experts whose routing is read back. Each expert is a
// persistent 2-granule weight; the limit holds two of six. An iteration writes its input, reads
// back six scores, and runs the best-scoring expert, whose op count differs per expert: each
// expert's iterations get a plan of their own (Note [Departed references]), which has nothing to
// move (two weights fit), and iterations switch between them; the pilot acts as when no plan is
// followed, the weights being left to demand swapping. The pilot (stump) learns the
// routing from the bytes and prefetches the chosen expert at the read-back, pushing out the
// least likely ones: its demand swap-ins fall below those of the same run without it, and every
// byte the experts read is right. (Shown by this test, not a tuning target: the routing is an
// argmax of six uniform scores, a shape the pilot's unit tests do not use.)
TEST_F(PlanExecutorTest, ThePilotPrefetchesTheExpertTheReadBackChooses) {
  int64_t demand_ins[2] = {0, 0};
  for (PilotMode mode : {PilotMode::kOff, PilotMode::kStump}) {
    Config c;
    c.mode = RunMode::kPlanned;
    c.planned_policy = Policy::kPooch;
    c.iteration_marker = IterationMarker::kSync;
    c.pilot = mode;
    Start(/*limit_granules=*/8, c);
    constexpr int kExperts = 6;
    const std::vector<DeviceAddress> weights = Weights(kExperts);
    uint64_t state = 12345;
    for (int i = 0; i < 200; ++i) {
      const DeviceAddress input = Alloc(2 * kG);
      Op("router", input, input);
      std::vector<float> scores(kExperts);
      for (float& s : scores) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        s = static_cast<float>(state >> 40) / static_cast<float>(1 << 24);
      }
      const int chosen =
          static_cast<int>(std::max_element(scores.begin(), scores.end()) - scores.begin());
      executor_->ReadBack(scores.data(), scores.size() * sizeof(float));
      for (int k = 0; k <= chosen; ++k) {
        Op("expert", weights[static_cast<size_t>(chosen)], input, 100 + chosen);
      }
      Free(input);
      executor_->SyncMarker();
    }
    EXPECT_EQ(wrong_bytes_, 0);
    demand_ins[mode == PilotMode::kOff ? 0 : 1] = manager_->Stats().demand_swap_ins;
    if (mode == PilotMode::kStump) {
      const std::string summary = Summary();
      EXPECT_THAT(summary, HasSubstr("pilot: mode stump blocks 200"));
      EXPECT_GT(manager_->Stats().prefetches, 20) << summary;
    } else {
      EXPECT_THAT(Summary(), ::testing::Not(HasSubstr("pilot:")));
    }
    TearDown();
  }
  // Most iterations follow a cached plan (one per expert), where the pilot does not act; it
  // saves demand swap-ins in the others.
  EXPECT_LT(demand_ins[1] * 100, demand_ins[0] * 85) << demand_ins[0] << " " << demand_ins[1];
}

// Note [Pilot model]: each block the pilot closes is a `pilot block` instant in the trace, named
// by its signature as 16 hex digits (the string outlives the event's write: it was once a view of
// a destroyed temporary, and the trace showed garbage).
TEST_F(PlanExecutorTest, TheTraceNamesEachPilotBlockBySignature) {
  Config c;
  c.mode = RunMode::kPlanned;
  c.planned_policy = Policy::kPooch;
  c.iteration_marker = IterationMarker::kSync;
  c.pilot = PilotMode::kNgram;
  Start(/*limit_granules=*/16, c, /*trace=*/true);
  for (int i = 0; i < 4; ++i) {
    const DeviceAddress input = Alloc(2 * kG);
    Op("router", input, input);
    const float score = static_cast<float>(i);
    executor_->ReadBack(&score, sizeof score);
    Free(input);
    executor_->SyncMarker();
  }
  const std::string trace = TraceContents();
  EXPECT_THAT(trace, HasSubstr("\"pilot block\""));
  EXPECT_THAT(trace, ::testing::ContainsRegex("\"signature\": ?\"[0-9a-f]{16}\""));
  EXPECT_THAT(trace,
              ::testing::Not(::testing::ContainsRegex("\"signature\": ?\"[^\"]{0,15}[^0-9a-f\"]")));
}

}  // namespace
}  // namespace pooch
