// data_probe MODE: whether pooch keeps a program's data readable and its tensors apart (issue 13).
//
//   host_full BUFFERS MIB  Under a POOCH_MEMORY_LIMIT that holds 2 of BUFFERS buffers of MIB MiB
//       and a POOCH_HOST_MEMORY_LIMIT that holds the others (the driver sets both), fills every
//       buffer from the host: the first BUFFERS-2 are swapped out and the host pool is full, so
//       nothing more can be swapped out, and none of them can be swapped back in. Each must still
//       read back: cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2D, cuMemcpyDtoH_v2, cuMemcpyDtoHAsync_v2
//       and cuMemcpy to the host, at offsets too, and cudaMemcpy, cuMemcpyDtoD_v2 and
//       cuMemcpyDtoDAsync_v2 into the last (resident) buffer. Then the last buffer is freed, which
//       makes room, and everything reads back again.
//   bounds  Copies and memsets that start inside an allocation (3 MiB ones, and small blocks) but
//       run past its end, or that start in freed memory, must fail with the API's invalid-value
//       error (cudaErrorInvalidValue, CUDA_ERROR_INVALID_VALUE) and change nothing; exact ones
//       and ones on memory that is not pooch's still work.
//
// Every byte of every buffer is checked against a position-dependent pattern. Prints one line,
// "data_probe MODE ok ..." when every check held (exit 0), else what failed (exit 1).
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr size_t kMiB = size_t{1} << 20;
int g_failures = 0;

unsigned char Pattern(int buffer, size_t i) {
  return static_cast<unsigned char>(buffer * 131 + i * 7 + (i >> 12));
}

void Fill(std::vector<unsigned char>& host, int buffer) {
  for (size_t i = 0; i < host.size(); ++i) host[i] = Pattern(buffer, i);
}

bool Ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("data_probe: %s: %s (%d)\n", what, cudaGetErrorName(e), static_cast<int>(e));
  ++g_failures;
  return false;
}

bool Ok(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return true;
  std::printf("data_probe: %s: CUresult %d\n", what, static_cast<int>(r));
  ++g_failures;
  return false;
}

// `got[0, n)` must be buffer `want`'s pattern from byte `offset` on; returns the bytes checked.
size_t Same(const unsigned char* got, size_t n, int want, size_t offset, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != Pattern(want, offset + i)) {
      std::printf("data_probe: %s: byte %zu is %d, want %d (pattern of buffer %d)\n", what,
                  offset + i, got[i], Pattern(want, offset + i), want);
      ++g_failures;
      return 0;
    }
  }
  return n;
}

// Reads `dev` whole with cudaMemcpy and checks it holds buffer `want`'s pattern.
size_t Verify(const void* dev, size_t bytes, int want, const char* what) {
  std::vector<unsigned char> back(bytes);
  if (!Ok(cudaMemcpy(back.data(), dev, bytes, cudaMemcpyDeviceToHost), what)) return 0;
  return Same(back.data(), bytes, want, 0, what);
}

CUdeviceptr D(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }
char* C(void* p) { return static_cast<char*>(p); }

