// Four host threads, each with its own stream, share one ResidencyManager under a tight limit
// and mix the planned-residency calls (Offload, Prefetch, Drop followed by a write-only op that
// recomputes the buffer; Note [Planned residency]) with ops that check their data, while the
// others' pressure evicts. The fake device's worker runs queued work in random stream order, so
// a missing wait shows up as a violation or a wrong byte. Runs under ThreadSanitizer in
// build-tsan (label tsan).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/fake_device.h"
#include "core/residency.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::IsEmpty;

constexpr int64_t kG = 16 << 10;
constexpr int kThreads = 4;
constexpr int kBuffers = 4;  // per thread, up to 2 granules each
constexpr int kRounds = 40;
constexpr int kOpsPerRound = 6;

// The byte at `i` of a buffer whose content has version `v`.
uint8_t Pattern(int thread, int buffer, int version, int64_t i) {
  return static_cast<uint8_t>(thread * 31 + buffer * 17 + version * 7 + i % 251);
}

struct Buffer {
  DeviceAddress address = 0;
  int64_t bytes = 0;
  int version = 0;
};

class Worker {
 public:
  Worker(int id, FakeDevice& device, ResidencyManager& manager, std::atomic<int>& errors)
      : id_(id), device_(device), manager_(manager), errors_(errors) {}

  void Run() {
    stream_ = *device_.CreateStream();
    for (int round = 0; round < kRounds; ++round) {
      std::vector<Buffer> buffers(kBuffers);
      for (int b = 0; b < kBuffers; ++b) {
        buffers[b].bytes = kG / 2 + ((round + b + id_) % 3) * kG / 2 + 8 * b;  // 0.5 .. 1.5+ G
        absl::StatusOr<DeviceAddress> a = manager_.Allocate(buffers[b].bytes);
        if (!a.ok()) return Fail(absl::StrCat("Allocate: ", a.status().ToString()));
        buffers[b].address = *a;
        Op(buffers, b, -1);  // write version 0
      }
      for (int k = 0; k < kOpsPerRound; ++k) {
        const int x = (round + k) % kBuffers;
        const int y = (round + 2 * k + 1) % kBuffers;
        Plan(buffers, (round + k + id_) % 4, x, y);
        Op(buffers, x, y);  // read and check y, check x and rewrite it
      }
      for (int b = 0; b < kBuffers; ++b) Check(buffers[b], b);
      for (const Buffer& b : buffers) {
        if (absl::Status s = manager_.Free(b.address); !s.ok()) Fail(s.ToString());
      }
    }
    if (absl::Status s = device_.SynchronizeStream(stream_); !s.ok()) Fail(s.ToString());
  }

 private:
  void Fail(const std::string& what) {
    ++errors_;
    ADD_FAILURE() << "thread " << id_ << ": " << what;
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

  // One op: checks buffers[x] (unless it is new) and writes its next version; reads and checks
  // buffers[y] when y >= 0 and y != x.
  void Op(std::vector<Buffer>& buffers, int x, int y) {
    Buffer& out = buffers[x];
    const bool fresh = y < 0;
    std::vector<AccessRange> ranges = {
        {out.address, out.bytes,
         fresh ? AccessRange::Mode::kWrite : AccessRange::Mode::kReadWrite}};
    std::vector<FakeDevice::Range> device_ranges = {{out.address, out.bytes}};
    Buffer in;
    if (!fresh && y != x) {
      in = buffers[y];
      ranges.push_back({in.address, in.bytes, AccessRange::Mode::kRead});
      device_ranges.push_back({in.address, in.bytes});
    }
    absl::StatusOr<OpTicket> ticket = manager_.BeforeOp(stream_, ranges);
    if (!ticket.ok()) return Fail(absl::StrCat("BeforeOp: ", ticket.status().ToString()));
    const int t = id_;
    const int old_version = out.version;
    const int new_version = fresh ? 0 : out.version + 1;
    std::atomic<int>* errors = &errors_;
    absl::Status s = device_.Launch(stream_, device_ranges, [=, out = out](FakeDevice::Memory& m) {
      std::vector<uint8_t> data(static_cast<size_t>(out.bytes));
      if (!fresh) {
        if (!m.Read(out.address, data.data(), out.bytes).ok()) ++*errors;
        for (int64_t i = 0; i < out.bytes; ++i) {
          if (data[i] != Pattern(t, x, old_version, i)) {
            ++*errors;
            break;
          }
        }
        if (in.address != 0) {
          std::vector<uint8_t> other(static_cast<size_t>(in.bytes));
          if (!m.Read(in.address, other.data(), in.bytes).ok()) ++*errors;
          for (int64_t i = 0; i < in.bytes; ++i) {
            if (other[i] != Pattern(t, y, in.version, i)) {
              ++*errors;
              break;
            }
          }
        }
      }
      for (int64_t i = 0; i < out.bytes; ++i) data[i] = Pattern(t, x, new_version, i);
      if (!m.Write(out.address, data.data(), out.bytes).ok()) ++*errors;
    });
    if (!s.ok()) Fail(s.ToString());
    out.version = new_version;
    if (absl::Status a = manager_.AfterOp(*std::move(ticket)); !a.ok()) Fail(a.ToString());
  }

  // Reads a buffer back through an op and compares on the host.
  void Check(const Buffer& b, int index) {
    absl::StatusOr<OpTicket> ticket = manager_.BeforeOp(stream_, {{b.address, b.bytes}});
    if (!ticket.ok()) return Fail(absl::StrCat("BeforeOp(check): ", ticket.status().ToString()));
    auto data = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(b.bytes));
    absl::Status s = device_.Launch(stream_, {{b.address, b.bytes}}, [=](FakeDevice::Memory& m) {
      m.Read(b.address, data->data(), b.bytes).IgnoreError();
    });
    s.Update(manager_.AfterOp(*std::move(ticket)));
    s.Update(device_.SynchronizeStream(stream_));
    if (!s.ok()) return Fail(s.ToString());
    for (int64_t i = 0; i < b.bytes; ++i) {
      if ((*data)[i] != Pattern(id_, index, b.version, i)) {
        return Fail(absl::StrCat("buffer ", index, " byte ", i, " wrong after round"));
      }
    }
  }

  const int id_;
  FakeDevice& device_;
  ResidencyManager& manager_;
  std::atomic<int>& errors_;
  StreamHandle stream_ = 0;
};

TEST(ResidencyPlanThreadsTest, PlannedCallsRaceWithDemandSwapping) {
  FakeDevice::Options o;
  o.mode = FakeDevice::Mode::kWorker;
  o.granularity = kG;
  o.capacity = 256 * kG;
  o.command_delay = absl::Microseconds(5);
  o.seed = 42;
  FakeDevice device(o);
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
    std::vector<std::unique_ptr<Worker>> workers;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      workers.push_back(std::make_unique<Worker>(t, device, **manager, errors));
    }
    for (auto& w : workers) threads.emplace_back([&w] { w->Run(); });
    for (std::thread& t : threads) t.join();
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
