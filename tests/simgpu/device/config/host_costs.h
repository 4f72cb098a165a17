// host_costs.h: what each API call costs the calling host thread, per preset
// (SIMGPU_HOST_COSTS; Note [Host clocks] in time/host_clocks.h).
//
// A call is charged where it reaches the device model (one Device method per call), so a runtime
// call that simgpu's libcudart makes through the driver is charged once, as the driver call it
// becomes, and a cuDNN or cuBLAS call is charged one launch per op it runs. Calls that reach no
// device state (attributes, descriptors, error strings) cost nothing: well under a microsecond on
// a GPU's host.
//
// Thread safety: the tables are constant.
#ifndef SIMGPU_DEVICE_HOST_COSTS_H_
#define SIMGPU_DEVICE_HOST_COSTS_H_

#include <cstdint>
#include <string_view>

namespace simgpu {

enum class HostCall {
  kLaunch,          // a kernel, or one op of a cuDNN/cuBLAS/cuBLASLt call
  kMalloc,          // cudaMalloc, cuMemAlloc
  kFree,            // cudaFree, cuMemFree (the wait for the device is on top)
  kMallocAsync,     // cudaMallocAsync, cuMemAllocAsync (from the stream-ordered pool)
  kFreeAsync,       // cudaFreeAsync, cuMemFreeAsync
  kHostAlloc,       // pinned host memory, per call (plus per_pinned_gib_us per GiB)
  kHostFree,        // cudaFreeHost, cuMemFreeHost
  kMemCreate,       // cuMemCreate
  kMemRelease,      // cuMemRelease
  kAddressReserve,  // cuMemAddressReserve
  kAddressFree,     // cuMemAddressFree
  kMemMap,          // cuMemMap
  kMemUnmap,        // cuMemUnmap
  kMemSetAccess,    // cuMemSetAccess
  kCopyAsync,       // cudaMemcpyAsync and the like (the transfer is the copy engine's)
  kCopySync,        // cudaMemcpy and the like (the wait for the transfer is on top)
  kMemsetAsync,     // cudaMemsetAsync, cuMemsetD*Async
  kMemsetSync,      // cudaMemset, cuMemsetD*
  kStreamCreate,    // cudaStreamCreate*, cuStreamCreate*
  kStreamDestroy,   // cudaStreamDestroy, cuStreamDestroy
  kEventCreate,     // cudaEventCreate*, cuEventCreate
  kEventDestroy,    // cudaEventDestroy, cuEventDestroy
  kEventRecord,     // cudaEventRecord, cuEventRecord
  kStreamWait,      // cudaStreamWaitEvent, cuStreamWaitEvent
  kSynchronize,     // stream, event and device synchronisation (the wait is on top)
  kQuery,           // stream and event queries, cudaEventElapsedTime, cudaMemGetInfo
  kCount,
};

struct HostCosts {
  double us[static_cast<int>(HostCall::kCount)] = {};  // microseconds per call
  double pinned_us_per_gib = 0;  // pinned host allocation, per GiB on top of the call
};

// The host costs of the preset called `preset`; all zero for an unknown name.
HostCosts HostCostsOf(std::string_view preset);

// The call's name in traces and messages ("cuMemMap").
const char* HostCallName(HostCall call);

}  // namespace simgpu

#endif  // SIMGPU_DEVICE_HOST_COSTS_H_
