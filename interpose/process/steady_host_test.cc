// SteadyHost (Note [Steady iterations]): which iterations are steady, and their means.
#include "interpose/process/steady_host.h"

#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

// The sums after `ops` ms of op hooks and `creates` cuMemCreate calls.
HostSnapshot At(int64_t ops_ms, int64_t creates) {
  HostSnapshot s;
  s.hooks.of[static_cast<size_t>(HookWork::kOp)] = {ops_ms, ops_ms * 1000000};
  s.memory_calls.of[static_cast<size_t>(MemoryCall::kMemCreate)] = creates;
  return s;
}

constexpr SteadyHost::Start kPlan1{.following = true, .plan = 1};
constexpr SteadyHost::Start kPlan2{.following = true, .plan = 2};
constexpr SteadyHost::Start kNoPlan{};

double OpMs(const SteadyHost::PerIteration& p) {
  return p.hook_ms[static_cast<size_t>(HookWork::kOp)];
}
double Creates(const SteadyHost::PerIteration& p) {
  return p.memory_calls[static_cast<size_t>(MemoryCall::kMemCreate)];
}

TEST(SteadyHostTest, NothingBeforeAPlanIsFollowedTwice) {
  SteadyHost steady;
  EXPECT_FALSE(steady.PerIterationMean().has_value());
  steady.IterationStarted(kNoPlan, At(0, 0));
  steady.IterationStarted(kNoPlan, At(10, 50));
  steady.IterationStarted(kPlan1, At(20, 100));  // the profiling iterations end
  steady.IterationStarted(kPlan1, At(30, 110));  // the plan's first iteration ends: not steady
  EXPECT_FALSE(steady.PerIterationMean().has_value());
}

// The profiling and first planned iterations' calls are left out; the steady ones averaged.
TEST(SteadyHostTest, MeansOverTheSteadyIterations) {
  SteadyHost steady;
  steady.IterationStarted(kNoPlan, At(0, 0));
  steady.IterationStarted(kPlan1, At(10, 50));
  steady.IterationStarted(kPlan1, At(20, 60));
  steady.IterationStarted(kPlan1, At(23, 60));  // steady: 3 ms, no create
  steady.IterationStarted(kPlan1, At(28, 62));  // steady: 5 ms, two creates
  const std::optional<SteadyHost::PerIteration> p = steady.PerIterationMean();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->iterations, 2);
  EXPECT_DOUBLE_EQ(OpMs(*p), 4.0);
  EXPECT_DOUBLE_EQ(Creates(*p), 1.0);
  EXPECT_DOUBLE_EQ(p->host_ms(), 4.0);
}

// A departed iteration is not steady, and the run starts again after it.
TEST(SteadyHostTest, ADepartureStartsTheRunAgain) {
  SteadyHost steady;
  steady.IterationStarted(kPlan1, At(0, 0));
  steady.IterationStarted(kPlan1, At(10, 0));
  steady.IterationStarted(kPlan1, At(11, 0));  // steady: 1 ms
  steady.Departed();
  steady.IterationStarted(kPlan1, At(111, 100));  // departed: left out
  steady.IterationStarted(kPlan1, At(113, 100));  // after a departure: not steady yet
  steady.IterationStarted(kPlan1, At(116, 101));  // steady: 3 ms, one create
  const std::optional<SteadyHost::PerIteration> p = steady.PerIterationMean();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->iterations, 1);
  EXPECT_DOUBLE_EQ(OpMs(*p), 3.0);
  EXPECT_DOUBLE_EQ(Creates(*p), 1.0);
}

// A new plan's iterations replace the old plan's run; one whose plan changed under it is not
// steady.
TEST(SteadyHostTest, ANewPlanStartsTheRunAgain) {
  SteadyHost steady;
  steady.IterationStarted(kPlan1, At(0, 0));
  steady.IterationStarted(kPlan1, At(10, 0));
  steady.IterationStarted(kPlan1, At(20, 0));  // steady under plan 1: 10 ms
  steady.IterationStarted(kPlan2, At(70, 9));  // re-planned during it: not steady
  steady.IterationStarted(kPlan2, At(80, 9));  // plan 2's first: not steady
  EXPECT_EQ(steady.PerIterationMean()->iterations, 1);
  EXPECT_DOUBLE_EQ(OpMs(*steady.PerIterationMean()), 10.0);
  steady.IterationStarted(kPlan2, At(82, 9));  // steady under plan 2: 2 ms
  steady.IterationStarted(kPlan2, At(86, 9));  // 4 ms
  const std::optional<SteadyHost::PerIteration> p = steady.PerIterationMean();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->iterations, 2);
  EXPECT_DOUBLE_EQ(OpMs(*p), 3.0);
  EXPECT_DOUBLE_EQ(Creates(*p), 0.0);
}

}  // namespace
}  // namespace pooch::interpose
