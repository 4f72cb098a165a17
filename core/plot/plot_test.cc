#include "core/plot/plot.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "core/model/machines.h"
#include "core/plan/plan.h"
#include "core/zoo/zoo.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::HasSubstr;

class WritePlanPlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TEST_TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/plot_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    absl::StatusOr<MachineModel> machine = MachinePreset("v100-pcie3");
    ASSERT_TRUE(machine.ok());
    machine_ = *machine;
    machine_.memory_bytes = int64_t{14} << 20;
    absl::StatusOr<Profile> profile = ZooProfile("tiny", 64, 0, machine_);
    ASSERT_TRUE(profile.ok()) << profile.status();
    profile_ = *profile;
    absl::StatusOr<PlanResult> plan = MakePlan(profile_, machine_, Policy::kPooch);
    ASSERT_TRUE(plan.ok()) << plan.status();
    plan_ = *plan;
  }
  void TearDown() override {
    unlink(PngPath().c_str());
    rmdir(dir_.c_str());
  }
  std::string PngPath() const { return dir_ + "/plan.png"; }
  bool Exists() const {
    struct stat st {};
    return stat(PngPath().c_str(), &st) == 0;
  }

  std::string dir_;
  MachineModel machine_;
  Profile profile_;
  PlanResult plan_;
};

TEST_F(WritePlanPlotTest, DrawsAPng) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0) GTEST_SKIP() << "gnuplot not installed";
  absl::Status s = WritePlanPlot(PngPath(), "tiny", profile_, machine_, plan_.plan, plan_.sim);
  ASSERT_TRUE(s.ok()) << s;
  std::ifstream in(PngPath(), std::ios::binary);
  std::string magic(8, '\0');
  in.read(magic.data(), 8);
  EXPECT_EQ(magic, "\x89PNG\r\n\x1a\n");
  in.seekg(0, std::ios::end);
  EXPECT_GT(in.tellg(), 10000);
}

TEST_F(WritePlanPlotTest, AnUnwritablePathIsBadInput) {
  absl::Status s = WritePlanPlot(dir_ + "/no/such/folder/plan.png", "tiny", profile_, machine_,
                                 plan_.plan, plan_.sim);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("cannot write"));
}

TEST_F(WritePlanPlotTest, WithoutGnuplotNoFileIsLeft) {
  GnuplotOptions missing;
  missing.program = "/nonexistent/gnuplot";
  absl::Status s =
      WritePlanPlot(PngPath(), "tiny", profile_, machine_, plan_.plan, plan_.sim, missing);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_FALSE(Exists());
}

}  // namespace
}  // namespace pooch
