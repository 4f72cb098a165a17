// The runtime API of simgpu, through a program linked against the real CUDA Toolkit's
// libcudart.so.13 and run with LD_LIBRARY_PATH pointing at simgpu's libraries. Every scenario
// runs in its own child process (isolated.h).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/simgpu/driver/isolated.h"

namespace {

using simgpu_test::CountLines;
using simgpu_test::Outcome;
using simgpu_test::RunIsolated;

constexpr size_t kMiB = size_t{1} << 20;

std::string Name(cudaError_t e) { return cudaGetErrorName(e); }

#define CUDA_OK(expr) CHECK_EQ_OR_RETURN(Name(expr), Name(cudaSuccess))

Outcome Scenario(const std::function<std::string()>& body, simgpu_test::Env env = {}) {
  return RunIsolated(env, body);
}

TEST(Runtime, RunsOnSimgpu) {
  Outcome o = Scenario([] {
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    CHECK_OR_RETURN(std::string(prop.name).find("(simgpu)") != std::string::npos);
    CHECK_EQ_OR_RETURN(prop.major, 7);
    CHECK_EQ_OR_RETURN(prop.totalGlobalMem, size_t{16} << 30);
    int n = 0, v = 0;
    CUDA_OK(cudaGetDeviceCount(&n));
    CHECK_EQ_OR_RETURN(n, 1);
    CUDA_OK(cudaRuntimeGetVersion(&v));
    CHECK_EQ_OR_RETURN(v, CUDART_VERSION);
    CUDA_OK(cudaDriverGetVersion(&v));
    CHECK_OR_RETURN(v >= 13000);
    CHECK_EQ_OR_RETURN(Name(cudaSetDevice(1)), Name(cudaErrorInvalidDevice));
    CHECK_EQ_OR_RETURN(Name(cudaGetLastError()), Name(cudaErrorInvalidDevice));
    CHECK_EQ_OR_RETURN(Name(cudaGetLastError()), Name(cudaSuccess));
    return std::string();
  });
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.result, "") << o.err;
}

