// threads_probe [THREADS] [ROUNDS] [d2d]: threads that each keep several 4 MiB buffers with known
// contents on the device, on their own stream, and read them back in a different order than
// they wrote them. Under `POOCH_POLICY=demand POOCH_MEMORY_LIMIT=...` smaller than what the
// threads hold, the buffers are swapped out and in behind the program's back, concurrently;
// every byte must come back. Prints "threads ok" or what differed.
// With d2d, each round also copies buffer b-1 into buffer b on the device (an op touching 8 MiB,
// the largest any thread makes) before reading back, and makes no small allocation: run under a
// limit of 8 MiB, every op fits alone and the threads must wait for one another, never fail
// (issue 13, point 1; Note [Waiting for pins] in core/residency/residency.cc).
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kBytes = 4 << 20;
constexpr int kBuffers = 4;
std::atomic<int> g_failures{0};

void Fail(int t, const char* what, cudaError_t e) {
  std::fprintf(stderr, "thread %d: %s: %s\n", t, what, cudaGetErrorString(e));
  g_failures.fetch_add(1);
}

void Work(int t, int rounds, bool d2d) {
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return Fail(t, "cudaStreamCreateWithFlags", e);
  }
  std::vector<unsigned char> host(kBytes), back(kBytes);
  for (int r = 0; r < rounds; ++r) {
    void* dev[kBuffers] = {};
    void* small = nullptr;
    for (int b = 0; b < kBuffers; ++b) {
      if (cudaError_t e = cudaMalloc(&dev[b], kBytes); e != cudaSuccess)
        return Fail(t, "cudaMalloc", e);
      std::memset(host.data(), (t * 31 + r * 7 + b) & 0xff, kBytes);
      if (cudaError_t e =
              cudaMemcpyAsync(dev[b], host.data(), kBytes, cudaMemcpyHostToDevice, stream);
          e != cudaSuccess) {
        return Fail(t, "cudaMemcpyAsync H2D", e);
      }
      if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess)
        return Fail(t, "sync", e);
    }
    if (d2d) {
      for (int b = 1; b < kBuffers; ++b) {
        if (cudaError_t e =
                cudaMemcpyAsync(dev[b], dev[b - 1], kBytes, cudaMemcpyDeviceToDevice, stream);
            e != cudaSuccess) {
          return Fail(t, "cudaMemcpyAsync D2D", e);
        }
      }
    } else {
      if (cudaError_t e = cudaMalloc(&small, 4096); e != cudaSuccess)
        return Fail(t, "small cudaMalloc", e);
      if (cudaError_t e = cudaMemsetAsync(small, 1, 4096, stream); e != cudaSuccess) {
        return Fail(t, "cudaMemsetAsync", e);
      }
    }
    for (int b = kBuffers - 1; b >= 0; --b) {
      if (cudaError_t e =
              cudaMemcpyAsync(back.data(), dev[b], kBytes, cudaMemcpyDeviceToHost, stream);
          e != cudaSuccess) {
        return Fail(t, "cudaMemcpyAsync D2H", e);
      }
      if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess)
        return Fail(t, "sync", e);
      const unsigned char want = (t * 31 + r * 7 + (d2d ? 0 : b)) & 0xff;
      for (size_t i = 0; i < kBytes; i += 4093) {
        if (back[i] != want) {
          std::fprintf(stderr, "thread %d round %d buffer %d: byte %zu is %d, want %d\n", t, r, b,
                       i, back[i], want);
          g_failures.fetch_add(1);
          break;
        }
      }
    }
    for (void* p : dev) cudaFree(p);
    if (small != nullptr) cudaFree(small);
  }
  cudaStreamDestroy(stream);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  const bool d2d = argc > 3 && std::strcmp(argv[3], "d2d") == 0;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(Work, t, rounds, d2d);
  for (std::thread& th : pool) th.join();
  if (g_failures.load() != 0) return 1;
  std::printf("threads ok\n");
  return 0;
}
