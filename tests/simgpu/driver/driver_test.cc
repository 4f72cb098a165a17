// The driver API of simgpu, through a program linked against the real toolkit's libcuda stub
// and run with LD_LIBRARY_PATH pointing at simgpu's libraries. Scenarios run in forked children
// (isolated.h).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/simgpu/driver/isolated.h"

namespace {

using simgpu_test::CountLines;
using simgpu_test::Outcome;
using simgpu_test::RunIsolated;

constexpr size_t kMiB = size_t{1} << 20;

std::string Name(CUresult r) {
  const char* s = nullptr;
  return cuGetErrorName(r, &s) == CUDA_SUCCESS ? s : "unknown CUresult " + std::to_string(r);
}

#define CU_OK(expr) CHECK_EQ_OR_RETURN(Name(expr), Name(CUDA_SUCCESS))

std::string InitWithContext() {
  CU_OK(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CU_OK(cuDeviceGet(&dev, 0));
  CU_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU_OK(cuCtxSetCurrent(ctx));
  return std::string();
}

#define INIT_OR_RETURN()                   \
  do {                                     \
    std::string init_ = InitWithContext(); \
    if (!init_.empty()) return init_;      \
  } while (0)

CUmemAllocationProp DeviceProp() {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

TEST(Driver, NeedsInitAndContext) {
  Outcome o = RunIsolated({{"SIMGPU_PRESET", "h100-pcie5"}}, [] {
    int n = 0;
    CHECK_EQ_OR_RETURN(Name(cuDeviceGetCount(&n)), Name(CUDA_ERROR_NOT_INITIALIZED));
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetCount(&n));
    CHECK_EQ_OR_RETURN(n, 1);
    CUdeviceptr d;
    CHECK_EQ_OR_RETURN(Name(cuMemAlloc(&d, 16)), Name(CUDA_ERROR_INVALID_CONTEXT));
    INIT_OR_RETURN();
    CU_OK(cuMemAlloc(&d, 16));
    int major = 0;
    CU_OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    CHECK_EQ_OR_RETURN(major, 9);
    char name[128];
    CU_OK(cuDeviceGetName(name, sizeof(name), 0));
    CHECK_OR_RETURN(std::string(name).find("(simgpu)") != std::string::npos);
    return std::string();
  });
  EXPECT_EQ(o.result, "") << o.err;
}

TEST(Driver, VmmRoundTripThenUnmappedCopyIsStickyIllegalAddress) {
  Outcome o = RunIsolated({}, [] {
    INIT_OR_RETURN();
    CUmemAllocationProp prop = DeviceProp();
    size_t gran = 0;
    CU_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK_EQ_OR_RETURN(gran, 2 * kMiB);
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0));
    CU_OK(cuMemCreate(&h, 2 * gran, &prop, 0));
    CU_OK(cuMemMap(va, 2 * gran, 0, h, 0));
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_OK(cuMemSetAccess(va, 2 * gran, &access, 1));
    std::vector<char> in(2 * gran, 'x'), out(2 * gran, 0);
    CU_OK(cuMemcpyHtoD(va, in.data(), in.size()));
    CU_OK(cuMemsetD8(va + 10, 'y', 5));
    CU_OK(cuMemcpyDtoH(out.data(), va, out.size()));
    CHECK_EQ_OR_RETURN(out[9], 'x');
    CHECK_EQ_OR_RETURN(out[10], 'y');
    CHECK_EQ_OR_RETURN(out[2 * gran - 1], 'x');
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemUnmap(va, 2 * gran));
    CU_OK(cuMemRelease(h));
    CHECK_EQ_OR_RETURN(Name(cuMemcpyHtoD(va + 4096, in.data(), 16)),
                       Name(CUDA_ERROR_ILLEGAL_ADDRESS));
    CUdeviceptr d;  // sticky: every later call fails the same way
    CHECK_EQ_OR_RETURN(Name(cuMemAlloc(&d, 16)), Name(CUDA_ERROR_ILLEGAL_ADDRESS));
    CHECK_EQ_OR_RETURN(Name(cuCtxSynchronize()), Name(CUDA_ERROR_ILLEGAL_ADDRESS));
    return std::string();
  });
  EXPECT_EQ(o.result, "") << o.err;
  EXPECT_EQ(CountLines(o.err), 1) << o.err;
  EXPECT_NE(o.err.find("illegal address: cuMemcpyHtoD writes"), std::string::npos) << o.err;
}