TEST(Runtime, CopiesAndMemsetRoundTrip) {
  Outcome o = Scenario([] {
    const size_t n = 3 * kMiB + 17;
    std::vector<unsigned char> src(n), dst(n);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
    void *a = nullptr, *b = nullptr, *pinned = nullptr;
    CUDA_OK(cudaMalloc(&a, n));
    CUDA_OK(cudaMalloc(&b, n));
    CHECK_EQ_OR_RETURN(reinterpret_cast<uintptr_t>(a) % 256, 0u);
    CUDA_OK(cudaMemcpy(a, src.data(), n, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(static_cast<char*>(a) + 100, 0xAB, 50));
    CUDA_OK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
    CUDA_OK(cudaMemcpy(dst.data(), b, n, cudaMemcpyDefault));
    for (size_t i = 0; i < n; ++i) {
      unsigned char want = (i >= 100 && i < 150) ? 0xAB : src[i];
      if (dst[i] != want) return "byte " + std::to_string(i) + " differs";
    }
    // Pinned memory and async copies on a stream.
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    CUDA_OK(cudaMallocHost(&pinned, n));
    std::memset(pinned, 0, n);
    CUDA_OK(cudaMemsetAsync(b, 0x5C, n, s));
    CUDA_OK(cudaMemcpyAsync(pinned, b, n, cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CHECK_EQ_OR_RETURN(static_cast<unsigned char*>(pinned)[n - 1], 0x5C);
    cudaPointerAttributes attr;
    CUDA_OK(cudaPointerGetAttributes(&attr, a));
    CHECK_EQ_OR_RETURN(attr.type, cudaMemoryTypeDevice);
    CUDA_OK(cudaPointerGetAttributes(&attr, pinned));
    CHECK_EQ_OR_RETURN(attr.type, cudaMemoryTypeHost);
    CUDA_OK(cudaPointerGetAttributes(&attr, dst.data()));
    CHECK_EQ_OR_RETURN(attr.type, cudaMemoryTypeUnregistered);
    CHECK_EQ_OR_RETURN(Name(cudaMemcpy(dst.data(), a, n, cudaMemcpyHostToDevice)),
                       Name(cudaErrorInvalidValue));  // kind contradicts the pointers
    CUDA_OK(cudaFreeHost(pinned));
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(b));
    CHECK_EQ_OR_RETURN(Name(cudaFree(a)), Name(cudaErrorInvalidValue));  // double free
    return std::string();
  });
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.result, "") << o.err;
}

// 2D copies and memsets touch width bytes of each of height rows of pitched regions, and leave
// the bytes between rows alone; a pitch below the width is an error.
TEST(Runtime, Copy2DMovesRowsAndRejectsBadPitches) {
  Outcome o = Scenario([] {
    constexpr size_t kPitch = 64, kWidth = 40, kRows = 5;
    std::vector<unsigned char> host(kWidth * kRows), back(kPitch * kRows);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i + 1);
    void *a = nullptr, *b = nullptr;
    CUDA_OK(cudaMalloc(&a, kPitch * kRows));
    CUDA_OK(cudaMalloc(&b, kPitch * kRows));
    CUDA_OK(cudaMemset(a, 0, kPitch * kRows));
    CUDA_OK(cudaMemset(b, 0, kPitch * kRows));
    CUDA_OK(cudaMemcpy2D(a, kPitch, host.data(), kWidth, kWidth, kRows, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    CUDA_OK(cudaMemcpy2DAsync(b, kPitch, a, kPitch, kWidth, kRows, cudaMemcpyDeviceToDevice, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy2D(back.data(), kPitch, b, kPitch, kPitch, kRows, cudaMemcpyDeviceToHost));
    for (size_t row = 0; row < kRows; ++row) {
      for (size_t col = 0; col < kPitch; ++col) {
        const unsigned char want = col < kWidth ? host[row * kWidth + col] : 0;
        CHECK_EQ_OR_RETURN(back[row * kPitch + col], want);
      }
    }
    CHECK_EQ_OR_RETURN(
        Name(cudaMemcpy2D(b, kWidth - 1, a, kPitch, kWidth, kRows, cudaMemcpyDeviceToDevice)),
        Name(cudaErrorInvalidPitchValue));
    // A 2D memset of columns [8, 16) of every row.
    CUDA_OK(cudaMemset2DAsync(static_cast<char*>(b) + 8, kPitch, 0xEE, 8, kRows, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(back.data(), b, kPitch * kRows, cudaMemcpyDeviceToHost));
    for (size_t row = 0; row < kRows; ++row) {
      for (size_t col = 0; col < kPitch; ++col) {
        const unsigned char want =
            col >= 8 && col < 16 ? 0xEE : (col < kWidth ? host[row * kWidth + col] : 0);
        CHECK_EQ_OR_RETURN(back[row * kPitch + col], want);
      }
    }
    CHECK_EQ_OR_RETURN(Name(cudaMemset2D(b, 4, 0, 8, kRows)), Name(cudaErrorInvalidPitchValue));
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(b));
    return std::string();
  });
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.result, "") << o.err;
}

// A copy into device memory on one stream, then a read of it on another stream: without an
// event wait it is a race; with one it is fine.
std::string TwoStreams(bool wait) {
  const size_t n = 8 * kMiB;
  void *dev = nullptr, *in = nullptr, *out = nullptr;
  CUDA_OK(cudaMalloc(&dev, n));
  CUDA_OK(cudaMallocHost(&in, n));
  CUDA_OK(cudaMallocHost(&out, n));
  cudaStream_t s1, s2;
  cudaEvent_t copied;
  CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CUDA_OK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  CUDA_OK(cudaMemcpyAsync(dev, in, n, cudaMemcpyHostToDevice, s1));
  CUDA_OK(cudaEventRecord(copied, s1));
  if (wait) CUDA_OK(cudaStreamWaitEvent(s2, copied, 0));
  cudaError_t e = cudaMemcpyAsync(out, dev, n, cudaMemcpyDeviceToHost, s2);
  if (wait) {
    CUDA_OK(e);
    CUDA_OK(cudaDeviceSynchronize());
  } else {
    CHECK_EQ_OR_RETURN(Name(e), Name(cudaErrorIllegalState));
    CHECK_EQ_OR_RETURN(Name(cudaDeviceSynchronize()), Name(cudaErrorIllegalState));  // sticky
  }
  return std::string();
}

TEST(Runtime, MissingEventWaitIsARace) {
  Outcome o = Scenario([] { return TwoStreams(false); });
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.result, "") << o.err;
  EXPECT_NE(o.err.find("race: cuMemcpyDtoHAsync"), std::string::npos) << o.err;
  EXPECT_EQ(CountLines(o.err), 1) << o.err;
}

TEST(Runtime, EventWaitMakesItSafe) {
  Outcome o = Scenario([] { return TwoStreams(true); });
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.result, "") << o.err;
  EXPECT_EQ(o.err, "");
}

