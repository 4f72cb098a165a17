#include "core/config/config.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/units.h"
#include "core/config/path_pattern.h"

namespace pooch {
namespace {

// The error for a bad value: "NAME='value': why". `why` describes the problem and, where there
// is a fixed set of choices, lists them.
absl::Status InvalidValue(absl::string_view name, absl::string_view value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(name, "='", value, "': ", why));
}

// A table of names for an enum, used for parsing, printing and the error text.
template <typename E>
struct Choice {
  absl::string_view name;
  E value;
};

constexpr Choice<RunMode> kRunModes[] = {
    {"off", RunMode::kOff},
    {"demand", RunMode::kDemand},
    {"dtr", RunMode::kDtr},
};
constexpr Choice<Severity> kSeverities[] = {
    {"error", Severity::kError},
    {"warn", Severity::kWarn},
    {"info", Severity::kInfo},
    {"debug", Severity::kDebug},
};
constexpr Choice<ProfileSwap> kProfileSwaps[] = {
    {"all", ProfileSwap::kAll},
    {"demand", ProfileSwap::kDemand},
};

constexpr Choice<PilotMode> kPilotModes[] = {
    {"on", PilotMode::kOn},
    {"off", PilotMode::kOff},
    {"ngram", PilotMode::kNgram},
    {"stump", PilotMode::kStump},
};

constexpr Choice<IterationMarker> kMarkers[] = {
    {"auto", IterationMarker::kAuto},
    {"sync", IterationMarker::kSync},
    {"nvtx", IterationMarker::kNvtx},
};

template <typename E, size_t N>
std::string ChoiceList(const Choice<E> (&choices)[N]) {
  std::vector<absl::string_view> names;
  for (const auto& c : choices) names.push_back(c.name);
  return absl::StrJoin(names, ", ");
}

template <typename E, size_t N>
absl::StatusOr<E> ParseChoice(absl::string_view name, absl::string_view value,
                              const Choice<E> (&choices)[N]) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(value));
  for (const auto& c : choices) {
    if (lower == c.name) return c.value;
  }
  return InvalidValue(name, value, absl::StrCat("unknown value (use ", ChoiceList(choices), ")"));
}

template <typename E, size_t N>
absl::string_view ChoiceName(E value, const Choice<E> (&choices)[N]) {
  for (const auto& c : choices) {
    if (c.value == value) return c.name;
  }
  return "?";
}

absl::StatusOr<int64_t> ParseSize(absl::string_view name, absl::string_view value) {
  absl::StatusOr<int64_t> bytes = ParseBytes(value);
  // ParseBytes already quotes the text: "'12QB': unknown unit ...".
  if (!bytes.ok())
    return absl::InvalidArgumentError(absl::StrCat(name, "=", bytes.status().message()));
  return *bytes;
}

absl::StatusOr<int> ParsePositiveInt(absl::string_view name, absl::string_view value) {
  const absl::string_view s = absl::StripAsciiWhitespace(value);
  int result = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), result);
  if (s.empty() || ec == std::errc::invalid_argument || end != s.data() + s.size()) {
    return InvalidValue(name, value, "expected a whole number >= 1");
  }
  if (ec == std::errc::result_out_of_range) return InvalidValue(name, value, "too large");
  if (result < 1) return InvalidValue(name, value, "must be >= 1");
  return result;
}

absl::StatusOr<bool> ParseBool(absl::string_view name, absl::string_view value) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(value));
  if (lower == "1" || lower == "on" || lower == "true" || lower == "yes") return true;
  if (lower == "0" || lower == "off" || lower == "false" || lower == "no") return false;
  return InvalidValue(name, value, "expected 1/0, on/off, true/false or yes/no");
}

// Applies one variable's (non-empty) value to the config.
using Apply = absl::Status (*)(absl::string_view name, absl::string_view value, Config& config);

struct Variable {
  ConfigVariable doc;
  Apply apply;
};

