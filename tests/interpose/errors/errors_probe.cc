// errors_probe MODE: what a program sees of CUDA's error and pointer semantics, checked against
// what the CUDA documentation says the real API answers. It runs the same way on simgpu alone
// (the reference) and under libpooch.so, whose answers must not differ (issue 13, point 5):
//   codes     an allocation no device holds (SIZE_MAX, 1 << 63, 1 TiB) fails with the API's
//             out-of-memory code, from cudaMalloc, cudaMallocAsync and cuMemAlloc; the runtime's
//             last error is that error (cudaPeekAtLastError keeps it, cudaGetLastError returns
//             and clears it), and of two errors the later one is reported
//   sticky    after an illegal address (a memset of reserved, unmapped memory: a program's
//             fault), every call returns cudaErrorIllegalAddress / CUDA_ERROR_ILLEGAL_ADDRESS:
//             an allocation small or large, a copy from a buffer (swapped out under pooch), a
//             free, a pointer query, the driver's allocation
//   pointers  pointer queries (cudaPointerGetAttributes, cuPointerGetAttribute(s),
//             cuMemGetAddressRange) about a 3 MiB + 5 byte buffer that later buffers push out
//             of a small POOCH_MEMORY_LIMIT, about a 1000-byte buffer, at their start and inside
//             them, answer with the buffer the program asked for (device memory, the pointer
//             itself, its base and requested size), and just past their requested bytes as
//             for memory that is no allocation
//   full      fills the device through cuMemAllocAsync (which pooch does not hook), then asks
//             cudaMalloc for 1 MiB; prints "full cudaMalloc CODE" (the driver checks it)
// Prints "errors_probe MODE ok" and exits 0 when every check held; otherwise one line per failed
// check on stderr and exit 1. Needs a device of at least 64 MiB.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_failures = 0;

void Expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "errors_probe: %s\n", what);
    ++g_failures;
  }
}

void ExpectCode(cudaError_t got, cudaError_t want, const char* what) {
  if (got != want) {
    std::fprintf(stderr, "errors_probe: %s: %s (%d), want %s (%d)\n", what, cudaGetErrorName(got),
                 static_cast<int>(got), cudaGetErrorName(want), static_cast<int>(want));
    ++g_failures;
  }
}

void ExpectCode(CUresult got, CUresult want, const char* what) {
  if (got != want) {
    std::fprintf(stderr, "errors_probe: %s: CUresult %d, want %d\n", what, static_cast<int>(got),
                 static_cast<int>(want));
    ++g_failures;
  }
}

CUdeviceptr D(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

// A buffer of `bytes` filled from the host, so that it holds data pooch must keep.
void* Filled(size_t bytes, unsigned char value) {
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) {
    ExpectCode(e, cudaSuccess, "cudaMalloc (fill)");
    return nullptr;
  }
  std::vector<unsigned char> host(bytes, value);
  ExpectCode(cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess,
             "cudaMemcpy H2D (fill)");
  return p;
}

