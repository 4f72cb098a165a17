// DeviceMemory: every cudaMalloc and cudaFree of cnn_train goes through here, for two reasons:
// the program reports the peak of the bytes it holds itself (`peak_device_bytes`, which pooch's
// tests compare with what the device saw), and an out-of-memory failure names the allocation
// ("out of memory allocating layer3.2.conv2 output (51380224 bytes)") and exits 3.
//
// Allocations are deliberately one cudaMalloc per tensor, as a framework without a caching
// allocator does (PYTORCH_NO_CUDA_MEMORY_CACHING=1): pooch sees each feature map as one
// allocation. Not thread-safe; cnn_train is single-threaded.
#ifndef POOCH_SAMPLES_CNN_TRAIN_DEVICE_MEMORY_H_
#define POOCH_SAMPLES_CNN_TRAIN_DEVICE_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>

namespace cnn_train {

class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // cudaMalloc of `bytes` (> 0). `what` names the allocation in the out-of-memory message.
  void* Allocate(size_t bytes, std::string_view what);
  float* AllocateFloats(int64_t count, std::string_view what) {
    return static_cast<float*>(Allocate(static_cast<size_t>(count) * sizeof(float), what));
  }

  // cudaFree of a pointer returned by Allocate; nullptr is ignored.
  void Free(void* pointer);

  size_t live_bytes() const { return live_bytes_; }
  size_t peak_bytes() const { return peak_bytes_; }

 private:
  std::unordered_map<void*, size_t> sizes_;
  size_t live_bytes_ = 0;
  size_t peak_bytes_ = 0;
};

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_DEVICE_MEMORY_H_