// Note [One table]
// ~~~~~~~~~~~~~~~~
// Every POOCH_* variable is one row here. Adding a variable = adding a row
// (and a field in Config); the docs/usage.md table is generated from the same rows.
const Variable kVariables[] = {
    {{"POOCH_MEMORY_LIMIT", "device's free memory", "size, or a percentage such as 40%",
      "Device memory pooch may use for the program's allocations; beyond it, data is swapped to "
      "host memory. A percentage in (0, 100] is of the device's total memory. An allocation "
      "larger than the limit fails as an ordinary out-of-memory error. "
      "A limit above the device's free memory at start-up is lowered to it, with one line."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       if (IsPercent(value)) {
         absl::StatusOr<double> fraction = ParsePercent(value);
         if (!fraction.ok()) {
           return absl::InvalidArgumentError(absl::StrCat(name, "=", fraction.status().message()));
         }
         c.memory_limit.reset();
         c.memory_limit_fraction = *fraction;
         return absl::OkStatus();
       }
       absl::StatusOr<int64_t> bytes = ParseSize(name, value);
       if (!bytes.ok()) return bytes.status();
       if (*bytes == 0) return InvalidValue(name, value, "must be greater than 0");
       c.memory_limit = *bytes;
       return absl::OkStatus();
     }},
    {{"POOCH_MIN_SWAP_BYTES", "1MiB", "size",
      "Allocations smaller than this always stay on the device, packed into slabs of "
      "max(2 MiB, this size); 0 or 1 makes every allocation swappable."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       absl::StatusOr<int64_t> bytes = ParseSize(name, value);
       if (!bytes.ok()) return bytes.status();
       c.min_swap_bytes = *bytes;
       return absl::OkStatus();
     }},
    {{"POOCH_HOST_MEMORY_LIMIT", "unlimited", "size",
      "Pinned host memory pooch may use for swapped data. When it is full, further swaps fail "
      "and the allocation that needed them gets an out-of-memory error; no data is lost, and "
      "copies still read swapped-out data from its host copy."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       absl::StatusOr<int64_t> bytes = ParseSize(name, value);
       if (!bytes.ok()) return bytes.status();
       c.host_memory_limit = *bytes;
       return absl::OkStatus();
     }},
    {{"POOCH_POLICY", "pooch",
      "off, demand, dtr, in-core, swap-all-nosched, swap-all, swap-opt, pooch, superneurons, "
      "checkpoint, optimal",
      "off: pass every call through. demand: swap least recently used data out when the limit "
      "is reached and back in before an op touches it. dtr: Dynamic Tensor Rematerialization, "
      "no profile: when the limit is reached, evict the lowest cost / (size x staleness) first, "
      "dropping a map that replaying the cuDNN or cuBLAS call that produced it rebuilds exactly "
      "(and "
      "rebuilding it when touched) and swapping anything else. A planner policy name profiles the "
      "first iterations, plans them with that policy and carries out the plan: swaps with "
      "scheduled prefetches, recomputations by replaying the cuDNN or cuBLAS call that produced "
      "the map, "
      "with demand swapping underneath as the safety net."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(value));
       for (const auto& m : kRunModes) {
         if (lower == m.name) {
           c.mode = m.value;
           return absl::OkStatus();
         }
       }
       absl::StatusOr<Policy> p = ParsePolicy(lower);
       if (!p.ok()) {
         std::vector<std::string> names = {"off", "demand", "dtr"};
         for (Policy q : AllPolicies()) names.emplace_back(PolicyName(q));
         return InvalidValue(name, value,
                             absl::StrCat("unknown value (use ", absl::StrJoin(names, ", "), ")"));
       }
       c.mode = RunMode::kPlanned;
       c.planned_policy = *p;
       return absl::OkStatus();
     }},
    {{"POOCH_TRACE", "off", "path (%r, %p)",
      "Write a Chrome trace (Perfetto, chrome://tracing) of ops, swaps and memory to this file "
      "at exit."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       if (absl::Status s = CheckPathPattern(name, value); !s.ok()) return s;
       c.trace_path = std::string(value);
       return absl::OkStatus();
     }},
    {{"POOCH_PLOT", "off", "path (%r, %p)",
      "Draw each plan pooch makes as a PNG here (the last plan wins): device memory over one "
      "iteration in-core and under the plan, the limit it was planned for, and the compute, "
      "recompute, swap-out and swap-in activity beneath it. Needs gnuplot (Debian: "
      "gnuplot-nox); without it, or when the file cannot be written, one line and training "
      "goes on."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       if (absl::Status s = CheckPathPattern(name, value); !s.ok()) return s;
       c.plot_path = std::string(value);
       return absl::OkStatus();
     }},
    {{"POOCH_LOG", "warn", "error, warn, info, debug",
      "The least severe message printed on stderr."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       absl::StatusOr<Severity> l = ParseChoice(name, value, kSeverities);
       if (!l.ok()) return l.status();
       c.log_level = *l;
       return absl::OkStatus();
     }},
    {{"POOCH_SUMMARY", "on", "1/0, on/off, true/false, yes/no",
      "Print a summary on stderr at exit: a few plain lines (the limit and the peak, what moved "
      "and how much, the plan with its predicted and measured iteration, what went wrong); the "
      "detailed key-value lines as well at POOCH_LOG=info."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       absl::StatusOr<bool> b = ParseBool(name, value);
       if (!b.ok()) return b.status();
       c.summary = *b;
       return absl::OkStatus();
     }},
    {{"POOCH_SUMMARY_FILE", "not written", "path (%r, %p)",
      "Write the summary at exit here as one JSON object (even with POOCH_SUMMARY=0): the plain "
      "lines' figures, and each detailed line's keys and values under \"detail\"."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       if (absl::Status s = CheckPathPattern(name, value); !s.ok()) return s;
       c.summary_file = std::string(value);
       return absl::OkStatus();
     }},
    {{"POOCH_PROFILE_ITERS", "2", "integer >= 1",
      "Iterations measured before a plan is made (under a planner policy or with "
      "POOCH_PROFILE_OUT)."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       absl::StatusOr<int> n = ParsePositiveInt(name, value);
       if (!n.ok()) return n.status();
       c.profile_iters = *n;
       return absl::OkStatus();
     }},
    {{"POOCH_PROFILE_OUT", "not written", "path (%r, %p)",
      "Write the measured profile (pooch-profile JSON, input of `pooch plan --profile`) here; "
      "setting it turns profiling on under any policy but off."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       if (absl::Status s = CheckPathPattern(name, value); !s.ok()) return s;
       c.profile_out = std::string(value);
       return absl::OkStatus();
     }},
    {{"POOCH_REPROFILE_AFTER", "3", "integer >= 1",
      "Iterations that depart from the profile (run under demand swapping) before pooch "
      "profiles again. With POOCH_ITERATION_MARKER=sync or nvtx, only until the first departure "
      "under a plan: from then on each departed iteration is profiled as it runs and planned at "
      "its end."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       absl::StatusOr<int> n = ParsePositiveInt(name, value);
       if (!n.ok()) return n.status();
       c.reprofile_after = *n;
       return absl::OkStatus();
     }},
    {{"POOCH_PROFILE_SWAP", "all", "all, demand",
      "What the profiled iteration runs under, with a planner policy. all: every interval that "
      "matters is swapped, so that each swapped tensor's copy times are measured (PoocH 4.2; one "
      "more iteration "
      "of profiling; demand when swap-all does not fit). demand: the profile is the last of "
      "the iterations in which the iteration was found, run under demand swapping."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       absl::StatusOr<ProfileSwap> p = ParseChoice(name, value, kProfileSwaps);
       if (!p.ok()) return p.status();
       c.profile_swap = *p;
       return absl::OkStatus();
     }},
    {{"POOCH_ITERATION_MARKER", "auto", "auto, sync, nvtx",
      "How iterations are delimited: auto from the repetition of the op stream, sync at each "
      "device synchronisation, nvtx at each NVTX range named pooch:iteration the program "
      "pushes (pooch makes itself the NVTX_INJECTION64_PATH tool)."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       absl::StatusOr<IterationMarker> m = ParseChoice(name, value, kMarkers);
       if (!m.ok()) return m.status();
       c.iteration_marker = *m;
       return absl::OkStatus();
     }},
    {{"POOCH_LINEAGE_OUT", "not written", "path (%r, %p)",
      "Written as JSON here at exit, under a planner policy or dtr: the replay recipes pooch "
      "holds then (each recomputable map's producer: its output and bytes, the call, its "
      "profiled time (under dtr: measured), whether the map is dropped or kept, the allocations it "
      "reads) and the recompute counters."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       if (absl::Status s = CheckPathPattern(name, value); !s.ok()) return s;
       c.lineage_out = std::string(value);
       return absl::OkStatus();
     }},
    {{"POOCH_CHECK_REPLAYS", "off", "1/0, on/off, true/false, yes/no",
      "Check every recomputation: each map pooch drops is first copied to host memory, and the "
      "bytes its replay rebuilds (cuDNN, cuBLAS, chains, kernel launches) are compared with the "
      "copy. A difference stops the program with one line `pooch: replay check: ...` naming the "
      "call or kernel, the map's address and size and the first differing offset, exit status "
      "70. Costs host memory for the maps dropped at once and a host wait per drop and replay. "
      "The count of checked replays is in the summary's replay_check: line."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       absl::StatusOr<bool> b = ParseBool(name, value);
       if (!b.ok()) return b.status();
       c.check_replays = *b;
       return absl::OkStatus();
     }},
    {{"POOCH_PILOT", "on", "on, off, ngram, stump",
      "Under a planner policy, the pilot model of dynamic networks: at each small synchronous "
      "read-back to the host it predicts what the next block of ops touches and prefetches it, "
      "while no plan that moves anything is followed. on: the better of its two models so far; "
      "ngram, stump: that model; off: no pilot."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       absl::StatusOr<PilotMode> m = ParseChoice(name, value, kPilotModes);
       if (!m.ok()) return m.status();
       c.pilot = *m;
       return absl::OkStatus();
     }},
    {{"POOCH_KERNEL_ANALYSIS", "on", "on, off",
      "Read each launched kernel's machine code (nvdisasm, cuobjdump: PATH, CUDA_HOME or their "
      "pip packages) the first time it launches, so that a kernel proven to reach only some of "
      "its parameter words counts as touching only those (docs/usage.md, \"Kernel launches\"). "
      "off: every kernel may read and write all that its words point into."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       absl::StatusOr<bool> on = ParseBool(name, value);
       if (!on.ok()) return on.status();
       c.kernel_analysis = *on;
       return absl::OkStatus();
     }},
    {{"POOCH_KERNEL_ARCH", "the device's", "sm_NN",
      "The architecture whose SASS the kernel analysis reads in place of the device's: for "
      "simulators (simgpu's v100 preset, which nvcc 13 cannot build for) and devices that run "
      "PTX compiled at load time. The verdicts then rest on the same source compiled for that "
      "architecture."},
     [](absl::string_view name, absl::string_view value, Config& c) -> absl::Status {
       int sm = 0;
       if (!absl::StartsWith(value, "sm_") || !absl::SimpleAtoi(value.substr(3), &sm) || sm < 10) {
         return InvalidValue(name, value, "expected sm_NN, such as sm_90");
       }
       c.kernel_arch = std::string(value);
       return absl::OkStatus();
     }},
    {{"POOCH_KERNEL_CACHE", "$XDG_CACHE_HOME/pooch/kernels, else ~/.cache/pooch/kernels",
      "folder, or off",
      "Where the kernel analysis keeps its verdicts, one file per module and architecture, so "
      "that a second run disassembles nothing. off: in memory only."},
     [](absl::string_view, absl::string_view value, Config& c) -> absl::Status {
       c.kernel_cache = std::string(value);
       return absl::OkStatus();
     }},
};

}  // namespace