void Codes() {
  constexpr size_t kMax = SIZE_MAX;
  void* p = nullptr;
  ExpectCode(cudaMalloc(&p, kMax), cudaErrorMemoryAllocation, "cudaMalloc(SIZE_MAX)");
  ExpectCode(cudaPeekAtLastError(), cudaErrorMemoryAllocation, "cudaPeekAtLastError after it");
  ExpectCode(cudaPeekAtLastError(), cudaErrorMemoryAllocation, "cudaPeekAtLastError again");
  ExpectCode(cudaGetLastError(), cudaErrorMemoryAllocation, "cudaGetLastError after it");
  ExpectCode(cudaGetLastError(), cudaSuccess, "cudaGetLastError again (cleared)");
  ExpectCode(cudaPeekAtLastError(), cudaSuccess, "cudaPeekAtLastError (cleared)");

  ExpectCode(cudaMalloc(&p, size_t{1} << 63), cudaErrorMemoryAllocation, "cudaMalloc(1 << 63)");
  ExpectCode(cudaGetLastError(), cudaErrorMemoryAllocation, "cudaGetLastError after 1 << 63");
  ExpectCode(cudaMalloc(&p, size_t{1} << 40), cudaErrorMemoryAllocation, "cudaMalloc(1 TiB)");
  ExpectCode(cudaGetLastError(), cudaErrorMemoryAllocation, "cudaGetLastError after 1 TiB");
  ExpectCode(cudaMallocAsync(&p, kMax, nullptr), cudaErrorMemoryAllocation,
             "cudaMallocAsync(SIZE_MAX)");
  ExpectCode(cudaGetLastError(), cudaErrorMemoryAllocation, "cudaGetLastError after MallocAsync");
  CUdeviceptr d = 0;
  ExpectCode(cuMemAlloc(&d, kMax), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(SIZE_MAX)");
  // The driver API has no last error: the runtime's stays clear.
  ExpectCode(cudaGetLastError(), cudaSuccess, "cudaGetLastError after cuMemAlloc");

  // Of two errors, the later one is the last: the runtime's own after pooch's...
  ExpectCode(cudaMalloc(&p, kMax), cudaErrorMemoryAllocation, "cudaMalloc(SIZE_MAX), 2nd");
  ExpectCode(cudaSetDevice(4096), cudaErrorInvalidDevice, "cudaSetDevice(4096)");
  ExpectCode(cudaGetLastError(), cudaErrorInvalidDevice, "cudaGetLastError: the later error");
  ExpectCode(cudaGetLastError(), cudaSuccess, "cudaGetLastError: both cleared");
  // ... and pooch's after the runtime's.
  ExpectCode(cudaSetDevice(4096), cudaErrorInvalidDevice, "cudaSetDevice(4096), 2nd");
  ExpectCode(cudaMalloc(&p, kMax), cudaErrorMemoryAllocation, "cudaMalloc(SIZE_MAX), 3rd");
  ExpectCode(cudaPeekAtLastError(), cudaErrorMemoryAllocation, "cudaPeekAtLastError: the later");
  ExpectCode(cudaGetLastError(), cudaErrorMemoryAllocation, "cudaGetLastError: the later error");
  ExpectCode(cudaGetLastError(), cudaSuccess, "cudaGetLastError: cleared");

  // A success in between does not clear it.
  ExpectCode(cudaMalloc(&p, kMax), cudaErrorMemoryAllocation, "cudaMalloc(SIZE_MAX), 4th");
  void* ok = nullptr;
  ExpectCode(cudaMalloc(&ok, 1 << 20), cudaSuccess, "cudaMalloc(1 MiB)");
  ExpectCode(cudaFree(ok), cudaSuccess, "cudaFree(1 MiB)");
  ExpectCode(cudaGetLastError(), cudaErrorMemoryAllocation, "cudaGetLastError after successes");
}

void Sticky() {
  constexpr size_t kBuffer = 4 << 20;
  void* early = Filled(kBuffer, 1);  // pushed out by the next ones under a small limit
  std::vector<void*> later;
  for (int i = 0; i < 3; ++i) later.push_back(Filled(kBuffer, static_cast<unsigned char>(2 + i)));
  void* small = Filled(1000, 9);
  ExpectCode(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize (before)");
  if (g_failures > 0) return;

  // The program's fault: memory reserved but never mapped.
  CUdeviceptr reserved = 0;
  ExpectCode(cuMemAddressReserve(&reserved, 2 << 20, 0, 0, 0), CUDA_SUCCESS, "cuMemAddressReserve");
  const cudaError_t memset = cudaMemset(reinterpret_cast<void*>(reserved), 0, 64);
  const cudaError_t sync = cudaDeviceSynchronize();
  // A GPU reports the fault at the memset or, the memset being asynchronous, at the next
  // synchronisation; either way it is sticky from then on.
  Expect(memset == cudaErrorIllegalAddress || sync == cudaErrorIllegalAddress,
         "the memset of unmapped memory reported no illegal address");
  ExpectCode(sync, cudaErrorIllegalAddress, "cudaDeviceSynchronize after the fault");

  void* p = nullptr;
  ExpectCode(cudaMalloc(&p, 1000), cudaErrorIllegalAddress, "cudaMalloc(1000) after the fault");
  ExpectCode(cudaGetLastError(), cudaErrorIllegalAddress, "cudaGetLastError after the fault");
  ExpectCode(cudaMalloc(&p, kBuffer), cudaErrorIllegalAddress, "cudaMalloc(4 MiB) after the fault");
  std::vector<unsigned char> host(kBuffer);
  ExpectCode(cudaMemcpy(host.data(), early, kBuffer, cudaMemcpyDeviceToHost),
             cudaErrorIllegalAddress, "cudaMemcpy D2H of the first buffer after the fault");
  ExpectCode(cudaFree(later[0]), cudaErrorIllegalAddress, "cudaFree after the fault");
  ExpectCode(cudaFree(small), cudaErrorIllegalAddress, "cudaFree(small) after the fault");
  cudaPointerAttributes attributes{};
  ExpectCode(cudaPointerGetAttributes(&attributes, early), cudaErrorIllegalAddress,
             "cudaPointerGetAttributes after the fault");
  CUdeviceptr base = 0;
  size_t size = 0;
  ExpectCode(cuMemGetAddressRange(&base, &size, D(early)), CUDA_ERROR_ILLEGAL_ADDRESS,
             "cuMemGetAddressRange after the fault");
  CUdeviceptr d = 0;
  ExpectCode(cuMemAlloc(&d, 1000), CUDA_ERROR_ILLEGAL_ADDRESS, "cuMemAlloc after the fault");
}

// What every query must say about `ptr`, inside the buffer at `base` of `bytes` requested.
void QueryInside(const void* base, size_t bytes, const void* ptr, const char* what) {
  std::string w(what);
  int device = -1;
  cudaGetDevice(&device);
  cudaPointerAttributes a{};
  ExpectCode(cudaPointerGetAttributes(&a, ptr), cudaSuccess,
             (w + ": cudaPointerGetAttributes").c_str());
  Expect(a.type == cudaMemoryTypeDevice, (w + ": type is not cudaMemoryTypeDevice").c_str());
  Expect(a.device == device, (w + ": device is not the current device").c_str());
  Expect(a.devicePointer == ptr, (w + ": devicePointer is not the pointer").c_str());
  Expect(a.hostPointer == nullptr, (w + ": hostPointer is not null").c_str());

  CUdeviceptr range_base = 0;
  size_t range_size = 0;
  ExpectCode(cuMemGetAddressRange(&range_base, &range_size, D(ptr)), CUDA_SUCCESS,
             (w + ": cuMemGetAddressRange").c_str());
  Expect(range_base == D(base), (w + ": cuMemGetAddressRange base").c_str());
  Expect(range_size == bytes, (w + ": cuMemGetAddressRange size").c_str());

  unsigned int type = 0;
  ExpectCode(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, D(ptr)), CUDA_SUCCESS,
             (w + ": cuPointerGetAttribute(MEMORY_TYPE)").c_str());
  Expect(type == CU_MEMORYTYPE_DEVICE, (w + ": MEMORY_TYPE is not device").c_str());
  CUdeviceptr device_pointer = 0;
  ExpectCode(cuPointerGetAttribute(&device_pointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, D(ptr)),
             CUDA_SUCCESS, (w + ": cuPointerGetAttribute(DEVICE_POINTER)").c_str());
  Expect(device_pointer == D(ptr), (w + ": DEVICE_POINTER is not the pointer").c_str());
  CUdeviceptr start = 0;
  ExpectCode(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, D(ptr)),
             CUDA_SUCCESS, (w + ": cuPointerGetAttribute(RANGE_START_ADDR)").c_str());
  Expect(start == D(base), (w + ": RANGE_START_ADDR is not the buffer's").c_str());
  size_t range = 0;
  ExpectCode(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, D(ptr)), CUDA_SUCCESS,
             (w + ": cuPointerGetAttribute(RANGE_SIZE)").c_str());
  Expect(range == bytes, (w + ": RANGE_SIZE is not the requested size").c_str());
  int ordinal = -1;
  ExpectCode(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, D(ptr)),
             CUDA_SUCCESS, (w + ": cuPointerGetAttribute(DEVICE_ORDINAL)").c_str());
  Expect(ordinal == device, (w + ": DEVICE_ORDINAL is not the current device").c_str());
  CUcontext context = nullptr, current = nullptr;
  cuCtxGetCurrent(&current);
  ExpectCode(cuPointerGetAttribute(&context, CU_POINTER_ATTRIBUTE_CONTEXT, D(ptr)), CUDA_SUCCESS,
             (w + ": cuPointerGetAttribute(CONTEXT)").c_str());
  Expect(context == current, (w + ": CONTEXT is not the current context").c_str());

  unsigned int many_type = 0;
  CUdeviceptr many_pointer = 0, many_start = 0;
  size_t many_size = 0;
  CUpointer_attribute which[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* data[] = {&many_type, &many_pointer, &many_start, &many_size};
  ExpectCode(cuPointerGetAttributes(4, which, data, D(ptr)), CUDA_SUCCESS,
             (w + ": cuPointerGetAttributes").c_str());
  Expect(many_type == CU_MEMORYTYPE_DEVICE && many_pointer == D(ptr) && many_start == D(base) &&
             many_size == bytes,
         (w + ": cuPointerGetAttributes answers").c_str());
}

