// libcudart.so.13: what the runtime says about streams beyond their work: capture status (no
// stream is ever capturing: graphs are not supported, and cudaStreamBeginCapture says so), the
// thread's capture mode, and each stream's priority as created (clamped to the range
// cudaDeviceGetStreamPriorityRange reports; the device model itself ignores priorities).
#include <map>
#include <mutex>

#include "tests/simgpu/driver/libcudart/runtime_driver.h"

using simgpu::runtime::Record;

namespace simgpu::runtime {
namespace {

// Must match cudaDeviceGetStreamPriorityRange (runtime_device.cc).
constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -5;

std::mutex priority_mu;
std::map<cudaStream_t, int>& Priorities() {
  static auto* p = new std::map<cudaStream_t, int>;  // never destroyed: used until exit
  return *p;
}

thread_local cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;

}  // namespace

void RememberPriority(cudaStream_t stream, int priority) {
  priority = priority > kLeastPriority ? kLeastPriority : priority;
  priority = priority < kGreatestPriority ? kGreatestPriority : priority;
  std::lock_guard<std::mutex> lock(priority_mu);
  Priorities()[stream] = priority;
}

void ForgetStream(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(priority_mu);
  Priorities().erase(stream);
}

}  // namespace simgpu::runtime

SIMGPU_RT_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority) {
  if (priority == nullptr) return Record(cudaErrorInvalidValue);
  SIMGPU_RT_ENTER();
  // An unknown handle is the driver's to reject; the query costs no device time.
  if (stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread) {
    if (cudaError_t e = Record(drv->cuStreamQuery(stream));
        e != cudaSuccess && e != cudaErrorNotReady) {
      return e;
    }
  }
  std::lock_guard<std::mutex> lock(simgpu::runtime::priority_mu);
  const auto& map = simgpu::runtime::Priorities();
  const auto it = map.find(stream);
  *priority = it == map.end() ? simgpu::runtime::kLeastPriority : it->second;
  return cudaSuccess;
}

SIMGPU_RT_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                                   cudaStreamCaptureStatus* status) {
  if (status == nullptr) return Record(cudaErrorInvalidValue);
  *status = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

SIMGPU_RT_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                                      cudaStreamCaptureStatus* status,
                                                      unsigned long long* id, cudaGraph_t* graph,
                                                      const cudaGraphNode_t** dependencies,
                                                      const cudaGraphEdgeData** edge_data,
                                                      size_t* num_dependencies) {
  if (status == nullptr) return Record(cudaErrorInvalidValue);
  // Not capturing: the other outputs are not written, as documented for that status.
  *status = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

SIMGPU_RT_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return Record(cudaErrorInvalidValue);
  if (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
      *mode != cudaStreamCaptureModeRelaxed) {
    return Record(cudaErrorInvalidValue);
  }
  const cudaStreamCaptureMode old = simgpu::runtime::capture_mode;
  simgpu::runtime::capture_mode = *mode;
  *mode = old;
  return cudaSuccess;
}
