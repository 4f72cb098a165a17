// Shared by the threaded residency tests (residency_tsan_test.cc, residency_plan_tsan_test.cc):
// a Worker that runs rounds of allocate / compute / check / free on its own stream with
// versioned byte patterns, so that a missing wait shows up as a wrong byte, and the driver that
// runs four of them against one manager. A test derives a Worker to add calls around each op.
#ifndef POOCH_CORE_RESIDENCY_RESIDENCY_TSAN_TESTUTIL_H_
#define POOCH_CORE_RESIDENCY_RESIDENCY_TSAN_TESTUTIL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/testing/fake_device.h"
#include "core/residency/residency.h"
#include "gtest/gtest.h"

namespace pooch::testing {

inline constexpr int64_t kThreadsGranule = 16 << 10;
inline constexpr int kThreads = 4;
inline constexpr int kBuffers = 4;  // per thread, up to 2 granules each
inline constexpr int kRounds = 40;
inline constexpr int kOpsPerRound = 6;

// A device whose worker runs queued work in random stream order, slowly enough to interleave.
inline FakeDevice::Options ThreadsDeviceOptions() {
  FakeDevice::Options o;
  o.mode = FakeDevice::Mode::kWorker;
  o.granularity = kThreadsGranule;
  o.capacity = 256 * kThreadsGranule;
  o.command_delay = absl::Microseconds(5);
  o.seed = 42;
  return o;
}

// The byte at `i` of a buffer whose content has version `v`.
inline uint8_t Pattern(int thread, int buffer, int version, int64_t i) {
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
  virtual ~Worker() = default;

  void Run() {
    constexpr int64_t kG = kThreadsGranule;
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
        BeforeOp(buffers, round, k, x, y);
        Op(buffers, x, y);  // read and check y, check x and rewrite it
        AfterOp(k);
      }
      for (int b = 0; b < kBuffers; ++b) Check(buffers[b], b);
      for (const Buffer& b : buffers) {
        if (absl::Status s = manager_.Free(b.address); !s.ok()) Fail(s.ToString());
      }
    }
    if (absl::Status s = device_.SynchronizeStream(stream_); !s.ok()) Fail(s.ToString());
  }

 protected:
  // Around the k-th op of a round on buffers x (rewritten) and y (read).
  virtual void BeforeOp(std::vector<Buffer>& /*buffers*/, int /*round*/, int /*k*/, int /*x*/,
                        int /*y*/) {}
  virtual void AfterOp(int /*k*/) {}

  void Fail(const std::string& what) {
    ++errors_;
    ADD_FAILURE() << "thread " << id_ << ": " << what;
  }

  // One op: checks buffers[x] (unless y < 0: a fresh write, which only writes) and writes its
  // next version; reads and checks buffers[y] when y >= 0 and y != x.
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

// Runs kThreads workers of type W, each on its own thread, against `manager`, and waits for
// them.
template <typename W>
void RunWorkers(FakeDevice& device, ResidencyManager& manager, std::atomic<int>& errors) {
  std::vector<std::unique_ptr<W>> workers;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    workers.push_back(std::make_unique<W>(t, device, manager, errors));
  }
  for (auto& w : workers) threads.emplace_back([&w] { w->Run(); });
  for (std::thread& t : threads) t.join();
}

}  // namespace pooch::testing

#endif  // POOCH_CORE_RESIDENCY_RESIDENCY_TSAN_TESTUTIL_H_
