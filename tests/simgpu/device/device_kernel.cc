// Kernel ops: device code from fat binaries, which simgpu times but never runs.
//
// Note [Kernel ops]: a kernel is opaque to simgpu; all it knows is the kernel's parameter
// buffer, laid out from the cubin's parameter info (driver/cubin.h). Each 8-byte word at an
// 8-byte aligned offset of the buffer that points into a live allocation is taken as the kernel
// reading and writing that whole allocation: the mapping checker sees the use (a pointer into
// freed or unmapped memory is the sticky illegal address a GPU would fault with), the hazard
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
//   - a word equal to an allocation's end (a one-past-the-end pointer) is not a use. When the
//     allocation's size is a multiple of the page, its end is also the start of the next block
//     of its slab, and a pointer to that block once it is freed is taken for the end pointer
//     (not reported: simgpu prefers missing a fault to inventing one);
//   - a parameter buffer is not all pointers: it holds integers, floats, padding and fields the
//     host never set (torch's ReduceOp leaves dst[1] as stack garbage when a reduction has one
//     output). Such a word can fall in the device's range, which is ordinary host address space
//     (0x7e.. here, next to the host's own mappings). So an address that points at no live
//     memory is an illegal access only where device memory is or was handed out: inside a
//     cudaMalloc slab (a freed block, while its slab lives) or a cuMemAddressReserve range (an
//     unmapped piece, pooch's case). Elsewhere the word is taken for a non-pointer. Freed memory
//     whose whole slab went back is therefore not caught, and a stale pointer to a freed block in
//     a live slab is reported although a GPU kernel that never reads it would not fault; with
//     PyTorch's caching allocator on, freed blocks stay in cached segments, which are live, so
//     stale words only add bytes.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <vector>

#include "tests/simgpu/device/device.h"

namespace simgpu {

namespace {

// True if `addr` lies in one of the ranges of `m` (base -> bytes).
template <typename T>
bool InRange(const std::map<uint64_t, T>& m, uint64_t addr, uint64_t (*bytes)(const T&)) {
  auto it = m.upper_bound(addr);
  if (it == m.begin()) return false;
  --it;
  return addr - it->first < bytes(it->second);
}

}  // namespace

bool Device::HeldLocked(uint64_t addr) const {
  return InRange<Slab>(slabs_, addr, [](const Slab& s) { return s.bytes; }) ||
         InRange<uint64_t>(reserved_, addr, [](const uint64_t& b) { return b; });
}

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
    if (!HeldLocked(w)) continue;  // address space nothing was given out from: not a pointer
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
