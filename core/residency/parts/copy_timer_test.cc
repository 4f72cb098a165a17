#include "core/residency/parts/copy_timer.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/testing/fake_device.h"
#include "core/testing/forwarding_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::IsEmpty;

// A FakeDevice that keeps the timing events alive, to check that each is given back once.
class EventCountingDevice final : public ForwardingDevice {
 public:
  explicit EventCountingDevice(FakeDevice::Options options)
      : ForwardingDevice(inner_), inner_(options) {}
  FakeDevice& fake() { return inner_; }
  const absl::flat_hash_set<EventHandle>& live() const { return live_; }
  int destroyed_twice() const { return destroyed_twice_; }

  absl::Status DestroyEvent(EventHandle event) override {
    if (live_.erase(event) == 0) ++destroyed_twice_;
    return inner_.DestroyEvent(event);
  }
  absl::StatusOr<EventHandle> CreateTimingEvent() override {
    absl::StatusOr<EventHandle> event = inner_.CreateTimingEvent();
    if (event.ok()) live_.insert(*event);
    return event;
  }

 private:
  FakeDevice inner_;
  absl::flat_hash_set<EventHandle> live_;
  int destroyed_twice_ = 0;
};

class CopyTimerTest : public ::testing::Test {
 protected:
  static constexpr int64_t kBytes = 64 << 10;  // the fake device's granularity

  void Init(FakeDevice::Mode mode) {
    FakeDevice::Options o;
    o.mode = mode;
    device_.emplace(o);
    stream_ = *device_->CreateStream();
    address_ = *device_->ReserveAddress(kBytes);
    chunk_ = *device_->CreatePhysical(kBytes);
    ASSERT_TRUE(device_->Map(address_, kBytes, chunk_).ok());
    host_ = *device_->AllocHost(kBytes);
  }
  void TearDown() override {
    if (!device_.has_value()) return;
    device_->fake().RunPending();
    EXPECT_TRUE(device_->Unmap(address_, kBytes).ok());
    EXPECT_TRUE(device_->ReleasePhysical(chunk_).ok());
    EXPECT_TRUE(device_->FreeAddress(address_, kBytes).ok());
    EXPECT_TRUE(device_->FreeHost(host_).ok());
    EXPECT_TRUE(device_->DestroyStream(stream_).ok());
    EXPECT_THAT(device_->fake().violations(), IsEmpty());
  }

  // One timed copy to the host, as the manager's swap-out makes it.
  void TimedCopy(CopyTimer& timer, AllocationId id) {
    std::optional<CopyTimer::Pending> t = timer.Begin(stream_);
    ASSERT_TRUE(device_->CopyToHostAsync(host_, address_, kBytes, stream_).ok());
    timer.End(std::move(t), stream_, id, kBytes, CopyTiming::Direction::kToHost);
  }

  std::optional<EventCountingDevice> device_;
  StreamHandle stream_ = 0;
  DeviceAddress address_ = 0;
  PhysicalHandle chunk_ = 0;
  void* host_ = nullptr;
};

TEST_F(CopyTimerTest, DisabledTimesNothingAndMakesNoEvent) {
  Init(FakeDevice::Mode::kImmediate);
  CopyTimer timer(*device_, /*enabled=*/false);
  EXPECT_FALSE(timer.Begin(stream_).has_value());
  TimedCopy(timer, 1);
  EXPECT_EQ(timer.pending_count(), 0u);
  EXPECT_THAT(timer.TakeCompleted(), IsEmpty());
  EXPECT_THAT(device_->live(), IsEmpty());
}

TEST_F(CopyTimerTest, TakesEachCompletedCopyOnceInQueuedOrder) {
  Init(FakeDevice::Mode::kManual);
  CopyTimer timer(*device_, /*enabled=*/true);
  TimedCopy(timer, 7);
  TimedCopy(timer, 8);
  EXPECT_EQ(timer.pending_count(), 2u);
  EXPECT_THAT(timer.TakeCompleted(), IsEmpty());  // nothing ran yet: both kept
  EXPECT_EQ(timer.pending_count(), 2u);
  device_->fake().RunPending();
  const std::vector<CopyTiming> t = timer.TakeCompleted();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].allocation, 7u);
  EXPECT_EQ(t[1].allocation, 8u);
  EXPECT_EQ(t[0].bytes, kBytes);
  EXPECT_EQ(t[0].direction, CopyTiming::Direction::kToHost);
  EXPECT_DOUBLE_EQ(t[0].microseconds, kBytes / 16000.0);  // the fake device's copy rate
  EXPECT_THAT(timer.TakeCompleted(), IsEmpty());
  EXPECT_EQ(timer.free_events(), device_->live().size());  // every event back in the pool
  EXPECT_EQ(device_->destroyed_twice(), 0);
}

TEST_F(CopyTimerTest, ReusesReleasedEventsInsteadOfMakingNewOnes) {
  Init(FakeDevice::Mode::kImmediate);
  {
    CopyTimer timer(*device_, /*enabled=*/true);
    for (AllocationId id = 1; id <= 5; ++id) {
      TimedCopy(timer, id);
      EXPECT_EQ(timer.TakeCompleted().size(), 1u);
    }
    EXPECT_EQ(device_->live().size(), 2u);  // one copy timed at a time: two events in all
    EXPECT_EQ(timer.free_events(), 2u);
  }  // the pool destroys them with the timer
  EXPECT_THAT(device_->live(), IsEmpty());
  EXPECT_EQ(device_->destroyed_twice(), 0);
}

TEST_F(CopyTimerTest, AbandonAndAbandonAllGiveEveryEventBackOnce) {
  Init(FakeDevice::Mode::kManual);
  {
    CopyTimer timer(*device_, /*enabled=*/true);
    std::optional<CopyTimer::Pending> t = timer.Begin(stream_);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(device_->live().size(), 2u);
    EXPECT_EQ(timer.free_events(), 0u);
    timer.Abandon(std::move(t));  // the copy could not be queued
    EXPECT_EQ(timer.free_events(), 2u);
    TimedCopy(timer, 1);  // takes the two released events again
    EXPECT_EQ(device_->live().size(), 2u);
    timer.AbandonAll();  // still in flight
    EXPECT_EQ(timer.pending_count(), 0u);
    EXPECT_EQ(timer.free_events(), 2u);
    TimedCopy(timer, 2);
  }  // the destructor gives back what is left, and the pool destroys every event
  EXPECT_THAT(device_->live(), IsEmpty());
  EXPECT_EQ(device_->destroyed_twice(), 0);
}

TEST_F(CopyTimerTest, SetEnabledStartsAndStops) {
  Init(FakeDevice::Mode::kImmediate);
  CopyTimer timer(*device_, /*enabled=*/false);
  timer.set_enabled(true);
  EXPECT_TRUE(timer.enabled());
  TimedCopy(timer, 1);
  timer.set_enabled(false);
  TimedCopy(timer, 2);
  const std::vector<CopyTiming> t = timer.TakeCompleted();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].allocation, 1u);
}

}  // namespace
}  // namespace pooch