TEST(Driver, UseAfterFreeFaultsOnceAndStaysSticky) {
  Outcome o = RunIsolated({}, [] {
    INIT_OR_RETURN();
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 4096));
    CU_OK(cuMemFree(d));
    char buf[8] = {};
    CHECK_EQ_OR_RETURN(Name(cuMemcpyDtoH(buf, d, 8)), Name(CUDA_ERROR_ILLEGAL_ADDRESS));
    CHECK_EQ_OR_RETURN(Name(cuMemcpyDtoH(buf, d, 8)), Name(CUDA_ERROR_ILLEGAL_ADDRESS));
    return std::string();
  });
  EXPECT_EQ(o.result, "") << o.err;
  EXPECT_EQ(CountLines(o.err), 1) << o.err;  // one line for the fault, none for sticky repeats
}

TEST(Driver, VmmCapacityAndFailInjection) {
  Outcome o = RunIsolated({{"SIMGPU_MEMORY", "16MiB"}}, [] {
    INIT_OR_RETURN();
    CUmemAllocationProp prop = DeviceProp();
    CUmemGenericAllocationHandle a, b;
    CU_OK(cuMemCreate(&a, 12 * kMiB, &prop, 0));
    CHECK_EQ_OR_RETURN(Name(cuMemCreate(&b, 6 * kMiB, &prop, 0)), Name(CUDA_ERROR_OUT_OF_MEMORY));
    CHECK_EQ_OR_RETURN(Name(cuMemCreate(&b, 3 * kMiB, &prop, 0)), Name(CUDA_ERROR_INVALID_VALUE));
    CU_OK(cuMemCreate(&b, 4 * kMiB, &prop, 0));
    size_t free_bytes = 1, total = 0;
    CU_OK(cuMemGetInfo(&free_bytes, &total));
    CHECK_EQ_OR_RETURN(free_bytes, 0u);
    CU_OK(cuMemRelease(a));
    CU_OK(cuMemGetInfo(&free_bytes, &total));
    CHECK_EQ_OR_RETURN(free_bytes, 12 * kMiB);
    return std::string();
  });
  EXPECT_EQ(o.result, "") << o.err;

  o = RunIsolated({{"SIMGPU_FAIL", "cuMemCreate:1"}}, [] {
    INIT_OR_RETURN();
    CUmemAllocationProp prop = DeviceProp();
    CUmemGenericAllocationHandle a;
    CHECK_EQ_OR_RETURN(Name(cuMemCreate(&a, 2 * kMiB, &prop, 0)), Name(CUDA_ERROR_OUT_OF_MEMORY));
    CU_OK(cuMemCreate(&a, 2 * kMiB, &prop, 0));
    return std::string();
  });
  EXPECT_EQ(o.result, "") << o.err;
}

