// process.h: pooch's state inside the host program, in one object created in one place.
//
// The Process holds the configuration read at start-up and, under a residency policy (every
// POOCH_POLICY but off), the parts that manage device memory: core's ResidencyManager over a
// CudaDevice with the configured limit (the device's free memory when unset, never more than
// that; ResidencyOptionsFromConfig in core/config/config.h), the sub-allocator of
// small allocations (Note [Small allocations] in core/residency/residency.h), the Recomputer (a
// planner policy), the PlanExecutor (a planner policy or POOCH_PROFILE_OUT) and the POOCH_TRACE
// observer. The parts are created together on the first call that needs the manager (an allocation
// or an op on the program's own path): the runtime is initialised first (a real cudaFree(nullptr),
// which makes the primary context current). If they cannot be made, pooch says so in one line and
// every allocation fails with the API's "not initialized" code from then on: passing calls through
// would run the program without the limit it was given, and a configuration must never do that
// quietly. (A call made before any context is current, by a driver-only program, passes
// through and fails by itself; the next call tries again.) At exit the Process closes the trace
// and writes the summary.
//
//   Start (libpooch.cc, before main)  ->  hooks: Process::Get().manager(), ...  ->  Stop (exit)
//
// Nothing is ever destroyed: hooks may run during and after exit, when the runtime may already
// have torn the context down.
//
// Thread safety: every method may be called from any thread; the configuration is immutable
// after Start but for its paths, which are expanded once more as the parts are created (Note
// [One pooch per process]) and read only by the parts and at exit; the parts are immutable after
// their creation.
#ifndef POOCH_INTERPOSE_PROCESS_PROCESS_H_
#define POOCH_INTERPOSE_PROCESS_PROCESS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/base/mutex.h"
#include "core/config/config.h"
#include "core/device/timed_device.h"
#include "core/exec/plan_executor.h"
#include "core/recompute/recomputer.h"
#include "core/measure/trace_observer.h"
#include "core/residency/residency.h"
#include "core/small_alloc/small_allocator.h"
#include "interpose/process/steady_host.h"
#include "interpose/process/summary_words.h"

namespace pooch::interpose {

class CudaDevice;

class Process {
 public:
  // The one instance.
  static Process& Get();

  // Start-up, before the program's main: reads the POOCH_* variables (a bad value prints one
  // "pooch: ..." line and exits with status 2), warns of unknown ones, and turns interception
  // on unless the policy is off.
  void Start();
  // At exit: closes the trace, writes POOCH_LINEAGE_OUT's file and, unless POOCH_SUMMARY=0, the
  // summary to stderr; a process that made no CUDA call writes none of these (Note [One pooch
  // per process]).
  void Stop();

  // The configuration read at Start (defaults if a hook runs before Start did).
  const Config& config() const { return config_; }

  // The manager, its parts created on first use; nullptr when the policy is off or creation
  // failed (parts_failed() tells which).
  ResidencyManager* manager();
  // True once the parts could not be created under a policy that needs them: allocations then
  // fail instead of passing through (the class comment says why).
  bool parts_failed() const { return parts_failed_.load(std::memory_order_acquire); }
  // The parts if they were created (for synchronisation hooks and the summary); else null.
  // small() is non-null whenever manager() is; recomputer() and profiler() may be null.
  ResidencyManager* existing_manager() const;
  SmallAllocator* small() const;
  // The device the parts manage memory on (its context and ordinal answer pointer queries).
  CudaDevice* device() const;
  Recomputer* recomputer() const;
  PlanExecutor* profiler() const;

  // An iteration ends here (POOCH_ITERATION_MARKER sync or nvtx).
  void MarkIteration();

  // The program's streams created with cudaStreamNonBlocking, which the sub-allocator must order
  // reuse after (Note [Reuse after free] in core/small_alloc/small_allocator.h). Forget returns
  // whether the stream was one.
  void NoteNonBlockingStream(uintptr_t stream);
  bool ForgetNonBlockingStream(uintptr_t stream);

  // The limit and what is in use, for cudaMemGetInfo/cuMemGetInfo. False when unmanaged.
  bool MemoryInfo(size_t* free_bytes, size_t* total_bytes);

 private:
  struct Parts {
    CudaDevice* device = nullptr;
    TimedDevice* timed = nullptr;  // over device: what the other parts call
    ResidencyManager* manager = nullptr;
    SmallAllocator* small = nullptr;
    Recomputer* recomputer = nullptr;
    PlanExecutor* profiler = nullptr;
    TraceObserver* trace = nullptr;
    SteadyHost* steady = nullptr;  // told by profiler of its iterations, when there is one
    int64_t device_total_bytes = 0;  // the device's memory at start-up, for the summary
  };

  Process() = default;
  // Creates the parts (Parts' comment). nullptr when no context is current yet (the class
  // comment); an error says why a part cannot be made.
  absl::StatusOr<const Parts*> CreateParts();
  // Names this process in log lines and in the configuration's paths (Note [One pooch per
  // process]); called at Start and again when the parts are made.
  void NameProcess();
  // Whether the program made a call pooch intercepts, or pooch made its parts.
  bool MadeCudaCall() const;
  void WriteSummary() const;
  // The summary's figures (summary_words.h) and its detailed lines (summary_lines.h).
  SummaryFacts GatherSummaryFacts() const;
  std::vector<std::string> DetailLines() const;

  Config config_;
  // The POOCH_* paths as configured, before NameProcess expanded their patterns.
  Config path_patterns_;
  Mutex create_mu_;  // held while the parts are created
  std::atomic<const Parts*> parts_{nullptr};
  std::atomic<bool> parts_failed_{false};
  mutable Mutex streams_mu_;
  absl::flat_hash_set<uintptr_t> non_blocking_streams_ ABSL_GUARDED_BY(streams_mu_);
};

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROCESS_PROCESS_H_