TEST(Runtime, HazardsWarnAndOffLetTheRaceThrough) {
  for (const char* mode : {"warn", "off"}) {
    Outcome o = Scenario(
        [] {
          const size_t n = kMiB;
          void *dev = nullptr, *in = nullptr;
          CUDA_OK(cudaMalloc(&dev, n));
          CUDA_OK(cudaMallocHost(&in, n));
          cudaStream_t s1, s2;
          CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
          CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
          CUDA_OK(cudaMemcpyAsync(dev, in, n, cudaMemcpyHostToDevice, s1));
          CUDA_OK(cudaMemsetAsync(dev, 0, n, s2));
          return std::string();
        },
        {{"SIMGPU_HAZARDS", mode}});
    EXPECT_EQ(o.result, "") << mode << ": " << o.err;
    EXPECT_EQ(CountLines(o.err), std::string(mode) == "warn" ? 1 : 0) << o.err;
  }
}

TEST(Runtime, OverCapacityAllocationFails) {
  Outcome o = Scenario(
      [] {
        size_t free_bytes = 0, total = 0;
        CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
        CHECK_EQ_OR_RETURN(total, 64 * kMiB);
        CHECK_EQ_OR_RETURN(free_bytes, 64 * kMiB);
        void *a = nullptr, *b = nullptr;
        CUDA_OK(cudaMalloc(&a, 40 * kMiB));
        CHECK_EQ_OR_RETURN(Name(cudaMalloc(&b, 30 * kMiB)), Name(cudaErrorMemoryAllocation));
        CHECK_EQ_OR_RETURN(Name(cudaGetLastError()), Name(cudaErrorMemoryAllocation));
        CUDA_OK(cudaMalloc(&b, 24 * kMiB));  // exactly the rest
        CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
        CHECK_EQ_OR_RETURN(free_bytes, 0u);
        CUDA_OK(cudaFree(a));
        CUDA_OK(cudaMalloc(&a, 30 * kMiB));
        return std::string();
      },
      {{"SIMGPU_MEMORY", "64MiB"}});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.result, "") << o.err;
}

// A block cudaFreeAsync released on one stream goes to cudaMallocAsync on another only once that
// stream is ordered after the free (Note [Stream-ordered reuse] in device/device_memory.cc), as
// CUDA's default pool does; before, simgpu handed it out at once and then reported its own race.
TEST(Runtime, MallocAsyncReusesAnotherStreamsFreeOnlyAfterIt) {
  Outcome o = Scenario(
      [] {
        const size_t n = 64 * kMiB;
        cudaStream_t s1, s2;
        cudaEvent_t freed;
        CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
        CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
        CUDA_OK(cudaEventCreateWithFlags(&freed, cudaEventDisableTiming));
        void *p = nullptr, *q = nullptr, *r = nullptr;
        CUDA_OK(cudaMallocAsync(&p, n, s1));
        CUDA_OK(cudaMemsetAsync(p, 1, n, s1));
        CUDA_OK(cudaFreeAsync(p, s1));  // s1 gets there after the memset, long after now
        CUDA_OK(cudaMallocAsync(&q, n, s2));
        CUDA_OK(cudaMemsetAsync(q, 2, n, s2));
        CHECK_OR_RETURN(q != p);
        // An event recorded after the free orders s2 after it: now the block may go to s2.
        CUDA_OK(cudaEventRecord(freed, s1));
        CUDA_OK(cudaStreamWaitEvent(s2, freed, 0));
        CUDA_OK(cudaMallocAsync(&r, n, s2));
        CHECK_EQ_OR_RETURN(r, p);
        CUDA_OK(cudaMemsetAsync(r, 3, n, s2));
        CUDA_OK(cudaFreeAsync(q, s2));
        CUDA_OK(cudaFreeAsync(r, s2));
        CUDA_OK(cudaDeviceSynchronize());
        return std::string();
      },
      {{"SIMGPU_HAZARDS", "error"}});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.result, "") << o.err;
  EXPECT_EQ(o.err, "");
}

