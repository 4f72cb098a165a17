#include "interpose/managed.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

#include "absl/container/flat_hash_set.h"
#include "core/mutex.h"
#include "interpose/cuda_device.h"
#include "interpose/hook_table.h"
#include "interpose/intercept.h"
#include "interpose/recompute.h"
#include "interpose/runtime_state.h"
#include "interpose/trace_observer.h"

namespace pooch::interpose {
namespace {

std::atomic<pooch::ResidencyManager*> g_manager{nullptr};
std::atomic<TraceObserver*> g_trace{nullptr};

std::atomic<pooch::SmallAllocator*> g_small{nullptr};

// The program's cudaStreamNonBlocking streams (Note [Reuse after free] in
// core/small_allocator.h). pooch::Mutex, not absl::Mutex: ThreadSanitizer sees its locks
// (core/mutex.h says why).
struct NonBlockingStreams {
  pooch::Mutex mu;
  absl::flat_hash_set<uintptr_t> streams ABSL_GUARDED_BY(mu);
};
NonBlockingStreams& Unordered() {
  static NonBlockingStreams* table =
      new NonBlockingStreams();  // never destroyed: hooks may run at exit
  return *table;
}

void AppendUnorderedStreams(std::vector<pooch::StreamHandle>* out) {
  NonBlockingStreams& t = Unordered();
  pooch::MutexLock lock(&t.mu);
  out->insert(out->end(), t.streams.begin(), t.streams.end());
}

void LogStatus(const char* what, const absl::Status& s) {
  LogLine("%s: %.*s; passing every call through", what, static_cast<int>(s.message().size()),
          s.message().data());
}

pooch::ResidencyManager* Create() {
  // The runtime's primary context, current on this thread (a driver-only program has made its
  // own context current already, and is not made to load the runtime).
  if (void* cudart = dlopen(Soname(Library::CUDART), RTLD_LAZY | RTLD_NOLOAD)) {
    if (const auto cuda_free = real::cudaFree()) cuda_free(nullptr);
    dlclose(cudart);
  }
  absl::StatusOr<std::unique_ptr<CudaDevice>> device = CudaDevice::Create();
  if (!device.ok()) {
    LogStatus("cannot use the device's virtual memory API", device.status());
    return nullptr;
  }
  absl::StatusOr<pooch::ResidencyOptions> options =
      pooch::ResidencyOptionsFromConfig(GetConfig(), **device);
  if (!options.ok()) {
    LogStatus("cannot read the device's memory", options.status());
    return nullptr;
  }
  // Profiling measures the link from the swaps' copies (interpose/profiling.h).
  options->time_copies =
      GetConfig().mode == pooch::RunMode::kPlanned || !GetConfig().profile_out.empty();
  // The device and the manager live until the process ends: at exit the runtime may already
  // have torn the context down, so nothing is released then.
  CudaDevice* raw_device = device->release();
  TraceObserver* observer = nullptr;
  if (const std::string& path = GetConfig().trace_path; !path.empty()) {
    absl::StatusOr<std::unique_ptr<pooch::TraceWriter>> writer = pooch::TraceWriter::Open(path);
    if (writer.ok()) {
      observer = new TraceObserver(*std::move(writer));
    } else {
      LogLine("POOCH_TRACE: %.*s; no trace", static_cast<int>(writer.status().message().size()),
              writer.status().message().data());
    }
  }
  g_trace.store(observer, std::memory_order_release);
  absl::StatusOr<std::unique_ptr<pooch::ResidencyManager>> manager =
      pooch::ResidencyManager::Create(*raw_device, *options, observer);
  if (!manager.ok()) {
    LogStatus("cannot start the residency manager", manager.status());
    return nullptr;
  }
  // Slabs are charged to the manager, which evicts swappable data to make room for them.
  pooch::ResidencyManager* raw_manager = manager->get();
  pooch::SmallAllocatorOptions small_options;
  small_options.max_bytes = options->min_swap_bytes;
  small_options.charge = [raw_manager](int64_t bytes) {
    return raw_manager->ChargeExternal(bytes);
  };
  small_options.uncharge = [raw_manager](int64_t bytes) { raw_manager->UnchargeExternal(bytes); };
  small_options.unordered_streams = AppendUnorderedStreams;
  absl::StatusOr<std::unique_ptr<pooch::SmallAllocator>> small =
      pooch::SmallAllocator::Create(*raw_device, std::move(small_options));
  if (!small.ok()) {
    LogStatus("cannot start the small-allocation sub-allocator", small.status());
    return nullptr;
  }
  pooch::SmallAllocator* raw_small = small->release();
  g_small.store(raw_small, std::memory_order_release);
  if (GetConfig().mode == pooch::RunMode::kPlanned) {
    StartRecomputer(*raw_device, *raw_manager, *raw_small, options->min_swap_bytes, observer);
  }
  StartProfiling(*raw_device, *raw_manager, *raw_small, GetConfig(), observer);
  POOCH_LOG_AT(kInfo, "managing device memory: limit %lld bytes, min swap %lld bytes",
               static_cast<long long>(options->memory_limit),
               static_cast<long long>(options->min_swap_bytes));
  return manager->release();
}

}  // namespace

pooch::ResidencyManager* GetManager() {
  if (!g_managed.load(std::memory_order_acquire)) return nullptr;
  pooch::ResidencyManager* m = g_manager.load(std::memory_order_acquire);
  if (m != nullptr) return m;
  static std::once_flag once;
  std::call_once(once, [] {
    pooch::ResidencyManager* created = Create();
    if (created == nullptr) {
      g_managed.store(false, std::memory_order_release);
    } else {
      g_manager.store(created, std::memory_order_release);
    }
  });
  return g_manager.load(std::memory_order_acquire);
}

pooch::ResidencyManager* ExistingManager() { return g_manager.load(std::memory_order_acquire); }

pooch::SmallAllocator* ExistingSmallAllocator() { return g_small.load(std::memory_order_acquire); }

void NoteNonBlockingStream(uintptr_t stream) {
  NonBlockingStreams& t = Unordered();
  pooch::MutexLock lock(&t.mu);
  t.streams.insert(stream);
}

bool ForgetNonBlockingStream(uintptr_t stream) {
  NonBlockingStreams& t = Unordered();
  pooch::MutexLock lock(&t.mu);
  return t.streams.erase(stream) > 0;
}

bool ManagedMemoryInfo(size_t* free_bytes, size_t* total_bytes) {
  pooch::ResidencyManager* manager = GetManager();
  if (manager == nullptr) return false;
  const int64_t limit = manager->memory_limit();
  const pooch::ResidencyStats stats = manager->Stats();
  // Cached chunks are free to the program (Note [Reuse cache]).
  const int64_t used = stats.device_bytes - stats.cached_bytes;
  if (free_bytes != nullptr) *free_bytes = static_cast<size_t>(std::max<int64_t>(0, limit - used));
  if (total_bytes != nullptr) *total_bytes = static_cast<size_t>(limit);
  return true;
}

int64_t MinSwapBytes() { return GetConfig().min_swap_bytes; }

void CloseTrace() {
  TraceObserver* observer = g_trace.exchange(nullptr, std::memory_order_acq_rel);
  if (observer == nullptr) return;
  // The manager may still call the observer (a late hook); it stays allocated, only the file
  // is closed (later events are dropped, core/trace.h).
  if (absl::Status s = observer->Close(); !s.ok()) {
    LogLine("POOCH_TRACE: %.*s", static_cast<int>(s.message().size()), s.message().data());
  }
}

}  // namespace pooch::interpose
