#include "core/testing/fake_device.h"

#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kG = 64 << 10;

FakeDevice::Options Opts(FakeDevice::Mode mode) {
  FakeDevice::Options o;
  o.mode = mode;
  o.capacity = 8 * kG;
  return o;
}

TEST(FakeDeviceTest, MapWriteReadUnmap) {
  FakeDevice d(Opts(FakeDevice::Mode::kImmediate));
  DeviceAddress va = *d.ReserveAddress(2 * kG);
  PhysicalHandle p = *d.CreatePhysical(2 * kG);
  ASSERT_TRUE(d.Map(va, 2 * kG, p).ok());
  const uint32_t x = 0xdeadbeef;
  ASSERT_TRUE(d.Write(va + kG, &x, sizeof x).ok());
  uint32_t y = 0;
  ASSERT_TRUE(d.Read(va + kG, &y, sizeof y).ok());
  EXPECT_EQ(y, x);
  ASSERT_TRUE(d.Unmap(va, 2 * kG).ok());
  ASSERT_TRUE(d.ReleasePhysical(p).ok());
  ASSERT_TRUE(d.FreeAddress(va, 2 * kG).ok());
  EXPECT_THAT(d.violations(), IsEmpty());
  EXPECT_EQ(d.physical_bytes(), 0);
}

TEST(FakeDeviceTest, CatchesAccessToUnmappedMemory) {
  FakeDevice d(Opts(FakeDevice::Mode::kImmediate));
  DeviceAddress va = *d.ReserveAddress(kG);
  uint8_t b = 0;
  EXPECT_FALSE(d.Read(va, &b, 1).ok());
  ASSERT_EQ(d.violations().size(), 1u);
  EXPECT_THAT(d.violations()[0], HasSubstr("unmapped"));
}

TEST(FakeDeviceTest, CatchesMapOverMappedRangeAndOutsideReservation) {
  FakeDevice d(Opts(FakeDevice::Mode::kImmediate));
  DeviceAddress va = *d.ReserveAddress(2 * kG);
  PhysicalHandle p = *d.CreatePhysical(kG);
  PhysicalHandle q = *d.CreatePhysical(kG);
  ASSERT_TRUE(d.Map(va, kG, p).ok());
  EXPECT_FALSE(d.Map(va, kG, q).ok());
  EXPECT_FALSE(d.Map(va + 2 * kG, kG, q).ok());
  ASSERT_EQ(d.violations().size(), 2u);
  EXPECT_THAT(d.violations()[0], HasSubstr("already mapped"));
  EXPECT_THAT(d.violations()[1], HasSubstr("outside any reservation"));
}

TEST(FakeDeviceTest, CatchesReleaseAndUnmapUnderQueuedCopy) {
  FakeDevice d(Opts(FakeDevice::Mode::kManual));
  StreamHandle s = *d.CreateStream();
  DeviceAddress va = *d.ReserveAddress(kG);
  PhysicalHandle p = *d.CreatePhysical(kG);
  ASSERT_TRUE(d.Map(va, kG, p).ok());
  void* host = *d.AllocHost(kG);
  ASSERT_TRUE(d.CopyToHostAsync(host, va, kG, s).ok());
  ASSERT_TRUE(d.Unmap(va, kG).ok());
  ASSERT_TRUE(d.ReleasePhysical(p).ok());
  std::vector<std::string> v = d.violations();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_THAT(v[0], HasSubstr("Unmap"));
  EXPECT_THAT(v[1], HasSubstr("queued command"));
  d.RunPending();  // the copy now finds nothing mapped
  EXPECT_EQ(d.violations().size(), 3u);
}

TEST(FakeDeviceTest, CatchesRemapBetweenQueueAndRun) {
  FakeDevice d(Opts(FakeDevice::Mode::kManual));
  StreamHandle s = *d.CreateStream();
  DeviceAddress va = *d.ReserveAddress(kG);
  PhysicalHandle p = *d.CreatePhysical(kG);
  ASSERT_TRUE(d.Map(va, kG, p).ok());
  ASSERT_TRUE(d.Launch(s, {{va, kG}}, [&](FakeDevice::Memory& m) {
                 uint8_t b = 1;
                 m.Write(va, &b, 1).IgnoreError();
               }).ok());
  ASSERT_TRUE(d.Unmap(va, kG).ok());  // violation 1: queued kernel
  PhysicalHandle q = *d.CreatePhysical(kG);
  ASSERT_TRUE(d.Map(va, kG, q).ok());
  d.RunPending();  // violation 2: the kernel would write the new chunk
  std::vector<std::string> v = d.violations();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_THAT(v[1], HasSubstr("remapped"));
}