// A framework without a caching allocator holds one allocation per tensor: 100,000 live ones
// must not run into vm.max_map_count (65530 mappings; Note [Malloc slabs] in
// device/device_memory.cc).
TEST(Runtime, HundredThousandLiveAllocations) {
  Outcome o = Scenario(
      [] {
        std::vector<void*> p(100000);
        for (size_t i = 0; i < p.size(); ++i) {
          cudaError_t e = cudaMalloc(&p[i], 4096);
          if (e != cudaSuccess) return "cudaMalloc number " + std::to_string(i) + ": " + Name(e);
        }
        CUDA_OK(cudaMemset(p.back(), 0x5A, 4096));
        unsigned char last = 0;
        CUDA_OK(cudaMemcpy(&last, static_cast<char*>(p.back()) + 4095, 1, cudaMemcpyDeviceToHost));
        CHECK_EQ_OR_RETURN(last, 0x5A);
        for (void* q : p) CUDA_OK(cudaFree(q));
        size_t free_bytes = 0, total = 0;
        CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
        CHECK_EQ_OR_RETURN(free_bytes, total);
        return std::string();
      },
      {{"SIMGPU_MEMORY", "4GiB"}});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.result, "") << o.err;
}

TEST(Runtime, SimgpuFailFailsTheNthCall) {
  Outcome o = Scenario(
      [] {
        void* p[5];
        CUDA_OK(cudaMalloc(&p[0], 100));
        CUDA_OK(cudaMalloc(&p[1], 100));
        CHECK_EQ_OR_RETURN(Name(cudaMalloc(&p[2], 100)), Name(cudaErrorMemoryAllocation));
        CUDA_OK(cudaMalloc(&p[3], 100));
        CUDA_OK(cudaMallocHost(&p[4], 100));
        return std::string();
      },
      {{"SIMGPU_FAIL", "cudaMalloc:3"}});
  EXPECT_EQ(o.result, "") << o.err;
  EXPECT_EQ(CountLines(o.err), 1) << o.err;

  o = Scenario(
      [] {
        void* p = nullptr;
        CUDA_OK(cudaMallocHost(&p, 100));
        CHECK_EQ_OR_RETURN(Name(cudaMallocHost(&p, 100)), Name(cudaErrorMemoryAllocation));
        CUDA_OK(cudaMallocHost(&p, 100));
        return std::string();
      },
      {{"SIMGPU_FAIL", "cudaMallocHost:2"}});
  EXPECT_EQ(o.result, "") << o.err;
}

// Times a 64 MiB host-to-device copy with events: bytes / link bandwidth + launch latency.
std::string CopyTime(double* ms_out) {
  const size_t n = 64 * kMiB;
  void *dev = nullptr, *host = nullptr;
  CUDA_OK(cudaMalloc(&dev, n));
  CUDA_OK(cudaMallocHost(&host, n));
  cudaStream_t s;
  cudaEvent_t start, stop;
  CUDA_OK(cudaStreamCreate(&s));
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  CUDA_OK(cudaEventRecord(start, s));
  CUDA_OK(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaEventRecord(stop, s));
  float ms = -1;
  CHECK_EQ_OR_RETURN(Name(cudaEventElapsedTime(&ms, start, stop)), Name(cudaErrorNotReady));
  CHECK_EQ_OR_RETURN(Name(cudaEventQuery(stop)), Name(cudaErrorNotReady));
  CUDA_OK(cudaEventSynchronize(stop));
  CUDA_OK(cudaEventQuery(stop));
  CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
  *ms_out = ms;
  return std::string();
}

TEST(Runtime, CopyTakesBytesOverBandwidth) {
  for (const char* gbps : {"16", "8"}) {
    Outcome o = Scenario(
        [] {
          double ms = 0;
          std::string r = CopyTime(&ms);
          if (!r.empty()) return r;
          return std::to_string(ms);
        },
        // The copy's own time between two events: no host cost for the copy call to start it
        // after the first event (docs/simgpu.md, "Host time").
        {{"SIMGPU_H2D_GBPS", gbps}, {"SIMGPU_HOST_COSTS", "off"}});
    ASSERT_EQ(o.exit_code, 0) << o.err;
    double want_ms = 64.0 * kMiB / (std::stod(gbps) * 1e9) * 1e3 + 5e-3;  // + 5 us latency
    EXPECT_NEAR(std::stod(o.result), want_ms, want_ms * 1e-4) << o.result << " " << o.err;
  }
}

