// soak SECONDS THREADS SEED: random CUDA programs for a soak run under pooch (scripts/soak.sh).
// Each thread keeps up to kLive buffers of random sizes (small blocks and swappable ones) with a
// shadow copy on the host, and for SECONDS does random operations on two streams of its own
// (switching streams through an event, as a program must): allocate (filled from the shadow),
// free, memset a region, copy between two of its buffers on the device, and read a region back
// and compare it with the shadow. At the end every live buffer is read back whole. Under a tight
// POOCH_MEMORY_LIMIT the buffers are swapped behind its back all along; every byte read must be
// the shadow's. Prints "soak: ops N reads N bytes_checked N mismatches N errors N".
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

constexpr int kLive = 12;

std::atomic<int64_t> g_ops{0}, g_reads{0}, g_checked{0}, g_mismatches{0}, g_errors{0};

bool Ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "soak: %s: %s\n", what, cudaGetErrorString(e));
  ++g_errors;
  return false;
}

struct Buffer {
  unsigned char* dev = nullptr;
  std::vector<unsigned char> shadow;
};

class Thread {
 public:
  explicit Thread(uint64_t seed) : rng_(seed) {}

  void Run(double seconds) {
    if (!Ok(cudaStreamCreateWithFlags(&streams_[0], cudaStreamNonBlocking), "stream") ||
        !Ok(cudaStreamCreateWithFlags(&streams_[1], cudaStreamNonBlocking), "stream") ||
        !Ok(cudaEventCreateWithFlags(&switch_, cudaEventDisableTiming), "event")) {
      return;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end && g_errors.load() == 0) {
      Step();
      ++g_ops;
    }
    for (Buffer& b : live_) Read(b, 0, b.shadow.size());
    for (Buffer& b : live_) Ok(cudaFree(b.dev), "cudaFree");
    Ok(cudaStreamSynchronize(streams_[current_]), "sync");
  }

 private:
  size_t Pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  // Ops go to one of two streams; a switch orders the new stream after the old one.
  cudaStream_t Stream() {
    if (Pick(8) == 0) {
      const int next = 1 - current_;
      Ok(cudaEventRecord(switch_, streams_[current_]), "cudaEventRecord");
      Ok(cudaStreamWaitEvent(streams_[next], switch_, 0), "cudaStreamWaitEvent");
      current_ = next;
    }
    return streams_[current_];
  }

  void Step() {
    const size_t what = Pick(10);
    if (live_.size() < 2 || (what == 0 && live_.size() < kLive)) return Allocate();
    if (what == 1 && live_.size() > 2) return Free();
    Buffer& a = live_[Pick(live_.size())];
    const size_t offset = Pick(a.shadow.size());
    const size_t bytes = 1 + Pick(a.shadow.size() - offset);
    if (what <= 4) {  // memset
      const int value = static_cast<int>(Pick(256));
      if (Ok(cudaMemsetAsync(a.dev + offset, value, bytes, Stream()), "cudaMemsetAsync")) {
        std::memset(a.shadow.data() + offset, value, bytes);
      }
    } else if (what <= 6) {  // device-to-device copy between two buffers
      Buffer& b = live_[Pick(live_.size())];
      if (&a == &b) return;
      const size_t n = std::min(bytes, b.shadow.size());
      const size_t to = Pick(b.shadow.size() - n + 1);
      if (Ok(cudaMemcpyAsync(b.dev + to, a.dev + offset, n, cudaMemcpyDeviceToDevice, Stream()),
             "cudaMemcpyAsync D2D")) {
        std::memcpy(b.shadow.data() + to, a.shadow.data() + offset, n);
      }
    } else {
      Read(a, offset, bytes);
    }
  }

  void Allocate() {
    // A quarter small blocks (below POOCH_MIN_SWAP_BYTES' default 1 MiB), the rest up to 6 MiB.
    const size_t bytes = Pick(4) == 0 ? 1 + Pick(256 << 10) : (1 << 20) + Pick(5 << 20);
    Buffer b;
    if (!Ok(cudaMalloc(reinterpret_cast<void**>(&b.dev), bytes), "cudaMalloc")) return;
    b.shadow.resize(bytes);
    for (unsigned char& c : b.shadow) c = static_cast<unsigned char>(rng_());
    if (Ok(cudaMemcpyAsync(b.dev, b.shadow.data(), bytes, cudaMemcpyHostToDevice, Stream()),
           "cudaMemcpyAsync H2D") &&
        Ok(cudaStreamSynchronize(streams_[current_]), "sync")) {  // the source is pageable
      live_.push_back(std::move(b));
    }
  }

  void Free() {
    const size_t i = Pick(live_.size());
    Ok(cudaFree(live_[i].dev), "cudaFree");
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  void Read(Buffer& b, size_t offset, size_t bytes) {
    std::vector<unsigned char> back(bytes);
    if (!Ok(cudaMemcpyAsync(back.data(), b.dev + offset, bytes, cudaMemcpyDeviceToHost,
                            Stream()),
            "cudaMemcpyAsync D2H") ||
        !Ok(cudaStreamSynchronize(streams_[current_]), "sync")) {
      return;
    }
    ++g_reads;
    g_checked += static_cast<int64_t>(bytes);
    if (std::memcmp(back.data(), b.shadow.data() + offset, bytes) != 0) {
      ++g_mismatches;
      std::fprintf(stderr, "soak: mismatch reading %zu bytes at offset %zu\n", bytes, offset);
    }
  }

  std::mt19937_64 rng_;
  cudaStream_t streams_[2] = {};
  int current_ = 0;
  cudaEvent_t switch_ = nullptr;
  std::vector<Buffer> live_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: soak SECONDS THREADS SEED\n");
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const int threads = std::atoi(argv[2]);
  const uint64_t seed = std::strtoull(argv[3], nullptr, 10);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([=] { Thread(seed * 1000 + static_cast<uint64_t>(t)).Run(seconds); });
  }
  for (std::thread& th : pool) th.join();
  std::printf("soak: ops %lld reads %lld bytes_checked %lld mismatches %lld errors %lld\n",
              static_cast<long long>(g_ops.load()), static_cast<long long>(g_reads.load()),
              static_cast<long long>(g_checked.load()), static_cast<long long>(g_mismatches.load()),
              static_cast<long long>(g_errors.load()));
  return g_mismatches.load() == 0 && g_errors.load() == 0 ? 0 : 1;
}