TEST(FakeDeviceTest, EventsOrderStreams) {
  FakeDevice d(Opts(FakeDevice::Mode::kManual));
  StreamHandle a = *d.CreateStream();
  StreamHandle b = *d.CreateStream();
  EventHandle e = *d.CreateEvent();
  EXPECT_TRUE(*d.QueryEvent(e));  // never recorded: complete
  std::vector<int> order;
  ASSERT_TRUE(d.StreamWaitEvent(b, e).ok());  // waits for nothing
  ASSERT_TRUE(d.Launch(a, {}, [&](FakeDevice::Memory&) { order.push_back(1); }).ok());
  ASSERT_TRUE(d.RecordEvent(e, a).ok());
  EXPECT_FALSE(*d.QueryEvent(e));
  ASSERT_TRUE(d.StreamWaitEvent(b, e).ok());
  ASSERT_TRUE(d.Launch(b, {}, [&](FakeDevice::Memory&) { order.push_back(2); }).ok());
  ASSERT_TRUE(d.SynchronizeEvent(e).ok());
  EXPECT_TRUE(*d.QueryEvent(e));
  d.RunPending();
  EXPECT_THAT(order, ElementsAre(1, 2));
  EXPECT_THAT(d.violations(), IsEmpty());
}

TEST(FakeDeviceTest, WorkerRunsCopies) {
  FakeDevice::Options o = Opts(FakeDevice::Mode::kWorker);
  o.command_delay = absl::Microseconds(100);
  FakeDevice d(o);
  StreamHandle s = *d.CreateStream();
  DeviceAddress va = *d.ReserveAddress(kG);
  PhysicalHandle p = *d.CreatePhysical(kG);
  ASSERT_TRUE(d.Map(va, kG, p).ok());
  auto* host = static_cast<uint8_t*>(*d.AllocHost(kG));
  std::memset(host, 7, kG);
  ASSERT_TRUE(d.CopyToDeviceAsync(va, host, kG, s).ok());
  EventHandle e = *d.CreateEvent();
  ASSERT_TRUE(d.RecordEvent(e, s).ok());
  ASSERT_TRUE(d.SynchronizeEvent(e).ok());
  uint8_t b = 0;
  ASSERT_TRUE(d.Read(va + 100, &b, 1).ok());
  EXPECT_EQ(b, 7);
  EXPECT_THAT(d.violations(), IsEmpty());
}

TEST(FakeDeviceTest, CapacityAndInjectedFailures) {
  FakeDevice::Options o = Opts(FakeDevice::Mode::kImmediate);
  o.host_capacity = kG;
  FakeDevice d(o);
  EXPECT_TRUE(absl::IsResourceExhausted(d.CreatePhysical(16 * kG).status()));
  d.FailCreatePhysicalAfter(1);
  EXPECT_TRUE(d.CreatePhysical(kG).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(d.CreatePhysical(kG).status()));
  EXPECT_TRUE(d.CreatePhysical(kG).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(d.AllocHost(2 * kG).status()));
  d.FailAllocHostAfter(0);
  EXPECT_TRUE(absl::IsResourceExhausted(d.AllocHost(16).status()));
  EXPECT_TRUE(d.AllocHost(16).ok());
}

TEST(FakeDeviceTest, TimingEventsMeasureCopiesOnTheVirtualClock) {
  for (FakeDevice::Mode mode : {FakeDevice::Mode::kImmediate, FakeDevice::Mode::kManual}) {
    FakeDevice::Options o = Opts(mode);
    o.copy_bytes_per_us = 1000;
    FakeDevice d(o);
    StreamHandle s = *d.CreateStream();
    DeviceAddress va = *d.ReserveAddress(2 * kG);
    PhysicalHandle p = *d.CreatePhysical(2 * kG);
    ASSERT_TRUE(d.Map(va, 2 * kG, p).ok());
    void* host = *d.AllocHost(2 * kG);
    EventHandle start = *d.CreateTimingEvent();
    EventHandle end = *d.CreateTimingEvent();
    EventHandle plain = *d.CreateEvent();
    ASSERT_TRUE(d.RecordEvent(start, s).ok());
    ASSERT_TRUE(d.CopyToHostAsync(host, va, 2 * kG, s).ok());
    ASSERT_TRUE(d.RecordEvent(end, s).ok());
    ASSERT_TRUE(d.RecordEvent(plain, s).ok());
    if (mode == FakeDevice::Mode::kManual) {  // not completed yet
      EXPECT_TRUE(absl::IsFailedPrecondition(d.ElapsedMicroseconds(start, end).status()));
    }
    ASSERT_TRUE(d.SynchronizeStream(s).ok());
    absl::StatusOr<double> us = d.ElapsedMicroseconds(start, end);
    ASSERT_TRUE(us.ok()) << us.status();
    EXPECT_DOUBLE_EQ(*us, 2.0 * kG / 1000);
    EXPECT_DOUBLE_EQ(*d.ElapsedMicroseconds(end, end), 0);
    EXPECT_TRUE(absl::IsFailedPrecondition(d.ElapsedMicroseconds(start, plain).status()));
    for (EventHandle e : {start, end, plain}) ASSERT_TRUE(d.DestroyEvent(e).ok());
    ASSERT_TRUE(d.FreeHost(host).ok());
    ASSERT_TRUE(d.Unmap(va, 2 * kG).ok());
    ASSERT_TRUE(d.ReleasePhysical(p).ok());
    ASSERT_TRUE(d.FreeAddress(va, 2 * kG).ok());
    EXPECT_THAT(d.violations(), IsEmpty());
  }
}

}  // namespace
}  // namespace pooch
