// The Process (process.h): start-up, the parts that manage device memory, the summary.
#include "interpose/process/process.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/log.h"
#include "core/base/log_rank.h"
#include "core/config/path_pattern.h"
#include "interpose/device/cuda_device.h"
#include "interpose/process/host_time.h"
#include "interpose/process/kernel_recipe_counts.h"
#include "interpose/process/opaque.h"
#include "interpose/process/replay_check_stop.h"
#include "interpose/process/summary_lines.h"
#include "interpose/process/summary_words.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

extern char** environ;

namespace pooch::interpose {
namespace {

// POOCH_ITERATION_MARKER=nvtx: NVTX loads its tool from NVTX_INJECTION64_PATH at the program's
// first NVTX call, which comes after start-up; pooch names itself there
// (interpose/hooks/runtime/nvtx_injection.cc). Another tool already named keeps its place.
void UseAsNvtxInjection() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&UseAsNvtxInjection), &info) == 0 ||
      info.dli_fname == nullptr) {
    LogLine("POOCH_ITERATION_MARKER=nvtx: cannot find libpooch.so's path; NVTX ranges not read");
    return;
  }
  const char* current = std::getenv("NVTX_INJECTION64_PATH");
  if (current != nullptr && *current != '\0' && std::strcmp(current, info.dli_fname) != 0) {
    LogLine(
        "POOCH_ITERATION_MARKER=nvtx: NVTX_INJECTION64_PATH names another tool (%s); NVTX "
        "ranges not read, no profile will be made",
        current);
    return;
  }
  setenv("NVTX_INJECTION64_PATH", info.dli_fname, 1);
}

// `s` with the part that could not be made named first, for the one line Process::manager()
// prints.
absl::Status PartFailure(const char* what, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

}  // namespace

Process& Process::Get() {
  static Process* process = new Process();  // never destroyed: hooks may run at exit
  return *process;
}

void Process::Start() {
  absl::StatusOr<Config> config =
      LoadConfig([](const char* name) -> const char* { return std::getenv(name); });
  if (!config.ok()) {
    LogLine("%.*s", static_cast<int>(config.status().message().size()),
            config.status().message().data());
    _exit(2);
  }
  config_ = *std::move(config);
  path_patterns_ = config_;
  SetLogThreshold(config_.log_level);
  NameProcess();

  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr && std::strncmp(*e, "POOCH_", 6) == 0) names.emplace_back(*e, eq - *e);
  }
  for (const std::string& unknown : UnknownPoochVariables(names)) {
    POOCH_LOG_AT(kWarn, "unknown variable %s ignored", unknown.c_str());
  }
  const absl::string_view policy = PolicyText(config_);
  POOCH_LOG_AT(kInfo, "loaded, policy %.*s", static_cast<int>(policy.size()), policy.data());
  if (config_.iteration_marker == IterationMarker::kNvtx) UseAsNvtxInjection();
  if (config_.mode != RunMode::kOff) {
    // Demand swapping under every policy but off; a planner policy adds the profiler and the
    // plan's actions on top (core/exec/plan_executor.h).
    g_managed.store(true, std::memory_order_release);
  }
}

