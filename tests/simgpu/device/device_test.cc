// The device model in-process: each test builds its own Device from a Config, so that sticky
// errors and capacities do not leak between tests.
#include "tests/simgpu/device/device.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace simgpu {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

Config TestConfig() {
  Config c = ParseConfig([](const char*) -> const char* { return nullptr; });
  c.machine.capacity_bytes = 64 * kMiB;
  return c;
}

TEST(Device, LaunchRunsBodyAndAdvancesRooflineTime) {
  Config c = TestConfig();
  Device d(c);
  void* p = nullptr;
  ASSERT_EQ(d.MemAlloc(4096, &p), Err::kOk);
  void* s = nullptr;
  ASSERT_EQ(d.StreamCreate(true, &s), Err::kOk);
  bool ran = false;
  Access a{p, 4096, true};
  const double flops = 1e9;
  ASSERT_EQ(d.Launch("kernel", s, &a, 1, flops, 4096,
                     [&] {
                       std::memset(p, 7, 4096);
                       ran = true;
                     }),
            Err::kOk);
  EXPECT_TRUE(ran);
  EXPECT_EQ(static_cast<unsigned char*>(p)[4095], 7);
  const Preset& m = c.machine;
  double expect_ns = flops / (m.fp32_tflops * 1e12 * m.efficiency) * 1e9 + m.launch_us * 1e3;
  EXPECT_NEAR(*d.StreamTimeNs(s), expect_ns, 1e-6);
  // A memory-bound op: bytes / bandwidth.
  ASSERT_EQ(d.Launch("copyish", s, &a, 1, 0, 9e8, nullptr), Err::kOk);
  EXPECT_NEAR(*d.StreamTimeNs(s) - expect_ns, 1e6 + m.launch_us * 1e3, 1e-6);
}

TEST(Device, LaunchOnUnmappedMemoryIsStickyIllegalAddress) {
  Device d(TestConfig());
  void* p = nullptr;
  ASSERT_EQ(d.MemAlloc(1000, &p), Err::kOk);
  bool ran = false;
  Access past_end{static_cast<char*>(p) + 500, 501, false};  // one byte beyond the allocation
  EXPECT_EQ(d.Launch("overrun", nullptr, &past_end, 1, 0, 0, [&] { ran = true; }),
            Err::kIllegalAddress);
  EXPECT_FALSE(ran);
  Access fine{p, 1000, false};
  EXPECT_EQ(d.Launch("after", nullptr, &fine, 1, 0, 0, nullptr), Err::kIllegalAddress);
  void* q = nullptr;
  EXPECT_EQ(d.MemAlloc(10, &q), Err::kIllegalAddress);
}

TEST(Device, FreedMemoryIsIllegal) {
  Device d(TestConfig());
  void* p = nullptr;
  ASSERT_EQ(d.MemAlloc(1000, &p), Err::kOk);
  ASSERT_EQ(d.MemFree(p), Err::kOk);
  Access a{p, 4, false};
  EXPECT_EQ(d.Launch("use-after-free", nullptr, &a, 1, 0, 0, nullptr), Err::kIllegalAddress);
}

TEST(Device, RaceBetweenStreamsAndTheEventThatFixesIt) {
  for (bool wait : {false, true}) {
    Device d(TestConfig());
    void *p = nullptr, *s1 = nullptr, *s2 = nullptr, *ev = nullptr;
    ASSERT_EQ(d.MemAlloc(4096, &p), Err::kOk);
    ASSERT_EQ(d.StreamCreate(true, &s1), Err::kOk);
    ASSERT_EQ(d.StreamCreate(true, &s2), Err::kOk);
    ASSERT_EQ(d.EventCreate(true, &ev), Err::kOk);
    Access w{p, 4096, true}, r{p, 4096, false};
    ASSERT_EQ(d.Launch("producer", s1, &w, 1, 1e9, 0, nullptr), Err::kOk);
    ASSERT_EQ(d.EventRecord(ev, s1), Err::kOk);
    if (wait) {
      ASSERT_EQ(d.StreamWaitEvent(s2, ev), Err::kOk);
    }
    EXPECT_EQ(d.Launch("consumer", s2, &r, 1, 1e9, 0, nullptr), wait ? Err::kOk : Err::kHazard);
  }
}

