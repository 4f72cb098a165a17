#include "core/plot/plot_script.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/model/candidates.h"
#include "core/model/machines.h"
#include "core/plan/plan.h"
#include "core/zoo/zoo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The rows of datablock $name in `script` (between "$name << EOD" and "EOD").
std::vector<std::string> Block(const std::string& script, const std::string& name) {
  std::vector<std::string> rows;
  bool in = false;
  for (absl::string_view line : absl::StrSplit(script, '\n')) {
    if (!in) {
      in = line == "$" + name + " << EOD";
      continue;
    }
    if (line == "EOD") return rows;
    rows.emplace_back(line);
  }
  ADD_FAILURE() << "no datablock $" << name;
  return rows;
}

// A profile of two ops, enough for SortLanes: op 0 forward, op 1 backward; tensor 1 of 1 GiB.
Profile TwoOps() {
  Profile p;
  p.name = "two";
  p.tensors.resize(2);
  p.tensors[0].id = 0;
  p.tensors[1].id = 1;
  p.tensors[1].bytes = int64_t{1} << 30;
  p.ops.resize(2);
  p.ops[0].phase = Phase::kForward;
  p.ops[1].phase = Phase::kBackward;
  return p;
}

TEST(MemoryStepsTest, HoldsEachLevelUntilTheNextSample) {
  const std::vector<MemorySample> samples = {
      {0, int64_t{1} << 30}, {1000, int64_t{3} << 30}, {2500, int64_t{2} << 30}};
  EXPECT_THAT(MemorySteps(samples, 4000),
              ElementsAre(PlotPoint{0, 1}, PlotPoint{1, 1}, PlotPoint{1, 3}, PlotPoint{2.5, 3},
                          PlotPoint{2.5, 2}, PlotPoint{4, 2}));
}

TEST(MemoryStepsTest, EndsAtTheLastSampleWhenItIsLater) {
  EXPECT_THAT(MemorySteps({{0, 0}, {5000, int64_t{1} << 30}}, 2000),
              ElementsAre(PlotPoint{0, 0}, PlotPoint{5, 0}, PlotPoint{5, 1}, PlotPoint{5, 1}));
}

TEST(MemoryStepsTest, InTheGivenUnit) {
  EXPECT_THAT(MemorySteps({{0, int64_t{3} << 20}}, 1000, kPlotMiB),
              ElementsAre(PlotPoint{0, 3}, PlotPoint{1, 3}));
}

TEST(MemoryStepsTest, NoSamplesNoPoints) { EXPECT_TRUE(MemorySteps({}, 1000).empty()); }

TEST(SortLanesTest, EachKindOnItsLaneInStartOrder) {
  const Profile p = TwoOps();
  const std::vector<SimEvent> events = {
      {SimEvent::Kind::kCompute, 0, -1, -1, 0, 10},  {SimEvent::Kind::kSwapOut, 0, 1, -1, 10, 30},
      {SimEvent::Kind::kCompute, 1, -1, -1, 40, 50}, {SimEvent::Kind::kRecompute, 0, 1, 1, 30, 40},
      {SimEvent::Kind::kSwapIn, 1, 1, -1, 35, 38},   {SimEvent::Kind::kSwapIn, 0, 1, -1, 20, 25},
      {SimEvent::Kind::kCompute, 7, -1, -1, 50, 60},  // no such op: backward
  };
  const ActivityLanes lanes = SortLanes(p, events);
  EXPECT_THAT(lanes.forward, ElementsAre(LaneBar{0, 10}));
  EXPECT_THAT(lanes.backward, ElementsAre(LaneBar{40, 50}, LaneBar{50, 60}));
  EXPECT_THAT(lanes.recompute, ElementsAre(LaneBar{30, 40}));
  EXPECT_THAT(lanes.swap_out, ElementsAre(LaneBar{10, 30}));
  EXPECT_THAT(lanes.swap_in, ElementsAre(LaneBar{20, 25}, LaneBar{35, 38}));
  EXPECT_EQ(lanes.swap_out_bytes, int64_t{1} << 30);
  EXPECT_EQ(lanes.swap_in_bytes, int64_t{2} << 30);
  EXPECT_DOUBLE_EQ(lanes.recompute_us, 10);
}

