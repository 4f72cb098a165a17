#include "core/measure/iteration_modes.h"

#include "gtest/gtest.h"

namespace pooch {
namespace {

using Mode = MeasuredChoice::Mode;

TEST(IterationModesTest, TheFirstIterationOfAModeOrPlanIsNoSample) {
  IterationModes modes;
  modes.Start(1, Mode::kFollow);
  EXPECT_FALSE(modes.ended().sample.has_value()) << "nothing ran before";
  modes.Start(1, Mode::kFollow);
  EXPECT_FALSE(modes.ended().sample.has_value()) << "the plan's first iteration";
  modes.Start(1, Mode::kSetAside);
  EXPECT_EQ(modes.ended().plan_key, 1u);
  EXPECT_EQ(modes.ended().sample, Mode::kFollow);
  modes.Start(1, Mode::kSetAside);
  EXPECT_FALSE(modes.ended().sample.has_value()) << "the first set-aside iteration";
  modes.Start(2, Mode::kSetAside);
  EXPECT_EQ(modes.ended().sample, Mode::kSetAside);
  modes.Start(2, Mode::kSetAside);
  EXPECT_FALSE(modes.ended().sample.has_value()) << "the other plan's first iteration";
  EXPECT_EQ(modes.ended().plan_key, 2u);
  EXPECT_EQ(modes.set_aside_iterations(), 4);
}

TEST(IterationModesTest, ANewPlanIsFollowedAndItsFirstIterationIsNoSample) {
  IterationModes modes;
  modes.Start(1, Mode::kSetAsidePilot);
  modes.Start(1, Mode::kSetAsidePilot);
  EXPECT_EQ(modes.mode(), Mode::kSetAsidePilot);
  modes.PlanInstalled();
  EXPECT_EQ(modes.mode(), Mode::kFollow);
  modes.Start(1, Mode::kFollow);
  EXPECT_FALSE(modes.ended().sample.has_value());
  modes.Start(1, Mode::kFollow);
  EXPECT_EQ(modes.ended().sample, Mode::kFollow);
}

}  // namespace
}  // namespace pooch
