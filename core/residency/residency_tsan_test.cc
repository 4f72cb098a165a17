// Four host threads, each with its own stream, share one ResidencyManager under a limit that
// holds a fraction of their data: they allocate, write patterns, compute (read, check, rewrite),
// get swapped out by each other's pressure, check their data and free, for many rounds. The
// fake device runs the queued work in a worker thread that picks among runnable streams at
// random, so a missing wait shows up as a violation or a wrong byte. Runs under ThreadSanitizer
// in build-tsan (label tsan).
#include <atomic>
#include <cstdio>

#include "absl/time/time.h"
#include "core/testing/fake_device.h"
#include "core/residency/residency.h"
#include "core/residency/residency_tsan_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::pooch::testing::kThreadsGranule;
using ::pooch::testing::RunWorkers;
using ::testing::IsEmpty;

constexpr int64_t kG = kThreadsGranule;

// Polls the manager after every third op, as a hook of the interposer would now and then.
class PollingWorker : public ::pooch::testing::Worker {
 public:
  using Worker::Worker;

 protected:
  void AfterOp(int k) override {
    if (k % 3 == 2) manager_.Poll().IgnoreError();
  }
};

TEST(ResidencyThreadsTest, FourThreadsSwapEachOtherAndKeepTheirData) {
  FakeDevice device(::pooch::testing::ThreadsDeviceOptions());
  // Each thread holds up to 4 x 2 granules (32 in all); an op pins at most 4, four ops 16.
  ResidencyOptions r;
  r.memory_limit = 16 * kG;
  r.min_swap_bytes = kG / 4;
  std::atomic<int> errors{0};
  ResidencyStats stats;
  {
    auto manager = ResidencyManager::Create(device, r);
    ASSERT_TRUE(manager.ok()) << manager.status();
    RunWorkers<PollingWorker>(device, **manager, errors);
    ASSERT_TRUE((*manager)->Drain().ok());
    stats = (*manager)->Stats();
  }
  EXPECT_EQ(errors.load(), 0);
  EXPECT_THAT(device.violations(), IsEmpty());
  EXPECT_EQ(device.physical_bytes(), 0);
  EXPECT_LE(stats.peak_device_bytes, 16 * kG);
  EXPECT_GT(stats.swap_outs, 0);
  EXPECT_GT(stats.swap_ins, 0);
  EXPECT_EQ(stats.out_of_memory, 0);
  EXPECT_GT(stats.reuse_hits, 0);  // the default reuse cache is in play (Note [Reuse cache])
  std::printf("swap_outs=%lld swap_ins=%lld cancelled=%lld peak=%lld wait=%s reuse=%lld/%lld\n",
              static_cast<long long>(stats.swap_outs), static_cast<long long>(stats.swap_ins),
              static_cast<long long>(stats.cancelled_swap_outs),
              static_cast<long long>(stats.peak_device_bytes),
              absl::FormatDuration(stats.swap_wait).c_str(),
              static_cast<long long>(stats.reuse_hits),
              static_cast<long long>(stats.reuse_hits + stats.reuse_misses));
}

}  // namespace
}  // namespace pooch
