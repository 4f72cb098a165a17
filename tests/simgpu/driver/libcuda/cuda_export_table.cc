// libcuda.so.1: cuGetExportTable, the undocumented entry point through which NVIDIA's own
// libraries (NVRTC, the static runtime) ask the driver for private function tables by UUID.
// simgpu has none of those tables. NVRTC dlopen()s libcuda.so.1 and calls this without checking
// that dlsym found it, so a missing symbol crashed every NVRTC compilation (torch's jiterator)
// under LD_LIBRARY_PATH=build/lib/simgpu; answering "not supported" lets NVRTC go on without.
#include "tests/simgpu/driver/libcuda/driver_common.h"

SIMGPU_EXPORT CUresult cuGetExportTable(const void** table, const CUuuid* id) {
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *table = nullptr;
  simgpu::driver::Unsupported("cuGetExportTable", "a private export table");
  return CUDA_ERROR_NOT_SUPPORTED;
}
