// Host time in the device model (Note [Host clocks]): every call costs the calling thread its
// preset's host cost, work starts no earlier than its issue, threads have their own clocks and
// meet through waits, and SIMGPU_HOST_COSTS=off is the model without host costs.
#include <gtest/gtest.h>

#include <string_view>
#include <thread>

#include "tests/simgpu/device/device.h"

namespace simgpu {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

Config HostConfig(const char* mode) {
  Config c = ParseConfig([mode](const char* name) -> const char* {
    return std::string_view(name) == "SIMGPU_HOST_COSTS" ? mode : nullptr;
  });
  c.machine.capacity_bytes = 64 * kMiB;
  return c;
}

double CostNs(const Config& c, HostCall call) {
  return c.host_costs.us[static_cast<int>(call)] * 1e3;
}

TEST(DeviceHost, EachCallCostsItsPresetsHostTime) {
  Config c = HostConfig("on");
  Device d(c);
  EXPECT_EQ(d.HostTimeNs(), 0);
  uint64_t h = 0;
  ASSERT_EQ(d.PhysCreate(2 * kMiB, &h), Err::kOk);
  void* va = nullptr;
  ASSERT_EQ(d.AddressReserve(2 * kMiB, 0, 0, &va), Err::kOk);
  ASSERT_EQ(d.Map(va, 2 * kMiB, 0, h), Err::kOk);
  ASSERT_EQ(d.SetAccess(va, 2 * kMiB, true, true), Err::kOk);
  ASSERT_EQ(d.Unmap(va, 2 * kMiB), Err::kOk);
  ASSERT_EQ(d.PhysRelease(h), Err::kOk);
  double vmm = CostNs(c, HostCall::kMemCreate) + CostNs(c, HostCall::kAddressReserve) +
               CostNs(c, HostCall::kMemMap) + CostNs(c, HostCall::kMemSetAccess) +
               CostNs(c, HostCall::kMemUnmap) + CostNs(c, HostCall::kMemRelease);
  EXPECT_GT(vmm, 0);
  EXPECT_DOUBLE_EQ(d.HostTimeNs(), vmm);
  // Pinned host memory: per call and per byte.
  void* pinned = nullptr;
  ASSERT_EQ(d.HostAlloc(uint64_t{1} << 30, &pinned), Err::kOk);
  EXPECT_DOUBLE_EQ(d.HostTimeNs() - vmm,
                   CostNs(c, HostCall::kHostAlloc) + c.host_costs.pinned_us_per_gib * 1e3);
  ASSERT_EQ(d.HostFree(pinned), Err::kOk);
}

TEST(DeviceHost, WorkStartsNoEarlierThanItsIssue) {
  Config c = HostConfig("on");
  c.machine.launch_us = 1;  // below the host's launch cost: the host sets the pace
  Device d(c);
  void* s = nullptr;
  ASSERT_EQ(d.StreamCreate(true, &s), Err::kOk);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(d.Launch("tiny", s, nullptr, 0, 0, 0, nullptr), Err::kOk);
  const double issued = CostNs(c, HostCall::kStreamCreate) + 10 * CostNs(c, HostCall::kLaunch);
  EXPECT_DOUBLE_EQ(d.HostTimeNs(), issued);
  // The last kernel starts when the call that issued it ends.
  EXPECT_DOUBLE_EQ(*d.StreamTimeNs(s), issued + 1e3);
}

TEST(DeviceHost, ThreadsHaveTheirOwnClocksAndMeetInWaits) {
  Config c = HostConfig("on");
  Device d(c);
  void* s = nullptr;
  ASSERT_EQ(d.StreamCreate(true, &s), Err::kOk);  // this thread: at the stream's creation cost
  const double main_clock = d.HostTimeNs();
  double helper_clock = 0;
  std::thread helper([&] {
    // A helper thread maps memory: its clock pays, the main thread's does not.
    for (int i = 0; i < 4; ++i) {
      uint64_t h = 0;
      ASSERT_EQ(d.PhysCreate(2 * kMiB, &h), Err::kOk);
      ASSERT_EQ(d.PhysRelease(h), Err::kOk);
    }
    ASSERT_EQ(d.Launch("helper_kernel", s, nullptr, 0, 0, 0, nullptr), Err::kOk);
    helper_clock = d.HostTimeNs();
  });
  helper.join();
  const double cycle = CostNs(c, HostCall::kMemCreate) + CostNs(c, HostCall::kMemRelease);
  EXPECT_DOUBLE_EQ(helper_clock, main_clock + 4 * cycle + CostNs(c, HostCall::kLaunch));
  EXPECT_DOUBLE_EQ(d.HostTimeNs(), main_clock);
  // The helper's kernel started when the helper issued it; the main thread meets it by waiting.
  const double kernel_end = helper_clock + c.machine.launch_us * 1e3;
  EXPECT_DOUBLE_EQ(*d.StreamTimeNs(s), kernel_end);
  ASSERT_EQ(d.StreamSynchronize(s), Err::kOk);
  EXPECT_DOUBLE_EQ(d.HostTimeNs(), kernel_end);  // max(its clock + the call, the work's end)
}

TEST(DeviceHost, SharedModeChargesOneClock) {
  Config c = HostConfig("shared");
  Device d(c);
  std::thread helper([&] {
    uint64_t h = 0;
    ASSERT_EQ(d.PhysCreate(2 * kMiB, &h), Err::kOk);
  });
  helper.join();
  EXPECT_DOUBLE_EQ(d.HostTimeNs(), CostNs(c, HostCall::kMemCreate));
}

TEST(DeviceHost, OffChargesNothing) {
  Config c = HostConfig("off");
  for (int call = 0; call < static_cast<int>(HostCall::kCount); ++call) {
    EXPECT_EQ(c.host_costs.us[call], 0) << HostCallName(static_cast<HostCall>(call));
  }
  Device d(c);
  void* s = nullptr;
  ASSERT_EQ(d.StreamCreate(true, &s), Err::kOk);
  uint64_t h = 0;
  ASSERT_EQ(d.PhysCreate(2 * kMiB, &h), Err::kOk);
  ASSERT_EQ(d.Launch("k", s, nullptr, 0, 0, 0, nullptr), Err::kOk);
  // The kernel starts at 0 as before host costs; the host moves only by waiting.
  EXPECT_DOUBLE_EQ(*d.StreamTimeNs(s), c.machine.launch_us * 1e3);
  EXPECT_EQ(d.HostTimeNs(), 0);
  std::thread other([&] { ASSERT_EQ(d.StreamSynchronize(s), Err::kOk); });
  other.join();
  // One clock for every thread: the other thread's wait moved this thread's clock too.
  EXPECT_DOUBLE_EQ(d.HostTimeNs(), c.machine.launch_us * 1e3);
}

TEST(DeviceHost, EveryPresetHasHostCostsAndH200IsCalibrated) {
  for (const char* preset :
       {"v100-pcie3", "v100-nvlink2", "a100-pcie4", "h100-pcie5", "gh200", "h200"}) {
    HostCosts costs = HostCostsOf(preset);
    for (int call = 0; call < static_cast<int>(HostCall::kCount); ++call) {
      EXPECT_GT(costs.us[call], 0) << preset << " " << HostCallName(static_cast<HostCall>(call));
    }
  }
  HostCosts h200 = HostCostsOf("h200");
  auto us = [&](HostCall call) { return h200.us[static_cast<int>(call)]; };
  // docs/measurements.md, "GPU runs" (2026-11-28): map with its access, and unmap, about 118 us;
  // create and release about 44 us.
  EXPECT_DOUBLE_EQ(us(HostCall::kMemMap) + us(HostCall::kMemSetAccess), 118);
  EXPECT_DOUBLE_EQ(us(HostCall::kMemUnmap), 118);
  EXPECT_DOUBLE_EQ(us(HostCall::kMemCreate), 44);
  EXPECT_DOUBLE_EQ(us(HostCall::kMemRelease), 44);
}

}  // namespace
}  // namespace simgpu
