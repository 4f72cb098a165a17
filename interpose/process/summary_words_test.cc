// The summary in words (Note [Summary in words]): the plain lines for a run with a plan, one
// without trouble, one with no manager, and the JSON object's figures and detail.
#include "interpose/process/summary_words.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

SummaryFacts PlannedRun() {
  SummaryFacts f;
  f.policy = "pooch";
  f.managed = true;
  f.limit_bytes = int64_t{3} << 30;
  f.limit_fraction = 0.375;
  f.device_total_bytes = int64_t{8} << 30;
  f.memory.peak_device_bytes = int64_t{3} << 29;
  f.memory.peak_host_bytes = int64_t{1} << 20;
  f.memory.swap_outs = 12;
  f.memory.bytes_swapped_out = int64_t{5} << 29;
  f.memory.swap_ins = 1;
  f.memory.bytes_swapped_in = 2048;
  f.memory.out_of_memory = 2;
  Recomputer::Stats r;
  r.drops = 4;
  r.replays = 3;
  f.recompute = r;
  PlanExecutor::Outcome o;
  o.plan = PlanCounts{.policy = "pooch",
                      .keep = 7,
                      .swap = 5,
                      .recompute = 3,
                      .predicted_iteration_ms = 12.25,
                      .feasible = true};
  o.plan_line = "plan: policy pooch keep 7 swap 5 recompute 3";
  o.carried_out = true;
  o.measured_iteration_ms = 13.5;
  o.profiles = 1;
  o.safety_net_swap_ins = 1;
  o.replans = 2;
  f.plan = o;
  return f;
}

TEST(SummaryWords, PlannedRun) {
  EXPECT_THAT(
      PlainLines(PlannedRun()),
      ElementsAre("limit 3.00 GiB (37.5% of the device's 8.00 GiB), policy pooch: peak 1.50 GiB "
                  "on the device, 1.00 MiB in host memory",
                  "moved 2.50 GiB to host memory and 2.00 KiB back (12 swap-outs, 1 swap-in); "
                  "dropped 4 maps and recomputed 3 maps",
                  "plan of policy pooch: keep 7, swap 5, recompute 3 intervals; iteration "
                  "predicted 12.250 ms, measured 13.500 ms",
                  "went wrong: 1 safety-net swap-in, 2 re-plans, 2 allocations or ops refused "
                  "for want of memory"));
}

TEST(SummaryWords, NothingMovedNoPlanNothingWrong) {
  SummaryFacts f;
  f.policy = "pooch";
  f.managed = true;
  f.limit_bytes = 1 << 30;
  PlanExecutor::Outcome o;
  o.plan_line = "plan: none: no profile: the iteration has no op";
  f.plan = o;
  EXPECT_THAT(PlainLines(f),
              ElementsAre("limit 1.00 GiB, policy pooch: peak 0 B on the device, 0 B in host "
                          "memory",
                          "moved nothing: everything stayed on the device",
                          "no plan: no profile: the iteration has no op", "nothing went wrong"));
}

TEST(SummaryWords, NoManager) {
  SummaryFacts f;
  f.policy = "off";
  EXPECT_THAT(PlainLines(f),
              ElementsAre("policy off: no device memory managed (every call passed through)"));
}

// No plain line starts with a detailed line's topic (Note [Summary in words]).
TEST(SummaryWords, PlainLinesAreNoDetailedTopic) {
  for (const std::string& line : PlainLines(PlannedRun())) {
    const std::string first = line.substr(0, line.find(' '));
    EXPECT_EQ(first.find(':'), std::string::npos) << line;
  }
}

TEST(SummaryWords, Json) {
  const std::string json = SummaryJson(
      PlannedRun(), {"summary: policy pooch", "memory: limit 3221225472 peak_device_bytes 7",
                     "swaps: out 12 (2684354560 bytes) in 1 (2048 bytes) wait_ms 1.500",
                     "plan: policy pooch keep 7 plan_s 0.010; carried out",
                     "recompute: replays 3 replay_ms 1.000 (profiled time of the replayed calls)",
                     "calls: cuMemAlloc_v2 3 (+1 nested)", "calls: cudaFree 2 (+0 nested)"});
  EXPECT_THAT(json, HasSubstr("{\"policy\": \"pooch\", \"managed\": true, \"limit_bytes\": "
                              "3221225472, \"limit_percent\": 37.5, \"device_total_bytes\": "
                              "8589934592, \"peak_device_bytes\": 1610612736"));
  EXPECT_THAT(json, HasSubstr("\"recomputed\": 3"));
  EXPECT_THAT(json, HasSubstr("\"profiling\": {\"plan\": {\"policy\": \"pooch\", \"keep\": 7, "
                              "\"swap\": 5, \"recompute\": 3, \"predicted_iteration_ms\": 12.250, "
                              "\"feasible\": true}"));
  EXPECT_THAT(json, HasSubstr("\"measured_iteration_ms\": 13.500"));
  EXPECT_THAT(json, HasSubstr("\"safety_net_swap_ins\": 1, \"replans\": 2"));
  EXPECT_THAT(json, HasSubstr("\"lines\": [\"limit 3.00 GiB (37.5% of"));
  EXPECT_THAT(json, HasSubstr("\"memory\": {\"text\": \"limit 3221225472 peak_device_bytes 7\", "
                              "\"limit\": 3221225472, \"peak_device_bytes\": 7}"));
  EXPECT_THAT(json, HasSubstr("\"out\": 12, \"out_bytes\": 2684354560, \"in\": 1, \"in_bytes\": "
                              "2048, \"wait_ms\": 1.500}"));
  EXPECT_THAT(json, HasSubstr("\"policy\": \"pooch\", \"keep\": 7, \"plan_s\": 0.010}"));
  EXPECT_THAT(json, HasSubstr("\"replays\": 3, \"replay_ms\": 1.000}"));
  EXPECT_THAT(json, HasSubstr("\"calls\": {\"cuMemAlloc_v2\": {\"top\": 3, \"nested\": 1}, "
                              "\"cudaFree\": {\"top\": 2, \"nested\": 0}}}"));
  EXPECT_EQ(json.back(), '\n');
}

TEST(SummaryWords, JsonNamesTheRank) {
  SummaryFacts f = PlannedRun();
  EXPECT_THAT(SummaryJson(f, {}), Not(HasSubstr("\"rank\"")));
  f.rank = 1;
  EXPECT_THAT(SummaryJson(f, {}),
              HasSubstr("{\"policy\": \"pooch\", \"rank\": 1, \"managed\": true"));
}

}  // namespace
}  // namespace pooch::interpose
