// driver_lookup_probe: allocates, copies to and frees device memory with the driver API, reaching
// cuMemAlloc, cuMemcpyHtoDAsync and cuMemFree in the way the first argument names:
//   byname      calling the exported names (cuMemAlloc_v2, ...) directly
//   proc        through cuGetProcAddress (the CUDA 11.3 form, 4 arguments), version 12000
//   proc_v2     through cuGetProcAddress_v2, version 12000
//   entry       through cudaGetDriverEntryPointByVersion (runtime), version 12000
//   entry_rt    through cudaGetDriverEntryPoint (runtime's own version)
//   legacy      cuGetProcAddress_v2("cuMemAlloc", version 2000): the 32-bit base form
//   meminfo     prints "meminfo FREE TOTAL" from cuMemGetInfo_v2 after a 4 MiB cuMemAlloc
//   synccopy    fills kMaps buffers of 1 MiB with cuMemcpyHtoD_v2 (more than a small
//               POOCH_MEMORY_LIMIT holds, so earlier ones are swapped out), copies each with
//               cuMemcpyDtoD_v2 and cuMemcpy, reads all back with cuMemcpyDtoH_v2 and prints
//               "synccopy ok" when every byte is what was written
//   copy2d      the same with the runtime's 2D copies and memsets: kMaps buffers of 1024 rows
//               of 1024 bytes, each gets a 512-byte-wide column from the host (cudaMemcpy2D),
//               copied to the middle of a second buffer zeroed by cudaMemset2D
//               (cudaMemcpy2DAsync), its other half set by cudaMemset2DAsync, and both are read
//               back (cudaMemcpy2D); prints "copy2d ok" when every byte is right
// Each of the first five does `kRounds` rounds and prints "probe ok"; interpose_driver_lookup
// runs it under libpooch.so and compares the per-hook call counts of the summary.
#include <cstdio>
#include <cstring>
#include <vector>

#define CUDA_ENABLE_DEPRECATED 1  // cudaGetDriverEntryPoint is deprecated, and tested
#include <cuda.h>
#include <cuda_runtime_api.h>

#undef cuGetProcAddress
extern "C" CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                     cuuint64_t flags);

namespace {

constexpr int kRounds = 3;
constexpr size_t kBytes = 1 << 20;

using AllocFn = CUresult (*)(CUdeviceptr*, size_t);
using FreeFn = CUresult (*)(CUdeviceptr);
using CopyFn = CUresult (*)(CUdeviceptr, const void*, size_t, CUstream);
using LegacyAllocFn = CUresult (*)(unsigned int*, unsigned int);

bool Check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) std::fprintf(stderr, "probe: %s failed: %d\n", what, static_cast<int>(r));
  return r == CUDA_SUCCESS;
}

template <typename Fn>
bool Get(const char* mode, const char* name, Fn* fn) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult found{};
  cudaDriverEntryPointQueryResult rt_found{};
  bool ok = false;
  if (std::strcmp(mode, "proc") == 0) {
    ok = cuGetProcAddress(name, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT) == CUDA_SUCCESS;
  } else if (std::strcmp(mode, "proc_v2") == 0) {
    ok = cuGetProcAddress_v2(name, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found) == CUDA_SUCCESS;
  } else if (std::strcmp(mode, "entry") == 0) {
    ok = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &rt_found) ==
         cudaSuccess;
  } else if (std::strcmp(mode, "entry_rt") == 0) {
    ok = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &rt_found) == cudaSuccess;
  }
  if (!ok || p == nullptr) {
    std::fprintf(stderr, "probe: look-up of %s (%s) failed\n", name, mode);
    return false;
  }
  *fn = reinterpret_cast<Fn>(p);
  return true;
}

// cuGetProcAddress_v2("cuMemAlloc", 2000): the 32-bit base form, called once.
int Legacy() {
  void* p = nullptr;
  CUdriverProcAddressQueryResult found{};
  if (!Check(cuGetProcAddress_v2("cuMemAlloc", &p, 2000, CU_GET_PROC_ADDRESS_DEFAULT, &found),
             "cuGetProcAddress_v2(cuMemAlloc, 2000)")) {
    return 1;
  }
  unsigned int small = 0;
  const CUresult r = reinterpret_cast<LegacyAllocFn>(p)(&small, 4096);
  std::printf("probe legacy result %d\n", static_cast<int>(r));
  return 0;
}

// "meminfo FREE TOTAL" after a 4 MiB cuMemAlloc.
int MemInfo() {
  CUdeviceptr d = 0;
  size_t free_bytes = 0, total_bytes = 0;
  if (!Check(cuMemAlloc_v2(&d, 4 << 20), "cuMemAlloc") ||
      !Check(cuMemGetInfo_v2(&free_bytes, &total_bytes), "cuMemGetInfo") ||
      !Check(cuMemFree_v2(d), "cuMemFree")) {
    return 1;
  }
  std::printf("meminfo %zu %zu\n", free_bytes, total_bytes);
  return 0;
}

