// fault_probe MODE BUFFERS MIB EXPECT: what a program sees when pooch meets a device fault
// (SIMGPU_FAIL) or a request it cannot satisfy, and whether data it had swapped out survives.
//
// It allocates BUFFERS device buffers of MIB MiB with cudaMalloc and fills each from the host
// with its own position-dependent pattern; under a POOCH_MEMORY_LIMIT that holds only a few of
// them, the earlier ones are swapped out while later ones are filled. Then comes the fault step:
//   op     cudaMemcpy device-to-device from the last buffer (resident) into buffer 0 (swapped
//          out): buffer 0 must be swapped in while the last one is pinned, so the only buffer pooch
//          can evict for it is the second-to-last one (a single pinned-host allocation, then one
//          cuMemCreate for the swap-in). Buffer 0 is written: a copy that only read it could read
//          its host copy instead (Note [Reading the host copy] in core/residency/residency.cc).
//   alloc  cudaMalloc of one more buffer of MIB MiB (evicts the least recently used buffer, then
//          cuMemCreate for the new chunk).
//   big    cudaMalloc of BIG_MIB (a fifth argument) MiB, meant to exceed the limit.
// The step must return EXPECT ("oom": cudaErrorMemoryAllocation, "ok": cudaSuccess). Then every
// buffer is read back (which swaps it in as needed) and checked byte by byte; in op mode the
// copy is retried and must then succeed, in alloc mode the allocation is retried (or, if it
// succeeded, the new buffer is filled and checked too), so the program can carry on.
// Prints one "fault_probe ..." result line; exits 0 only if every check held.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_failures = 0;

void Fail(const char* what, cudaError_t e) {
  std::fprintf(stderr, "fault_probe: %s: %s (%d)\n", what, cudaGetErrorName(e),
               static_cast<int>(e));
  ++g_failures;
}

// Position-dependent, so that data put back at the wrong offset or in the wrong buffer shows.
unsigned char Pattern(int buffer, size_t i) {
  return static_cast<unsigned char>(buffer * 131 + i * 7 + (i >> 12));
}

void Fill(std::vector<unsigned char>& host, int buffer) {
  for (size_t i = 0; i < host.size(); ++i) host[i] = Pattern(buffer, i);
}

// Reads `dev` back and compares every byte with `want`'s pattern; returns the bytes verified.
size_t Verify(void* dev, size_t bytes, int want, const char* what, int index) {
  std::vector<unsigned char> back(bytes);
  if (cudaError_t e = cudaMemcpy(back.data(), dev, bytes, cudaMemcpyDeviceToHost);
      e != cudaSuccess) {
    Fail("cudaMemcpy D2H (read back)", e);
    return 0;
  }
  for (size_t i = 0; i < bytes; ++i) {
    if (back[i] != Pattern(want, i)) {
      std::fprintf(stderr, "fault_probe: %s %d: byte %zu is %d, want %d\n", what, index, i, back[i],
                   Pattern(want, i));
      ++g_failures;
      return 0;
    }
  }
  return bytes;
}

