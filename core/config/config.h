// pooch's configuration: every POOCH_* environment variable, parsed and validated in one place.
//
// All variables live in one table (config.cc: kVariables) with their name, default, units and
// help text; LoadConfig() is the only parser, and ConfigMarkdownTable() renders the same table
// for docs/usage.md, so the documentation cannot drift from the code.
//
//   absl::StatusOr<pooch::Config> config = pooch::LoadConfig(&getenv_wrapper);
//   if (!config.ok()) { fprintf(stderr, "pooch: %s\n", ...message...); _exit(2); }
//
// Rules common to every variable: an unset variable and one set to the empty string both mean
// "use the default". A bad value is an error (InvalidArgument), never a guess; the message is one
// line that starts with the variable and the quoted value:
//   POOCH_MEMORY_LIMIT='12QB': unknown unit 'QB' (use B, KiB, MiB, ...)
// The interposer prints it prefixed "pooch: " and exits with status 2 at start-up.
//
// Thread safety: pure functions over immutable data; LoadConfig calls `getenv` only from the
// calling thread.
#ifndef POOCH_CORE_CONFIG_CONFIG_H_
#define POOCH_CORE_CONFIG_CONFIG_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/base/log.h"
#include "core/device/device.h"
#include "core/pilot/pilot.h"
#include "core/plan/plan.h"
#include "core/profile/iteration_tracker.h"
#include "core/residency/residency.h"

namespace pooch {

// POOCH_POLICY: how the runtime manages device memory.
//   kOff      pass every call through untouched
//   kDemand   swap on demand: LRU eviction when the limit is reached, swap-in before an op
//             touches swapped data
//   kDtr      Dynamic Tensor Rematerialization (Kirisame et al. 2021) as a baseline: no profile
//             and no plan; every output of a replayable call keeps its recipe, and eviction
//             drops by DTR's heuristic what can be rebuilt by replay and swaps the rest (Note
//             [DTR eviction] in core/residency/residency_evict.cc, Note [Replay] in
//             core/recompute/recomputer.h)
//   kPlanned  profile the first iterations, then carry out the plan of one of the planner's
//             policies (core/plan/plan.h; Config's planned_policy says which) with kDemand's
//             swapping underneath as the safety net (core/exec/plan_executor.h says what is
//             carried out).
enum class RunMode { kOff, kDemand, kDtr, kPlanned };

// POOCH_PROFILE_SWAP: what the profiled iteration runs under (Note [Swap-all profiling] in
// core/exec/plan_executor.cc).
//   kAll     every feature map swapped (PoocH §4.2), after the reference is found
//   kDemand  demand swapping, as the iterations that find the reference
enum class ProfileSwap { kAll, kDemand };

struct Config {
  // POOCH_MEMORY_LIMIT: the device bytes pooch may use; unset = what the device reports free at
  // start-up.
  std::optional<int64_t> memory_limit;
  // POOCH_MEMORY_LIMIT as a percentage ("40%"): that fraction of the device's total memory, in
  // (0, 1]. At most one of memory_limit and memory_limit_fraction is set.
  std::optional<double> memory_limit_fraction;
  // POOCH_MIN_SWAP_BYTES: allocations smaller than this always stay resident.
  int64_t min_swap_bytes = int64_t{1} << 20;
  // POOCH_HOST_MEMORY_LIMIT: pinned host bytes for swapped data; unset = unlimited.
  std::optional<int64_t> host_memory_limit;
  RunMode mode = RunMode::kPlanned;        // POOCH_POLICY
  Policy planned_policy = Policy::kPooch;  // POOCH_POLICY, when mode == kPlanned
  std::string trace_path;                  // POOCH_TRACE; empty = no trace
  std::string plot_path;                   // POOCH_PLOT; empty = no picture of the plan
  Severity log_level = Severity::kWarn;    // POOCH_LOG: the least severe message printed
  bool summary = true;                     // POOCH_SUMMARY
  std::string summary_file;                // POOCH_SUMMARY_FILE; empty = not written
  int profile_iters = 2;
  std::string profile_out;  // POOCH_PROFILE_OUT; empty = not written
  int reprofile_after = 3;
  IterationMarker iteration_marker = IterationMarker::kAuto;
  ProfileSwap profile_swap = ProfileSwap::kAll;
  std::string lineage_out;  // POOCH_LINEAGE_OUT; empty = not written
  // POOCH_CHECK_REPLAYS: every dropped map copied and its replay compared with the copy (Note
  // [Replay check] in core/recompute/replay_check.h).
  bool check_replays = false;
  // POOCH_PILOT: the pilot model of dynamic networks under a planner policy (Note [Pilot model]
  // in core/pilot/pilot.h).
  PilotMode pilot = PilotMode::kOn;
  // POOCH_KERNEL_ANALYSIS, POOCH_KERNEL_ARCH, POOCH_KERNEL_CACHE: each launched kernel's write
  // and read sets from its machine code (Note [Verdicts at launch] in
  // interpose/kernels/launch_verdicts.h).
  bool kernel_analysis = true;
  std::string kernel_arch;   // "sm_90"; empty = the device's
  std::string kernel_cache;  // a folder; empty = the default one; "off" = none
};

// One row of the table, for documentation and for tools that list the variables.
struct ConfigVariable {
  absl::string_view name;          // "POOCH_MEMORY_LIMIT"
  absl::string_view default_text;  // as docs/usage.md shows it
  absl::string_view units;         // "size", "integer >= 1", "path", or the accepted values
  absl::string_view help;          // one sentence or two
};

// Every POOCH_* variable, in the order docs/usage.md lists them.
absl::Span<const ConfigVariable> ConfigVariables();

// Reads every variable through `getenv` (returns nullptr when unset) and validates it. Returns
// the first error in table order as InvalidArgument with a one-line message (see above).
absl::StatusOr<Config> LoadConfig(const std::function<const char*(const char*)>& getenv);

// docs/usage.md's table: "| Variable | Default | Meaning |" with one row per variable.
std::string ConfigMarkdownTable();

// Names in `names` that start with "POOCH_" but are not in the table (typos such as
// POOCH_MEMORY_LIMT), for a start-up warning. The interposer passes the names from environ.
std::vector<std::string> UnknownPoochVariables(absl::Span<const std::string> names);

// The residency manager's options from the configuration. The limit is the device's free memory
// (cuMemGetInfo, read now) when POOCH_MEMORY_LIMIT is unset, the fraction of its total memory
// when it is a percentage, and never more than the free memory when it is set: a limit the
// device cannot reach would never make pooch swap, and allocations would fail with the device's
// out-of-memory instead. `clamped_from`, when given, is set to the configured
// limit if it was lowered (the interposer says so once), else to nullopt. ResourceExhausted when
// the device has no free memory at all.
absl::StatusOr<ResidencyOptions> ResidencyOptionsFromConfig(
    const Config& config, Device& device, std::optional<int64_t>* clamped_from = nullptr);

// The text a variable accepts for each enum value ("swap-all-nosched", "debug", ...).
// POOCH_POLICY as text: "off", "demand", "dtr", or the planner policy's name.
absl::string_view PolicyText(const Config& config);
absl::string_view SeverityName(Severity severity);
absl::string_view IterationMarkerName(IterationMarker marker);

}  // namespace pooch

#endif  // POOCH_CORE_CONFIG_CONFIG_H_
