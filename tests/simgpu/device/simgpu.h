// simgpu.h: the device model's launch API, for the simgpu libraries that run device work
// (libcudnn.so.9, libcublas.so.13) and for libcuda.so.1 itself.
//
// There is exactly one simulated device per process. Its state lives in libsimgpu_device.so,
// which libcuda.so.1, libcudart.so.13, libcudnn.so.9 and libcublas.so.13 all link (CMake target
// `simgpu_device`). Device addresses are host addresses inside a reserved range, so an op's
// `body` dereferences device pointers directly.
//
// Thread safety: every function here may be called from any thread. Device state is guarded by
// one mutex; `body` runs on the calling thread with that mutex released.
//
// Example (a cuDNN-style op that reads x and writes y):
//   simgpu::Access acc[] = {{x, n * 4, false}, {y, n * 4, true}};
//   simgpu::Err e = simgpu::Launch("cudnnActivationForward", stream, acc, 2,
//                                  /*flops=*/n, /*bytes=*/2.0 * n * 4, [&] { Relu(x, y, n); });
//   if (e != simgpu::Err::kOk) return CUDNN_STATUS_EXECUTION_FAILED;
#ifndef SIMGPU_DEVICE_SIMGPU_H_
#define SIMGPU_DEVICE_SIMGPU_H_

#include <cstddef>
#include <functional>

namespace simgpu {

// The device's outcomes. Each API library maps them to its own codes in one place.
enum class Err {
  kOk,
  kInvalidValue,    // a bad argument (null pointer, zero size where not allowed, bad kind)
  kOutOfMemory,     // capacity exhausted, or SIMGPU_FAIL fired
  kIllegalAddress,  // an op touched a byte that is not mapped, not accessible, or freed (sticky)
  kNotSupported,    // a flag, kind or mode simgpu does not implement (one stderr line printed)
  kHazard,          // a race in virtual time (see SIMGPU_HAZARDS); sticky like kIllegalAddress
  kInvalidHandle,   // an unknown stream, event or physical-memory handle
  kNotReady,        // a query whose work has not finished in virtual time
  kNotInitialized,  // reserved for callers that model initialisation
  kConfig,          // a SIMGPU_* variable is invalid (one stderr line printed)
};

// One device address range an op reads or writes.
struct Access {
  const void* ptr;
  size_t bytes;
  bool write;
};

// Runs a device op on `stream` (a CUstream / cudaStream_t value; nullptr or CU_STREAM_LEGACY =
// the legacy default stream, CU_STREAM_PER_THREAD = one shared blocking stream).
// Returns the sticky error if one is set. Checks every access lies in mapped, accessible, live
// device memory (else sets the sticky kIllegalAddress and prints one line naming `op` and the
// address), runs the hazard check, advances virtual time by the roofline duration
// max(flops / (tflops * efficiency), bytes / memory bandwidth) plus launch latency on the
// compute engine, and, unless SIMGPU_COMPUTE=timing, runs `body` on the CPU synchronously
// before returning (so ops execute in issue order). `op` must be a string literal or otherwise
// outlive the process (it is kept for hazard messages).
Err Launch(const char* op, void* stream, const Access* accesses, size_t n, double flops,
           double bytes, const std::function<void()>& body);

// False under SIMGPU_COMPUTE=timing: callers must then skip every touch of device or pinned
// memory (Launch already skips `body`).
bool ComputeEnabled();

// kConfig after printing one line (once per process) if a SIMGPU_* variable is invalid.
Err CheckConfig();

// CheckConfig(), and exit(2) if it fails. Every simgpu API entry point calls this first.
void CheckConfigOrExit();

// How many CPU threads math may use: 2 unless SIMGPU_THREADS says otherwise.
int Threads();

// The sticky error (kIllegalAddress or kHazard) if one is set, else kOk.
Err StickyError();

}  // namespace simgpu

#endif  // SIMGPU_DEVICE_SIMGPU_H_