absl::Span<const ConfigVariable> ConfigVariables() {
  static const std::vector<ConfigVariable>* const docs = [] {
    auto* v = new std::vector<ConfigVariable>;
    for (const Variable& var : kVariables) v->push_back(var.doc);
    return v;
  }();
  return *docs;
}

absl::StatusOr<Config> LoadConfig(const std::function<const char*(const char*)>& getenv) {
  Config config;
  for (const Variable& var : kVariables) {
    const std::string name(var.doc.name);
    const char* value = getenv(name.c_str());
    if (value == nullptr || *value == '\0') continue;  // unset or empty: the default
    absl::Status status = var.apply(var.doc.name, value, config);
    if (!status.ok()) return status;
  }
  return config;
}

std::string ConfigMarkdownTable() {
  std::string out = "| Variable | Default | Meaning |\n|---|---|---|\n";
  for (const Variable& var : kVariables) {
    absl::StrAppend(&out, "| `", var.doc.name, "` | ", var.doc.default_text, " | ", var.doc.help,
                    " (", var.doc.units, ") |\n");
  }
  return out;
}

std::vector<std::string> UnknownPoochVariables(absl::Span<const std::string> names) {
  std::vector<std::string> unknown;
  for (const std::string& name : names) {
    if (!absl::StartsWith(name, "POOCH_")) continue;
    const bool known = std::any_of(std::begin(kVariables), std::end(kVariables),
                                   [&](const Variable& v) { return v.doc.name == name; });
    if (!known) unknown.push_back(name);
  }
  return unknown;
}

