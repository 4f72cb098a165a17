// Kernel ops: device code from fat binaries, which simgpu times but never runs (a CPU twin the
// program brings runs in its place in math mode: Note [CPU twins] in driver/libcuda/cuda_twins.h).
//
// Note [Kernel ops]
// ~~~~~~~~~~~~~~~~~
// A kernel is opaque to simgpu; all it knows is the kernel's parameter buffer, laid out from the
// cubin's parameter info (driver/cubin.h). Each 8-byte word at an 8-byte aligned offset of the
// buffer that points into a live allocation is taken as the kernel reading and writing that whole
// allocation: the hazard checker records a write, and the roofline counts the allocation's bytes
// once per launch, at zero flops (memory-bound:
// elementwise and reduction kernels, most of a framework's kernels; GEMMs and convolutions go
// through cuBLAS and cuDNN, which count flops).
//
// A parameter buffer is not all pointers. It holds sizes, strides, flags, padding, and fields
// the host never set: torch's OffsetCalculator fills its 25-entry size and stride arrays only
// up to the tensor's rank, and ReduceOp leaves dst[1] alone for a reduction with one output, so
// those words are stale stack contents, often old device pointers (seen: a torch transformer
// step with PYTORCH_NO_CUDA_MEMORY_CACHING=1 had a freed block's address in an elementwise
// copy's OffsetCalculator). A GPU kernel never reads them, so they must not fault here. A word
// that points at no live memory is therefore the dangling pointer a GPU would fault on (the
// sticky illegal address, one line naming the kernel, the parameter and the word) only when
//   - it points at memory the program had and lost (DanglingLocked): a freed cudaMalloc block
//     not handed out again, or the unmapped bytes of a VMM reservation (where pooch keeps a
//     swapped tensor's address). Any other word in the device range, which is ordinary host
//     address space, is data that happens to look like an address (an integer with garbage
//     upper bits);
//   - its parameter is made only of device addresses (and nulls): a pointer, or an array of
//     pointers such as the `data` array of torch's elementwise kernels. A word inside a struct
//     that also holds other values may be stale and is passed over;
//   - it is not an allocation's end (a one-past-the-end pointer). When the allocation's size is
//     a multiple of the page, its end is also the start of the next block, and a pointer to that
//     block once freed is taken for the end pointer.
// So simgpu prefers missing a fault to inventing one: a freed pointer inside a mixed struct (an
// OffsetCalculator-carrying lambda) is not caught.
// Limits of the time estimate:
//   - it is only as good as the allocations are tight. PyTorch's caching allocator carves
//     tensors out of segments it got from cudaMalloc (2 MiB and up), so a kernel on a small
//     tensor is charged its whole segment: time is over-estimated unless the caching is off
//     (PYTORCH_NO_CUDA_MEMORY_CACHING=1) or the cudaMallocAsync backend is used
//     (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync), where each tensor is an allocation;
//   - stale words that point into live allocations are counted as uses (and as writes by the
//     hazard checker);
//   - pointers held in device memory (pointer arrays, as in torch's foreach kernels) are not
//     followed: only the parameter buffer is scanned.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <vector>

#include "tests/simgpu/device/device.h"

namespace simgpu {

Err Device::LaunchKernel(const char* op, void* stream, const KernelWord* words, size_t n,
                         const std::function<void()>& twin) {
  if (n > 0 && words == nullptr) return Err::kInvalidValue;
  if (Err e = IssueKernel(op, stream, words, n); e != Err::kOk) return e;
  if (config_.compute == ComputeMode::kMath && twin) twin();
  return Err::kOk;
}

Err Device::IssueKernel(const char* op, void* stream, const KernelWord* words, size_t n) {
  CallLock lock(*this, HostCall::kLaunch);
  if (sticky_ != Err::kOk) return sticky_;
  StreamClock* s = ResolveStreamLocked(stream);
  if (s == nullptr) return Err::kInvalidHandle;
  // Parameters whose non-null words are all device addresses (and that have one).
  std::map<uint32_t, bool> addresses_only;
  for (size_t i = 0; i < n; ++i) {
    if (words[i].value == 0) continue;
    bool address = words[i].param != KernelWord::kNoParam && InDeviceRange(words[i].value, 1);
    auto [it, fresh] = addresses_only.emplace(words[i].param, address);
    if (!fresh) it->second = it->second && address;
  }
  std::map<uint64_t, uint64_t> allocs;  // base -> bytes, each allocation once
  for (size_t i = 0; i < n; ++i) {
    uint64_t w = words[i].value;
    if (!InDeviceRange(w, 1)) continue;
    PtrInfo info = ClassifyLocked(w);
    if (info.kind == PtrKind::kDevice) {
      allocs.emplace(info.base, info.bytes);
      continue;
    }
    if (!addresses_only[words[i].param]) continue;                 // maybe a stale word
    if (ClassifyLocked(w - 1).kind == PtrKind::kDevice) continue;  // one past the end
    if (!DanglingLocked(w)) continue;  // data that looks like an address
    std::fprintf(stderr,
                 "simgpu: illegal address: %s: parameter %" PRIu32 " holds 0x%" PRIx64
                 ", which is not mapped (freed or unmapped)\n",
                 op, words[i].param, w);
    sticky_ = Err::kIllegalAddress;
    return sticky_;
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
