// Tests of the IterationClock (iteration_clock.h) on a FakeDevice, whose virtual clock advances
// by each copy's bytes: an iteration's time is the copies queued between two marks.
#include "core/measure/iteration_clock.h"

#include <vector>

#include "core/testing/fake_device.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using Mode = MeasuredChoice::Mode;

constexpr int64_t kBytes = 64 << 10;  // one granule: 4 us at the fake's 16 GB/s

class IterationClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stream_ = *device_.CreateStream();
    address_ = *device_.ReserveAddress(kBytes);
    ASSERT_TRUE(device_.Map(address_, kBytes, *device_.CreatePhysical(kBytes)).ok());
    host_ = *device_.AllocHost(kBytes);
  }

  // An iteration whose work is `copies` copies of one granule.
  void Work(int copies) {
    for (int i = 0; i < copies; ++i) {
      ASSERT_TRUE(device_.CopyToDeviceAsync(address_, host_, kBytes, stream_).ok());
    }
  }

  // The start of an iteration at its first op.
  std::vector<IterationClock::Sample> Start(IterationClock::Ended ended) {
    clock_.IterationStarted();
    EXPECT_TRUE(clock_.mark_due());
    std::vector<IterationClock::Sample> samples = clock_.Mark(stream_, ended);
    EXPECT_FALSE(clock_.mark_due());
    return samples;
  }

  double CopyMs(int copies) {
    return copies * static_cast<double>(kBytes) / FakeDevice::Options{}.copy_bytes_per_us / 1000;
  }

  FakeDevice device_;
  TimingEventPool events_{device_};
  IterationClock clock_{device_, events_};
  StreamHandle stream_ = 0;
  DeviceAddress address_ = 0;
  void* host_ = nullptr;
};

TEST_F(IterationClockTest, NothingIsTimedBeforeTwoMarks) {
  EXPECT_FALSE(clock_.mark_due());
  EXPECT_EQ(clock_.MeasuredMs(), 0);
  Start({});
  Work(3);
  EXPECT_EQ(clock_.MeasuredMs(), 0);
  EXPECT_EQ(clock_.iterations_timed(), 0);
}

// Note [Measured iteration time]: the first iteration is the fallback, left out of the average
// once a later one was timed.
TEST_F(IterationClockTest, TheFirstIterationIsLeftOutOfTheAverage) {
  Start({});
  Work(10);
  Start({});
  EXPECT_NEAR(clock_.MeasuredMs(), CopyMs(10), 1e-9);
  Work(2);
  Start({});
  Work(4);
  Start({});
  EXPECT_EQ(clock_.iterations_timed(), 2);
  EXPECT_NEAR(clock_.MeasuredMs(), CopyMs(3), 1e-9);
}

TEST_F(IterationClockTest, SamplesAreTheIterationsThatHadAMode) {
  Start({});
  Work(1);
  EXPECT_TRUE(Start({.plan_key = 7, .sample = std::nullopt}).empty());
  Work(2);
  std::vector<IterationClock::Sample> samples = Start({.plan_key = 7, .sample = Mode::kSetAside});
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].plan_key, 7u);
  EXPECT_EQ(samples[0].mode, Mode::kSetAside);
  EXPECT_NEAR(samples[0].ms, CopyMs(2), 1e-9);
  // A set-aside iteration is not the plan's: only the first (unsampled) one was timed.
  EXPECT_EQ(clock_.iterations_timed(), 0);
  EXPECT_NEAR(clock_.MeasuredMs(), CopyMs(1), 1e-9);
  Work(4);
  samples = Start({.plan_key = 7, .sample = Mode::kFollow});
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(clock_.iterations_timed(), 1);
  EXPECT_NEAR(clock_.MeasuredMs(), CopyMs(4), 1e-9);
}

TEST_F(IterationClockTest, ADepartedIterationIsNotTimed) {
  Start({});
  Work(5);
  clock_.IterationStarted();
  clock_.DropOpen();
  EXPECT_FALSE(clock_.mark_due());
  Start({});  // opens a new pair only
  Work(1);
  Start({});
  EXPECT_NEAR(clock_.MeasuredMs(), CopyMs(1), 1e-9);
}

TEST_F(IterationClockTest, RestartForgetsTheOldPlansTimes) {
  for (int i = 0; i < 4; ++i) {
    Start({});
    Work(5);
  }
  Start({});
  EXPECT_EQ(clock_.iterations_timed(), 3);
  clock_.Restart();
  EXPECT_EQ(clock_.MeasuredMs(), 0);
  Work(2);
  Start({});  // the open mark survives: this iteration is the new plan's first
  EXPECT_NEAR(clock_.MeasuredMs(), CopyMs(2), 1e-9);
}

TEST_F(IterationClockTest, EventsAreReused) {
  for (int i = 0; i < 50; ++i) {
    Start({});
    Work(1);
  }
  EXPECT_LE(events_.created(), 3);
}

}  // namespace
}  // namespace pooch