// Note [One pooch per process]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every process started under `pooch run` loads its own pooch (LD_PRELOAD is inherited): a
// launcher such as torchrun, its shells and helpers, and each rank, which manages its own device
// with its own limit and plan. So that several ranks can share a terminal and a directory:
// - a process names itself from RANK (else LOCAL_RANK) and its pid when it makes its parts, not
//   only at start-up: a child forked without exec inherits its parent's start, and a launcher may
//   set the rank in the child's environment after the fork; log lines then read
//   "pooch[rank R]: " and the paths' %r and %p are expanded then (core/config/path_pattern.h),
//   so that no file is opened before;
// - a process that made no CUDA call writes no summary: the launcher and its shells have
//   nothing to say, and their lines would hide the ranks'. Loading a CUDA library is no call:
//   it registers the library's kernels (__cudaRegisterFatBinary and kin, at load and again at
//   exit) and may look up driver entry points, without the program asking for anything, so
//   those hooks are not counted here (torchrun's agent imports torch, which loads
//   libtorch_cuda.so, and printed a summary of nothing at exit).
void Process::NameProcess() {
  const ProcessIdentity identity{.rank = ProcessRank(&std::getenv), .pid = getpid()};
  SetLogRank(identity.rank.value_or(-1));
  config_.trace_path = ExpandPathPattern(path_patterns_.trace_path, identity);
  config_.plot_path = ExpandPathPattern(path_patterns_.plot_path, identity);
  config_.summary_file = ExpandPathPattern(path_patterns_.summary_file, identity);
  config_.profile_out = ExpandPathPattern(path_patterns_.profile_out, identity);
  config_.lineage_out = ExpandPathPattern(path_patterns_.lineage_out, identity);
}

bool Process::MadeCudaCall() const {
  if (parts_.load(std::memory_order_acquire) != nullptr || parts_failed()) return true;
  if (OpaqueTotal() > 0 || UnclassifiedCalls() > 0) return true;
  for (int i = 0; i < kHookCount; ++i) {
    const auto id = static_cast<FunctionId>(i);
    if (IsRegistration(id) || IsLookup(id)) continue;  // a library loaded (Note above)
    const CallCounts calls = Calls(id);
    if (calls.top > 0 || calls.nested > 0) return true;
  }
  return false;
}