TEST(Runtime, IdenticalRunsGiveIdenticalTimes) {
  auto scenario = [] {
    std::string times;
    const size_t n = 16 * kMiB;
    void *a = nullptr, *b = nullptr, *h = nullptr;
    CUDA_OK(cudaMalloc(&a, n));
    CUDA_OK(cudaMalloc(&b, n));
    CUDA_OK(cudaMallocHost(&h, n));
    cudaStream_t s1, s2;
    cudaEvent_t e0, e1, e2;
    CUDA_OK(cudaStreamCreate(&s1));
    CUDA_OK(cudaStreamCreate(&s2));
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    CUDA_OK(cudaEventCreate(&e2));
    CUDA_OK(cudaEventRecord(e0, s1));
    for (int i = 0; i < 5; ++i) {
      CUDA_OK(cudaMemcpyAsync(a, h, n, cudaMemcpyHostToDevice, s1));
      CUDA_OK(cudaEventRecord(e1, s1));
      CUDA_OK(cudaStreamWaitEvent(s2, e1, 0));
      CUDA_OK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, s2));
      CUDA_OK(cudaEventRecord(e2, s2));
      CUDA_OK(cudaStreamWaitEvent(s1, e2, 0));
    }
    CUDA_OK(cudaMemcpy(h, b, n, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaDeviceSynchronize());
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e2));
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.9g", ms);
    return std::string(buf);
  };
  Outcome first = Scenario(scenario), second = Scenario(scenario);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_GT(std::stod(first.result), 0) << first.result;
  EXPECT_EQ(first.result, second.result);
}

