// config.h: every SIMGPU_* variable, parsed and validated in one place.
//
//   SIMGPU_PRESET    v100-pcie3 | v100-nvlink2 | a100-pcie4 | h100-pcie5 | gh200 | h200
//                                                                             (v100-pcie3)
//   SIMGPU_MEMORY    device capacity, a size ("16GiB")                       (the preset's)
//   SIMGPU_TFLOPS    fp32 peak, TFLOP/s                                       (the preset's)
//   SIMGPU_MEM_GBPS  device memory bandwidth, GB/s                            (the preset's)
//   SIMGPU_H2D_GBPS  host-to-device link bandwidth, GB/s                      (the preset's)
//   SIMGPU_D2H_GBPS  device-to-host link bandwidth, GB/s                      (the preset's)
//   SIMGPU_LAUNCH_US latency added to every device op, microseconds           (the preset's)
//   SIMGPU_COMPUTE   math | timing                                            (math)
//   SIMGPU_HAZARDS   error | warn | off                                       (error)
//   SIMGPU_THREADS   CPU threads the math may use, 1..256                     (2)
//   SIMGPU_FAIL      <api>:<n>: the n-th call of <api> fails with out-of-memory (unset)
//   SIMGPU_TRACE     a file: the virtual timeline as Chrome trace events (trace.h) (unset)
//   SIMGPU_HOST_COSTS on | off | shared: API calls cost host time, per thread   (on)
//                    (Note [Host clocks] in time/host_clocks.h)
//
// Sizes: a byte count, or a number with a suffix KiB MiB GiB TiB (binary), KB MB GB TB
// (decimal), K M G T (binary); a fraction is allowed before a suffix ("1.5GiB"). Negative
// numbers, overflow and trailing garbage are errors.
//
// Thread safety: ParseConfig and ParseSize are pure; GlobalConfig() parses once (thread-safe
// static initialisation) and is immutable afterwards.
#ifndef SIMGPU_DEVICE_CONFIG_H_
#define SIMGPU_DEVICE_CONFIG_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "tests/simgpu/device/config/host_costs.h"
#include "tests/simgpu/device/config/presets.h"

namespace simgpu {

enum class ComputeMode { kMath, kTiming };
enum class HazardMode { kError, kWarn, kOff };
// SIMGPU_HOST_COSTS: costs charged on per-thread clocks, none on one clock, or charged on one.
enum class HostMode { kOn, kOff, kShared };

struct Config {
  Preset machine;  // the preset with SIMGPU_TFLOPS etc. applied; machine.capacity_bytes too
  ComputeMode compute = ComputeMode::kMath;
  HazardMode hazards = HazardMode::kError;
  int threads = 2;
  std::string fail_api;    // empty: no injected failure
  uint64_t fail_call = 0;  // 1-based index of the failing call of fail_api
  std::string trace_path;  // empty: no SIMGPU_TRACE
  HostMode host_mode = HostMode::kOn;
  HostCosts host_costs;    // the preset's; all zero under SIMGPU_HOST_COSTS=off
  std::string error;       // non-empty when a variable is invalid: the one line to print
};

// Parses the SIMGPU_* variables read through `getenv` (nullptr = unset). On an invalid value,
// returns a Config whose `error` names the variable and the problem; the rest is defaults.
Config ParseConfig(const std::function<const char*(const char*)>& getenv);

// The process's configuration, parsed from the environment on first use.
const Config& GlobalConfig();

// Parses a size as described above. On failure returns nullopt and sets *why.
std::optional<uint64_t> ParseSize(std::string_view text, std::string* why);

// The APIs SIMGPU_FAIL may name (each counts its own calls; `_v2` names count as the base).
bool IsFailableApi(std::string_view api);

}  // namespace simgpu

#endif  // SIMGPU_DEVICE_CONFIG_H_
