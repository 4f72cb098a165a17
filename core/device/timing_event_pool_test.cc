#include "core/device/timing_event_pool.h"

#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/testing/fake_device.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

// A FakeDevice that counts the events made and destroyed, and can refuse to make or record one.
class CountingDevice final : public Device {
 public:
  int64_t Granularity() const override { return fake_.Granularity(); }
  absl::StatusOr<DeviceMemoryInfo> MemoryInfo() override { return fake_.MemoryInfo(); }
  absl::StatusOr<DeviceAddress> ReserveAddress(int64_t bytes) override {
    return fake_.ReserveAddress(bytes);
  }
  absl::Status FreeAddress(DeviceAddress address, int64_t bytes) override {
    return fake_.FreeAddress(address, bytes);
  }
  absl::StatusOr<PhysicalHandle> CreatePhysical(int64_t bytes) override {
    return fake_.CreatePhysical(bytes);
  }
  absl::Status ReleasePhysical(PhysicalHandle handle) override {
    return fake_.ReleasePhysical(handle);
  }
  absl::Status Map(DeviceAddress address, int64_t bytes, PhysicalHandle handle) override {
    return fake_.Map(address, bytes, handle);
  }
  absl::Status Unmap(DeviceAddress address, int64_t bytes) override {
    return fake_.Unmap(address, bytes);
  }
  absl::StatusOr<void*> AllocHost(int64_t bytes) override { return fake_.AllocHost(bytes); }
  absl::Status FreeHost(void* host) override { return fake_.FreeHost(host); }
  absl::StatusOr<StreamHandle> CreateStream() override { return fake_.CreateStream(); }
  absl::Status DestroyStream(StreamHandle stream) override { return fake_.DestroyStream(stream); }
  absl::Status CopyToHostAsync(void* host, DeviceAddress device, int64_t bytes,
                               StreamHandle stream) override {
    return fake_.CopyToHostAsync(host, device, bytes, stream);
  }
  absl::Status CopyToDeviceAsync(DeviceAddress device, const void* host, int64_t bytes,
                                 StreamHandle stream) override {
    return fake_.CopyToDeviceAsync(device, host, bytes, stream);
  }
  absl::StatusOr<EventHandle> CreateEvent() override { return fake_.CreateEvent(); }
  absl::Status DestroyEvent(EventHandle event) override {
    destroyed.push_back(event);
    return fake_.DestroyEvent(event);
  }
  absl::Status RecordEvent(EventHandle event, StreamHandle stream) override {
    if (refuse_records) return absl::InternalError("refused");
    return fake_.RecordEvent(event, stream);
  }
  absl::StatusOr<bool> QueryEvent(EventHandle event) override { return fake_.QueryEvent(event); }
  absl::Status SynchronizeEvent(EventHandle event) override {
    return fake_.SynchronizeEvent(event);
  }
  absl::Status StreamWaitEvent(StreamHandle stream, EventHandle event) override {
    return fake_.StreamWaitEvent(stream, event);
  }
  absl::StatusOr<EventHandle> CreateTimingEvent() override {
    if (refuse_events) return absl::InternalError("refused");
    ++timing_events_made;
    return fake_.CreateTimingEvent();
  }
  absl::StatusOr<double> ElapsedMicroseconds(EventHandle start, EventHandle end) override {
    return fake_.ElapsedMicroseconds(start, end);
  }

  int timing_events_made = 0;
  std::vector<EventHandle> destroyed;
  bool refuse_events = false;
  bool refuse_records = false;

 private:
  FakeDevice fake_;
};

TEST(TimingEventPoolTest, MakesEventsWhileNoneWasReleased) {
  CountingDevice device;
  TimingEventPool pool(device);
  absl::flat_hash_set<EventHandle> seen;
  for (int i = 0; i < 4; ++i) {
    std::optional<EventHandle> e = pool.Acquire();
    ASSERT_TRUE(e.has_value());
    EXPECT_TRUE(seen.insert(*e).second) << "handed out twice";
  }
  EXPECT_EQ(device.timing_events_made, 4);
  EXPECT_EQ(pool.created(), 4);
  EXPECT_EQ(pool.free_events(), 0u);
}

TEST(TimingEventPoolTest, HandsOutTheLastReleasedFirst) {
  CountingDevice device;
  TimingEventPool pool(device);
  const EventHandle a = *pool.Acquire();
  const EventHandle b = *pool.Acquire();
  pool.Release(a);
  pool.Release(b);
  EXPECT_EQ(pool.free_events(), 2u);
  EXPECT_EQ(*pool.Acquire(), b);
  EXPECT_EQ(*pool.Acquire(), a);
  EXPECT_EQ(device.timing_events_made, 2) << "reused, none made";
}

// Note [Event reuse]: an event goes back while its record may be pending, and is recorded again.
TEST(TimingEventPoolTest, ReusedEventsTimeAgain) {
  CountingDevice device;
  TimingEventPool pool(device);
  for (int round = 0; round < 3; ++round) {
    std::optional<EventHandle> start = pool.AcquireRecorded(kDefaultStream);
    std::optional<EventHandle> end = pool.AcquireRecorded(kDefaultStream);
    ASSERT_TRUE(start.has_value() && end.has_value());
    ASSERT_TRUE(device.SynchronizeEvent(*end).ok());
    absl::StatusOr<double> us = device.ElapsedMicroseconds(*start, *end);
    ASSERT_TRUE(us.ok()) << us.status();
    EXPECT_GE(*us, 0);
    pool.Release(*start);
    pool.Release(*end);
  }
  EXPECT_EQ(device.timing_events_made, 2);
}

TEST(TimingEventPoolTest, NoEventWhenTheDeviceMakesNone) {
  CountingDevice device;
  device.refuse_events = true;
  TimingEventPool pool(device);
  EXPECT_FALSE(pool.Acquire().has_value());
  EXPECT_FALSE(pool.AcquireRecorded(kDefaultStream).has_value());
  EXPECT_EQ(pool.created(), 0);
}

TEST(TimingEventPoolTest, AnEventThatCannotBeRecordedGoesBack) {
  CountingDevice device;
  TimingEventPool pool(device);
  device.refuse_records = true;
  EXPECT_FALSE(pool.AcquireRecorded(kDefaultStream).has_value());
  EXPECT_EQ(pool.free_events(), 1u);
  device.refuse_records = false;
  EXPECT_TRUE(pool.AcquireRecorded(kDefaultStream).has_value());
  EXPECT_EQ(device.timing_events_made, 1);
}

TEST(TimingEventPoolTest, DestroysTheEventsItHolds) {
  CountingDevice device;
  EventHandle held = 0;
  EventHandle released = 0;
  {
    TimingEventPool pool(device);
    held = *pool.Acquire();
    released = *pool.Acquire();
    pool.Release(released);
  }
  EXPECT_EQ(device.destroyed, std::vector<EventHandle>{released}) << "not the held " << held;
}

}  // namespace
}  // namespace pooch