TEST(Runtime, CopyEnginesOverlapAndLegacyStreamSynchronises) {
  // Copies issued one after the other overlap exactly only without the second call's host cost
  // (docs/simgpu.md, "Host time"); the ordering checked here is the device's.
  auto body = [] {
    const size_t n = 32 * kMiB;
    void *a = nullptr, *b = nullptr, *h1 = nullptr, *h2 = nullptr;
    CUDA_OK(cudaMalloc(&a, n));
    CUDA_OK(cudaMalloc(&b, n));
    CUDA_OK(cudaMallocHost(&h1, n));
    CUDA_OK(cudaMallocHost(&h2, n));
    cudaStream_t up, down, nb;
    cudaEvent_t t0, t1;
    CUDA_OK(cudaStreamCreate(&up));
    CUDA_OK(cudaStreamCreate(&down));
    CUDA_OK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CUDA_OK(cudaEventCreate(&t0));
    CUDA_OK(cudaEventCreate(&t1));
    // Both directions at once take as long as one (the two copy engines overlap).
    CUDA_OK(cudaEventRecord(t0, 0));
    CUDA_OK(cudaMemcpyAsync(a, h1, n, cudaMemcpyHostToDevice, up));
    CUDA_OK(cudaMemcpyAsync(h2, b, n, cudaMemcpyDeviceToHost, down));
    // The legacy default stream waits for both blocking streams.
    CUDA_OK(cudaEventRecord(t1, 0));
    CUDA_OK(cudaEventSynchronize(t1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
    double one_copy_ms = n / 16e9 * 1e3 + 5e-3;
    if (std::fabs(ms - one_copy_ms) > one_copy_ms * 1e-3) {
      return "overlapped copies took " + std::to_string(ms) + " ms";
    }
    // A non-blocking stream's work is not waited for by the legacy stream.
    CUDA_OK(cudaEventRecord(t0, 0));
    CUDA_OK(cudaMemcpyAsync(a, h1, n, cudaMemcpyHostToDevice, nb));
    CUDA_OK(cudaEventRecord(t1, 0));
    CUDA_OK(cudaEventSynchronize(t1));
    CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
    CHECK_OR_RETURN(ms == 0);
    CUDA_OK(cudaStreamSynchronize(nb));
    return std::string();
  };
  Outcome o = Scenario(body, {{"SIMGPU_HOST_COSTS", "off"}});
  EXPECT_EQ(o.result, "") << o.err;
}

TEST(Runtime, ManyThreadsShareTheDevice) {
  Outcome o = Scenario([] {
    std::vector<std::thread> threads;
    std::vector<std::string> results(4);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([t, &results] {
        results[t] = [t]() -> std::string {
          cudaStream_t s;
          CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
          std::vector<unsigned char> in(kMiB, static_cast<unsigned char>(t)), out(kMiB);
          for (int i = 0; i < 50; ++i) {
            void* d = nullptr;
            CUDA_OK(cudaMalloc(&d, kMiB));
            CUDA_OK(cudaMemcpyAsync(d, in.data(), kMiB, cudaMemcpyHostToDevice, s));
            CUDA_OK(cudaMemcpyAsync(out.data(), d, kMiB, cudaMemcpyDeviceToHost, s));
            CUDA_OK(cudaStreamSynchronize(s));
            CUDA_OK(cudaFree(d));
            CHECK_OR_RETURN(out == in);
          }
          CUDA_OK(cudaStreamDestroy(s));
          return std::string();
        }();
      });
    }
    for (auto& th : threads) th.join();
    for (const std::string& r : results) {
      if (!r.empty()) return r;
    }
    return std::string();
  });
  EXPECT_EQ(o.result, "") << o.err;
  EXPECT_EQ(o.err, "");
}

TEST(Runtime, InvalidVariableExitsTwoWithOneLine) {
  for (const char* value : {"12QB", "-1", "16GiBx", ""}) {
    Outcome o = Scenario(
        [] {
          int n = 0;
          cudaGetDeviceCount(&n);
          return std::string("survived");
        },
        {{"SIMGPU_MEMORY", value}});
    EXPECT_EQ(o.exit_code, 2) << value;
    EXPECT_EQ(o.result, "") << value;
    EXPECT_EQ(CountLines(o.err), 1) << o.err;
    EXPECT_EQ(o.err.rfind("simgpu: SIMGPU_MEMORY=", 0), 0u) << o.err;
  }
  Outcome o = Scenario(
      [] {
        void* p = nullptr;
        cudaMalloc(&p, 1);
        return std::string("survived");
      },
      {{"SIMGPU_PRESET", "v200"}});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(CountLines(o.err), 1) << o.err;
}

TEST(Runtime, DriverEntryPointsWork) {
  Outcome o = Scenario([] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult status;
    CUDA_OK(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 13000, cudaEnableDefault, &status));
    CHECK_EQ_OR_RETURN(status, cudaDriverEntryPointSuccess);
    CHECK_OR_RETURN(fn != nullptr);
    // cuMemAlloc_v2's signature: (CUdeviceptr*, size_t).
    using MemAlloc = int (*)(unsigned long long*, size_t);
    unsigned long long d = 0;
    CHECK_EQ_OR_RETURN(reinterpret_cast<MemAlloc>(fn)(&d, 4096), 0);
    cudaPointerAttributes attr;
    CUDA_OK(cudaPointerGetAttributes(&attr, reinterpret_cast<void*>(d)));
    CHECK_EQ_OR_RETURN(attr.type, cudaMemoryTypeDevice);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // still exported by CUDA 13
    CUDA_OK(cudaGetDriverEntryPoint("cuNoSuchThing", &fn, cudaEnableDefault, &status));
#pragma GCC diagnostic pop
    CHECK_EQ_OR_RETURN(status, cudaDriverEntryPointSymbolNotFound);
    CHECK_OR_RETURN(fn == nullptr);
    CUDA_OK(
        cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 10000, cudaEnableDefault, &status));
    CHECK_EQ_OR_RETURN(status, cudaDriverEntryPointVersionNotSufficent);
    return std::string();
  });
  EXPECT_EQ(o.result, "") << o.err;
}

