#include "core/device/timing_event_pool.h"

#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/testing/fake_device.h"
#include "core/testing/forwarding_device.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

// A FakeDevice that counts the events made and destroyed, and can refuse to make or record one.
class CountingDevice final : public ForwardingDevice {
 public:
  CountingDevice() : ForwardingDevice(fake_) {}
  absl::Status DestroyEvent(EventHandle event) override {
    destroyed.push_back(event);
    return inner().DestroyEvent(event);
  }
  absl::Status RecordEvent(EventHandle event, StreamHandle stream) override {
    if (refuse_records) return absl::InternalError("refused");
    return inner().RecordEvent(event, stream);
  }
  absl::StatusOr<EventHandle> CreateTimingEvent() override {
    if (refuse_events) return absl::InternalError("refused");
    ++timing_events_made;
    return inner().CreateTimingEvent();
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
