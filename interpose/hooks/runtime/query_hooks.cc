// query_hooks.cc: the hooks that answer questions rather than do work, under a residency policy
// (intercept.h): the thread's last runtime error (Note [Last error] in interpose/symbols/errors.h)
// and what a pointer is (Note [Pointer queries] in interpose/process/managed.h). Programs and
// frameworks branch on both, so pooch answers as the real API answers about what the program
// did and asked for, not about pooch's own mappings.
#include "interpose/device/cuda_device.h"
#include "interpose/process/managed.h"
#include "interpose/symbols/errors.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

using Kind = PointerOwner::Kind;

PointerOwner Owner(CUdeviceptr ptr) { return OwnerOf(static_cast<uintptr_t>(ptr)); }

// The attributes that say which allocation `ptr` is in and where it lives: answered for the
// program's allocation whatever its state. nullopt for the others (left to the driver).
std::optional<CUresult> AllocationAttribute(void* data, CUpointer_attribute attribute,
                                            CUdeviceptr ptr, const PointerOwner& owner) {
  const CudaDevice* device = Process::Get().device();
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = device->context();
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = ptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = static_cast<int>(device->device());
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = static_cast<CUdeviceptr>(owner.base);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = owner.bytes;
      return CUDA_SUCCESS;
    default:
      break;
  }
  if (owner.mapped) return std::nullopt;  // resident: the driver answers about its memory
  // Swapped out or dropped: the program sees device memory, mapped before any use of it.
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned int*>(data) = 0;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<unsigned int*>(data) = 1;
      return CUDA_SUCCESS;
    default:
      return std::nullopt;  // the driver's answer about an unmapped range (docs/usage.md, "Errors")
  }
}

// An address the driver certainly knows nothing of (a byte of pooch's own host memory, never
// registered), for asking the real functions what they answer about memory that is no
// allocation; the program's pointer replaces it wherever it comes back.
uintptr_t UnknownAddress() {
  static thread_local char probe;
  return reinterpret_cast<uintptr_t>(&probe);
}

}  // namespace

cudaError_t cudaGetLastError() { return TakeLastRuntimeError(); }

cudaError_t cudaPeekAtLastError() { return PeekLastRuntimeError(); }

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  const PointerOwner owner = OwnerOf(reinterpret_cast<uintptr_t>(ptr));
  if (owner.kind == Kind::kNone || attributes == nullptr) {
    return real::cudaPointerGetAttributes()(attributes, ptr);
  }
  if (const cudaError_t sticky = StickyError<cudaError_t>(); sticky != cudaSuccess) {
    return HookFailure(sticky);
  }
  if (owner.kind == Kind::kUnallocated) {
    // Memory the program was never given: what the runtime says of an address it does not know.
    const void* unknown = reinterpret_cast<const void*>(UnknownAddress());
    const cudaError_t result = real::cudaPointerGetAttributes()(attributes, unknown);
    if (result == cudaSuccess) {
      if (attributes->devicePointer == unknown) attributes->devicePointer = const_cast<void*>(ptr);
      if (attributes->hostPointer == unknown) attributes->hostPointer = const_cast<void*>(ptr);
    }
    return result;
  }
  *attributes = cudaPointerAttributes{};
  attributes->type = cudaMemoryTypeDevice;
  attributes->device = static_cast<int>(Process::Get().device()->device());
  attributes->devicePointer = const_cast<void*>(ptr);
  attributes->hostPointer = nullptr;
  return cudaSuccess;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  const PointerOwner owner = Owner(dptr);
  if (owner.kind == Kind::kNone) return real::cuMemGetAddressRange_v2()(pbase, psize, dptr);
  if (const CUresult sticky = StickyError<CUresult>(); sticky != CUDA_SUCCESS) return sticky;
  if (owner.kind == Kind::kUnallocated) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = static_cast<CUdeviceptr>(owner.base);
  if (psize != nullptr) *psize = owner.bytes;
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  const PointerOwner owner = Owner(ptr);
  if (owner.kind == Kind::kNone || data == nullptr) {
    return real::cuPointerGetAttribute()(data, attribute, ptr);
  }
  if (const CUresult sticky = StickyError<CUresult>(); sticky != CUDA_SUCCESS) return sticky;
  // Not a valid CUDA pointer: the documented answer of the one-attribute query.
  if (owner.kind == Kind::kUnallocated) return CUDA_ERROR_INVALID_VALUE;
  if (std::optional<CUresult> r = AllocationAttribute(data, attribute, ptr, owner)) return *r;
  return real::cuPointerGetAttribute()(data, attribute, ptr);
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes,
                                void** data, CUdeviceptr ptr) {
  const PointerOwner owner = Owner(ptr);
  const auto real_query = real::cuPointerGetAttributes();
  if (owner.kind == Kind::kNone || attributes == nullptr || data == nullptr) {
    return real_query(numAttributes, attributes, data, ptr);
  }
  if (const CUresult sticky = StickyError<CUresult>(); sticky != CUDA_SUCCESS) return sticky;
  const CUdeviceptr unknown = static_cast<CUdeviceptr>(UnknownAddress());
  for (unsigned int i = 0; i < numAttributes; ++i) {
    if (data[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (owner.kind == Kind::kAllocation) {
      std::optional<CUresult> r = AllocationAttribute(data[i], attributes[i], ptr, owner);
      if (r.has_value()) {
        if (*r != CUDA_SUCCESS) return *r;
        continue;
      }
      if (CUresult r2 = real_query(1, &attributes[i], &data[i], ptr); r2 != CUDA_SUCCESS) {
        return r2;
      }
      continue;
    }
    // Not a valid CUDA pointer: this query answers with the defaults it gives any such address.
    if (CUresult r = real_query(1, &attributes[i], &data[i], unknown); r != CUDA_SUCCESS) return r;
    if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_POINTER ||
        attributes[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) {
      auto* value = static_cast<CUdeviceptr*>(data[i]);
      if (*value == unknown) *value = ptr;
    } else if (attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER) {
      auto* value = static_cast<void**>(data[i]);
      if (*value == reinterpret_cast<void*>(unknown)) *value = reinterpret_cast<void*>(ptr);
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace pooch::interpose::intercept