absl::string_view PolicyText(const Config& config) {
  if (config.mode == RunMode::kPlanned) return PolicyName(config.planned_policy);
  return ChoiceName(config.mode, kRunModes);
}
absl::string_view SeverityName(Severity severity) { return ChoiceName(severity, kSeverities); }
absl::string_view IterationMarkerName(IterationMarker marker) {
  return ChoiceName(marker, kMarkers);
}

absl::StatusOr<ResidencyOptions> ResidencyOptionsFromConfig(const Config& config, Device& device,
                                                            std::optional<int64_t>* clamped_from) {
  ResidencyOptions options;
  absl::StatusOr<DeviceMemoryInfo> info = device.MemoryInfo();
  if (!info.ok()) {
    return absl::Status(info.status().code(),
                        absl::StrCat("cannot read the device's memory: ", info.status().message()));
  }
  // No limit could hold anything, and the manager needs one above 0.
  if (info->free_bytes <= 0) return absl::ResourceExhaustedError("the device has no free memory");
  std::optional<int64_t> wanted = config.memory_limit;
  if (config.memory_limit_fraction.has_value()) {
    if (info->total_bytes <= 0) {
      return absl::FailedPreconditionError(
          "POOCH_MEMORY_LIMIT is a percentage, but the device reports no total memory");
    }
    // At least one byte: the manager needs a limit above 0.
    wanted = std::max<int64_t>(
        1, static_cast<int64_t>(static_cast<double>(info->total_bytes) *
                                *config.memory_limit_fraction));
  }
  options.memory_limit = std::min(wanted.value_or(info->free_bytes), info->free_bytes);
  if (clamped_from != nullptr) {
    *clamped_from =
        wanted.has_value() && *wanted > info->free_bytes ? wanted : std::nullopt;
  }
  options.min_swap_bytes = config.min_swap_bytes;
  options.host_memory_limit = config.host_memory_limit;
  if (config.mode == RunMode::kDtr) options.eviction = ResidencyOptions::Eviction::kDtr;
  return options;
}

}  // namespace pooch
