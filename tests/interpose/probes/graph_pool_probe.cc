// graph_pool_probe: what pooch answers at a stream capture and for the device's memory pool
// (Note [Graphs] in interpose/hooks/runtime/graph_hooks.cc, Note [Memory pools] in
// interpose/hooks/runtime/mem_pool.h). Under a policy (interpose_graph_pool) it checks that
//   - cudaStreamBeginCapture fails with cudaErrorStreamCaptureUnsupported, which is also the
//     last error, and the stream is not capturing afterwards;
//   - cudaDeviceGetDefaultMemPool returns a pool whose ReservedMemCurrent covers an 8 MiB
//     cudaMallocAsync allocation and whose UsedMemCurrent drops after cudaFreeAsync;
//     ReleaseThreshold reads back what was set; ReservedMemHigh resets to the current bytes
//     when set to 0; cudaMemPoolTrimTo succeeds; the graph memory attributes are 0;
// and prints "graph_pool ok". Any failed check prints "probe: ..." and exits 1.
#include <cstdint>
#include <cstdio>

#include <cuda_runtime_api.h>

namespace {

int failures = 0;

void Expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "probe: %s\n", what);
    ++failures;
  }
}

uint64_t Attr(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  uint64_t v = 0;
  Expect(cudaMemPoolGetAttribute(pool, attr, &v) == cudaSuccess, "cudaMemPoolGetAttribute");
  return v;
}

}  // namespace

int main() {
  constexpr size_t kBytes = size_t{8} << 20;
  cudaStream_t s = nullptr;
  Expect(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "stream");
  Expect(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) ==
             cudaErrorStreamCaptureUnsupported,
         "capture not refused");
  Expect(cudaGetLastError() == cudaErrorStreamCaptureUnsupported, "last error not the refusal");

  cudaMemPool_t pool = nullptr;
  Expect(cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess && pool != nullptr, "default pool");
  const uint64_t reserved0 = Attr(pool, cudaMemPoolAttrReservedMemCurrent);
  void* p = nullptr;
  Expect(cudaMallocAsync(&p, kBytes, s) == cudaSuccess, "cudaMallocAsync");
  const uint64_t reserved1 = Attr(pool, cudaMemPoolAttrReservedMemCurrent);
  const uint64_t used1 = Attr(pool, cudaMemPoolAttrUsedMemCurrent);
  Expect(reserved1 >= reserved0 + kBytes, "ReservedMemCurrent does not cover the allocation");
  Expect(used1 >= kBytes && used1 <= reserved1, "UsedMemCurrent");
  Expect(Attr(pool, cudaMemPoolAttrReservedMemHigh) >= reserved1, "ReservedMemHigh");
  Expect(cudaFreeAsync(p, s) == cudaSuccess, "cudaFreeAsync");
  Expect(cudaStreamSynchronize(s) == cudaSuccess, "sync");
  Expect(Attr(pool, cudaMemPoolAttrUsedMemCurrent) + kBytes <= used1, "UsedMemCurrent after free");
  uint64_t threshold = UINT64_MAX;
  Expect(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold) == cudaSuccess,
         "set ReleaseThreshold");
  Expect(Attr(pool, cudaMemPoolAttrReleaseThreshold) == UINT64_MAX, "ReleaseThreshold read back");
  uint64_t zero = 0;
  Expect(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero) == cudaSuccess,
         "reset ReservedMemHigh");
  Expect(Attr(pool, cudaMemPoolAttrReservedMemHigh) ==
             Attr(pool, cudaMemPoolAttrReservedMemCurrent),
         "ReservedMemHigh not reset to the current bytes");
  Expect(cudaMemPoolTrimTo(pool, 0) == cudaSuccess, "cudaMemPoolTrimTo");
  uint64_t graph = 1;
  Expect(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &graph) == cudaSuccess &&
             graph == 0,
         "graph memory");
  Expect(cudaStreamDestroy(s) == cudaSuccess, "stream destroy");
  if (failures != 0) return 1;
  std::printf("graph_pool ok\n");
  return 0;
}
