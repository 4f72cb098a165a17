// nccl_probe: NCCL calls on buffers pooch swapped out (Note [Collectives as accesses] in
// interpose/hooks/nccl/nccl_ranges.h), over fake_nccl.cc's one-rank libnccl.so.2, which copies
// through its own handle on the driver as the real NCCL does, so pooch sees only the calls.
// Buffers of 4 MiB of floats; the driver sets POOCH_POLICY=demand and a POOCH_MEMORY_LIMIT of
// 12 MiB (three buffers), and simgpu's hazard checker at error.
//
//   1. Fills a, b, c and d: a is swapped out (four buffers do not fit).
//   2. ncclAllReduce(a -> b) on a stream of its own: a must be resident when the call is made
//      (without the hooks the fake's copy reads unmapped memory: an illegal address).
//   3. Without waiting for the stream, refills c and d, which swaps a and b out again: their
//      swap-outs must wait for the collective's copy in stream order (an unmap under a running
//      copy is a hazard, and a copy to the host made before it would lose b's new bytes, which
//      are read back then).
//   4. A group: ncclSend(a) and ncclRecv(d) to itself, then b and c refilled inside the group,
//      which swaps a out before ncclGroupEnd issues the copy: a must be resident again then
//      (Note [Collectives in a group]).
//   5. ncclAllGather(c -> c) in place and ncclBroadcast(b -> b): a buffer both read and written.
// Then every buffer reads back: a 0, b 0 (the all-reduce's result), c 2, d 0 (the receive).
// Prints "nccl_probe ok" when every check held (exit 0), else what failed (exit 1).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <vector>

#include "interpose/symbols/nccl_api.h"

extern "C" ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
extern "C" ncclResult_t ncclCommDestroy(ncclComm_t comm);

namespace {

constexpr size_t kFloats = size_t{1} << 20;  // 4 MiB
int g_failures = 0;

bool Ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("nccl_probe: %s: %s\n", what, cudaGetErrorName(e));
  ++g_failures;
  return false;
}

bool Ok(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return true;
  std::printf("nccl_probe: %s: NCCL error %d\n", what, static_cast<int>(r));
  ++g_failures;
  return false;
}

float Value(int pattern, size_t i) { return static_cast<float>((i * 7 + pattern * 13) % 3) - 1; }

void Fill(float* d, int pattern) {
  std::vector<float> h(kFloats);
  for (size_t i = 0; i < kFloats; ++i) h[i] = Value(pattern, i);
  Ok(cudaMemcpy(d, h.data(), kFloats * sizeof(float), cudaMemcpyHostToDevice), "fill");
}

float* Filled(int pattern) {
  float* d = nullptr;
  if (!Ok(cudaMalloc(reinterpret_cast<void**>(&d), kFloats * sizeof(float)), "cudaMalloc")) {
    return nullptr;
  }
  Fill(d, pattern);
  return d;
}

void Expect(const float* d, int pattern, const char* what) {
  std::vector<float> h(kFloats);
  if (!Ok(cudaMemcpy(h.data(), d, kFloats * sizeof(float), cudaMemcpyDeviceToHost), what)) return;
  for (size_t i = 0; i < kFloats; ++i) {
    if (h[i] != Value(pattern, i)) {
      std::printf("nccl_probe: %s: element %zu is %g, want %g\n", what, i, h[i], Value(pattern, i));
      ++g_failures;
      return;
    }
  }
}

}  // namespace

int main() {
  const int device = 0;
  ncclComm_t comm = nullptr;
  if (!Ok(cudaSetDevice(device), "cudaSetDevice") ||
      !Ok(ncclCommInitAll(&comm, 1, &device), "ncclCommInitAll")) {
    return 1;
  }
  cudaStream_t stream = nullptr;
  if (!Ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate")) return 1;
  float* a = Filled(0);
  float* b = Filled(1);
  float* c = Filled(2);
  float* d = Filled(3);  // a is swapped out
  if (a == nullptr || b == nullptr || c == nullptr || d == nullptr) return 1;

  Ok(ncclAllReduce(a, b, kFloats, ncclFloat32, ncclSum, comm, stream), "ncclAllReduce");
  Fill(c, 2);  // a and b go out behind the all-reduce
  Fill(d, 3);
  Ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  Expect(b, 0, "b, the all-reduce's result");  // what went out is what the all-reduce wrote

  Ok(ncclGroupStart(), "ncclGroupStart");
  Ok(ncclSend(a, kFloats, ncclFloat32, 0, comm, stream), "ncclSend");
  Ok(ncclRecv(d, kFloats, ncclFloat32, 0, comm, stream), "ncclRecv");
  Fill(b, 0);  // a goes out before the group's copy is issued
  Fill(c, 2);
  Ok(ncclGroupEnd(), "ncclGroupEnd");

  Ok(ncclAllGather(c, c, kFloats, ncclFloat32, comm, stream), "ncclAllGather in place");
  Ok(ncclBroadcast(b, b, kFloats, ncclFloat32, 0, comm, stream), "ncclBroadcast in place");
  Ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

  Expect(a, 0, "a");
  Expect(b, 0, "b");
  Expect(c, 2, "c");
  Expect(d, 0, "d");
  Ok(ncclCommDestroy(comm), "ncclCommDestroy");
  if (g_failures == 0) std::printf("nccl_probe ok\n");
  return g_failures == 0 ? 0 : 1;
}