int HostFull(int buffers, size_t bytes) {
  std::vector<void*> dev(buffers, nullptr);
  std::vector<int> holds(buffers);  // the pattern each buffer holds
  std::vector<unsigned char> host(bytes);
  for (int b = 0; b < buffers; ++b) {
    Fill(host, b);
    if (!Ok(cudaMalloc(&dev[b], bytes), "cudaMalloc (fill)") ||
        !Ok(cudaMemcpy(dev[b], host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy (fill)")) {
      return 1;
    }
    holds[b] = b;
  }
  Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const int last = buffers - 1;
  size_t verified = 0;
  // Synchronous reads of every buffer: the swapped-out ones cannot come back.
  for (int b = 0; b < buffers; ++b) verified += Verify(dev[b], bytes, b, "cudaMemcpy D2H");

  cudaStream_t stream = nullptr;
  void* pinned = nullptr;  // the program's own pinned memory, not pooch's pool
  if (!Ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate") ||
      !Ok(cudaMallocHost(&pinned, bytes), "cudaMallocHost")) {
    return 1;
  }
  unsigned char* p = static_cast<unsigned char*>(pinned);
  // Asynchronous, on a stream, into pinned memory.
  std::memset(p, 0, bytes);
  if (Ok(cudaMemcpyAsync(p, dev[0], bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync") &&
      Ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize")) {
    verified += Same(p, bytes, 0, 0, "cudaMemcpyAsync D2H");
  }
  // At an offset, part of the buffer.
  const size_t off = bytes / 3 + 5, len = bytes / 4;
  if (Ok(cudaMemcpy(host.data(), C(dev[1]) + off, len, cudaMemcpyDeviceToHost), "cudaMemcpy off")) {
    verified += Same(host.data(), len, 1, off, "cudaMemcpy D2H at an offset");
  }
  // A 2D region: 64 rows of 1000 bytes every 4096 bytes.
  const size_t pitch = 4096, width = 1000, rows = 64;
  std::vector<unsigned char> region(width * rows);
  if (Ok(cudaMemcpy2D(region.data(), width, C(dev[0]) + 3, pitch, width, rows,
                      cudaMemcpyDeviceToHost),
         "cudaMemcpy2D")) {
    for (size_t r = 0; r < rows; ++r) {
      verified += Same(region.data() + r * width, width, 0, 3 + r * pitch, "cudaMemcpy2D D2H");
    }
  }
  // The driver's typed and generic copies.
  std::memset(host.data(), 0, bytes);
  if (Ok(cuMemcpyDtoH_v2(host.data(), D(dev[1]), bytes), "cuMemcpyDtoH_v2")) {
    verified += Same(host.data(), bytes, 1, 0, "cuMemcpyDtoH_v2");
  }
  std::memset(p, 0, bytes);
  if (Ok(cuMemcpyDtoHAsync_v2(p, D(C(dev[0]) + off), len, reinterpret_cast<CUstream>(stream)),
         "cuMemcpyDtoHAsync_v2") &&
      Ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize")) {
    verified += Same(p, len, 0, off, "cuMemcpyDtoHAsync_v2");
  }
  std::memset(host.data(), 0, bytes);
  if (Ok(cuMemcpy(D(host.data()), D(dev[1]), bytes), "cuMemcpy")) {
    verified += Same(host.data(), bytes, 1, 0, "cuMemcpy to the host");
  }
  // Device to device, into the last buffer, which is resident.
  if (Ok(cudaMemcpy(dev[last], dev[0], bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy D2D")) {
    holds[last] = 0;
    verified += Verify(dev[last], bytes, 0, "cudaMemcpy D2D");
  }
  if (Ok(cuMemcpyDtoD_v2(D(dev[last]), D(dev[1]), bytes), "cuMemcpyDtoD_v2")) {
    holds[last] = 1;
    verified += Verify(dev[last], bytes, 1, "cuMemcpyDtoD_v2");
  }
  if (Ok(cuMemcpyDtoDAsync_v2(D(dev[last]), D(dev[0]), bytes, reinterpret_cast<CUstream>(stream)),
         "cuMemcpyDtoDAsync_v2") &&
      Ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize")) {
    holds[last] = 0;
    verified += Verify(dev[last], bytes, 0, "cuMemcpyDtoDAsync_v2");
  }
  // Freeing a buffer makes room: the others come back to the device and still hold their data.
  Ok(cudaFree(dev[last]), "cudaFree (last)");
  for (int b = 0; b < last; ++b) verified += Verify(dev[b], bytes, holds[b], "read after a free");
  Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  for (int b = 0; b < last; ++b) Ok(cudaFree(dev[b]), "cudaFree");
  Ok(cudaFreeHost(pinned), "cudaFreeHost");
  Ok(cudaStreamDestroy(stream), "cudaStreamDestroy");
  if (g_failures > 0) return 1;
  std::printf("data_probe host_full ok verified %zu bytes\n", verified);
  return 0;
}

// bounds: each bad call must return the invalid-value error; `rejected` counts them.
int g_rejected = 0;

void Rejected(cudaError_t e, const char* what) {
  if (e == cudaErrorInvalidValue) {
    ++g_rejected;
    return;
  }
  std::printf("data_probe: %s returned %s (%d), want cudaErrorInvalidValue\n", what,
              cudaGetErrorName(e), static_cast<int>(e));
  ++g_failures;
}

void Rejected(CUresult r, const char* what) {
  if (r == CUDA_ERROR_INVALID_VALUE) {
    ++g_rejected;
    return;
  }
  std::printf("data_probe: %s returned CUresult %d, want CUDA_ERROR_INVALID_VALUE (1)\n", what,
              static_cast<int>(r));
  ++g_failures;
}

void Put(void* dev, size_t bytes, int pattern) {
  std::vector<unsigned char> host(bytes);
  Fill(host, pattern);
  Ok(cudaMemcpy(dev, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy (fill)");
}

int Bounds() {
  // Two swappable allocations of 3 MiB (mapped as 4 MiB: the rounding after each is pooch's)
  // and two small blocks of 1000 bytes (1024 with their rounding), each with its own pattern.
  const size_t big = 3 * kMiB, small = 1000, small_block = 1024;
  void *a = nullptr, *b = nullptr, *s1 = nullptr, *s2 = nullptr;
  if (!Ok(cudaMalloc(&a, big), "cudaMalloc") || !Ok(cudaMalloc(&b, big), "cudaMalloc") ||
      !Ok(cudaMalloc(&s1, small), "cudaMalloc") || !Ok(cudaMalloc(&s2, small), "cudaMalloc")) {
    return 1;
  }
  Put(a, big, 1);
  Put(b, big, 2);
  Put(s1, small, 3);
  Put(s2, small, 4);
  std::vector<unsigned char> host(8 * kMiB, 0x5a), host2(8 * kMiB);
  cudaStream_t stream = nullptr;
  if (!Ok(cudaStreamCreate(&stream), "cudaStreamCreate")) return 1;

  // Past the end of a 3 MiB allocation, by a little and by a lot, from inside and from its
  // rounding; the runtime's and the driver's forms.
  Rejected(cudaMemset(a, 0, 2 * big), "cudaMemset 6 MiB over 3 MiB");
  Rejected(cudaMemset(C(a) + big - 4, 0, 8), "cudaMemset 4 bytes past the end");
  Rejected(cudaMemset(C(a) + big, 0, 16), "cudaMemset in the rounding");
  Rejected(cudaMemsetAsync(C(a) + kMiB, 0, big, stream), "cudaMemsetAsync past the end");
  Rejected(cudaMemset2D(a, kMiB, 0, kMiB / 2, 4), "cudaMemset2D past the end");
  Rejected(cudaMemcpy(C(a) + kMiB, host.data(), big, cudaMemcpyHostToDevice),
           "cudaMemcpy H2D past the end");
  Rejected(cudaMemcpy(host2.data(), C(a) + 2 * kMiB, 2 * kMiB, cudaMemcpyDeviceToHost),
           "cudaMemcpy D2H from past the end");
  Rejected(cudaMemcpyAsync(b, a, big + 1, cudaMemcpyDeviceToDevice, stream),
           "cudaMemcpyAsync D2D past both ends");
  Rejected(cudaMemcpy2D(a, kMiB, host.data(), kMiB, kMiB, 4, cudaMemcpyHostToDevice),
           "cudaMemcpy2D past the end");
  Rejected(cuMemsetD8_v2(D(C(a) + big - 1), 0, 2), "cuMemsetD8_v2 past the end");
  Rejected(cuMemcpyHtoD_v2(D(C(b) + 2 * kMiB), host.data(), 2 * kMiB), "cuMemcpyHtoD_v2 past");
  Rejected(cuMemcpyDtoH_v2(host2.data(), D(b), big + 512), "cuMemcpyDtoH_v2 past the end");
  Rejected(cuMemcpyDtoD_v2(D(b), D(C(a) + 1), big), "cuMemcpyDtoD_v2 from past the end");
  // Small blocks: past the block into its neighbour.
  Rejected(cudaMemset(s1, 0, 2 * small_block), "cudaMemset over a small block");
  Rejected(cudaMemcpy(C(s1) + 512, host.data(), small_block, cudaMemcpyHostToDevice),
           "cudaMemcpy H2D past a small block");
  Rejected(cuMemsetD8Async(D(C(s2) + 1000), 0, 100, reinterpret_cast<CUstream>(stream)),
           "cuMemsetD8Async past a small block");

  // Exact ranges still work: a whole small block (its rounding included), a whole allocation,
  // an empty memset at an allocation's end, and copies of memory that is not pooch's.
  if (Ok(cudaMemset(s2, 0x44, small_block), "cudaMemset of a whole block")) {
    std::vector<unsigned char> back(small_block);
    if (Ok(cudaMemcpy(back.data(), s2, small_block, cudaMemcpyDeviceToHost), "read s2")) {
      for (unsigned char c : back) {
        if (c != 0x44) {
          std::printf("data_probe: the small block's memset did not land\n");
          ++g_failures;
          break;
        }
      }
    }
  }
  Put(s2, small, 4);
  Ok(cudaMemset(C(b) + big, 0, 0), "an empty cudaMemset at the end");
  Ok(cudaMemcpy(host2.data(), host.data(), host.size(), cudaMemcpyHostToHost), "cudaMemcpy H2H");
  if (std::memcmp(host.data(), host2.data(), host.size()) != 0) {
    std::printf("data_probe: the host-to-host copy went wrong\n");
    ++g_failures;
  }
  Ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

  // Nothing moved.
  size_t verified = Verify(a, big, 1, "a") + Verify(b, big, 2, "b") + Verify(s1, small, 3, "s1") +
                    Verify(s2, small, 4, "s2");

  // After a free: a freed small block, and a freed 3 MiB allocation (kept mapped for reuse).
  Ok(cudaFree(s1), "cudaFree (s1)");
  Rejected(cudaMemset(s1, 0, 512), "cudaMemset of a freed small block");
  Ok(cudaFree(a), "cudaFree (a)");
  Rejected(cudaMemset(a, 0, kMiB), "cudaMemset of a freed allocation");
  Rejected(cudaMemcpy(a, host.data(), kMiB, cudaMemcpyHostToDevice), "cudaMemcpy to freed");
  // New allocations of the same sizes (which may reuse those ranges) start clean and work.
  void *c = nullptr, *s3 = nullptr;
  if (Ok(cudaMalloc(&c, big), "cudaMalloc (c)") && Ok(cudaMalloc(&s3, small), "cudaMalloc (s3)")) {
    Put(c, big, 5);
    Put(s3, small, 6);
    verified += Verify(c, big, 5, "c") + Verify(s3, small, 6, "s3");
  }
  verified += Verify(b, big, 2, "b") + Verify(s2, small, 4, "s2");
  Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  for (void* p : {b, c, s2, s3}) Ok(cudaFree(p), "cudaFree");
  Ok(cudaStreamDestroy(stream), "cudaStreamDestroy");
  if (g_failures > 0) return 1;
  std::printf("data_probe bounds ok rejected %d verified %zu bytes\n", g_rejected, verified);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "host_full" && argc == 4) {
    const int buffers = std::atoi(argv[2]);
    const size_t bytes = static_cast<size_t>(std::atoi(argv[3])) * kMiB;
    if (buffers >= 3 && bytes > 0) return HostFull(buffers, bytes);
  }
  if (mode == "bounds" && argc == 2) return Bounds();
  std::fprintf(stderr, "usage: data_probe host_full BUFFERS MIB | bounds\n");
  return 2;
}
