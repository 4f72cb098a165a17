// Kernels from fat binaries on simgpu: a program linked against the real CUDA Toolkit's
// libcudart.so.13 with nvcc-compiled kernels (kernels_test.cu, registered by the real
// registration code nvcc emits) runs with LD_LIBRARY_PATH pointing at simgpu's libraries.
// Each scenario runs in its own child process (isolated.h). Times are virtual, from the
// bandwidth and latency the scenario sets (SIMGPU_MEM_GBPS, SIMGPU_LAUNCH_US).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "tests/simgpu/driver/isolated.h"
#include "tests/simgpu/driver/kernels_test.h"

extern "C" const void* KernelPtxOnly();  // kernels_ptx_only_test.cu
extern "C" const void* KernelTwin();     // kernels_twin_test.cu
extern "C" cudaError_t LaunchTwinChevrons(float* dst, const float* src, float scale, int n);

namespace {

using simgpu_test::CountLines;
using simgpu_test::Outcome;
using simgpu_test::RunIsolated;

constexpr size_t kMiB = size_t{1} << 20;
constexpr double kGbps = 1000;   // SIMGPU_MEM_GBPS in the timing scenarios
constexpr double kLaunchUs = 5;  // SIMGPU_LAUNCH_US

// The kernel's own time between two events: host costs off, so that the launch call's host time
// (docs/simgpu.md, "Host time") does not start the kernel after the first event.
const simgpu_test::Env kTiming = {{"SIMGPU_COMPUTE", "timing"},
                                  {"SIMGPU_MEM_GBPS", "1000"},
                                  {"SIMGPU_LAUNCH_US", "5"},
                                  {"SIMGPU_HOST_COSTS", "off"}};

template <typename T>
cudaError_t Malloc(T** p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}

std::string Name(cudaError_t e) { return cudaGetErrorName(e); }
std::string Name(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s != nullptr ? s : "?";
}

#define CUDA_OK(expr) CHECK_EQ_OR_RETURN(Name(expr), Name(cudaSuccess))
#define CU_OK(expr) CHECK_EQ_OR_RETURN(Name(expr), Name(CUDA_SUCCESS))

// What a kernel op over allocations totalling `bytes` takes, in ms.
double ExpectedMs(double bytes) { return (bytes / (kGbps * 1e9) + kLaunchUs * 1e-6) * 1e3; }

bool Near(double a, double b) { return std::fabs(a - b) <= 1e-3 * std::fabs(b); }

// Virtual time `launch` takes on `stream`, in ms (negative if a call failed).
template <typename Fn>
double TimeMs(cudaStream_t stream, Fn launch) {
  cudaEvent_t e0, e1;
  if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) return -1;
  if (cudaEventRecord(e0, stream) != cudaSuccess) return -1;
  if (launch() != cudaSuccess) return -2;
  if (cudaEventRecord(e1, stream) != cudaSuccess) return -3;
  if (cudaEventSynchronize(e1) != cudaSuccess) return -4;
  float ms = -5;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ms;
}

