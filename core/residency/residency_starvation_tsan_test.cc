// Threads that each fit the limit alone must never fail because of one another (issue 13,
// point 1; Note [Waiting for pins]). N threads, each on its own stream, each op touching two of
// the thread's one-granule buffers, under a limit of two granules: the largest op's working set,
// the tightest limit that op allows. Every op pins one buffer and may wait for the other while
// the other threads hold theirs. Each byte an op reads is checked. 2, 4 and 8 threads, 20 runs
// each; the tsan label runs it under ThreadSanitizer too.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/testing/fake_device.h"
#include "core/residency/residency.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

constexpr int64_t kG = 16 << 10;
constexpr int kBuffersPerThread = 3;
constexpr int kOpsPerThread = 12;

uint8_t Pattern(int thread, int buffer, int version) {
  return static_cast<uint8_t>(thread * 31 + buffer * 17 + version * 7 + 1);
}

// One thread's work; returns what went wrong ("" when nothing did).
std::string RunThread(int t, FakeDevice& device, ResidencyManager& manager) {
  absl::StatusOr<StreamHandle> stream = device.CreateStream();
  if (!stream.ok()) return stream.status().ToString();
  std::vector<DeviceAddress> buffers;
  std::vector<int> version(kBuffersPerThread, 0);
  auto errors = std::make_shared<std::atomic<int>>(0);
  // out = check(in), check(out); rewrite out's version (in == out: a fresh write).
  auto op = [&](int out, int in, bool fresh) -> std::string {
    std::vector<AccessRange> ranges = {
        {buffers[out], kG, fresh ? AccessRange::Mode::kWrite : AccessRange::Mode::kReadWrite}};
    if (in != out) ranges.push_back({buffers[in], kG, AccessRange::Mode::kRead});
    absl::StatusOr<OpTicket> ticket = manager.BeforeOp(*stream, ranges);
    if (!ticket.ok()) return absl::StrCat("BeforeOp: ", ticket.status().ToString());
    std::vector<FakeDevice::Range> touched = {{buffers[out], kG}};
    if (in != out) touched.push_back({buffers[in], kG});
    const uint8_t expect_out = Pattern(t, out, version[out]);
    const uint8_t expect_in = Pattern(t, in, version[in]);
    const uint8_t next = Pattern(t, out, fresh ? 0 : version[out] + 1);
    const DeviceAddress out_address = buffers[out], in_address = buffers[in];
    absl::Status s = device.Launch(*stream, touched, [=](FakeDevice::Memory& m) {
      std::vector<uint8_t> data(kG);
      if (!fresh) {
        if (!m.Read(out_address, data.data(), kG).ok() || data[0] != expect_out ||
            data[kG - 1] != expect_out) {
          ++*errors;
        }
        if (!m.Read(in_address, data.data(), kG).ok() || data[0] != expect_in ||
            data[kG - 1] != expect_in) {
          ++*errors;
        }
      }
      std::fill(data.begin(), data.end(), next);
      if (!m.Write(out_address, data.data(), kG).ok()) ++*errors;
    });
    s.Update(manager.AfterOp(*std::move(ticket)));
    if (!s.ok()) return s.ToString();
    if (!fresh) ++version[out];
    return "";
  };
  for (int b = 0; b < kBuffersPerThread; ++b) {
    absl::StatusOr<DeviceAddress> a = manager.Allocate(kG);
    if (!a.ok()) return absl::StrCat("Allocate: ", a.status().ToString());
    buffers.push_back(*a);
    if (std::string e = op(b, b, /*fresh=*/true); !e.empty()) return e;
  }
  for (int k = 0; k < kOpsPerThread; ++k) {
    const int out = k % kBuffersPerThread;
    const int in = (k + 1 + t) % kBuffersPerThread == out ? (out + 1) % kBuffersPerThread
                                                          : (k + 1 + t) % kBuffersPerThread;
    if (std::string e = op(out, in, /*fresh=*/false); !e.empty()) return e;
  }
  if (absl::Status s = device.SynchronizeStream(*stream); !s.ok()) return s.ToString();
  for (DeviceAddress a : buffers) {
    if (absl::Status s = manager.Free(a); !s.ok()) return s.ToString();
  }
  if (*errors > 0) return absl::StrCat(errors->load(), " wrong reads");
  return "";
}

class StarvationTest : public ::testing::TestWithParam<int> {};

TEST_P(StarvationTest, OpsThatFitTheLimitNeverFailBecauseOfOtherThreads) {
  const int threads = GetParam();
  for (int run = 0; run < 20; ++run) {
    FakeDevice::Options o;
    o.mode = FakeDevice::Mode::kWorker;
    o.granularity = kG;
    o.capacity = 256 * kG;
    o.command_delay = absl::Microseconds(2);
    o.seed = 7 + static_cast<uint64_t>(run);
    FakeDevice device(o);
    ResidencyOptions r;
    r.memory_limit = 2 * kG;  // the largest op's working set
    r.min_swap_bytes = kG / 4;
    r.reuse_cache_bytes = 0;
    absl::StatusOr<std::unique_ptr<ResidencyManager>> manager = ResidencyManager::Create(device, r);
    ASSERT_TRUE(manager.ok()) << manager.status();
    std::vector<std::string> failures(threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] { failures[t] = RunThread(t, device, **manager); });
    }
    for (std::thread& w : workers) w.join();
    for (int t = 0; t < threads; ++t) {
      ASSERT_EQ(failures[t], "") << threads << " threads, run " << run << ", thread " << t;
    }
    ASSERT_TRUE((*manager)->Drain().ok());
    EXPECT_EQ((*manager)->Stats().out_of_memory, 0);
    EXPECT_LE((*manager)->Stats().peak_device_bytes, 2 * kG);
    manager->reset();
    EXPECT_THAT(device.violations(), ::testing::IsEmpty());
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, StarvationTest, ::testing::Values(2, 4, 8));

}  // namespace
}  // namespace pooch