// The driver's synchronous copies over more buffers than a small limit holds.
int SyncCopy() {
  constexpr int kMaps = 8;
  std::vector<CUdeviceptr> a(kMaps), b(kMaps), c(kMaps);
  std::vector<char> host(kBytes);
  for (int i = 0; i < kMaps; ++i) {
    std::memset(host.data(), 'a' + i, kBytes);
    if (!Check(cuMemAlloc_v2(&a[i], kBytes), "cuMemAlloc") ||
        !Check(cuMemcpyHtoD_v2(a[i], host.data(), kBytes), "cuMemcpyHtoD_v2")) {
      return 1;
    }
  }
  for (int i = 0; i < kMaps; ++i) {
    if (!Check(cuMemAlloc_v2(&b[i], kBytes), "cuMemAlloc") ||
        !Check(cuMemcpyDtoD_v2(b[i], a[i], kBytes), "cuMemcpyDtoD_v2") ||
        !Check(cuMemAlloc_v2(&c[i], kBytes), "cuMemAlloc") ||
        !Check(cuMemcpy(c[i], b[i], kBytes), "cuMemcpy")) {
      return 1;
    }
  }
  for (int i = 0; i < kMaps; ++i) {
    for (CUdeviceptr d : {a[i], b[i], c[i]}) {
      std::memset(host.data(), 0, kBytes);
      if (!Check(cuMemcpyDtoH_v2(host.data(), d, kBytes), "cuMemcpyDtoH_v2")) return 1;
      for (size_t k = 0; k < kBytes; ++k) {
        if (host[k] != 'a' + i) {
          std::printf("synccopy wrong byte %zu of buffer %d\n", k, i);
          return 1;
        }
      }
    }
  }
  std::printf("synccopy ok\n");
  return 0;
}

// The runtime's 2D copies and memsets over more buffers than a small limit holds.
int Copy2D() {
  constexpr int kMaps = 8;
  constexpr size_t kPitch = 1024, kRows = kBytes / kPitch, kWidth = 512, kShift = 256;
  std::vector<void*> a(kMaps), b(kMaps);
  std::vector<char> column(kWidth * kRows), back(kBytes);
  for (int i = 0; i < kMaps; ++i) {
    std::memset(column.data(), 'a' + i, column.size());
    if (cudaMalloc(&a[i], kBytes) != cudaSuccess || cudaMalloc(&b[i], kBytes) != cudaSuccess ||
        cudaMemset2D(b[i], kPitch, 0, kPitch, kRows) != cudaSuccess ||
        cudaMemcpy2D(a[i], kPitch, column.data(), kWidth, kWidth, kRows, cudaMemcpyHostToDevice) !=
            cudaSuccess) {
      std::fprintf(stderr, "probe: copy2d set-up of buffer %d failed\n", i);
      return 1;
    }
  }
  for (int i = 0; i < kMaps; ++i) {
    if (cudaMemcpy2DAsync(static_cast<char*>(b[i]) + kShift, kPitch, a[i], kPitch, kWidth, kRows,
                          cudaMemcpyDeviceToDevice, nullptr) != cudaSuccess ||
        cudaMemset2DAsync(static_cast<char*>(a[i]) + kWidth, kPitch, 'z', kPitch - kWidth, kRows,
                          nullptr) != cudaSuccess) {
      std::fprintf(stderr, "probe: cudaMemcpy2DAsync or cudaMemset2DAsync %d failed\n", i);
      return 1;
    }
  }
  for (int i = 0; i < kMaps; ++i) {
    for (int which = 0; which < 2; ++which) {
      const size_t first = which == 0 ? 0 : kShift;
      if (cudaMemcpy2D(back.data(), kPitch, which == 0 ? a[i] : b[i], kPitch, kPitch, kRows,
                       cudaMemcpyDeviceToHost) != cudaSuccess) {
        std::fprintf(stderr, "probe: read-back of buffer %d failed\n", i);
        return 1;
      }
      for (size_t k = 0; k < kBytes; ++k) {
        const size_t col = k % kPitch;
        const char outside = which == 0 ? 'z' : 0;  // a's right half was set to 'z'
        const char want = col >= first && col < first + kWidth ? 'a' + i : outside;
        if (back[k] != want) {
          std::printf("copy2d wrong byte %zu of buffer %d.%d\n", k, i, which);
          return 1;
        }
      }
    }
  }
  std::printf("copy2d ok\n");
  return 0;
}

// `kRounds` rounds of allocate, copy and free, reached in the way `mode` names.
int Rounds(const char* mode) {
  AllocFn alloc = &cuMemAlloc_v2;
  FreeFn free_fn = &cuMemFree_v2;
  CopyFn copy = &cuMemcpyHtoDAsync_v2;
  if (std::strcmp(mode, "byname") != 0) {
    if (!Get(mode, "cuMemAlloc", &alloc) || !Get(mode, "cuMemFree", &free_fn) ||
        !Get(mode, "cuMemcpyHtoDAsync", &copy)) {
      return 1;
    }
  }
  std::vector<char> host(kBytes, 7);
  for (int i = 0; i < kRounds; ++i) {
    CUdeviceptr d = 0;
    if (!Check(alloc(&d, kBytes), "cuMemAlloc") ||
        !Check(copy(d, host.data(), kBytes, nullptr), "cuMemcpyHtoDAsync") ||
        !Check(cuCtxSynchronize(), "cuCtxSynchronize") || !Check(free_fn(d), "cuMemFree")) {
      return 1;
    }
  }
  std::printf("probe ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "byname";
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (!Check(cuInit(0), "cuInit") || !Check(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      !Check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      !Check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent")) {
    return 1;
  }
  if (std::strcmp(mode, "legacy") == 0) return Legacy();
  if (std::strcmp(mode, "meminfo") == 0) return MemInfo();
  if (std::strcmp(mode, "synccopy") == 0) return SyncCopy();
  if (std::strcmp(mode, "copy2d") == 0) return Copy2D();
  return Rounds(mode);
}