absl::StatusOr<const Process::Parts*> Process::CreateParts() {
  // The runtime's primary context, current on this thread (a driver-only program has made its
  // own context current already, and is not made to load the runtime).
  if (void* cudart = dlopen(Soname(Library::CUDART), RTLD_LAZY | RTLD_NOLOAD)) {
    if (const auto cuda_free = real::cudaFree()) cuda_free(nullptr);
    dlclose(cudart);
  }
  // No context (a driver-only program's call before cuInit or cuCtxCreate, or no device at
  // all): the program's call fails by itself, with the driver's own code, and a later call
  // tries again. This is not a failure to manage memory; nothing has been allocated.
  CUcontext current = nullptr;
  if (const auto get_current = real::cuCtxGetCurrent();
      get_current == nullptr || get_current(&current) != CUDA_SUCCESS || current == nullptr) {
    return nullptr;
  }
  NameProcess();  // before any file is opened (Note [One pooch per process])
  absl::StatusOr<std::unique_ptr<CudaDevice>> device = CudaDevice::Create();
  if (!device.ok()) {
    return PartFailure("cannot use the device's virtual memory API", device.status());
  }
  std::optional<int64_t> clamped_from;
  absl::StatusOr<ResidencyOptions> options =
      ResidencyOptionsFromConfig(config_, **device, &clamped_from);
  if (!options.ok()) return options.status();
  if (clamped_from.has_value()) {
    POOCH_LOG_AT(kWarn,
                 "POOCH_MEMORY_LIMIT %lld bytes is more than the device has free (%lld bytes); "
                 "the limit is %lld bytes",
                 static_cast<long long>(*clamped_from),
                 static_cast<long long>(options->memory_limit),
                 static_cast<long long>(options->memory_limit));
  }
  // The summary says what share of the device a percentage limit is.
  absl::StatusOr<DeviceMemoryInfo> memory_info = (*device)->MemoryInfo();
  const int64_t device_total_bytes = memory_info.ok() ? memory_info->total_bytes : 0;
  // Profiling measures the link from the swaps' copies (Note [Copy times]).
  options->time_copies = PlanExecutor::WantedBy(config_);
  CudaDevice* raw_device = device->release();
  // Published (never freed: hooks may run at exit) only once every part was made.
  auto parts = std::make_unique<Parts>();
  parts->device = raw_device;
  parts->device_total_bytes = device_total_bytes;
  // Note [Host time] (core/device/timed_device.h): every part calls the device through this.
  parts->timed = new TimedDevice(*raw_device);
  TimedDevice& timed = *parts->timed;
  if (const std::string& path = config_.trace_path; !path.empty()) {
    absl::StatusOr<std::unique_ptr<TraceWriter>> writer = TraceWriter::Open(path);
    if (writer.ok()) {
      parts->trace = new TraceObserver(*std::move(writer));
    } else {
      LogLine("POOCH_TRACE: %.*s; no trace", static_cast<int>(writer.status().message().size()),
              writer.status().message().data());
    }
  }
  absl::StatusOr<std::unique_ptr<ResidencyManager>> manager =
      ResidencyManager::Create(timed, *options, parts->trace);
  if (!manager.ok()) return PartFailure("cannot start the residency manager", manager.status());
  // Slabs are charged to the manager, which evicts swappable data to make room for them.
  ResidencyManager* raw_manager = manager->get();
  SmallAllocatorOptions small_options;
  small_options.max_bytes = options->min_swap_bytes;
  small_options.charge = [raw_manager](int64_t bytes) {
    return raw_manager->ChargeExternal(bytes);
  };
  small_options.uncharge = [raw_manager](int64_t bytes) { raw_manager->UnchargeExternal(bytes); };
  small_options.unordered_streams = [this](std::vector<StreamHandle>* out) {
    MutexLock lock(&streams_mu_);
    out->insert(out->end(), non_blocking_streams_.begin(), non_blocking_streams_.end());
  };
  absl::StatusOr<std::unique_ptr<SmallAllocator>> small =
      SmallAllocator::Create(timed, std::move(small_options));
  if (!small.ok()) {
    return PartFailure("cannot start the small-allocation sub-allocator", small.status());
  }
  parts->small = small->release();
  if (config_.mode == RunMode::kPlanned || config_.mode == RunMode::kDtr) {
    // Note [Replay check]: never destroyed, as the Recomputer that uses it.
    ReplayCheck* check = config_.check_replays ? new ReplayCheck(timed, StopAtReplayMismatch)
                                               : nullptr;
    parts->recomputer = new Recomputer(timed, *raw_manager, *parts->small, options->min_swap_bytes,
                                       parts->trace, /*dtr=*/config_.mode == RunMode::kDtr, check);
  }
  if (PlanExecutor::WantedBy(config_)) {
    parts->profiler = new PlanExecutor(timed, *raw_manager, *parts->small, config_, parts->trace,
                                       parts->recomputer);
    // Note [Steady iterations] (steady_host.h): the summary's figures per steady iteration.
    parts->steady = new SteadyHost();
    parts->profiler->SetIterationListener(
        [steady = parts->steady, &timed](const PlanExecutor::IterationNote& note) {
          if (note.started) {
            steady->IterationStarted({.following = note.following, .plan = note.plan},
                                     {CurrentHookTimes(), timed.Times(), timed.MemoryCalls()});
          }
          if (note.departed) steady->Departed();
        });
  }
  POOCH_LOG_AT(kInfo, "managing device memory: limit %lld bytes, min swap %lld bytes",
               static_cast<long long>(options->memory_limit),
               static_cast<long long>(options->min_swap_bytes));
  parts->manager = manager->release();
  return parts.release();
}

ResidencyManager* Process::manager() {
  if (!g_managed.load(std::memory_order_acquire)) return nullptr;
  if (const Parts* parts = parts_.load(std::memory_order_acquire)) return parts->manager;
  if (parts_failed()) return nullptr;
  MutexLock lock(&create_mu_);
  if (const Parts* parts = parts_.load(std::memory_order_acquire)) return parts->manager;
  if (parts_failed()) return nullptr;
  absl::StatusOr<const Parts*> created = CreateParts();
  if (!created.ok()) {
    // Loud, and allocations fail from now on (ManagedAlloc): the limit is never lost quietly.
    const absl::string_view policy = PolicyText(config_);
    LogLine(
        "cannot manage device memory under POOCH_POLICY=%.*s: %.*s; every allocation fails "
        "(POOCH_POLICY=off runs the program without pooch)",
        static_cast<int>(policy.size()), policy.data(),
        static_cast<int>(created.status().message().size()), created.status().message().data());
    parts_failed_.store(true, std::memory_order_release);
    return nullptr;
  }
  if (*created == nullptr) return nullptr;  // no context yet: this call passes through
  parts_.store(*created, std::memory_order_release);
  return (*created)->manager;
}

