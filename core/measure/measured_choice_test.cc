#include "core/measure/measured_choice.h"

#include "gtest/gtest.h"

namespace pooch {
namespace {

using Mode = MeasuredChoice::Mode;

TEST(MeasuredChoice, APlanThatNeverDivergedIsFollowed) {
  MeasuredChoice c(/*pilot=*/true);
  EXPECT_EQ(c.ModeFor(7), Mode::kFollow);
  EXPECT_EQ(c.Sample(7, Mode::kFollow, 1.0), std::nullopt);  // not tried: no sample is kept
  EXPECT_EQ(c.ModeFor(7), Mode::kFollow);
  EXPECT_EQ(c.SummaryLine(0),
            "choice: tried 0 followed 0 set_aside 0 set_aside_pilot 0 set_aside_iterations 0");
}

// Each mode in turn for kSamples timed iterations, then the fastest for good; each plan on its
// own.
TEST(MeasuredChoice, TheFastestModeWins) {
  const Mode modes[] = {Mode::kFollow, Mode::kSetAside, Mode::kSetAsidePilot};
  for (int fastest = 0; fastest < 3; ++fastest) {
    MeasuredChoice c(/*pilot=*/true);
    c.Diverged(1);
    c.Diverged(1);                           // once
    EXPECT_EQ(c.ModeFor(2), Mode::kFollow);  // another plan is not tried
    std::optional<Mode> verdict;
    for (Mode m : modes) {
      for (int i = 0; i < MeasuredChoice::kSamples; ++i) {
        EXPECT_EQ(verdict, std::nullopt);
        EXPECT_EQ(c.ModeFor(1), m);
        const double ms = static_cast<int>(m) == fastest ? 1.0 : 2.0 + 0.1 * i;
        verdict = c.Sample(1, m, ms);
      }
    }
    EXPECT_EQ(verdict, modes[fastest]);
    EXPECT_EQ(c.ModeFor(1), modes[fastest]);
    // Later samples change nothing.
    EXPECT_EQ(c.Sample(1, Mode::kFollow, 0.1), std::nullopt);
    EXPECT_EQ(c.ModeFor(1), modes[fastest]);
    const char* const want[] = {
        "choice: tried 1 followed 1 set_aside 0 set_aside_pilot 0 set_aside_iterations 5",
        "choice: tried 1 followed 0 set_aside 1 set_aside_pilot 0 set_aside_iterations 5",
        "choice: tried 1 followed 0 set_aside 0 set_aside_pilot 1 set_aside_iterations 5"};
    EXPECT_EQ(c.SummaryLine(5), want[fastest]);
  }
}

// Without a pilot there is no third mode: the verdict comes after two.
TEST(MeasuredChoice, WithoutAPilotTwoModesAreTried) {
  MeasuredChoice c(/*pilot=*/false);
  c.Diverged(3);
  std::optional<Mode> verdict;
  for (int i = 0; i < MeasuredChoice::kSamples; ++i) verdict = c.Sample(3, Mode::kFollow, 4.0);
  EXPECT_EQ(c.ModeFor(3), Mode::kSetAside);
  for (int i = 0; i < MeasuredChoice::kSamples; ++i) verdict = c.Sample(3, Mode::kSetAside, 3.0);
  EXPECT_EQ(verdict, Mode::kSetAside);
  EXPECT_EQ(c.Sample(3, Mode::kSetAsidePilot, 1.0), std::nullopt);
}

TEST(MeasuredChoice, ATieKeepsTheEarlierMode) {
  MeasuredChoice c(/*pilot=*/true);
  c.Diverged(3);
  std::optional<Mode> verdict;
  for (Mode m : {Mode::kFollow, Mode::kSetAside, Mode::kSetAsidePilot}) {
    for (int i = 0; i < MeasuredChoice::kSamples; ++i) verdict = c.Sample(3, m, 4.0);
  }
  EXPECT_EQ(verdict, Mode::kFollow);
}

// Samples in any order count (a pair resolved late): the verdict waits for kSamples of each.
TEST(MeasuredChoice, TheVerdictWaitsForEveryMode) {
  MeasuredChoice c(/*pilot=*/true);
  c.Diverged(4);
  for (int i = 0; i < 3 * MeasuredChoice::kSamples; ++i) {
    EXPECT_EQ(c.Sample(4, Mode::kSetAside, 1.0), std::nullopt);
    EXPECT_EQ(c.Sample(4, Mode::kSetAsidePilot, 2.0), std::nullopt);
  }
  for (int i = 0; i + 1 < MeasuredChoice::kSamples; ++i) {
    EXPECT_EQ(c.Sample(4, Mode::kFollow, 3.0), std::nullopt);
  }
  EXPECT_EQ(c.Sample(4, Mode::kFollow, 3.0), Mode::kSetAside);
}

}  // namespace
}  // namespace pooch
