// The device model in-process: each test builds its own Device from a Config, so that sticky
// errors and capacities do not leak between tests.
#include "tests/simgpu/device/device.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace simgpu {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// The times checked here are the device's own (roofline, pool, trace); host time is
// device_host_test's. SIMGPU_HOST_COSTS=off keeps calls from pacing the ops these tests time.
Config TestConfig() {
  Config c = ParseConfig([](const char* name) -> const char* {
    return std::string_view(name) == "SIMGPU_HOST_COSTS" ? "off" : nullptr;
  });
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

// Note [Stream-ordered reuse] in device_memory.cc: a block freed on one stream goes to an
// allocation on another only once that stream is ordered after the free.
TEST(Device, StreamOrderedFreeIsNotReusedByAnUnorderedStream) {
  Device d(TestConfig());
  void *s1 = nullptr, *s2 = nullptr, *p = nullptr, *q = nullptr, *r = nullptr;
  ASSERT_EQ(d.StreamCreate(true, &s1), Err::kOk);
  ASSERT_EQ(d.StreamCreate(true, &s2), Err::kOk);
  ASSERT_EQ(d.MemAllocAsync(4096, s1, &p), Err::kOk);
  Access a{p, 4096, true};
  ASSERT_EQ(d.Launch("long", s1, &a, 1, 1e10, 0, nullptr), Err::kOk);
  ASSERT_EQ(d.MemFreeAsync(p, s1), Err::kOk);  // freed when s1 gets there, long after now
  ASSERT_EQ(d.MemAllocAsync(4096, s2, &q), Err::kOk);
  EXPECT_NE(q, p);  // s2 is not ordered after the free: fresh memory
  Access b{q, 4096, true};
  EXPECT_EQ(d.Launch("other-stream", s2, &b, 1, 0, 0, nullptr), Err::kOk);
  // The freeing stream itself reuses the block at once: its own order makes that safe.
  ASSERT_EQ(d.MemAllocAsync(4096, s1, &r), Err::kOk);
  EXPECT_EQ(r, p);
  Access c{r, 4096, true};
  EXPECT_EQ(d.Launch("same-stream", s1, &c, 1, 0, 0, nullptr), Err::kOk);
  EXPECT_EQ(d.Sticky(), Err::kOk);
}

TEST(Device, StreamOrderedFreeIsReusedOnceAnotherStreamIsOrderedAfterIt) {
  enum class Order { kEventWait, kLegacyStream, kCompleted };
  for (Order order : {Order::kEventWait, Order::kLegacyStream, Order::kCompleted}) {
    SCOPED_TRACE(static_cast<int>(order));
    Device d(TestConfig());
    void *s1 = nullptr, *s2 = nullptr, *p = nullptr, *q = nullptr, *ev = nullptr;
    // A blocking s1 for the legacy stream's implicit order; non-blocking otherwise.
    ASSERT_EQ(d.StreamCreate(order != Order::kLegacyStream, &s1), Err::kOk);
    ASSERT_EQ(d.StreamCreate(true, &s2), Err::kOk);
    ASSERT_EQ(d.EventCreate(false, &ev), Err::kOk);
    ASSERT_EQ(d.MemAllocAsync(4096, s1, &p), Err::kOk);
    Access a{p, 4096, true};
    ASSERT_EQ(d.Launch("long", s1, &a, 1, 1e10, 0, nullptr), Err::kOk);
    ASSERT_EQ(d.MemFreeAsync(p, s1), Err::kOk);
    void* stream = s2;
    switch (order) {
      case Order::kEventWait:  // cudaMemPoolReuseFollowEventDependencies
        ASSERT_EQ(d.EventRecord(ev, s1), Err::kOk);
        ASSERT_EQ(d.StreamWaitEvent(s2, ev), Err::kOk);
        break;
      case Order::kLegacyStream:  // the legacy stream waits for blocking streams
        stream = nullptr;
        break;
      case Order::kCompleted:  // cudaMemPoolReuseAllowOpportunistic: the host saw the free
        ASSERT_EQ(d.StreamSynchronize(s1), Err::kOk);
        break;
    }
    ASSERT_EQ(d.MemAllocAsync(4096, stream, &q), Err::kOk);
    EXPECT_EQ(q, p);
    Access b{q, 4096, true};
    EXPECT_EQ(d.Launch("reuse", stream, &b, 1, 0, 0, nullptr), Err::kOk);
  }
}

// A pending block larger than the request is split; the rest keeps the free's stream and time.
TEST(Device, SplitPendingBlockKeepsItsFreesOrder) {
  Device d(TestConfig());
  void *s1 = nullptr, *s2 = nullptr, *p = nullptr, *q = nullptr, *r = nullptr, *u = nullptr;
  ASSERT_EQ(d.StreamCreate(true, &s1), Err::kOk);
  ASSERT_EQ(d.StreamCreate(true, &s2), Err::kOk);
  ASSERT_EQ(d.MemAllocAsync(kMiB, s1, &p), Err::kOk);
  Access a{p, kMiB, true};
  ASSERT_EQ(d.Launch("long", s1, &a, 1, 1e10, 0, nullptr), Err::kOk);
  ASSERT_EQ(d.MemFreeAsync(p, s1), Err::kOk);
  ASSERT_EQ(d.MemAllocAsync(4096, s1, &q), Err::kOk);
  EXPECT_EQ(q, p);
  ASSERT_EQ(d.MemAllocAsync(4096, s2, &u), Err::kOk);
  char* lo = static_cast<char*>(p);
  EXPECT_FALSE(static_cast<char*>(u) >= lo && static_cast<char*>(u) < lo + kMiB);
  Access b{u, 4096, true};
  EXPECT_EQ(d.Launch("unordered", s2, &b, 1, 0, 0, nullptr), Err::kOk);
  ASSERT_EQ(d.MemAllocAsync(4096, s1, &r), Err::kOk);
  EXPECT_EQ(r, lo + 4096);
}

// cudaMemPoolReuseAllowInternalDependencies: with no memory left, an allocation on another stream
// takes the block by waiting for its free rather than failing.
TEST(Device, FullDeviceReusesAnotherStreamsFreeByWaitingForIt) {
  Device d(TestConfig());  // 64 MiB
  void *s1 = nullptr, *s2 = nullptr, *p = nullptr, *q = nullptr;
  ASSERT_EQ(d.StreamCreate(true, &s1), Err::kOk);
  ASSERT_EQ(d.StreamCreate(true, &s2), Err::kOk);
  ASSERT_EQ(d.MemAllocAsync(48 * kMiB, s1, &p), Err::kOk);
  Access a{p, 48 * kMiB, true};
  ASSERT_EQ(d.Launch("long", s1, &a, 1, 1e10, 0, nullptr), Err::kOk);
  ASSERT_EQ(d.MemFreeAsync(p, s1), Err::kOk);
  const double freed_at = *d.StreamTimeNs(s1);
  EXPECT_EQ(*d.StreamTimeNs(s2), 0.0);
  // The pool still holds the block until its free happens: cudaMalloc cannot have it.
  void* m = nullptr;
  EXPECT_EQ(d.MemAlloc(48 * kMiB, &m), Err::kOutOfMemory);
  ASSERT_EQ(d.MemAllocAsync(48 * kMiB, s2, &q), Err::kOk);
  EXPECT_EQ(q, p);
  EXPECT_EQ(*d.StreamTimeNs(s2), freed_at);  // s2 now waits for s1's free
  Access b{q, 48 * kMiB, true};
  EXPECT_EQ(d.Launch("after-the-wait", s2, &b, 1, 0, 0, nullptr), Err::kOk);
  ASSERT_EQ(d.MemFreeAsync(q, s2), Err::kOk);
  ASSERT_EQ(d.Synchronize(), Err::kOk);  // the pool gives completed frees back
  uint64_t free_bytes = 0, total = 0;
  d.MemInfo(&free_bytes, &total);
  EXPECT_EQ(free_bytes, total);
  EXPECT_EQ(d.MemAlloc(48 * kMiB, &m), Err::kOk);
}

// Note [Malloc slabs] in device_memory.cc: allocations share mappings, so that a framework
// without a caching allocator can hold as many as it likes under vm.max_map_count (65530).
TEST(Device, HundredThousandLiveAllocationsFitInAFewMappings) {
  auto mappings = [] {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    int n = 0;
    while (std::getline(maps, line)) ++n;
    return n;
  };
  Config c = TestConfig();
  c.machine.capacity_bytes = uint64_t{4} << 30;
  Device d(c);
  constexpr int kAllocs = 100000;
  std::vector<void*> p(kAllocs);
  const int before = mappings();
  for (int i = 0; i < kAllocs; ++i) {
    ASSERT_EQ(d.MemAlloc(4096, &p[i]), Err::kOk) << "allocation " << i;
  }
  EXPECT_LT(mappings() - before, 100);
  for (int i : {0, kAllocs / 2, kAllocs - 1}) {
    ASSERT_EQ(d.Memset("memset", p[i], static_cast<uint8_t>(i), 4096, nullptr, true), Err::kOk);
    EXPECT_EQ(static_cast<unsigned char*>(p[i])[4095], static_cast<unsigned char>(i));
  }
  for (int i = 0; i < kAllocs; ++i) ASSERT_EQ(d.MemFree(p[i]), Err::kOk) << "free " << i;
  uint64_t free_bytes = 0, total = 0;
  d.MemInfo(&free_bytes, &total);
  EXPECT_EQ(free_bytes, total);
  EXPECT_LT(mappings() - before, 10);
  Access a{p[kAllocs / 2], 4, false};  // freed memory is still caught
  EXPECT_EQ(d.Launch("use-after-free", nullptr, &a, 1, 0, 0, nullptr), Err::kIllegalAddress);
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

// SIMGPU_TRACE: each op on its engine's track at its virtual times, and the host's blocked time.
// A copy from pinned memory queued behind another on the same engine starts when that one ends.
TEST(Device, TraceWritesOpsAtTheirVirtualTimes) {
  Config c = TestConfig();
  c.trace_path = ::testing::TempDir() + "simgpu_trace_test.json";
  {
    Device d(c);  // its destruction closes the trace
    void* dev = nullptr;
    void* host = nullptr;
    ASSERT_EQ(d.MemAlloc(4 * kMiB, &dev), Err::kOk);
    ASSERT_EQ(d.HostAlloc(4 * kMiB, &host), Err::kOk);
    void* a = nullptr;
    void* b = nullptr;
    ASSERT_EQ(d.StreamCreate(true, &a), Err::kOk);
    ASSERT_EQ(d.StreamCreate(true, &b), Err::kOk);
    ASSERT_EQ(d.Memcpy("first", dev, host, 2 * kMiB, CopyDir::kHostToDevice, a, false), Err::kOk);
    ASSERT_EQ(d.Memcpy("second", static_cast<char*>(dev) + 2 * kMiB,
                       static_cast<char*>(host) + 2 * kMiB, kMiB, CopyDir::kHostToDevice, b, false),
              Err::kOk);
    ASSERT_EQ(d.Synchronize(), Err::kOk);
  }
  std::ifstream in(c.trace_path);
  std::string line, first, second, blocked;
  while (std::getline(in, line)) {
    if (line.find("\"name\":\"first\"") != std::string::npos) first = line;
    if (line.find("\"name\":\"second\"") != std::string::npos) second = line;
    if (line.find("\"name\":\"cudaDeviceSynchronize\"") != std::string::npos) blocked = line;
  }
  const Preset& m = c.machine;
  const double first_us = 2.0 * kMiB / m.h2d_gbps / 1e3 + m.launch_us;
  const double second_us = 1.0 * kMiB / m.h2d_gbps / 1e3 + m.launch_us;
  auto field = [](const std::string& event, const std::string& key) {
    size_t at = event.find("\"" + key + "\":");
    return at == std::string::npos ? -1.0 : std::stod(event.substr(at + key.size() + 3));
  };
  ASSERT_NE(first, "");
  ASSERT_NE(second, "");
  ASSERT_NE(blocked, "");
  EXPECT_EQ(field(first, "tid"), 1);  // host to device
  EXPECT_EQ(field(second, "tid"), 1);
  EXPECT_NEAR(field(first, "ts"), 0, 1e-3);
  EXPECT_NEAR(field(first, "dur"), first_us, 1e-3);
  EXPECT_EQ(field(first, "bytes"), 2.0 * kMiB);
  // The second copy's stream let it start at 0; the engine made it wait for the first.
  EXPECT_NEAR(field(second, "ready_us"), 0, 1e-3);
  EXPECT_NEAR(field(second, "ts"), first_us, 1e-3);
  EXPECT_NEAR(field(blocked, "ts") + field(blocked, "dur"), first_us + second_us, 1e-3);
}

}  // namespace
}  // namespace simgpu
