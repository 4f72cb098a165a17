// Tests of PlanLife (plan_life.h) on a synthetic conv net's profile: what a plan, the cache, a
// re-plan with headroom and a switch leave current.
#include "core/exec/plan_life.h"

#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/profile/profile_builder_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using Kind = StreamEvent::Kind;
using ::testing::HasSubstr;

constexpr int64_t kLimit = int64_t{1} << 30;  // the manager's limit: the net fits with room

BuiltProfile ConvNetProfile(int layers) {
  testing::ConvNetIds ids;
  absl::StatusOr<BuiltProfile> built = BuildProfile(testing::ConvNet(layers, 1 << 20, &ids));
  EXPECT_TRUE(built.ok()) << built.status();
  return *std::move(built);
}

std::vector<StreamEvent> Reference(uint64_t signature) {
  return {{Kind::kOp, signature, 0}, {Kind::kAlloc, 2, 7, 64}, {Kind::kFree, 3, 7}};
}

class PlanLifeTest : public ::testing::Test {
 protected:
  PlanLifeTest() {
    config_.mode = RunMode::kPlanned;
    config_.planned_policy = Policy::kPooch;
    MachineModel machine;
    machine.name = "test";
    machine.memory_bytes = kLimit;
    machine.h2d_gbps = machine.d2h_gbps = 12;
    life_.SetMachine(machine, /*assumed=*/false);
  }

  // A new reference planned, as the executor plans one that is not cached.
  std::optional<PlanResult> PlanNew(uint64_t signature, int layers) {
    EXPECT_EQ(life_.FindCached(Reference(signature)), nullptr);
    life_.SetProfile(ConvNetProfile(layers), OpStreamRecorder::Positions{});
    std::optional<PlanResult> plan = life_.PlanProfile();
    life_.Cache(plan);
    life_.RestartEvidence();
    return plan;
  }

  Config config_;
  PlanLife life_{config_, nullptr};
};

TEST_F(PlanLifeTest, APlanIsCachedByItsReference) {
  ASSERT_TRUE(PlanNew(1, 2).has_value());
  EXPECT_TRUE(absl::StartsWith(life_.plan_line(), "plan: policy pooch keep ")) << life_.plan_line();
  EXPECT_THAT(life_.plan_line(), HasSubstr("headroom_bytes 0 replans 0"));
  const PlanCache::Entry* hit = life_.FindCached(Reference(1));
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->plan_line, life_.plan_line());
  EXPECT_TRUE(hit->plan.has_value());
  EXPECT_EQ(hit->built.get(), life_.built()) << "the entry shares the profile";
  EXPECT_EQ(life_.FindCached(Reference(9)), nullptr);
  EXPECT_EQ(life_.CacheLine(), "plan_cache: hits 1 misses 2 entries 1 switches 0");
}

TEST_F(PlanLifeTest, NoProfileSaysWhy) {
  life_.NoProfile(absl::FailedPreconditionError("no ops"));
  EXPECT_EQ(life_.plan_line(), "plan: none: no profile: no ops");
  life_.SetPlanLineIfNone("plan: none yet");
  EXPECT_EQ(life_.plan_line(), "plan: none: no profile: no ops") << "a line was there";
}

// Note [Headroom]: evidence is two successive whole iterations with safety-net hits, from the
// plan's second iteration on. The net fits in the limit, so no interval is a candidate and each
// re-plan grows the headroom by 1/64 of the limit.
TEST_F(PlanLifeTest, ReplansWithHeadroomOnlyAfterTwoMissedIterationsInARow) {
  ASSERT_TRUE(PlanNew(1, 2).has_value());
  EXPECT_FALSE(life_.ReplanIfMissed(0, kLimit, false).has_value());  // first iteration starts
  EXPECT_EQ(life_.last_iteration_hits(), -1);
  EXPECT_FALSE(life_.ReplanIfMissed(5, kLimit, false).has_value());  // the first does not count
  EXPECT_EQ(life_.last_iteration_hits(), 5);
  EXPECT_FALSE(life_.ReplanIfMissed(7, kLimit, false).has_value()) << "one missed iteration";
  EXPECT_EQ(life_.last_iteration_hits(), 2);
  EXPECT_FALSE(life_.ReplanIfMissed(7, kLimit, false).has_value());  // no hit in the last
  EXPECT_EQ(life_.last_iteration_hits(), 0);
  EXPECT_FALSE(life_.ReplanIfMissed(8, kLimit, false).has_value()) << "one missed iteration";
  EXPECT_FALSE(life_.ReplanIfMissed(9, kLimit, true).has_value()) << "not in a swap-all pass";
  EXPECT_FALSE(life_.ReplanIfMissed(9, kLimit, false).has_value());  // no hit in the last
  EXPECT_FALSE(life_.ReplanIfMissed(10, kLimit, false).has_value()) << "one missed iteration";
  std::optional<PlanResult> replan = life_.ReplanIfMissed(11, kLimit, false);
  ASSERT_TRUE(replan.has_value()) << "two missed iterations in a row";
  EXPECT_TRUE(replan->sim.feasible);
  EXPECT_THAT(life_.plan_line(),
              HasSubstr(absl::StrCat("headroom_bytes ", kLimit / 64, " replans 1")));
  // The iteration starting now is the re-plan's first: it does not count, then two missed ones.
  EXPECT_FALSE(life_.ReplanIfMissed(13, kLimit, false).has_value());
  EXPECT_FALSE(life_.ReplanIfMissed(15, kLimit, false).has_value());
  EXPECT_TRUE(life_.ReplanIfMissed(17, kLimit, false).has_value());
}

