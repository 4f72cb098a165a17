// Kernel ops: device code from fat binaries, which simgpu times but never runs.
//
// Note [Kernel ops]: a kernel is opaque to simgpu; all it knows is the kernel's parameter
// buffer, laid out from the cubin's parameter info (driver/cubin.h). Each 8-byte word at an
// 8-byte aligned offset of the buffer that points into a live allocation is taken as the kernel
// reading and writing that whole allocation: the mapping checker sees the use, the hazard
// checker records a write, and the roofline counts the allocation's bytes once per launch, at
// zero flops (memory-bound: elementwise and reduction kernels, which are most of a framework's
// kernels; GEMMs and convolutions go through cuBLAS and cuDNN, which count flops).
// Limits of the estimate:
//   - it is only as good as the allocations are tight. PyTorch's caching allocator carves
//     tensors out of segments it got from cudaMalloc (2 MiB and up), so a kernel on a small
//     tensor is charged its whole segment: time is over-estimated unless the caching is off
//     (PYTORCH_NO_CUDA_MEMORY_CACHING=1) or the cudaMallocAsync backend is used
//     (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync), where each tensor is an allocation;
//   - pointers held in device memory (pointer arrays, as in torch's foreach kernels) are not
//     followed: only the parameter buffer is scanned;
//   - a word equal to an allocation's end (a one-past-the-end pointer) is not a use.
// A word that points at memory the program had and lost, a freed cudaMalloc block not handed
// out again or the unmapped bytes of one of its VMM reservations (where pooch keeps a swapped
// tensor's address), is the dangling pointer a GPU would fault on: the sticky illegal address.
// Any other word that falls in the device range but on nothing is taken for data, not a
// pointer: parameter structs carry sizes, strides, flags and padding whose bytes can look like
// addresses (PyTorch's reduction kernels do), and a GPU does not fault on what it never
// dereferences. What remains possible is a stale copy of a freed pointer in a struct's padding
// being reported as a use; none has been seen.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <vector>

#include "tests/simgpu/device/device.h"

namespace simgpu {

Err Device::LaunchKernel(const char* op, void* stream, const uint64_t* words, size_t n) {
  if (n > 0 && words == nullptr) return Err::kInvalidValue;
  std::lock_guard<std::mutex> lock(mu_);
  if (sticky_ != Err::kOk) return sticky_;
  StreamClock* s = ResolveStreamLocked(stream);
  if (s == nullptr) return Err::kInvalidHandle;
  std::map<uint64_t, uint64_t> allocs;  // base -> bytes, each allocation once
  for (size_t i = 0; i < n; ++i) {
    uint64_t w = words[i];
    if (!InDeviceRange(w, 1)) continue;
    PtrInfo info = ClassifyLocked(w);
    if (info.kind == PtrKind::kDevice) {
      allocs.emplace(info.base, info.bytes);
      continue;
    }
    if (w > 0 && ClassifyLocked(w - 1).kind == PtrKind::kDevice) continue;  // one past the end
    if (!DanglingLocked(w)) continue;  // data that looks like an address
    // Reports the word as the address the kernel touches, and sets the sticky error.
    return CheckAccessLocked(op, w, 1, false);
  }
  std::vector<Access> accesses;
  accesses.reserve(allocs.size());
  double bytes = 0;
  for (const auto& [base, size] : allocs) {
    accesses.push_back(Access{reinterpret_cast<const void*>(base), size, true});
    bytes += static_cast<double>(size);
  }
  return IssueLocked(op, s, accesses.data(), accesses.size(), Engine::kCompute, ComputeNs(0, bytes),
                     false);
}

}  // namespace simgpu