TEST(Driver, GetProcAddressFollowsVersions) {
  Outcome o = RunIsolated({}, [] {
    INIT_OR_RETURN();
    void* fn = nullptr;
    CUdriverProcAddressQueryResult st;
    CU_OK(cuGetProcAddress("cuMemAlloc", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    CHECK_EQ_OR_RETURN(st, CU_GET_PROC_ADDRESS_SUCCESS);
    void* v2 = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    void* v1 = dlsym(RTLD_DEFAULT, "cuMemAlloc");
    CHECK_OR_RETURN(v1 != nullptr && v2 != nullptr && v1 != v2);
    CHECK_OR_RETURN(fn == v2);
    CUdeviceptr d = 0;
    CU_OK(reinterpret_cast<PFN_cuMemAlloc_v3020>(fn)(&d, 1024));
    CHECK_OR_RETURN(d != 0);
    CU_OK(cuGetProcAddress("cuMemAlloc", &fn, 3000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    CHECK_OR_RETURN(fn == v1);  // before 3.2 the name meant the 32-bit form
    CU_OK(cuGetProcAddress("cuEventElapsedTime", &fn, 12080, 0, &st));
    CHECK_OR_RETURN(fn == dlsym(RTLD_DEFAULT, "cuEventElapsedTime_v2"));
    CU_OK(cuGetProcAddress("cuEventElapsedTime", &fn, 12000, 0, &st));
    CHECK_OR_RETURN(fn == dlsym(RTLD_DEFAULT, "cuEventElapsedTime"));
    CHECK_EQ_OR_RETURN(Name(cuGetProcAddress("cuMemCreate", &fn, 10010, 0, &st)),
                       Name(CUDA_ERROR_NOT_FOUND));
    CHECK_EQ_OR_RETURN(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    CHECK_EQ_OR_RETURN(Name(cuGetProcAddress("cuNoSuch", &fn, 13000, 0, &st)),
                       Name(CUDA_ERROR_NOT_FOUND));
    CHECK_EQ_OR_RETURN(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    CHECK_OR_RETURN(fn == nullptr);
    // The one the runtime asks for first, and the old cuGetProcAddress.
    CU_OK(cuGetProcAddress("cuGetProcAddress", &fn, 13000, 0, &st));
    CHECK_OR_RETURN(fn == dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"));
    auto v1_get =
        reinterpret_cast<PFN_cuGetProcAddress_v11030>(dlsym(RTLD_DEFAULT, "cuGetProcAddress"));
    CHECK_OR_RETURN(v1_get != nullptr);
    CU_OK(v1_get("cuStreamDestroy", &fn, 13000, 0));
    CHECK_OR_RETURN(fn == dlsym(RTLD_DEFAULT, "cuStreamDestroy_v2"));
    return std::string();
  });
  EXPECT_EQ(o.result, "") << o.err;
}

TEST(Driver, StreamsEventsAndVirtualTime) {
  // The copy's own time between two events: no latency, and no host cost for the copy call
  // (docs/simgpu.md, "Host time") to start it after the first event.
  const simgpu_test::Env env = {
      {"SIMGPU_D2H_GBPS", "10"}, {"SIMGPU_LAUNCH_US", "0"}, {"SIMGPU_HOST_COSTS", "off"}};
  Outcome o = RunIsolated(env, [] {
    INIT_OR_RETURN();
    const size_t n = 10 * 1000 * 1000;  // 10 MB at 10 GB/s: exactly 1 ms
    CUdeviceptr d;
    void* host = nullptr;
    CU_OK(cuMemAlloc(&d, n));
    CU_OK(cuMemHostAlloc(&host, n, 0));
    CUstream s;
    CUevent a, b;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&a, CU_EVENT_DEFAULT));
    CU_OK(cuEventCreate(&b, CU_EVENT_DEFAULT));
    CU_OK(cuEventRecord(a, s));
    CU_OK(cuMemcpyDtoHAsync(host, d, n, s));
    CU_OK(cuEventRecord(b, s));
    CHECK_EQ_OR_RETURN(Name(cuStreamQuery(s)), Name(CUDA_ERROR_NOT_READY));
    // Polling terminates: each not-ready query costs virtual host time.
    int polls = 0;
    while (cuEventQuery(b) == CUDA_ERROR_NOT_READY) ++polls;
    CHECK_OR_RETURN(polls > 100);
    CU_OK(cuStreamQuery(s));
    float ms = 0;
    CU_OK(cuEventElapsedTime(&ms, a, b));
    CHECK_OR_RETURN(ms == 1.0f);
    CU_OK(cuEventDestroy(a));
    CHECK_EQ_OR_RETURN(Name(cuEventRecord(a, s)), Name(CUDA_ERROR_INVALID_HANDLE));
    CU_OK(cuStreamDestroy(s));
    CHECK_EQ_OR_RETURN(Name(cuStreamSynchronize(s)), Name(CUDA_ERROR_INVALID_HANDLE));
    return std::string();
  });
  EXPECT_EQ(o.result, "") << o.err;
}

TEST(Driver, ExportsCarryTheRealNamesAndVersions) {
  std::string dir = std::getenv("LD_LIBRARY_PATH") ? std::getenv("LD_LIBRARY_PATH") : "";
  void* rt = dlopen((dir + "/libcudart.so.13").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(rt, nullptr) << dlerror();
  for (const char* sym : {"cudaMalloc", "cudaMemcpyAsync", "cudaGetDriverEntryPointByVersion",
                          "cudaGetDeviceProperties", "cudaEventElapsedTime"}) {
    EXPECT_NE(dlvsym(rt, sym, "libcudart.so.13"), nullptr) << sym;
  }
  void* drv = dlopen((dir + "/libcuda.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(drv, nullptr) << dlerror();
  for (const char* sym :
       {"cuGetProcAddress", "cuGetProcAddress_v2", "cuMemAlloc", "cuMemAlloc_v2", "cuStreamDestroy",
        "cuStreamDestroy_v2", "cuEventDestroy_v2", "cuEventElapsedTime_v2", "cuMemcpyHtoDAsync_v2",
        "cuMemsetD8_v2", "cuMemCreate", "cuMemMap"}) {
    EXPECT_NE(dlsym(drv, sym), nullptr) << sym;
  }
  // Internals stay hidden.
  EXPECT_EQ(dlsym(drv, "_ZN6simgpu6driver4ToCUENS_3ErrE"), nullptr);
}

}  // namespace