ResidencyManager* Process::existing_manager() const {
  const Parts* parts = parts_.load(std::memory_order_acquire);
  return parts != nullptr ? parts->manager : nullptr;
}

SmallAllocator* Process::small() const {
  const Parts* parts = parts_.load(std::memory_order_acquire);
  return parts != nullptr ? parts->small : nullptr;
}

CudaDevice* Process::device() const {
  const Parts* parts = parts_.load(std::memory_order_acquire);
  return parts != nullptr ? parts->device : nullptr;
}

Recomputer* Process::recomputer() const {
  const Parts* parts = parts_.load(std::memory_order_acquire);
  return parts != nullptr ? parts->recomputer : nullptr;
}

PlanExecutor* Process::profiler() const {
  const Parts* parts = parts_.load(std::memory_order_acquire);
  return parts != nullptr ? parts->profiler : nullptr;
}

void Process::MarkIteration() {
  if (ResidencyManager* m = existing_manager()) m->MarkIteration();
  if (PlanExecutor* p = profiler()) p->SyncMarker();
}

void Process::NoteNonBlockingStream(uintptr_t stream) {
  MutexLock lock(&streams_mu_);
  non_blocking_streams_.insert(stream);
}

bool Process::ForgetNonBlockingStream(uintptr_t stream) {
  MutexLock lock(&streams_mu_);
  return non_blocking_streams_.erase(stream) > 0;
}

bool Process::MemoryInfo(size_t* free_bytes, size_t* total_bytes) {
  ResidencyManager* m = manager();
  if (m == nullptr) return false;
  const int64_t limit = m->memory_limit();
  const ResidencyStats stats = m->Stats();
  // Cached chunks are free to the program (Note [Reuse cache]).
  const int64_t used = stats.device_bytes - stats.cached_bytes;
  if (free_bytes != nullptr) *free_bytes = static_cast<size_t>(std::max<int64_t>(0, limit - used));
  if (total_bytes != nullptr) *total_bytes = static_cast<size_t>(limit);
  return true;
}

void Process::Stop() {
  const Parts* parts = parts_.load(std::memory_order_acquire);
  if (parts != nullptr && parts->trace != nullptr) {
    // The manager may still call the observer (a late hook); it stays allocated, only the file
    // is closed (later events are dropped, core/base/trace.h).
    if (absl::Status s = parts->trace->Close(); !s.ok()) {
      LogLine("POOCH_TRACE: %.*s", static_cast<int>(s.message().size()), s.message().data());
    }
  }
  if (!MadeCudaCall()) return;  // Note [One pooch per process]
  if (!config_.lineage_out.empty()) {
    if (const Recomputer* recomputer = this->recomputer()) {
      if (absl::Status s = recomputer->WriteLineage(config_.lineage_out); !s.ok()) {
        LogLine("POOCH_LINEAGE_OUT: %.*s; no lineage file", static_cast<int>(s.message().size()),
                s.message().data());
      }
    } else {
      LogLine("POOCH_LINEAGE_OUT: nothing recomputes under policy %s; no lineage file",
              std::string(PolicyText(config_)).c_str());
    }
  }
  if (config_.summary || !config_.summary_file.empty()) WriteSummary();
}

