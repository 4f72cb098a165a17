// Several host threads share one Device, as several framework threads share a GPU. Built under
// ThreadSanitizer by scripts/test.sh (label tsan).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "tests/simgpu/device/device.h"

namespace simgpu {
namespace {

TEST(DeviceThreads, ConcurrentAllocCopyLaunchFree) {
  Config c = ParseConfig([](const char*) -> const char* { return nullptr; });
  c.machine.capacity_bytes = uint64_t{256} << 20;
  Device d(c);
  constexpr int kThreads = 4;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      void* s = nullptr;
      if (d.StreamCreate(true, &s) != Err::kOk) ++failures[t];
      std::vector<char> in(1 << 16, static_cast<char>(t)), out(1 << 16);
      for (int i = 0; i < 200; ++i) {
        void* p = nullptr;
        if (d.MemAlloc(in.size(), &p) != Err::kOk) {
          ++failures[t];
          continue;
        }
        Access a{p, in.size(), true};
        bool ok = d.Memcpy("h2d", p, in.data(), in.size(), CopyDir::kHostToDevice, s, false) ==
                      Err::kOk &&
                  d.Launch("negate", s, &a, 1, 1e6, 2e5,
                           [&] {
                             char* q = static_cast<char*>(p);
                             for (size_t k = 0; k < in.size(); ++k) q[k] = static_cast<char>(-q[k]);
                           }) == Err::kOk &&
                  d.Memcpy("d2h", out.data(), p, out.size(), CopyDir::kDeviceToHost, s, true) ==
                      Err::kOk &&
                  out[100] == static_cast<char>(-t) && d.MemFree(p) == Err::kOk;
        if (!ok) ++failures[t];
      }
      if (d.StreamDestroy(s) != Err::kOk) ++failures[t];
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_EQ(d.Sticky(), Err::kOk);
}

}  // namespace
}  // namespace simgpu