// Allocates each of `dev` (host.size() bytes) and fills it with its pattern through `host`.
bool AllocateAndFill(std::vector<void*>& dev, std::vector<unsigned char>& host) {
  const size_t bytes = host.size();
  for (int b = 0; b < static_cast<int>(dev.size()); ++b) {
    if (cudaError_t e = cudaMalloc(&dev[b], bytes); e != cudaSuccess) {
      Fail("cudaMalloc (fill)", e);
      return false;
    }
    Fill(host, b);
    if (cudaError_t e = cudaMemcpy(dev[b], host.data(), bytes, cudaMemcpyHostToDevice);
        e != cudaSuccess) {
      Fail("cudaMemcpy H2D (fill)", e);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: fault_probe op|alloc|big BUFFERS MIB oom|ok [BIG_MIB]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int buffers = std::atoi(argv[2]);
  const size_t bytes = static_cast<size_t>(std::atoi(argv[3])) << 20;
  const cudaError_t expect =
      std::strcmp(argv[4], "oom") == 0 ? cudaErrorMemoryAllocation : cudaSuccess;
  const size_t big = argc > 5 ? static_cast<size_t>(std::atoi(argv[5])) << 20 : 0;
  if (buffers < 2 || bytes == 0 || (mode == "big" && big == 0) ||
      (mode != "op" && mode != "alloc" && mode != "big")) {
    std::fprintf(stderr, "fault_probe: bad arguments\n");
    return 2;
  }

  std::vector<void*> dev(buffers, nullptr);
  std::vector<unsigned char> host(bytes);
  if (!AllocateAndFill(dev, host)) return 1;
  // Let every copy and swap finish, so that what the fault step meets does not depend on timing.
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) Fail("cudaDeviceSynchronize", e);

  const int last = buffers - 1;
  void* extra = nullptr;
  cudaError_t got = cudaSuccess;
  if (mode == "op") {
    got = cudaMemcpy(dev[0], dev[last], bytes, cudaMemcpyDeviceToDevice);
  } else if (mode == "alloc") {
    got = cudaMalloc(&extra, bytes);
  } else {
    got = cudaMalloc(&extra, big);
  }
  if (got != expect) {
    std::fprintf(stderr, "fault_probe: %s step returned %s (%d), want %s (%d)\n", mode.c_str(),
                 cudaGetErrorName(got), static_cast<int>(got), cudaGetErrorName(expect),
                 static_cast<int>(expect));
    ++g_failures;
  }
  if (got != cudaSuccess && extra != nullptr) {
    std::fprintf(stderr, "fault_probe: a failed cudaMalloc set the pointer\n");
    ++g_failures;
    extra = nullptr;
  }
  // The error must not stick: the runtime's last error is cleared and later calls work.
  cudaGetLastError();

  // Every buffer, last first (it is resident; the early ones come back from the host). In op mode
  // a successful copy has made buffer 0 a copy of the last buffer.
  size_t verified = 0;
  for (int b = last; b >= 0; --b) {
    const int want = (mode == "op" && got == cudaSuccess && b == 0) ? last : b;
    verified += Verify(dev[b], bytes, want, "buffer", b);
  }

  // The program carries on: the failed step, retried, succeeds now that no fault is injected.
  std::string retry = "none";
  if (mode == "op" && got != cudaSuccess) {
    cudaError_t e = cudaMemcpy(dev[0], dev[last], bytes, cudaMemcpyDeviceToDevice);
    retry = e == cudaSuccess ? "ok" : cudaGetErrorName(e);
    if (e != cudaSuccess) Fail("cudaMemcpy D2D (retry)", e);
    verified += Verify(dev[0], bytes, last, "copied buffer", 0);
    verified += Verify(dev[last], bytes, last, "buffer", last);
  } else if (mode == "alloc") {
    if (extra == nullptr) {
      cudaError_t e = cudaMalloc(&extra, bytes);
      retry = e == cudaSuccess ? "ok" : cudaGetErrorName(e);
      if (e != cudaSuccess) Fail("cudaMalloc (retry)", e);
    }
    if (extra != nullptr) {
      Fill(host, buffers);
      if (cudaError_t e = cudaMemcpy(extra, host.data(), bytes, cudaMemcpyHostToDevice);
          e != cudaSuccess) {
        Fail("cudaMemcpy H2D (extra)", e);
      }
      verified += Verify(extra, bytes, buffers, "extra buffer", buffers);
      for (int b = 0; b < buffers; ++b) verified += Verify(dev[b], bytes, b, "buffer", b);
    }
  }

  // Let the last swap-ins complete before their buffers are freed, so that pooch observes
  // their end (the trace test compares the swaps in the trace with the summary's counts).
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) Fail("cudaDeviceSynchronize", e);
  if (extra != nullptr) {
    if (cudaError_t e = cudaFree(extra); e != cudaSuccess) Fail("cudaFree (extra)", e);
  }
  for (void* p : dev) {
    if (cudaError_t e = cudaFree(p); e != cudaSuccess) Fail("cudaFree", e);
  }
  std::printf("fault_probe %s: step %s (%d) verified %zu bytes retry %s failures %d\n",
              mode.c_str(), cudaGetErrorName(got), static_cast<int>(got), verified, retry.c_str(),
              g_failures);
  return g_failures == 0 ? 0 : 1;
}