// The summary (Note [Summary in words] in summary_words.h): the plain lines, the detailed
// "pooch: <topic>: <figures>" lines at POOCH_LOG=info (docs/usage.md, "pooch run"; Note [Summary
// lines] in summary_lines.h), and both as JSON in POOCH_SUMMARY_FILE.
void Process::WriteSummary() const {
  const SummaryFacts facts = GatherSummaryFacts();
  const std::vector<std::string> detail = DetailLines();
  if (config_.summary) {
    for (const std::string& line : PlainLines(facts)) LogLine("%s", line.c_str());
    if (LogEnabled(Severity::kInfo)) {
      for (const std::string& line : detail) LogLine("%s", line.c_str());
    }
  }
  if (const std::string& path = config_.summary_file; !path.empty()) {
    const std::string json = SummaryJson(facts, detail);
    std::FILE* file = std::fopen(path.c_str(), "w");
    const bool written = file != nullptr &&
                         std::fwrite(json.data(), 1, json.size(), file) == json.size();
    if (file == nullptr || std::fclose(file) != 0 || !written) {
      LogLine("POOCH_SUMMARY_FILE: cannot write %s: %s; no summary file", path.c_str(),
              std::strerror(errno));
    }
  }
}

SummaryFacts Process::GatherSummaryFacts() const {
  SummaryFacts facts;
  facts.policy = std::string(PolicyText(config_));
  facts.rank = ProcessRank(&std::getenv);
  const Parts* parts = parts_.load(std::memory_order_acquire);
  if (ResidencyManager* manager = existing_manager()) {
    facts.managed = true;
    facts.limit_bytes = manager->memory_limit();
    facts.limit_fraction = config_.memory_limit_fraction;
    facts.device_total_bytes = parts != nullptr ? parts->device_total_bytes : 0;
    facts.memory = manager->Stats();
  }
  if (const Recomputer* recomputer = this->recomputer()) {
    facts.recompute = recomputer->stats();
    facts.dtr = recomputer->dtr();
  }
  if (PlanExecutor* profiler = this->profiler()) facts.plan = profiler->SummaryOutcome();
  facts.opaque_refused = OpaqueRefused();
  return facts;
}

std::vector<std::string> Process::DetailLines() const {
  std::vector<std::string> lines;
  const absl::string_view policy = PolicyText(config_);
  lines.push_back(absl::StrCat("summary: policy ", policy));
  if (ResidencyManager* manager = existing_manager()) {
    const ResidencyStats stats = manager->Stats();
    lines.push_back(MemoryLine(manager->memory_limit(), stats));
    lines.push_back(SwapsLine(stats));
    lines.push_back(ReuseLine(stats));
  }
  if (const Parts* parts = parts_.load(std::memory_order_acquire); parts != nullptr) {
    const HookTimes hooks = CurrentHookTimes();
    lines.push_back(HostLine(hooks, parts->timed->Times()));
    if (parts->steady != nullptr) lines.push_back(HostSteadyLine(parts->steady->PerIterationMean()));
  }
  if (PlanExecutor* profiler = this->profiler()) {
    for (std::string& line : profiler->SummaryLines()) lines.push_back(std::move(line));
  }
  const Recomputer* recomputer = this->recomputer();
  if (recomputer != nullptr && recomputer->dtr()) {
    const Recomputer::Stats replays = recomputer->stats();
    lines.push_back(DtrLine(replays, existing_manager()->Stats()));
  }
  if (recomputer != nullptr) {
    if (std::optional<ReplayCheck::Stats> check = recomputer->check_stats()) {
      lines.push_back(ReplayCheckLine(*check));
    }
  }
  if (SmallAllocator* small = this->small()) lines.push_back(SmallLine(small->Stats()));
  const uint64_t opaque_calls = OpaqueTotal();
  const uint64_t unclassified = UnclassifiedCalls();
  lines.push_back(OpaqueLine(opaque_calls, unclassified, OpaqueCounts()));
  if (std::optional<std::string> kernels = KernelRecipesLine()) lines.push_back(*kernels);
  for (int i = 0; i < kHookCount; ++i) {
    const CallCounts calls = Calls(static_cast<FunctionId>(i));
    if (calls.top == 0 && calls.nested == 0) continue;
    lines.push_back(CallsLine(kFunctions[i].name, calls.top, calls.nested));
  }
  return lines;
}

}  // namespace pooch::interpose
