// Four host threads, each with its own stream, share one ResidencyManager under a tight limit
// and mix the planned-residency calls (Offload, Prefetch, Drop followed by a write-only op that
// recomputes the buffer; Note [Planned residency]) with ops that check their data, while the
// others' pressure evicts. The fake device's worker runs queued work in random stream order, so
// a missing wait shows up as a violation or a wrong byte. Runs under ThreadSanitizer in
// build-tsan (label tsan).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/testing/fake_device.h"
#include "core/residency/residency.h"
#include "core/residency/residency_tsan_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::pooch::testing::Buffer;
using ::pooch::testing::kThreadsGranule;
using ::pooch::testing::RunWorkers;
using ::testing::IsEmpty;

constexpr int64_t kG = kThreadsGranule;

// Makes a planned call before each op.
class PlanningWorker : public ::pooch::testing::Worker {
 public:
  using Worker::Worker;

 protected:
  void BeforeOp(std::vector<Buffer>& buffers, int round, int k, int x, int y) override {
    Plan(buffers, (round + k + id_) % 4, x, y);
  }

  // A planned call before an op: offload y, prefetch y, or drop x and recompute it (a write-only
  // op), or nothing.
  void Plan(std::vector<Buffer>& buffers, int what, int x, int y) {
    absl::Status s;
    switch (what) {
      case 0:
        s = manager_.Offload(buffers[y].address);
        break;
      case 1: {
        // Offload y and prefetch it back once it is on the host (only this thread touches it).
        const DeviceAddress a = buffers[y].address;
        for (int i = 0; i < 2000 && s.ok(); ++i) {
          s = manager_.Poll();
          std::optional<AllocationInfo> info = manager_.Lookup(a);
          if (!info.has_value() || info->state == ResidencyState::kOnHost) break;
          if (info->state == ResidencyState::kResident) s.Update(manager_.Offload(a));
          std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        if (s.ok()) s = manager_.Prefetch(a).status();
        break;
      }
      case 2:
        s = manager_.Drop(buffers[x].address);
        if (s.ok()) Op(buffers, x, -1);  // fresh: writes version 0 without reading
        break;
      default:
        s = manager_.Poll();
    }
    if (!s.ok()) Fail(absl::StrCat("plan ", what, ": ", s.ToString()));
  }
};

TEST(ResidencyPlanThreadsTest, PlannedCallsRaceWithDemandSwapping) {
  FakeDevice device(::pooch::testing::ThreadsDeviceOptions());
  // Each thread holds up to 4 x 2 granules (32 in all); an op pins at most 4, four ops 16;
  // the rest of the limit is room for prefetches.
  ResidencyOptions r;
  r.memory_limit = 24 * kG;  // some slack, so that prefetches find room
  r.min_swap_bytes = kG / 4;
  std::atomic<int> errors{0};
  ResidencyStats stats;
  {
    auto manager = ResidencyManager::Create(device, r);
    ASSERT_TRUE(manager.ok()) << manager.status();
    RunWorkers<PlanningWorker>(device, **manager, errors);
    ASSERT_TRUE((*manager)->Drain().ok());
    stats = (*manager)->Stats();
  }
  EXPECT_EQ(errors.load(), 0);
  EXPECT_THAT(device.violations(), IsEmpty());
  EXPECT_EQ(device.physical_bytes(), 0);
  EXPECT_LE(stats.peak_device_bytes, 24 * kG);
  EXPECT_GT(stats.swap_outs, 0);
  EXPECT_GT(stats.swap_ins, 0);
  EXPECT_EQ(stats.out_of_memory, 0);
  EXPECT_GT(stats.planned_swap_outs, 0);
  EXPECT_GT(stats.prefetches, 0);
  EXPECT_GT(stats.drops, 0);
  EXPECT_EQ(stats.restores, stats.drops);  // every drop was recomputed by a write-only op
  std::printf("planned_outs=%lld demand_outs=%lld prefetches=%lld demand_ins=%lld drops=%lld\n",
              static_cast<long long>(stats.planned_swap_outs),
              static_cast<long long>(stats.demand_swap_outs),
              static_cast<long long>(stats.prefetches),
              static_cast<long long>(stats.demand_swap_ins), static_cast<long long>(stats.drops));
}

}  // namespace
}  // namespace pooch
