// pool_hooks.cc: the memory-pool calls PyTorch's cudaMallocAsync backend makes, answered about
// pooch's memory under a residency policy (intercept.h; Note [Memory pools] in mem_pool.h).
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "interpose/hooks/runtime/mem_pool.h"
#include "interpose/process/managed.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

// pooch's pool: a handle no runtime hands out (the address of a byte of pooch's), never
// dereferenced by anyone, since only these hooks take it.
char g_pool_tag;
cudaMemPool_t PoochPool() { return reinterpret_cast<cudaMemPool_t>(&g_pool_tag); }

PoolAnswers& Answers() {
  static PoolAnswers* answers = new PoolAnswers;  // outlives exit: hooks may run late
  return *answers;
}

// Whether `device` is the device pooch manages (the current one).
bool IsPoochDevice(int device) {
  int current = -1;
  const auto get_device = real::cudaGetDevice();
  return get_device != nullptr && get_device(&current) == cudaSuccess && current == device;
}

cudaError_t Refuse(const char* what, cudaError_t code) {
  LogLine("%s: %s; not supported under pooch, which manages one device's default pool",
          kFunctions[Index(HookScope::Current())].name, what);
  return HookFailure(code);
}

}  // namespace

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (memPool == nullptr || !IsPoochDevice(device)) {
    return real::cudaDeviceGetDefaultMemPool()(memPool, device);
  }
  *memPool = PoochPool();
  return cudaSuccess;
}

// pooch serves cudaMallocAsync whatever pool is current, so the current pool is pooch's.
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
  if (memPool == nullptr || !IsPoochDevice(device)) {
    return real::cudaDeviceGetMemPool()(memPool, device);
  }
  *memPool = PoochPool();
  return cudaSuccess;
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  if (memPool != PoochPool()) return real::cudaMemPoolGetAttribute()(memPool, attr, value);
  pooch::ResidencyManager* manager = Process::Get().manager();
  const pooch::ResidencyStats stats =
      manager != nullptr ? manager->Stats() : pooch::ResidencyStats{};
  const cudaError_t e = Answers().Get(attr, stats, value);
  if (e == cudaErrorNotSupported) {
    char what[64];
    std::snprintf(what, sizeof(what), "attribute %d", static_cast<int>(attr));
    return Refuse(what, e);
  }
  return e == cudaSuccess ? e : HookFailure(e);
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  if (memPool != PoochPool()) return real::cudaMemPoolSetAttribute()(memPool, attr, value);
  bool reset_peak = false;
  const cudaError_t e = Answers().Set(attr, value, &reset_peak);
  if (reset_peak) {
    if (pooch::ResidencyManager* manager = Process::Get().manager()) manager->ResetWindowPeak();
  }
  if (e == cudaErrorNotSupported) {
    char what[64];
    std::snprintf(what, sizeof(what), "attribute %d", static_cast<int>(attr));
    return Refuse(what, e);
  }
  return e == cudaSuccess ? e : HookFailure(e);
}

// Nothing to give back: pooch's reuse cache is spilled under its own budget (Note [Reuse cache]).
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  if (memPool != PoochPool()) return real::cudaMemPoolTrimTo()(memPool, minBytesToKeep);
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const cudaMemAccessDesc* descList,
                                 size_t count) {
  if (memPool != PoochPool()) return real::cudaMemPoolSetAccess()(memPool, descList, count);
  if (count > 0 && descList == nullptr) return HookFailure(cudaErrorInvalidValue);
  for (size_t i = 0; i < count; ++i) {
    const cudaMemAccessDesc& d = descList[i];
    const bool own = d.location.type == cudaMemLocationTypeDevice && IsPoochDevice(d.location.id);
    if (!own) return Refuse("access from another device or the host", cudaErrorNotSupported);
  }
  return cudaSuccess;
}

cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                    cudaStream_t stream) {
  if (memPool != PoochPool()) {
    return real::cudaMallocFromPoolAsync()(ptr, size, memPool, stream);
  }
  return intercept::cudaMallocAsync(ptr, size, stream);
}

// Graph memory (the pools of graph allocation nodes): pooch refuses stream capture (Note [Graphs]
// in graph_hooks.cc), so the program holds none on pooch's device and every figure is 0; a
// watermark reset (to 0, the only value the runtime takes) has nothing to do.
cudaError_t cudaDeviceGetGraphMemAttribute(int device, cudaGraphMemAttributeType attr,
                                           void* value) {
  if (!IsPoochDevice(device)) return real::cudaDeviceGetGraphMemAttribute()(device, attr, value);
  if (value == nullptr) return HookFailure(cudaErrorInvalidValue);
  switch (attr) {
    case cudaGraphMemAttrUsedMemCurrent:
    case cudaGraphMemAttrUsedMemHigh:
    case cudaGraphMemAttrReservedMemCurrent:
    case cudaGraphMemAttrReservedMemHigh: {
      const uint64_t none = 0;
      std::memcpy(value, &none, sizeof(none));
      return cudaSuccess;
    }
  }
  return HookFailure(cudaErrorInvalidValue);
}

cudaError_t cudaDeviceSetGraphMemAttribute(int device, cudaGraphMemAttributeType attr,
                                           void* value) {
  if (!IsPoochDevice(device)) return real::cudaDeviceSetGraphMemAttribute()(device, attr, value);
  if (value == nullptr) return HookFailure(cudaErrorInvalidValue);
  uint64_t v = 0;
  std::memcpy(&v, value, sizeof(v));
  const bool watermark =
      attr == cudaGraphMemAttrUsedMemHigh || attr == cudaGraphMemAttrReservedMemHigh;
  return watermark && v == 0 ? cudaSuccess : HookFailure(cudaErrorInvalidValue);
}

}  // namespace pooch::interpose::intercept