TEST(Device, HazardWarnAndOff) {
  for (HazardMode mode : {HazardMode::kWarn, HazardMode::kOff}) {
    Config c = TestConfig();
    c.hazards = mode;
    Device d(c);
    void *p = nullptr, *s1 = nullptr, *s2 = nullptr;
    ASSERT_EQ(d.MemAlloc(4096, &p), Err::kOk);
    ASSERT_EQ(d.StreamCreate(true, &s1), Err::kOk);
    ASSERT_EQ(d.StreamCreate(true, &s2), Err::kOk);
    Access w{p, 4096, true};
    ASSERT_EQ(d.Launch("a", s1, &w, 1, 1e9, 0, nullptr), Err::kOk);
    EXPECT_EQ(d.Launch("b", s2, &w, 1, 1e9, 0, nullptr), Err::kOk);
  }
}

TEST(Device, TimingModeSkipsBodies) {
  Config c = TestConfig();
  c.compute = ComputeMode::kTiming;
  Device d(c);
  void* p = nullptr;
  ASSERT_EQ(d.MemAlloc(4096, &p), Err::kOk);
  bool ran = false;
  Access a{p, 4096, true};
  ASSERT_EQ(d.Launch("k", nullptr, &a, 1, 1, 1, [&] { ran = true; }), Err::kOk);
  EXPECT_FALSE(ran);
  ASSERT_EQ(d.Memset("memset", p, 1, 4096, nullptr, true), Err::kOk);
  EXPECT_EQ(static_cast<unsigned char*>(p)[0], 0);  // untouched
}

TEST(Device, CapacityCountsMallocAndVmm) {
  Device d(TestConfig());
  void* p = nullptr;
  ASSERT_EQ(d.MemAlloc(40 * kMiB, &p), Err::kOk);
  uint64_t handle = 0;
  EXPECT_EQ(d.PhysCreate(32 * kMiB, &handle), Err::kOutOfMemory);
  ASSERT_EQ(d.PhysCreate(24 * kMiB, &handle), Err::kOk);
  uint64_t free_bytes = 0, total = 0;
  d.MemInfo(&free_bytes, &total);
  EXPECT_EQ(total, 64 * kMiB);
  EXPECT_EQ(free_bytes, 0u);
  void* q = nullptr;
  EXPECT_EQ(d.MemAlloc(1, &q), Err::kOutOfMemory);
  ASSERT_EQ(d.PhysRelease(handle), Err::kOk);
  EXPECT_EQ(d.MemAlloc(1, &q), Err::kOk);
}

TEST(Device, VmmMapAccessUnmap) {
  Device d(TestConfig());
  uint64_t h = 0;
  void* va = nullptr;
  const uint64_t g = Device::kGranularity;
  ASSERT_EQ(d.PhysCreate(2 * g, &h), Err::kOk);
  ASSERT_EQ(d.AddressReserve(4 * g, 0, 0, &va), Err::kOk);
  char* base = static_cast<char*>(va);
  ASSERT_EQ(d.Map(base + g, 2 * g, 0, h), Err::kOk);
  EXPECT_EQ(d.Map(base + g, g, 0, h), Err::kInvalidValue);  // already mapped
  Access a{base + g, 2 * g, true};
  // Mapped but not yet accessible: cuMemSetAccess is required first. Use a fresh device for the
  // sticky error, so check accessibility through Classify here.
  EXPECT_EQ(d.Classify(base + g).kind, PtrKind::kDevice);
  ASSERT_EQ(d.SetAccess(base + g, 2 * g, true, true), Err::kOk);
  ASSERT_EQ(d.Launch("fill", nullptr, &a, 1, 0, 0, [&] { std::memset(base + g, 3, 2 * g); }),
            Err::kOk);
  ASSERT_EQ(d.PhysRelease(h), Err::kOk);  // still mapped: memory stays
  EXPECT_EQ(base[g + 5], 3);
  ASSERT_EQ(d.Synchronize(), Err::kOk);                 // the fill must finish before the unmap
  EXPECT_EQ(d.Unmap(base + g, g), Err::kInvalidValue);  // part of a mapping: not allowed
  ASSERT_EQ(d.Unmap(base + g, 2 * g), Err::kOk);
  uint64_t free_bytes = 0, total = 0;
  d.MemInfo(&free_bytes, &total);
  EXPECT_EQ(free_bytes, total);  // released and unmapped: physical memory returned
  EXPECT_EQ(d.AddressFree(va, 4 * g), Err::kOk);
}