// What torch asks of every stream: capture status (never capturing here), the thread's capture
// mode, and the priority a stream was created with.
TEST(Runtime, StreamsReportCaptureAndPriority) {
  Outcome o = Scenario([] {
    int least = 1, greatest = 1;
    CUDA_OK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t hi, lo;
    CUDA_OK(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest));
    CUDA_OK(cudaStreamCreateWithPriority(&lo, cudaStreamDefault, greatest - 10));  // clamped
    int p = 1;
    CUDA_OK(cudaStreamGetPriority(hi, &p));
    CHECK_EQ_OR_RETURN(p, greatest);
    CUDA_OK(cudaStreamGetPriority(lo, &p));
    CHECK_EQ_OR_RETURN(p, greatest);
    CUDA_OK(cudaStreamGetPriority(nullptr, &p));
    CHECK_EQ_OR_RETURN(p, least);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
    CUDA_OK(cudaStreamIsCapturing(hi, &status));
    CHECK_EQ_OR_RETURN(status, cudaStreamCaptureStatusNone);
    status = cudaStreamCaptureStatusActive;
    unsigned long long id = 7;
    CUDA_OK(cudaStreamGetCaptureInfo(lo, &status, &id, nullptr, nullptr, nullptr, nullptr));
    CHECK_EQ_OR_RETURN(status, cudaStreamCaptureStatusNone);
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
    CHECK_EQ_OR_RETURN(mode, cudaStreamCaptureModeGlobal);
    CUDA_OK(cudaThreadExchangeStreamCaptureMode(&mode));
    CHECK_EQ_OR_RETURN(mode, cudaStreamCaptureModeRelaxed);
    cudaEvent_t e;
    CUDA_OK(cudaEventCreate(&e));
    CUDA_OK(cudaEventRecordWithFlags(e, hi, cudaEventRecordDefault));
    CUDA_OK(cudaEventSynchronize(e));
    CHECK_EQ_OR_RETURN(Name(cudaEventRecordWithFlags(e, hi, 0x40)), Name(cudaErrorInvalidValue));
    // Graphs are not supported: the generated stub says so once and fails.
    CHECK_EQ_OR_RETURN(Name(cudaStreamBeginCapture(hi, cudaStreamCaptureModeGlobal)),
                       Name(cudaErrorNotSupported));
    CHECK_EQ_OR_RETURN(Name(cudaStreamBeginCapture(hi, cudaStreamCaptureModeGlobal)),
                       Name(cudaErrorNotSupported));
    CHECK_EQ_OR_RETURN(Name(cudaGetLastError()), Name(cudaErrorNotSupported));
    CUDA_OK(cudaStreamDestroy(hi));
    CUDA_OK(cudaStreamDestroy(lo));
    return std::string();
  });
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.result, "") << o.err;
  EXPECT_EQ(o.err, "simgpu: cudaStreamBeginCapture: not supported\n");
}

TEST(Runtime, TimingModeTouchesNoPages) {
  Outcome o = Scenario(
      [] {
        auto rss_mib = [] {
          long pages = 0, resident = 0;
          FILE* f = std::fopen("/proc/self/statm", "r");
          if (f == nullptr || std::fscanf(f, "%ld %ld", &pages, &resident) != 2) return -1L;
          std::fclose(f);
          return resident * sysconf(_SC_PAGESIZE) / static_cast<long>(kMiB);
        };
        long before = rss_mib();
        std::vector<void*> chunks;
        const size_t chunk = size_t{1} << 30;
        for (int i = 0; i < 50; ++i) {  // 50 GiB of device memory
          void* p = nullptr;
          CUDA_OK(cudaMalloc(&p, chunk));
          chunks.push_back(p);
        }
        void* host = nullptr;
        CUDA_OK(cudaMallocHost(&host, 4 * chunk));
        for (int i = 0; i < 50; ++i) {
          CUDA_OK(cudaMemsetAsync(chunks[i], 1, chunk, 0));
          CUDA_OK(
              cudaMemcpyAsync(chunks[(i + 1) % 50], chunks[i], chunk, cudaMemcpyDeviceToDevice, 0));
          CUDA_OK(cudaMemcpyAsync(host, chunks[i], chunk, cudaMemcpyDeviceToHost, 0));
        }
        CUDA_OK(cudaDeviceSynchronize());
        long after = rss_mib();
        if (after - before > 64) return "RSS grew by " + std::to_string(after - before) + " MiB";
        void* p = nullptr;
        CHECK_EQ_OR_RETURN(Name(cudaMalloc(&p, 15 * chunk)), Name(cudaErrorMemoryAllocation));
        return std::string();
      },
      {{"SIMGPU_COMPUTE", "timing"}, {"SIMGPU_MEMORY", "64GiB"}});
  EXPECT_EQ(o.result, "") << o.err;
  EXPECT_EQ(o.exit_code, 0) << o.err;
}

}  // namespace