#define CHECK_TIME(ms, bytes)                                                                     \
  do {                                                                                            \
    double got_ = (ms), want_ = ExpectedMs(bytes);                                                \
    if (!Near(got_, want_)) {                                                                     \
      return std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " #ms " took " +           \
             std::to_string(got_) + " ms, expected " + std::to_string(want_) + " ms for " #bytes; \
    }                                                                                             \
  } while (0)

std::vector<char> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> v((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return v;
}

void ExpectPassed(const Outcome& o) {
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.result, "") << o.err;
}

TEST(KernelLaunch, TimeIsTheRooflineOfTheAllocationsItsArgumentsPointInto) {
  ExpectPassed(RunIsolated(kTiming, [] {
    float *a, *b, *c;
    const double sa = 64 * kMiB, sc = 256 * kMiB;
    CUDA_OK(Malloc(&a, sa));
    CUDA_OK(Malloc(&b, sa));
    CUDA_OK(Malloc(&c, sc));
    int n = 1 << 20;
    CHECK_TIME(TimeMs(nullptr, [&] { return LaunchCopyChevrons(a, b, n, nullptr); }), 2 * sa);
    CHECK_TIME(TimeMs(nullptr, [&] { return LaunchCopyChevrons(c, b, n, nullptr); }), sc + sa);
    // One allocation is counted once, and a pointer inside it counts all of it.
    CHECK_TIME(TimeMs(nullptr, [&] { return LaunchCopyChevrons(a, a + 1000, n, nullptr); }), sa);
    // No pointer: the launch latency only.
    CHECK_TIME(TimeMs(nullptr, [&] { return cudaLaunchKernel(KernelNone(), 1, 1, nullptr, 0, 0); }),
               0.0);
    return std::string();
  }));
}

TEST(KernelLaunch, EveryLaunchPathReadsTheSameArguments) {
  ExpectPassed(RunIsolated(kTiming, [] {
    float *a, *b;
    const double s = 32 * kMiB;
    CUDA_OK(Malloc(&a, s));
    CUDA_OK(Malloc(&b, s));
    cudaStream_t st;
    CUDA_OK(cudaStreamCreate(&st));
    int n = 4096;
    void* args[] = {&a, &b, &n};
    CHECK_TIME(TimeMs(st, [&] { return LaunchCopyChevrons(a, b, n, st); }), 2 * s);
    CHECK_TIME(TimeMs(st, [&] { return cudaLaunchKernel(KernelCopy(), 16, 256, args, 0, st); }),
               2 * s);
    CHECK_TIME(TimeMs(st,
                      [&] {
                        cudaLaunchConfig_t cfg{};
                        cfg.gridDim = dim3(16);
                        cfg.blockDim = dim3(256);
                        cfg.stream = st;
                        cudaLaunchAttribute attr{};
                        attr.id = cudaLaunchAttributePriority;
                        attr.val.priority = 0;
                        cfg.attrs = &attr;
                        cfg.numAttrs = 1;
                        return cudaLaunchKernelExC(&cfg, KernelCopy(), args);
                      }),
               2 * s);
    CHECK_TIME(
        TimeMs(st, [&] { return cudaLaunchCooperativeKernel(KernelCopy(), 16, 256, args, 0, st); }),
        2 * s);
    cudaFunction_t f = nullptr;
    CUDA_OK(cudaGetFuncBySymbol(&f, KernelCopy()));
    CHECK_TIME(TimeMs(st,
                      [&] {
                        CUresult r = cuLaunchKernel(reinterpret_cast<CUfunction>(f), 16, 1, 1, 256,
                                                    1, 1, 0, st, args, nullptr);
                        return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown;
                      }),
               2 * s);
    // The driver's other form: the caller lays out the parameter buffer itself.
    struct {
      float* dst;
      const float* src;
      int n;
    } buf{a, b, n};
    size_t buf_size = sizeof buf;
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &buf_size,
                     CU_LAUNCH_PARAM_END};
    CHECK_TIME(TimeMs(st,
                      [&] {
                        CUresult r = cuLaunchKernel(reinterpret_cast<CUfunction>(f), 16, 1, 1, 256,
                                                    1, 1, 0, st, nullptr, extra);
                        return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown;
                      }),
               2 * s);
    // A cudaKernel_t works where a host function is expected.
    cudaKernel_t k = nullptr;
    CUDA_OK(cudaGetKernel(&k, KernelCopy()));
    CHECK_TIME(TimeMs(st, [&] { return cudaLaunchKernel(k, 16, 256, args, 0, st); }), 2 * s);
    return std::string();
  }));
}

TEST(KernelLaunch, StructByValueIsScannedWithItsParameterLayout) {
  ExpectPassed(RunIsolated(kTiming, [] {
    float *out, *hidden;
    // `out` ends inside its last page: an address right after it is not its end pointer.
    const double s_out = 1 * kMiB - 256, s_hidden = 128 * kMiB;
    CUDA_OK(Malloc(&out, s_out));
    CUDA_OK(Malloc(&hidden, s_hidden));
    BigArg big{};
    big.dims = 3;
    CHECK_TIME(TimeMs(nullptr, [&] { return LaunchBigChevrons(&big, out, 7); }), s_out);
    // A device pointer deep inside the 808-byte struct is found.
    big.strides[20][1] = reinterpret_cast<int64_t>(hidden);
    CHECK_TIME(TimeMs(nullptr, [&] { return LaunchBigChevrons(&big, out, 7); }), s_out + s_hidden);
    SmallArg small{1, 2.0f};
    double d = 3;
    char ch = 4;
    void* args[] = {&small, &d, &ch, &hidden};
    CHECK_TIME(TimeMs(nullptr, [&] { return cudaLaunchKernel(KernelStruct(), 1, 1, args, 0, 0); }),
               s_hidden);
    // A freed block in a live slab (`out` keeps it) is not mapped. Inside a struct that also
    // holds other values the word may be stale, so it is passed over, and not counted
    // (Note [Kernel ops]).
    float* small_buf;
    CUDA_OK(Malloc(&small_buf, 4000));
    big.strides[20][1] = reinterpret_cast<int64_t>(small_buf);
    CHECK_TIME(TimeMs(nullptr, [&] { return LaunchBigChevrons(&big, out, 7); }), s_out + 4000);
    CUDA_OK(cudaFree(small_buf));
    CHECK_TIME(TimeMs(nullptr, [&] { return LaunchBigChevrons(&big, out, 7); }), s_out);
    // In a parameter made only of pointers (torch's `data` array) it is an illegal address.
    PtrArray arr{{out, out, small_buf}};
    int n = 16;
    void* arr_args[] = {&arr, &n};
    CHECK_EQ_OR_RETURN(Name(cudaLaunchKernel(KernelPtrArray(), 1, 32, arr_args, 0, 0)),
                       Name(cudaErrorIllegalAddress));
    return std::string();
  }));
}

TEST(KernelLaunch, PointerToFreedMemoryIsAnIllegalAddress) {
  Outcome o = RunIsolated(kTiming, [] {
    float *a, *b;
    CUDA_OK(Malloc(&a, 4000));
    CUDA_OK(Malloc(&b, 4000));
    CUDA_OK(cudaFree(b));
    CHECK_EQ_OR_RETURN(Name(LaunchCopyChevrons(a, b, 1000, nullptr)),
                       Name(cudaErrorIllegalAddress));
    // Sticky, as after a fault on a GPU.
    CHECK_EQ_OR_RETURN(Name(cudaDeviceSynchronize()), Name(cudaErrorIllegalAddress));
    CHECK_EQ_OR_RETURN(Name(LaunchCopyChevrons(a, a, 1000, nullptr)),
                       Name(cudaErrorIllegalAddress));
    return std::string();
  });
  ExpectPassed(o);
  EXPECT_EQ(CountLines(o.err), 1) << o.err;
  EXPECT_NE(o.err.find("illegal address: _Z6k_copyPfPKfi"), std::string::npos) << o.err;
}

TEST(KernelLaunch, WordsOutsideHandedOutMemoryAreNotPointers) {
  ExpectPassed(RunIsolated(kTiming, [] {
    float* out;
    CUDA_OK(Malloc(&out, 1 * kMiB));
    // An address in the device's range that no allocation ever came from (as an integer with
    // garbage upper bits can be): not taken for a pointer, even as a pointer parameter.
    CUdeviceptr far = 0;
    CU_OK(cuMemAddressReserve(&far, 2 * kMiB, 0, 0, 0));
    CU_OK(cuMemAddressFree(far, 2 * kMiB));
    float* garbage = reinterpret_cast<float*>(far + 4);
    CHECK_TIME(TimeMs(nullptr, [&] { return LaunchCopyChevrons(out, garbage, 16, nullptr); }),
               1.0 * kMiB);
    // Inside a reservation (VMM) but not mapped: an illegal address.
    CU_OK(cuMemAddressReserve(&far, 2 * kMiB, 0, 0, 0));
    float* unmapped = reinterpret_cast<float*>(far + 4);
    CHECK_EQ_OR_RETURN(Name(LaunchCopyChevrons(out, unmapped, 16, nullptr)),
                       Name(cudaErrorIllegalAddress));
    return std::string();
  }));
}

TEST(KernelLaunch, KernelsOnTwoStreamsWithoutOrderRace) {
  Outcome o = RunIsolated(kTiming, [] {
    float *a, *b, *c;
    CUDA_OK(Malloc(&a, 64 * kMiB));
    CUDA_OK(Malloc(&b, 64 * kMiB));
    CUDA_OK(Malloc(&c, 64 * kMiB));
    cudaStream_t s1, s2;
    CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CUDA_OK(LaunchCopyChevrons(a, b, 1000, s1));
    // Reads b while s1's kernel may still write it: a race (SIMGPU_HAZARDS=error by default).
    CHECK_EQ_OR_RETURN(Name(LaunchCopyChevrons(c, b, 1000, s2)), Name(cudaErrorIllegalState));
    return std::string();
  });
  ExpectPassed(o);
  EXPECT_NE(o.err.find("_Z6k_copyPfPKfi"), std::string::npos) << o.err;
}

TEST(KernelLaunch, MathModeRefusesKernels) {
  Outcome o = RunIsolated({}, [] {
    float* a;
    CUDA_OK(Malloc(&a, 4096));
    CHECK_EQ_OR_RETURN(Name(LaunchCopyChevrons(a, a, 1, nullptr)), Name(cudaErrorNotSupported));
    void* args[] = {&a, &a, &a};
    CHECK_EQ_OR_RETURN(Name(cudaLaunchKernel(KernelCopy(), 1, 1, args, 0, 0)),
                       Name(cudaErrorNotSupported));
    // Not sticky: other work goes on.
    CUDA_OK(cudaMemset(a, 0, 4096));
    return std::string();
  });
  ExpectPassed(o);
  EXPECT_EQ(CountLines(o.err), 1) << o.err;
  EXPECT_NE(o.err.find("SIMGPU_COMPUTE=timing"), std::string::npos) << o.err;
}

// k_twin's CPU twin (Note [CPU twins]), exported by the test program (ENABLE_EXPORTS).
int g_twin_calls = 0;

extern "C" __attribute__((visibility("default"))) void simgpu_twin__Z6k_twinPfPKffi(
    const unsigned grid[3], const unsigned block[3], unsigned dynamic_shared, void** args) {
  ++g_twin_calls;
  float* dst = *static_cast<float**>(args[0]);
  const float* src = *static_cast<const float**>(args[1]);
  float scale = *static_cast<float*>(args[2]);
  int n = *static_cast<int*>(args[3]);
  uint64_t threads = uint64_t{grid[0]} * grid[1] * grid[2] * block[0] * block[1] * block[2];
  for (uint64_t i = 0; i < threads && i < static_cast<uint64_t>(n); ++i) dst[i] = src[i] * scale;
  if (dynamic_shared != 0) dst[0] = -1;  // no launch below asks for any
}

TEST(KernelLaunch, MathModeRunsACpuTwinOnEveryLaunchPath) {
  Outcome o = RunIsolated({}, [] {
    constexpr int kN = 1000;
    float *a, *b;
    CUDA_OK(Malloc(&a, kN * sizeof(float)));
    CUDA_OK(Malloc(&b, kN * sizeof(float)));
    std::vector<float> host(kN);
    for (int i = 0; i < kN; ++i) host[i] = static_cast<float>(i);
    CUDA_OK(cudaMemcpy(b, host.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
    auto expect_scaled = [&](float scale) {
      std::vector<float> got(kN);
      if (cudaMemcpy(got.data(), a, kN * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
        return std::string("copy back failed");
      }
      for (int i = 0; i < kN; ++i) {
        if (got[i] != host[i] * scale) return "a[" + std::to_string(i) + "] wrong";
      }
      return std::string();
    };
    CUDA_OK(LaunchTwinChevrons(a, b, 2.0f, kN));
    CHECK_EQ_OR_RETURN(expect_scaled(2.0f), "");
    float scale = 3.0f;
    int n = kN;
    void* args[] = {&a, &b, &scale, &n};
    CUDA_OK(cudaLaunchKernel(KernelTwin(), 4, 256, args, 0, 0));
    CHECK_EQ_OR_RETURN(expect_scaled(3.0f), "");
    // The driver's buffer form gives the twin the same arguments.
    cudaFunction_t f = nullptr;
    CUDA_OK(cudaGetFuncBySymbol(&f, KernelTwin()));
    struct {
      float* dst;
      const float* src;
      float scale;
      int n;
    } buf{a, b, 4.0f, kN};
    size_t buf_size = sizeof buf;
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &buf_size,
                     CU_LAUNCH_PARAM_END};
    CU_OK(cuLaunchKernel(reinterpret_cast<CUfunction>(f), 4, 1, 1, 256, 1, 1, 0, nullptr, nullptr,
                         extra));
    CHECK_EQ_OR_RETURN(expect_scaled(4.0f), "");
    CHECK_EQ_OR_RETURN(g_twin_calls, 3);
    // A kernel without a twin is still refused.
    CHECK_EQ_OR_RETURN(Name(LaunchCopyChevrons(a, b, 1, nullptr)), Name(cudaErrorNotSupported));
    return std::string();
  });
  ExpectPassed(o);
  EXPECT_EQ(CountLines(o.err), 1) << o.err;
  EXPECT_NE(o.err.find("_Z6k_copyPfPKfi"), std::string::npos) << o.err;
}

TEST(KernelLaunch, TwinLaunchesAreTimedAndCheckedAsKernels) {
  // Timing mode: the roofline of the allocations, and the twin never runs.
  ExpectPassed(RunIsolated(kTiming, [] {
    float *a, *b;
    const double s = 32 * kMiB;
    CUDA_OK(Malloc(&a, s));
    CUDA_OK(Malloc(&b, s));
    CHECK_TIME(TimeMs(nullptr, [&] { return LaunchTwinChevrons(a, b, 2.0f, 1024); }), 2 * s);
    CHECK_EQ_OR_RETURN(g_twin_calls, 0);
    return std::string();
  }));
  // Math mode: a twin launch races as any kernel op does.
  Outcome o = RunIsolated({}, [] {
    float *a, *b;
    CUDA_OK(Malloc(&a, 4096));
    CUDA_OK(Malloc(&b, 4096));
    cudaStream_t s1, s2;
    CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    float scale = 1.0f;
    int n = 16;
    void* args[] = {&a, &b, &scale, &n};
    CUDA_OK(cudaLaunchKernel(KernelTwin(), 1, 32, args, 0, s1));
    CHECK_EQ_OR_RETURN(Name(cudaLaunchKernel(KernelTwin(), 1, 32, args, 0, s2)),
                       Name(cudaErrorIllegalState));
    CHECK_EQ_OR_RETURN(g_twin_calls, 1);
    return std::string();
  });
  ExpectPassed(o);
  EXPECT_NE(o.err.find("_Z6k_twinPfPKffi"), std::string::npos) << o.err;
}

TEST(KernelLaunch, ShapesAGpuRejects) {
  ExpectPassed(RunIsolated(kTiming, [] {
    float* a;
    CUDA_OK(Malloc(&a, 4096));
    int n = 1;
    void* args[] = {&a, &a, &n};
    auto launch = [&](dim3 g, dim3 b, size_t shared) {
      return Name(cudaLaunchKernel(KernelCopy(), g, b, args, shared, 0));
    };
    CHECK_EQ_OR_RETURN(launch(1, 2048, 0), Name(cudaErrorInvalidConfiguration));
    CHECK_EQ_OR_RETURN(launch(1, dim3(1, 1, 65), 0), Name(cudaErrorInvalidConfiguration));
    CHECK_EQ_OR_RETURN(launch(dim3(1, 70000), 1, 0), Name(cudaErrorInvalidConfiguration));
    CHECK_EQ_OR_RETURN(launch(dim3(0), 1, 0), Name(cudaErrorInvalidConfiguration));
    CHECK_EQ_OR_RETURN(launch(1, 1024, 0), Name(cudaSuccess));
    // Dynamic shared memory above the default 48 KiB needs the function's opt-in.
    CHECK_EQ_OR_RETURN(launch(1, 32, 64 << 10), Name(cudaErrorInvalidValue));
    CUDA_OK(
        cudaFuncSetAttribute(KernelCopy(), cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
    CHECK_EQ_OR_RETURN(launch(1, 32, 64 << 10), Name(cudaSuccess));
    int optin = 0;
    CUDA_OK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    CHECK_EQ_OR_RETURN(Name(cudaFuncSetAttribute(
                           KernelCopy(), cudaFuncAttributeMaxDynamicSharedMemorySize, optin + 1)),
                       Name(cudaErrorInvalidValue));
    // More threads than __launch_bounds__ allow.
    void* shared_args[] = {&a};
    CHECK_EQ_OR_RETURN(
        Name(cudaLaunchKernel(KernelShared(), 1, kSharedMaxThreads + 1, shared_args, 0, 0)),
        Name(cudaErrorInvalidValue));
    CUDA_OK(cudaLaunchKernel(KernelShared(), 1, kSharedMaxThreads, shared_args, 0, 0));
    // Not a kernel.
    CHECK_EQ_OR_RETURN(
        Name(cudaLaunchKernel(reinterpret_cast<const void*>(&ExpectedMs), 1, 1, args, 0, 0)),
        Name(cudaErrorInvalidDeviceFunction));
    return std::string();
  }));
}

TEST(KernelLaunch, FunctionAttributesAndParameterInfo) {
  ExpectPassed(RunIsolated(kTiming, [] {
    cudaFuncAttributes attr{};
    CUDA_OK(cudaFuncGetAttributes(&attr, KernelShared()));
    CHECK_EQ_OR_RETURN(attr.sharedSizeBytes, kSharedFloats * sizeof(float));
    CHECK_EQ_OR_RETURN(attr.maxThreadsPerBlock, kSharedMaxThreads);
    CHECK_OR_RETURN(attr.numRegs > 0);
    CHECK_EQ_OR_RETURN(attr.binaryVersion, 80);
    CUDA_OK(cudaFuncGetAttributes(&attr, KernelCopy()));
    CHECK_EQ_OR_RETURN(attr.sharedSizeBytes, size_t{0});
    CHECK_EQ_OR_RETURN(attr.maxThreadsPerBlock, 1024);
    // k_big(BigArg, float*, short): the struct, then the pointer at its aligned end.
    size_t off = 0, size = 0;
    CUDA_OK(cudaFuncGetParamInfo(KernelBig(), 0, &off, &size));
    CHECK_EQ_OR_RETURN(off, size_t{0});
    CHECK_EQ_OR_RETURN(size, sizeof(BigArg));
    CUDA_OK(cudaFuncGetParamInfo(KernelBig(), 1, &off, &size));
    CHECK_EQ_OR_RETURN(off,
                       (sizeof(BigArg) + alignof(float*) - 1) / alignof(float*) * alignof(float*));
    CHECK_EQ_OR_RETURN(size, sizeof(float*));
    CUDA_OK(cudaFuncGetParamInfo(KernelBig(), 2, &off, &size));
    CHECK_EQ_OR_RETURN(size, sizeof(short));
    CHECK_EQ_OR_RETURN(Name(cudaFuncGetParamInfo(KernelBig(), 3, &off, &size)),
                       Name(cudaErrorInvalidValue));
    // k_huge(HugeArg, char, float*): a buffer over 4 KiB, described by the large-parameter
    // record (Note [Cubin info]); without it the kernel would seem to have no parameter.
    CUDA_OK(cudaFuncGetParamInfo(KernelHuge(), 0, &off, &size));
    CHECK_EQ_OR_RETURN(off, size_t{0});
    CHECK_EQ_OR_RETURN(size, sizeof(HugeArg));
    CUDA_OK(cudaFuncGetParamInfo(KernelHuge(), 2, &off, &size));
    CHECK_EQ_OR_RETURN(
        off, (sizeof(HugeArg) + 1 + alignof(float*) - 1) / alignof(float*) * alignof(float*));
    CHECK_EQ_OR_RETURN(size, sizeof(float*));
    int blocks = 0, per_sm = 0;
    CUDA_OK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, 0));
    CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, KernelCopy(), 256, 0));
    CHECK_OR_RETURN(blocks > 0 && blocks <= per_sm / 256);
    CUDA_OK(cudaFuncSetCacheConfig(KernelCopy(), cudaFuncCachePreferShared));
    return std::string();
  }));
}

// A thread that has not called the runtime has no current context, and the driver's parameter
// query fails there (as on an H200, driver 580.159.04); the runtime's own launch binds the
// context first and works.
TEST(KernelLaunch, KernelParameterInfoNeedsACurrentContext) {
  ExpectPassed(RunIsolated(kTiming, [] {
    cudaKernel_t k = nullptr;
    CUDA_OK(cudaGetKernel(&k, KernelBig()));
    CUcontext primary = nullptr;
    CU_OK(cuCtxGetCurrent(&primary));
    CHECK_OR_RETURN(primary != nullptr);
    std::string failure;
    std::thread([&] {
      size_t off = 0, size = 0;
      const CUkernel ck = reinterpret_cast<CUkernel>(k);
      if (cuKernelGetParamInfo(ck, 0, &off, &size) != CUDA_ERROR_INVALID_CONTEXT) {
        failure = "the query on a thread without a context did not fail";
      } else if (cuCtxSetCurrent(primary) != CUDA_SUCCESS ||
                 cuKernelGetParamInfo(ck, 0, &off, &size) != CUDA_SUCCESS ||
                 size != sizeof(BigArg)) {
        failure = "the query with the context made current failed";
      }
    }).join();
    return failure;
  }));
}

TEST(KernelLaunch, DeviceVariables) {
  ExpectPassed(RunIsolated({}, [] {
    size_t size = 0;
    CUDA_OK(cudaGetSymbolSize(&size, SymbolTable()));
    CHECK_EQ_OR_RETURN(size, kTableFloats * sizeof(float));
    void* dev = nullptr;
    CUDA_OK(cudaGetSymbolAddress(&dev, SymbolTable()));
    cudaPointerAttributes pa{};
    CUDA_OK(cudaPointerGetAttributes(&pa, dev));
    CHECK_EQ_OR_RETURN(static_cast<int>(pa.type), static_cast<int>(cudaMemoryTypeDevice));
    std::vector<float> in(kTableFloats), out(kTableFloats);
    for (int i = 0; i < kTableFloats; ++i) in[i] = 0.5f * i;
    CUDA_OK(cudaMemcpyToSymbol(SymbolTable(), in.data(), size));
    CUDA_OK(cudaMemcpyFromSymbol(out.data(), SymbolTable(), size));
    CHECK_OR_RETURN(in == out);
    CHECK_EQ_OR_RETURN(Name(cudaMemcpyToSymbol(SymbolTable(), in.data(), size, 4)),
                       Name(cudaErrorInvalidValue));
    // A __constant__ variable starts with its initialiser (math mode copies it in).
    int c[kConstInts] = {};
    CUDA_OK(cudaGetSymbolSize(&size, SymbolConst()));
    CHECK_EQ_OR_RETURN(size, sizeof c);
    CUDA_OK(cudaMemcpyFromSymbol(c, SymbolConst(), sizeof c));
    CHECK_EQ_OR_RETURN(c[0], 1);
    CHECK_EQ_OR_RETURN(c[3], 4);
    int not_a_symbol = 0;
    CHECK_EQ_OR_RETURN(Name(cudaGetSymbolSize(&size, &not_a_symbol)), Name(cudaErrorInvalidSymbol));
    return std::string();
  }));
}

TEST(KernelLaunch, KernelFromPtxOnly) {
  ExpectPassed(RunIsolated(kTiming, [] {
    float* a;
    CUDA_OK(Malloc(&a, 4 * kMiB));
    void* args[] = {&a};
    CHECK_TIME(
        TimeMs(nullptr, [&] { return cudaLaunchKernel(KernelPtxOnly(), 1, 32, args, 0, 0); }),
        4.0 * kMiB);
    return std::string();
  }));
}

TEST(KernelLaunch, KernelWithoutParameterInfoIsRefused) {
  Outcome o = RunIsolated(kTiming, [] {
    CUDA_OK(cudaFree(nullptr));  // the runtime makes the primary context current
    const char* ptx =
        ".version 9.0\n.target sm_80\n.address_size 64\n"
        ".visible .entry odd(\n .param .weird odd_param_0\n)\n{\n ret;\n}\n";
    CUmodule mod = nullptr;
    CU_OK(cuModuleLoadData(&mod, ptx));
    CUfunction f = nullptr;
    CU_OK(cuModuleGetFunction(&f, mod, "odd"));  // known by name
    float* a;
    CUDA_OK(Malloc(&a, 4096));
    void* args[] = {&a};
    CHECK_EQ_OR_RETURN(Name(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr)),
                       Name(CUDA_ERROR_NOT_SUPPORTED));
    return std::string();
  });
  ExpectPassed(o);
  EXPECT_EQ(CountLines(o.err), 1) << o.err;
  EXPECT_NE(o.err.find("odd has no parameter info"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("parameter 0 not understood"), std::string::npos) << o.err;
}

TEST(KernelLaunch, DriverModulesFromACompressedFatBinary) {
  ExpectPassed(RunIsolated(kTiming, [] {
    CUDA_OK(cudaFree(nullptr));  // the runtime makes the primary context current
    std::vector<char> image =
        ReadFile(std::string(SIMGPU_TEST_KERNELS_DIR) + "/kernels_zstd.fatbin");
    CHECK_OR_RETURN(!image.empty());
    CUmodule mod = nullptr;
    CU_OK(cuModuleLoadData(&mod, image.data()));
    image.assign(image.size(), 0);  // the driver keeps its own copy
    CUfunction f = nullptr;
    CU_OK(cuModuleGetFunction(&f, mod, "_Z8k_struct8SmallArgdcPf"));
    size_t off = 0, size = 0;
    CU_OK(cuFuncGetParamInfo(f, 2, &off, &size));
    CHECK_EQ_OR_RETURN(size, sizeof(char));
    CHECK_EQ_OR_RETURN(off, sizeof(SmallArg) + sizeof(double));
    CHECK_EQ_OR_RETURN(Name(cuModuleGetFunction(&f, mod, "no_such_kernel")),
                       Name(CUDA_ERROR_NOT_FOUND));
    CU_OK(cuModuleGetFunction(&f, mod, "_Z6k_copyPfPKfi"));
    CUdeviceptr table = 0;
    size_t bytes = 0;
    CU_OK(cuModuleGetGlobal(&table, &bytes, mod, "g_table"));
    CHECK_EQ_OR_RETURN(bytes, kTableFloats * sizeof(float));
    float* a;
    CUDA_OK(Malloc(&a, 8 * kMiB));
    float* t = reinterpret_cast<float*>(table);
    int n = 64;
    void* args[] = {&a, &t, &n};
    CHECK_TIME(TimeMs(nullptr,
                      [&] {
                        return cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr) ==
                                       CUDA_SUCCESS
                                   ? cudaSuccess
                                   : cudaErrorUnknown;
                      }),
               8.0 * kMiB + bytes);
    // Through cuGetProcAddress, as Triton and the runtime reach the driver.
    void* pfn = nullptr;
    CUdriverProcAddressQueryResult q;
    CU_OK(cuGetProcAddress("cuLaunchKernel", &pfn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    CHECK_OR_RETURN(pfn != nullptr);
    CU_OK(cuGetProcAddress("cuFuncGetParamInfo", &pfn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
                           &q));
    CHECK_OR_RETURN(pfn != nullptr);
    CU_OK(cuModuleUnload(mod));
    CHECK_EQ_OR_RETURN(Name(cuFuncGetParamInfo(f, 0, &off, &size)),
                       Name(CUDA_ERROR_INVALID_HANDLE));
    return std::string();
  }));
}

TEST(KernelLaunch, RuntimeLibrariesFromAnLz4FatBinary) {
  ExpectPassed(RunIsolated(kTiming, [] {
    cudaLibrary_t lib = nullptr;
    std::string path = std::string(SIMGPU_TEST_KERNELS_DIR) + "/kernels_lz4.fatbin";
    CUDA_OK(cudaLibraryLoadFromFile(&lib, path.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    unsigned int count = 0;
    CUDA_OK(cudaLibraryGetKernelCount(&count, lib));
    CHECK_EQ_OR_RETURN(count, 7u);
    cudaKernel_t k = nullptr;
    CUDA_OK(cudaLibraryGetKernel(&k, lib, "_Z6k_copyPfPKfi"));
    void* table = nullptr;
    size_t bytes = 0;
    CUDA_OK(cudaLibraryGetGlobal(&table, &bytes, lib, "g_table"));
    CHECK_EQ_OR_RETURN(bytes, kTableFloats * sizeof(float));
    float* a;
    CUDA_OK(Malloc(&a, 2 * kMiB));
    int n = 64;
    void* args[] = {&a, &table, &n};
    CHECK_TIME(TimeMs(nullptr, [&] { return cudaLaunchKernel(k, 1, 64, args, 0, 0); }),
               2.0 * kMiB + bytes);
    CHECK_EQ_OR_RETURN(Name(cudaLibraryGetKernel(&k, lib, "nope")),
                       Name(cudaErrorInvalidDeviceFunction));
    CUDA_OK(cudaLibraryUnload(lib));
    return std::string();
  }));
}

// The path of torch's jiterator (and Triton): NVRTC compiles at run time, the driver loads the
// cubin. NVRTC itself opens libcuda.so.1 (simgpu's here) and asks it for cuGetExportTable.
TEST(KernelLaunch, NvrtcCubinThroughTheDriver) {
  Outcome o = RunIsolated(kTiming, [] {
    const char* src =
        "struct Pair { float* p; long n; };\n"
        "extern \"C\" __global__ void scale(Pair in, float* out, float k) {\n"
        "  long i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < in.n) out[i] = k * in.p[i];\n"
        "}\n";
    nvrtcProgram prog;
    CHECK_EQ_OR_RETURN(nvrtcCreateProgram(&prog, src, "scale.cu", 0, nullptr, nullptr),
                       NVRTC_SUCCESS);
    const char* opts[] = {"--gpu-architecture=sm_80"};
    CHECK_EQ_OR_RETURN(nvrtcCompileProgram(prog, 1, opts), NVRTC_SUCCESS);
    size_t n = 0;
    CHECK_EQ_OR_RETURN(nvrtcGetCUBINSize(prog, &n), NVRTC_SUCCESS);
    std::vector<char> cubin(n);
    CHECK_EQ_OR_RETURN(nvrtcGetCUBIN(prog, cubin.data()), NVRTC_SUCCESS);
    nvrtcDestroyProgram(&prog);
    CUDA_OK(cudaFree(nullptr));  // the runtime makes the primary context current
    CUmodule mod = nullptr;
    CU_OK(cuModuleLoadData(&mod, cubin.data()));
    CUfunction f = nullptr;
    CU_OK(cuModuleGetFunction(&f, mod, "scale"));
    size_t off = 0, size = 0;
    CU_OK(cuFuncGetParamInfo(f, 1, &off, &size));
    CHECK_EQ_OR_RETURN(off, size_t{16});  // after the 16-byte Pair
    CU_OK(cuFuncGetParamInfo(f, 2, &off, &size));
    CHECK_EQ_OR_RETURN(off, size_t{24});
    CHECK_EQ_OR_RETURN(size, sizeof(float));
    float *in, *out;
    CUDA_OK(Malloc(&in, 16 * kMiB));
    CUDA_OK(Malloc(&out, 16 * kMiB));
    struct {
      float* p;
      long n;
    } pair{in, 4 * static_cast<long>(kMiB)};
    float k = 2;
    void* args[] = {&pair, &out, &k};
    CHECK_TIME(TimeMs(nullptr,
                      [&] {
                        return cuLaunchKernel(f, 4096, 1, 1, 1024, 1, 1, 0, nullptr, args,
                                              nullptr) == CUDA_SUCCESS
                                   ? cudaSuccess
                                   : cudaErrorUnknown;
                      }),
               32.0 * kMiB);
    CU_OK(cuModuleUnload(mod));
    return std::string();
  });
  ExpectPassed(o);
  EXPECT_LE(CountLines(o.err), 1) << o.err;  // at most cuGetExportTable's one line
}

}  // namespace