TEST(GnuplotQuotingTest, DoubleAndSingleQuotes) {
  EXPECT_EQ(GnuplotDoubleQuoted("a \"b\" c\\d\ne"), "\"a \\\"b\\\" c\\\\d e\"");
  EXPECT_EQ(GnuplotSingleQuoted("/tmp/it's.png"), "'/tmp/it''s.png'");
}

TEST(PlotScriptTest, HandMadeSimulations) {
  const Profile p = TwoOps();
  SimResult in_core;
  in_core.feasible = false;
  in_core.iteration_us = 50;
  in_core.peak_bytes = int64_t{3} << 30;
  in_core.memory = {{0, int64_t{1} << 30}, {10, int64_t{3} << 30}, {50, 0}};
  in_core.events = {{SimEvent::Kind::kCompute, 0, -1, -1, 0, 10}};
  SimResult plan;
  plan.feasible = true;
  plan.iteration_us = 60;
  plan.peak_bytes = int64_t{2} << 30;
  plan.memory = {{0, int64_t{1} << 30}, {10, int64_t{2} << 30}, {60, 0}};
  plan.events = {{SimEvent::Kind::kCompute, 0, -1, -1, 0, 10},
                 {SimEvent::Kind::kSwapOut, 0, 1, -1, 10, 30},
                 {SimEvent::Kind::kSwapOut, 0, 1, -1, 30, 35},
                 {SimEvent::Kind::kSwapOut, 0, 1, -1, 35, 45},
                 {SimEvent::Kind::kCompute, 1, -1, -1, 40, 60}};
  PlotText text;
  text.output_path = "/tmp/o'ut.png";
  text.title = "two \"ops\"";
  text.plan_label = "swap-all";
  text.capacity_bytes = int64_t{2} << 30;
  const std::string s = PlotScript(text, p, in_core, plan);

  EXPECT_THAT(s, HasSubstr("set output '/tmp/o''ut.png'\n"));
  EXPECT_THAT(s, HasSubstr("pngcairo"));
  // Memory as steps, in ms and GiB, to the end of each iteration.
  EXPECT_THAT(Block(s, "incore"),
              ElementsAre("0.0000 1.000000", "0.0100 1.000000", "0.0100 3.000000",
                          "0.0500 3.000000", "0.0500 0.000000", "0.0500 0.000000"));
  EXPECT_EQ(Block(s, "plan").back(), "0.0600 0.000000");
  // The capacity line at 2 GiB, with its legend.
  EXPECT_THAT(s, HasSubstr("2.000000 with lines dt 2"));
  EXPECT_THAT(s, HasSubstr("\"capacity 2.00 GiB\""));
  EXPECT_THAT(s, HasSubstr("does not fit"));
  // The lanes: forward and backward compute, copies alternating between two shades.
  EXPECT_THAT(Block(s, "forward"), ElementsAre("0.0000 0.0100"));
  EXPECT_THAT(Block(s, "backward"), ElementsAre("0.0400 0.0600"));
  EXPECT_THAT(Block(s, "swapout0"), ElementsAre("0.0100 0.0300", "0.0350 0.0450"));
  EXPECT_THAT(Block(s, "swapout1"), ElementsAre("0.0300 0.0350"));
  EXPECT_TRUE(Block(s, "recompute").empty());
  EXPECT_TRUE(Block(s, "swapin0").empty());
  // Each lane's label says what it carried; empty lanes are not plotted.
  EXPECT_THAT(s, HasSubstr("\"swap-out (D2H)\\n3 copies, 3.00 GiB\" 2"));
  EXPECT_THAT(s, HasSubstr("\"swap-in (H2D)\\nnone\" 1"));
  EXPECT_THAT(s, HasSubstr("\"compute\\nno recomputation\" 3"));
  EXPECT_THAT(s, HasSubstr("$swapout1 using"));
  EXPECT_THAT(s, Not(HasSubstr("$swapin0 using")));
  EXPECT_THAT(s, Not(HasSubstr("$recompute using")));
  // The title, escaped, and the figures: +20 % time against in-core.
  EXPECT_THAT(s, HasSubstr("title \"two \\\"ops\\\"\\nswap-all:"));
  EXPECT_THAT(s, HasSubstr("swap-all: 0.060 ms per iteration, peak 2.00 GiB of 2.00 GiB"));
  EXPECT_THAT(s, HasSubstr("+20.0 % time vs in-core"));
  // The x axis covers the longer iteration; the y axis the highest of peaks and capacity, and
  // room for the legend above it.
  EXPECT_THAT(s, HasSubstr("set xrange [0:0.0600]"));
  EXPECT_THAT(s, HasSubstr(absl::StrCat("set yrange [0:", absl::StrFormat("%.6f", 3 * 1.18), "]")));
  EXPECT_THAT(s, HasSubstr("set ylabel 'device memory (GiB)'"));
  EXPECT_TRUE(absl::EndsWith(s, "unset multiplot\nset output\n"));

  // Below 1 GiB everywhere, memory is in MiB.
  text.capacity_bytes = 512 << 20;
  for (SimResult* r : {&in_core, &plan}) {
    r->peak_bytes = 0;
    for (MemorySample& m : r->memory) m.bytes >>= 10;
  }
  const std::string small = PlotScript(text, p, in_core, plan);
  EXPECT_THAT(small, HasSubstr("set ylabel 'device memory (MiB)'"));
  EXPECT_THAT(Block(small, "incore")[2], "0.0100 3.000000");
  EXPECT_THAT(small, HasSubstr("512.000000 with lines dt 2"));
}

