// Device::LaunchKernel (Note [Kernel ops]): which parameter words count as uses, what they cost,
// and which are illegal addresses.
#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "tests/simgpu/device/device.h"

namespace simgpu {
namespace {

using Word = Device::KernelWord;

constexpr uint64_t kMiB = uint64_t{1} << 20;

// The times checked here are the device's own (roofline, pool, trace); host time is
// device_host_test's. SIMGPU_HOST_COSTS=off keeps calls from pacing the ops these tests time.
Config TestConfig() {
  Config c = ParseConfig([](const char* name) -> const char* {
    return std::string_view(name) == "SIMGPU_HOST_COSTS" ? "off" : nullptr;
  });
  c.machine.capacity_bytes = 512 * kMiB;
  return c;
}

// Times are differences of absolute virtual times: equal to within a picosecond.
#define EXPECT_NS(a, b) EXPECT_NEAR(a, b, 1e-3)

uint64_t U(const void* p) { return reinterpret_cast<uint64_t>(p); }

// What one kernel over allocations of `bytes` in all takes, in ns.
double KernelNs(const Config& c, double bytes) {
  return bytes / (c.machine.mem_gbps * 1e9) * 1e9 + c.machine.launch_us * 1e3;
}

class DeviceKernel : public ::testing::Test {
 protected:
  DeviceKernel() : config_(TestConfig()), d_(config_) {
    EXPECT_EQ(d_.StreamCreate(true, &s_), Err::kOk);
  }
  // The stream's time taken by one launch of `words`.
  double LaunchNs(const std::vector<Word>& words, Err want = Err::kOk) {
    double before = *d_.StreamTimeNs(s_);
    EXPECT_EQ(d_.LaunchKernel("k", s_, words.data(), words.size()), want);
    return *d_.StreamTimeNs(s_) - before;
  }
  void* Alloc(uint64_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(d_.MemAlloc(bytes, &p), Err::kOk);
    return p;
  }

  Config config_;
  Device d_;
  void* s_ = nullptr;
};

TEST_F(DeviceKernel, CountsEachPointedAllocationOnce) {
  void* a = Alloc(8 * kMiB);
  void* b = Alloc(24 * kMiB);
  EXPECT_NS(LaunchNs({{U(a), 0}, {U(b), 1}, {7, 2}}), KernelNs(config_, 32.0 * kMiB));
  // Twice the same allocation, one pointer into its middle: counted once.
  EXPECT_NS(LaunchNs({{U(a), 0}, {U(a) + 4096, 1}}), KernelNs(config_, 8.0 * kMiB));
  // No pointer: the launch latency.
  EXPECT_NS(LaunchNs({{42, 0}}), KernelNs(config_, 0));
  // A word equal to an allocation's end is not a use.
  EXPECT_NS(LaunchNs({{U(b) + 24 * kMiB, 0}}), KernelNs(config_, 0));
}

TEST_F(DeviceKernel, FreedMemoryThroughAnAddressParameterIsIllegal) {
  void* keep = Alloc(4000);  // keeps the slab alive
  void* gone = Alloc(4000);
  ASSERT_EQ(d_.MemFree(gone), Err::kOk);
  // Inside a struct with other values (param 0 also holds 5): maybe stale, passed over.
  EXPECT_NS(LaunchNs({{5, 0}, {U(gone), 0}, {U(keep), 1}}), KernelNs(config_, 4000));
  // Across parameters (layout unknown): passed over too.
  EXPECT_NS(LaunchNs({{U(gone), Word::kNoParam}}), KernelNs(config_, 0));
  // A parameter of addresses and nulls: an illegal address, sticky.
  LaunchNs({{0, 0}, {U(keep), 0}, {U(gone), 0}}, Err::kIllegalAddress);
  EXPECT_EQ(d_.Sticky(), Err::kIllegalAddress);
  EXPECT_EQ(d_.LaunchKernel("k", s_, nullptr, 0), Err::kIllegalAddress);
}

TEST_F(DeviceKernel, AddressesNothingWasHandedOutFromAreNotPointers) {
  void* base = nullptr;
  ASSERT_EQ(d_.AddressReserve(Device::kGranularity, 0, 0, &base), Err::kOk);
  ASSERT_EQ(d_.AddressFree(base, Device::kGranularity), Err::kOk);
  EXPECT_NS(LaunchNs({{U(base) + 8, 0}}), KernelNs(config_, 0));
  // Reserved but not mapped: illegal.
  ASSERT_EQ(d_.AddressReserve(Device::kGranularity, 0, 0, &base), Err::kOk);
  LaunchNs({{U(base) + 8, 0}}, Err::kIllegalAddress);
}

TEST_F(DeviceKernel, KernelsRecordWritesForTheRaceChecker) {
  void* a = Alloc(64 * kMiB);
  void* other = nullptr;
  ASSERT_EQ(d_.StreamCreate(true, &other), Err::kOk);
  std::vector<Word> w{{U(a), 0}};
  ASSERT_EQ(d_.LaunchKernel("k1", s_, w.data(), 1), Err::kOk);
  // Another stream, not ordered after k1: a race (SIMGPU_HAZARDS=error by default).
  EXPECT_EQ(d_.LaunchKernel("k2", other, w.data(), 1), Err::kHazard);
}

}  // namespace
}  // namespace simgpu
