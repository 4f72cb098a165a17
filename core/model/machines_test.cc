#include "core/model/machines.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::HasSubstr;

TEST(MachinesTest, EveryPresetIsComplete) {
  for (const std::string& name : MachinePresetNames()) {
    SCOPED_TRACE(name);
    absl::StatusOr<MachineModel> m = MachinePreset(name);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->name, name);
    EXPECT_GT(m->memory_bytes, 0);
    EXPECT_GT(m->h2d_gbps, 0);
    EXPECT_GT(m->d2h_gbps, 0);
    EXPECT_GT(m->compute_tflops, 0);
    EXPECT_GT(m->memory_gbps, 0);
    EXPECT_GT(m->launch_us, 0);
    EXPECT_FALSE(MachinePresetSummary(name).empty());
  }
}

TEST(MachinesTest, PaperMachinesDifferOnlyInTheLink) {
  MachineModel pcie = *MachinePreset("v100-pcie3");
  MachineModel nvlink = *MachinePreset("v100-nvlink2");
  EXPECT_EQ(pcie.memory_bytes, int64_t{16} << 30);
  EXPECT_EQ(pcie.h2d_gbps, 16);    // PoocH Table 1
  EXPECT_EQ(nvlink.h2d_gbps, 75);  // PoocH Table 2
  EXPECT_EQ(pcie.compute_tflops, nvlink.compute_tflops);
  EXPECT_EQ(pcie.memory_gbps, nvlink.memory_gbps);
  EXPECT_LT(pcie.compute_tflops, 15.7);  // achievable, below the datasheet peak
}

TEST(MachinesTest, UnknownNameListsKnownOnes) {
  absl::StatusOr<MachineModel> m = MachinePreset("v100");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("unknown machine 'v100'"));
  EXPECT_THAT(m.status().message(), HasSubstr("v100-pcie3, v100-nvlink2, a100-pcie4"));
}

}  // namespace
}  // namespace pooch
