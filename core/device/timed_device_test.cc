#include "core/device/timed_device.h"

#include <chrono>
#include <thread>

#include "core/testing/fake_device.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

constexpr int64_t kG = 64 << 10;

FakeDevice::Options Manual() {
  FakeDevice::Options o;
  o.mode = FakeDevice::Mode::kManual;
  o.capacity = 4 * kG;
  return o;
}

TEST(TimedDeviceTest, CountsEachCallUnderItsKind) {
  FakeDevice fake(Manual());
  TimedDevice timed(fake);
  const DeviceAddress va = *timed.ReserveAddress(kG);
  const PhysicalHandle p = *timed.CreatePhysical(kG);
  ASSERT_TRUE(timed.Map(va, kG, p).ok());
  void* host = *timed.AllocHost(kG);
  const StreamHandle s = *timed.CreateStream();
  ASSERT_TRUE(timed.CopyToHostAsync(host, va, kG, s).ok());
  const EventHandle e = *timed.CreateEvent();
  ASSERT_TRUE(timed.RecordEvent(e, s).ok());
  ASSERT_TRUE(timed.SynchronizeEvent(e).ok());
  ASSERT_TRUE(timed.DestroyEvent(e).ok());
  ASSERT_TRUE(timed.DestroyStream(s).ok());
  ASSERT_TRUE(timed.FreeHost(host).ok());
  ASSERT_TRUE(timed.Unmap(va, kG).ok());
  ASSERT_TRUE(timed.ReleasePhysical(p).ok());
  ASSERT_TRUE(timed.FreeAddress(va, kG).ok());

  const DeviceCallTimes t = timed.Times();
  EXPECT_EQ(t[DeviceCallKind::kReserve].calls, 2);
  EXPECT_EQ(t[DeviceCallKind::kCreate].calls, 2);
  EXPECT_EQ(t[DeviceCallKind::kMap].calls, 2);
  EXPECT_EQ(t[DeviceCallKind::kPinned].calls, 2);
  EXPECT_EQ(t[DeviceCallKind::kCopy].calls, 1);
  EXPECT_EQ(t[DeviceCallKind::kEvent].calls, 5);  // stream create, destroy; event create,
                                                  // record, destroy
  EXPECT_EQ(t[DeviceCallKind::kWait].calls, 1);
  EXPECT_TRUE(fake.violations().empty());

  const MemoryCallCounts m = timed.MemoryCalls();
  for (MemoryCall call : {MemoryCall::kAddressReserve, MemoryCall::kAddressFree,
                          MemoryCall::kMemCreate, MemoryCall::kMemRelease, MemoryCall::kMemMap,
                          MemoryCall::kMemSetAccess, MemoryCall::kMemUnmap, MemoryCall::kHostAlloc,
                          MemoryCall::kFreeHost}) {
    EXPECT_EQ(m[call], 1) << MemoryCallName(call);
  }
}

// Each memory call counts under its own driver name, however many of the others there are.
TEST(TimedDeviceTest, CountsEachMemoryCallApart) {
  FakeDevice fake(Manual());
  TimedDevice timed(fake);
  const DeviceAddress va = *timed.ReserveAddress(2 * kG);
  const PhysicalHandle p = *timed.CreatePhysical(kG);
  ASSERT_TRUE(timed.Map(va, kG, p).ok());
  ASSERT_TRUE(timed.Unmap(va, kG).ok());
  ASSERT_TRUE(timed.Map(va + kG, kG, p).ok());
  const MemoryCallCounts m = timed.MemoryCalls();
  EXPECT_EQ(m[MemoryCall::kAddressReserve], 1);
  EXPECT_EQ(m[MemoryCall::kMemCreate], 1);
  EXPECT_EQ(m[MemoryCall::kMemMap], 2);
  EXPECT_EQ(m[MemoryCall::kMemSetAccess], 2);
  EXPECT_EQ(m[MemoryCall::kMemUnmap], 1);
  EXPECT_EQ(m[MemoryCall::kMemRelease], 0);
  EXPECT_EQ(m[MemoryCall::kAddressFree], 0);
  EXPECT_STREQ(MemoryCallName(MemoryCall::kMemCreate), "cuMemCreate");
}

// The wait's host time is the time the host blocked: a queued kernel that takes 20 ms of host
// time runs inside SynchronizeEvent (kManual), and the wait's sum covers it.
TEST(TimedDeviceTest, AWaitCountsTheTimeTheHostBlocked) {
  FakeDevice fake(Manual());
  TimedDevice timed(fake);
  const StreamHandle s = *timed.CreateStream();
  ASSERT_TRUE(fake.Launch(s, {},
                          [](FakeDevice::Memory&) {
                            std::this_thread::sleep_for(std::chrono::milliseconds(20));
                          })
                  .ok());
  const EventHandle e = *timed.CreateEvent();
  ASSERT_TRUE(timed.RecordEvent(e, s).ok());
  const DeviceCallTimes before = timed.Times();
  EXPECT_EQ(before[DeviceCallKind::kWait].nanoseconds, 0);
  ASSERT_TRUE(timed.SynchronizeEvent(e).ok());
  const DeviceCallTimes after = timed.Times();
  EXPECT_GE(after[DeviceCallKind::kWait].nanoseconds, 20'000'000);
  EXPECT_LT(after[DeviceCallKind::kEvent].nanoseconds, 20'000'000);
}

// Errors pass through unchanged, and still count.
TEST(TimedDeviceTest, AFailedCallReturnsTheInnerError) {
  FakeDevice fake(Manual());
  TimedDevice timed(fake);
  absl::StatusOr<PhysicalHandle> too_big = timed.CreatePhysical(8 * kG);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(timed.Times()[DeviceCallKind::kCreate].calls, 1);
  EXPECT_EQ(timed.Granularity(), fake.Granularity());
}

TEST(TimedDeviceTest, KindsHaveNames) {
  EXPECT_STREQ(DeviceCallKindName(DeviceCallKind::kMap), "map");
  EXPECT_STREQ(DeviceCallKindName(DeviceCallKind::kWait), "wait");
}

}  // namespace
}  // namespace pooch
