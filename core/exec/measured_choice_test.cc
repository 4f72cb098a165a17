#include "core/exec/measured_choice.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using Mode = MeasuredChoice::Mode;

TEST(MeasuredChoice, APlanThatNeverDivergedIsFollowed) {
  MeasuredChoice c;
  EXPECT_EQ(c.ModeFor(7), Mode::kFollow);
  EXPECT_EQ(c.Sample(7, Mode::kFollow, 1.0), std::nullopt);  // not tried: no sample is kept
  EXPECT_EQ(c.ModeFor(7), Mode::kFollow);
  EXPECT_EQ(c.SummaryLine(0), "choice: tried 0 set_aside 0 followed 0 set_aside_iterations 0");
}

// Followed first, then set aside, then the faster mode for good; each plan on its own.
TEST(MeasuredChoice, TheFasterModeWins) {
  for (bool aside_faster : {false, true}) {
    MeasuredChoice c;
    c.Diverged(1);
    c.Diverged(1);  // once
    EXPECT_EQ(c.ModeFor(1), Mode::kFollow);
    EXPECT_EQ(c.ModeFor(2), Mode::kFollow);  // another plan is not tried
    for (int i = 0; i < MeasuredChoice::kSamples; ++i) {
      EXPECT_EQ(c.ModeFor(1), Mode::kFollow);
      EXPECT_EQ(c.Sample(1, Mode::kFollow, 2.0 + 0.1 * i), std::nullopt);
    }
    EXPECT_EQ(c.ModeFor(1), Mode::kSetAside);
    const double aside_ms = aside_faster ? 1.5 : 2.5;
    std::optional<Mode> verdict;
    for (int i = 0; i < MeasuredChoice::kSamples; ++i) {
      EXPECT_EQ(verdict, std::nullopt);
      verdict = c.Sample(1, Mode::kSetAside, aside_ms);
    }
    const Mode want = aside_faster ? Mode::kSetAside : Mode::kFollow;
    EXPECT_EQ(verdict, want);
    EXPECT_EQ(c.ModeFor(1), want);
    // Later samples change nothing.
    EXPECT_EQ(c.Sample(1, Mode::kFollow, 100.0), std::nullopt);
    EXPECT_EQ(c.ModeFor(1), want);
    EXPECT_EQ(c.SummaryLine(5),
              aside_faster ? "choice: tried 1 set_aside 1 followed 0 set_aside_iterations 5"
                           : "choice: tried 1 set_aside 0 followed 1 set_aside_iterations 5");
  }
}

TEST(MeasuredChoice, ATieKeepsThePlan) {
  MeasuredChoice c;
  c.Diverged(3);
  std::optional<Mode> verdict;
  for (int i = 0; i < MeasuredChoice::kSamples; ++i) c.Sample(3, Mode::kFollow, 4.0);
  for (int i = 0; i < MeasuredChoice::kSamples; ++i) verdict = c.Sample(3, Mode::kSetAside, 4.0);
  EXPECT_EQ(verdict, Mode::kFollow);
}

// Samples in either order count: set-aside samples that come before the followed ones (a pair
// resolved late) still need kSamples of each.
TEST(MeasuredChoice, TheVerdictWaitsForBothModes) {
  MeasuredChoice c;
  c.Diverged(4);
  for (int i = 0; i < 3 * MeasuredChoice::kSamples; ++i) {
    EXPECT_EQ(c.Sample(4, Mode::kSetAside, 1.0), std::nullopt);
  }
  for (int i = 0; i + 1 < MeasuredChoice::kSamples; ++i) {
    EXPECT_EQ(c.Sample(4, Mode::kFollow, 3.0), std::nullopt);
  }
  EXPECT_EQ(c.Sample(4, Mode::kFollow, 3.0), Mode::kSetAside);
}

}  // namespace
}  // namespace pooch