TEST(Device, VmmAccessBeforeSetAccessIsIllegal) {
  Device d(TestConfig());
  uint64_t h = 0;
  void* va = nullptr;
  ASSERT_EQ(d.PhysCreate(Device::kGranularity, &h), Err::kOk);
  ASSERT_EQ(d.AddressReserve(Device::kGranularity, 0, 0, &va), Err::kOk);
  ASSERT_EQ(d.Map(va, Device::kGranularity, 0, h), Err::kOk);
  Access a{va, 16, false};
  EXPECT_EQ(d.Launch("early", nullptr, &a, 1, 0, 0, nullptr), Err::kIllegalAddress);
}

TEST(Device, UnmapWhileInUseIsARace) {
  Device d(TestConfig());
  uint64_t h = 0;
  void *va = nullptr, *s = nullptr;
  const uint64_t g = Device::kGranularity;
  ASSERT_EQ(d.StreamCreate(true, &s), Err::kOk);
  ASSERT_EQ(d.PhysCreate(g, &h), Err::kOk);
  ASSERT_EQ(d.AddressReserve(g, 0, 0, &va), Err::kOk);
  ASSERT_EQ(d.Map(va, g, 0, h), Err::kOk);
  ASSERT_EQ(d.SetAccess(va, g, true, true), Err::kOk);
  Access a{va, g, false};
  ASSERT_EQ(d.Launch("reader", s, &a, 1, 1e9, 0, nullptr), Err::kOk);
  EXPECT_EQ(d.Unmap(va, g), Err::kHazard);
}

TEST(Device, UnmapAfterSynchronizeIsFine) {
  Device d(TestConfig());
  uint64_t h = 0;
  void *va = nullptr, *s = nullptr;
  const uint64_t g = Device::kGranularity;
  ASSERT_EQ(d.StreamCreate(true, &s), Err::kOk);
  ASSERT_EQ(d.PhysCreate(g, &h), Err::kOk);
  ASSERT_EQ(d.AddressReserve(g, 0, 0, &va), Err::kOk);
  ASSERT_EQ(d.Map(va, g, 0, h), Err::kOk);
  ASSERT_EQ(d.SetAccess(va, g, true, true), Err::kOk);
  Access a{va, g, false};
  ASSERT_EQ(d.Launch("reader", s, &a, 1, 1e9, 0, nullptr), Err::kOk);
  ASSERT_EQ(d.StreamSynchronize(s), Err::kOk);
  EXPECT_EQ(d.Unmap(va, g), Err::kOk);
}

TEST(Device, ReuseBeforeAStreamOrderedFreeIsARace) {
  Device d(TestConfig());
  void *s1 = nullptr, *s2 = nullptr, *p = nullptr, *q = nullptr;
  ASSERT_EQ(d.StreamCreate(true, &s1), Err::kOk);
  ASSERT_EQ(d.StreamCreate(true, &s2), Err::kOk);
  ASSERT_EQ(d.MemAllocAsync(4096, s1, &p), Err::kOk);
  Access a{p, 4096, true};
  ASSERT_EQ(d.Launch("long", s1, &a, 1, 1e10, 0, nullptr), Err::kOk);
  ASSERT_EQ(d.MemFreeAsync(p, s1), Err::kOk);  // freed when s1 gets there, long after now
  ASSERT_EQ(d.MemAllocAsync(4096, s2, &q), Err::kOk);
  ASSERT_EQ(q, p);  // first fit hands the same addresses out again
  Access b{q, 4096, true};
  EXPECT_EQ(d.Launch("too-early", s2, &b, 1, 0, 0, nullptr), Err::kHazard);
}

TEST(Device, LegacyStreamOrdersBlockingStreamsButNotNonBlockingOnes) {
  for (bool non_blocking : {false, true}) {
    Device d(TestConfig());
    void *s = nullptr, *p = nullptr;
    ASSERT_EQ(d.StreamCreate(non_blocking, &s), Err::kOk);
    ASSERT_EQ(d.MemAlloc(4096, &p), Err::kOk);
    Access w{p, 4096, true}, r{p, 4096, false};
    ASSERT_EQ(d.Launch("producer", s, &w, 1, 1e9, 0, nullptr), Err::kOk);
    EXPECT_EQ(d.Launch("consumer", nullptr, &r, 1, 0, 0, nullptr),
              non_blocking ? Err::kHazard : Err::kOk);
  }
}

}  // namespace
}  // namespace simgpu