// Just past the requested bytes: no allocation, whatever pooch rounded the buffer up to.
void QueryPast(const void* ptr, const char* what) {
  std::string w(what);
  cudaPointerAttributes a{};
  ExpectCode(cudaPointerGetAttributes(&a, ptr), cudaSuccess,
             (w + ": cudaPointerGetAttributes").c_str());
  Expect(a.type == cudaMemoryTypeUnregistered, (w + ": type is not unregistered").c_str());
  Expect(a.devicePointer == nullptr, (w + ": a device pointer").c_str());
  CUdeviceptr base = 0;
  size_t size = 0;
  ExpectCode(cuMemGetAddressRange(&base, &size, D(ptr)), CUDA_ERROR_NOT_FOUND,
             (w + ": cuMemGetAddressRange").c_str());
  unsigned int type = 0;
  ExpectCode(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, D(ptr)),
             CUDA_ERROR_INVALID_VALUE, (w + ": cuPointerGetAttribute(MEMORY_TYPE)").c_str());
}

void Pointers() {
  constexpr size_t kOdd = (3 << 20) + 5;
  constexpr size_t kBuffer = 4 << 20;
  auto* odd = static_cast<unsigned char*>(Filled(kOdd, 7));
  std::vector<void*> later;
  for (int i = 0; i < 3; ++i) later.push_back(Filled(kBuffer, static_cast<unsigned char>(i)));
  auto* small = static_cast<unsigned char*>(Filled(1000, 8));
  ExpectCode(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize");
  if (g_failures > 0) return;
  // The odd buffer first, while it is swapped out under pooch.
  QueryInside(odd, kOdd, odd, "odd buffer, start");
  QueryInside(odd, kOdd, odd + (1 << 20) + 3, "odd buffer, inside");
  QueryInside(odd, kOdd, odd + kOdd - 1, "odd buffer, last byte");
  QueryPast(odd + kOdd + 100, "past the odd buffer");
  QueryInside(small, 1000, small, "small buffer, start");
  QueryInside(small, 1000, small + 999, "small buffer, last byte");
  QueryPast(small + 1000, "past the small buffer");
  // Asked about, nothing moved or changed: the data reads back.
  std::vector<unsigned char> host(kOdd);
  ExpectCode(cudaMemcpy(host.data(), odd, kOdd, cudaMemcpyDeviceToHost), cudaSuccess,
             "cudaMemcpy D2H (odd buffer)");
  Expect(host[0] == 7 && host[kOdd - 1] == 7, "the odd buffer's data changed");
  QueryInside(odd, kOdd, odd + 5, "odd buffer, resident again");
  for (void* p : later) ExpectCode(cudaFree(p), cudaSuccess, "cudaFree");
  ExpectCode(cudaFree(odd), cudaSuccess, "cudaFree (odd)");
  ExpectCode(cudaFree(small), cudaSuccess, "cudaFree (small)");
}

void Full() {
  cuInit(0);
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS ||
      cuCtxSetCurrent(context) != CUDA_SUCCESS) {
    Expect(false, "no primary context");
    return;
  }
  // Every byte, through an allocator pooch does not see, before pooch's first call.
  for (size_t chunk = size_t{1} << 30; chunk >= 512;) {
    CUdeviceptr d = 0;
    if (cuMemAllocAsync(&d, chunk, nullptr) != CUDA_SUCCESS) chunk /= 2;
  }
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, 1 << 20);
  std::printf("full cudaMalloc %s\n", cudaGetErrorName(e));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "codes") {
    Codes();
  } else if (mode == "sticky") {
    Sticky();
  } else if (mode == "pointers") {
    Pointers();
  } else if (mode == "full") {
    Full();
  } else {
    std::fprintf(stderr, "usage: errors_probe codes|sticky|pointers|full\n");
    return 2;
  }
  if (g_failures == 0) std::printf("errors_probe %s ok\n", mode.c_str());
  return g_failures == 0 ? 0 : 1;
}
