#include "device_memory.h"

#include <algorithm>
#include <string>

#include "checks.h"

namespace cnn_train {

void* DeviceMemory::Allocate(size_t bytes, std::string_view what) {
  void* pointer = nullptr;
  const cudaError_t error = cudaMalloc(&pointer, bytes);
  if (error == cudaErrorMemoryAllocation) {
    Fail(kExitOutOfMemory, "out of memory allocating %.*s (%zu bytes)",
         static_cast<int>(what.size()), what.data(), bytes);
  }
  if (error != cudaSuccess) FailCuda("cudaMalloc", error);
  sizes_.emplace(pointer, bytes);
  live_bytes_ += bytes;
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  return pointer;
}

void DeviceMemory::Free(void* pointer) {
  if (pointer == nullptr) return;
  auto it = sizes_.find(pointer);
  if (it == sizes_.end()) {
    Fail(kExitApiError, "internal error: cudaFree of an unknown pointer %p", pointer);
  }
  live_bytes_ -= it->second;
  sizes_.erase(it);
  CUDA_CHECK(cudaFree(pointer));
}

}  // namespace cnn_train