// A planned zoo network (resnet50 b64 at half its in-core peak): every event is on a lane.
TEST(PlotScriptTest, PlannedZooNetwork) {
  absl::StatusOr<MachineModel> machine = MachinePreset("v100-pcie3");
  ASSERT_TRUE(machine.ok());
  absl::StatusOr<Profile> profile = ZooProfile("resnet50", 64, 0, *machine);
  ASSERT_TRUE(profile.ok()) << profile.status();
  SimOptions overflow;
  overflow.allow_overflow = true;
  const SimResult in_core = Simulate(*profile, *machine, KeepAllPlan(0), overflow);
  machine->memory_bytes = in_core.peak_bytes / 2;
  absl::StatusOr<PlanResult> plan = MakePlan(*profile, *machine, Policy::kPooch);
  ASSERT_TRUE(plan.ok()) << plan.status();
  PlotText text{"out.png", "resnet50", "pooch", machine->memory_bytes};
  const std::string s = PlotScript(text, *profile, in_core, plan->sim);
  const ActivityLanes lanes = SortLanes(*profile, plan->sim.events);
  EXPECT_EQ(Block(s, "forward").size() + Block(s, "backward").size(),
            lanes.forward.size() + lanes.backward.size());
  EXPECT_EQ(lanes.forward.size() + lanes.backward.size(), profile->ops.size());
  EXPECT_EQ(Block(s, "swapout0").size() + Block(s, "swapout1").size(), lanes.swap_out.size());
  EXPECT_EQ(lanes.swap_out_bytes, plan->sim.swapped_out_bytes);
  EXPECT_EQ(lanes.swap_in_bytes, plan->sim.swapped_in_bytes);
  EXPECT_GT(lanes.swap_out.size(), 0u);
  EXPECT_EQ(Block(s, "incore").size(), 2 * in_core.memory.size());
  EXPECT_EQ(Block(s, "plan").size(), 2 * plan->sim.memory.size());
  EXPECT_GT(in_core.peak_bytes / kGiB, machine->memory_bytes / kGiB);
}

}  // namespace
}  // namespace pooch