// A departure (or a new plan) starts the evidence again: a missed iteration before it and one
// after it are not two in a row.
TEST_F(PlanLifeTest, ARestartBreaksTheRow) {
  ASSERT_TRUE(PlanNew(1, 2).has_value());
  EXPECT_FALSE(life_.ReplanIfMissed(0, kLimit, false).has_value());
  EXPECT_FALSE(life_.ReplanIfMissed(1, kLimit, false).has_value());
  EXPECT_FALSE(life_.ReplanIfMissed(2, kLimit, false).has_value());  // one missed iteration
  life_.RestartEvidence();
  EXPECT_FALSE(life_.ReplanIfMissed(3, kLimit, false).has_value());
  EXPECT_FALSE(life_.ReplanIfMissed(4, kLimit, false).has_value());
  EXPECT_FALSE(life_.ReplanIfMissed(5, kLimit, false).has_value());  // one missed iteration
  EXPECT_TRUE(life_.ReplanIfMissed(6, kLimit, false).has_value());
}

// Note [Headroom]: slabs the small allocator mapped beyond the profile's "other" tensor are not
// the plan's: with a peak as large as the limit nothing fits.
TEST_F(PlanLifeTest, PlansWithoutTheSlabsTheProfileDidNotCount) {
  ASSERT_TRUE(PlanNew(1, 2).has_value());
  EXPECT_THAT(life_.plan_line(), HasSubstr("feasible yes"));
  life_.SetSlabPeak(kLimit);
  std::optional<PlanResult> plan = PlanNew(2, 2);
  EXPECT_FALSE(plan.has_value() && plan->sim.feasible) << life_.plan_line();
}

TEST_F(PlanLifeTest, ReplansStopAtTheirBound) {
  ASSERT_TRUE(PlanNew(1, 2).has_value());
  int replans = 0;
  for (int64_t hits = 0; hits < 100; hits += 3) {
    if (life_.ReplanIfMissed(hits, kLimit, false).has_value()) ++replans;
  }
  EXPECT_EQ(replans, PlanLife::kMaxReplans);
  EXPECT_THAT(life_.plan_line(),
              HasSubstr(absl::StrCat("headroom_bytes ", PlanLife::kMaxReplans * (kLimit / 64),
                                     " replans ", PlanLife::kMaxReplans)));
}

// Note [Switching references]: the switched-to entry's plan line and key become current, and a
// re-plan needs two missed whole iterations under it.
TEST_F(PlanLifeTest, ASwitchTakesTheCachedPlan) {
  ASSERT_TRUE(PlanNew(1, 2).has_value());
  const std::string first_line = life_.plan_line();
  const uint64_t first_key = life_.key();
  ASSERT_TRUE(PlanNew(2, 3).has_value());
  EXPECT_NE(life_.key(), first_key);
  EXPECT_EQ(life_.Switchable(12345), nullptr);
  const PlanCache::Entry* entry = life_.Switchable(first_key);
  ASSERT_NE(entry, nullptr);
  life_.SwitchedTo(first_key, *entry);
  EXPECT_EQ(life_.key(), first_key);
  EXPECT_EQ(life_.plan_line(), first_line);
  EXPECT_EQ(life_.built(), entry->built.get());
  EXPECT_THAT(life_.CacheLine(), HasSubstr("switches 1"));
  EXPECT_FALSE(life_.ReplanIfMissed(0, kLimit, false).has_value());
  EXPECT_FALSE(life_.ReplanIfMissed(5, kLimit, false).has_value());
  EXPECT_FALSE(life_.ReplanIfMissed(10, kLimit, false).has_value());
  EXPECT_TRUE(life_.ReplanIfMissed(15, kLimit, false).has_value());
}

}  // namespace
}  // namespace pooch
