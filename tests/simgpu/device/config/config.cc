// Parsing of the SIMGPU_* variables (config.h). Deliberately independent of core/units: simgpu
// judges pooch and shares no code with it.
#include "tests/simgpu/device/config/config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace simgpu {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A positive finite decimal such as "15.7"; nullopt otherwise.
std::optional<double> ParsePositive(std::string_view text) {
  std::string s(Trim(text));
  if (s.empty() || s[0] == '-' || s[0] == '+') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v) || v <= 0) {
    return std::nullopt;
  }
  return v;
}

// A decimal integer in [lo, hi]; nullopt otherwise.
std::optional<uint64_t> ParseCount(std::string_view text, uint64_t lo, uint64_t hi) {
  std::string_view s = Trim(text);
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (v > (UINT64_MAX - (c - '0')) / 10) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

constexpr const char* kFailableApis[] = {
    "cudaMalloc",  "cudaMallocAsync", "cudaMallocHost",      "cudaHostAlloc",
    "cuMemAlloc",  "cuMemAllocAsync", "cuMemAllocHost",      "cuMemHostAlloc",
    "cuMemCreate", "cuMemMap",        "cuMemAddressReserve",
};

}  // namespace

bool IsFailableApi(std::string_view api) {
  for (const char* a : kFailableApis) {
    if (api == a) return true;
  }
  return false;
}

std::optional<uint64_t> ParseSize(std::string_view text, std::string* why) {
  std::string_view s = Trim(text);
  size_t i = 0;
  while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
  std::string_view number = s.substr(0, i);
  std::string_view unit = Trim(s.substr(i));
  if (number.empty()) {
    *why = s.empty() ? "empty" : (s[0] == '-' ? "negative" : "no number");
    return std::nullopt;
  }
  struct Unit {
    const char* name;
    double scale;
  };
  static constexpr Unit kUnits[] = {
      {"", 1.0},     {"KiB", 0x1p10}, {"MiB", 0x1p20}, {"GiB", 0x1p30}, {"TiB", 0x1p40},
      {"KB", 1e3},   {"MB", 1e6},     {"GB", 1e9},     {"TB", 1e12},    {"K", 0x1p10},
      {"M", 0x1p20}, {"G", 0x1p30},   {"T", 0x1p40},
  };
  const Unit* found = nullptr;
  for (const Unit& u : kUnits) {
    if (unit == u.name) found = &u;
  }
  if (found == nullptr) {
    *why = "unknown unit '" + std::string(unit) + "'";
    return std::nullopt;
  }
  bool has_dot = number.find('.') != std::string_view::npos;
  if (has_dot) {
    if (found->scale == 1.0) {
      *why = "a byte count must be whole";
      return std::nullopt;
    }
    if (number.find('.') != number.rfind('.') || number == ".") {
      *why = "malformed number";
      return std::nullopt;
    }
    std::string n(number);
    double v = std::strtod(n.c_str(), nullptr) * found->scale;
    if (!(v < 0x1p63)) {
      *why = "too large";
      return std::nullopt;
    }
    return static_cast<uint64_t>(v);
  }
  std::optional<uint64_t> whole = ParseCount(number, 0, UINT64_MAX);
  uint64_t scale = static_cast<uint64_t>(found->scale);
  if (!whole || *whole > (uint64_t{1} << 63) / scale) {
    *why = "too large";
    return std::nullopt;
  }
  return *whole * scale;
}

Config ParseConfig(const std::function<const char*(const char*)>& getenv) {
  Config c;
  c.machine = *FindPreset("v100-pcie3");
  auto fail = [&](const char* var, const char* value, const std::string& why) {
    Config bad;
    bad.machine = *FindPreset("v100-pcie3");
    bad.error = std::string(var) + "='" + value + "': " + why;
    return bad;
  };
  if (const char* v = getenv("SIMGPU_PRESET")) {
    const Preset* p = FindPreset(Trim(v));
    if (p == nullptr)
      return fail("SIMGPU_PRESET", v, std::string("expected one of ") + PresetNames());
    c.machine = *p;
  }
  if (const char* v = getenv("SIMGPU_MEMORY")) {
    std::string why;
    std::optional<uint64_t> bytes = ParseSize(v, &why);
    if (!bytes) return fail("SIMGPU_MEMORY", v, why);
    if (*bytes == 0 || *bytes > (uint64_t{1} << 46)) {
      return fail("SIMGPU_MEMORY", v, "must be between 1 byte and 64 TiB");
    }
    c.machine.capacity_bytes = *bytes;
  }
  struct Rate {
    const char* var;
    double* field;
  };
  Rate rates[] = {{"SIMGPU_TFLOPS", &c.machine.fp32_tflops},
                  {"SIMGPU_MEM_GBPS", &c.machine.mem_gbps},
                  {"SIMGPU_H2D_GBPS", &c.machine.h2d_gbps},
                  {"SIMGPU_D2H_GBPS", &c.machine.d2h_gbps}};
  for (const Rate& r : rates) {
    if (const char* v = getenv(r.var)) {
      std::optional<double> x = ParsePositive(v);
      if (!x) return fail(r.var, v, "expected a positive number");
      *r.field = *x;
    }
  }
  if (const char* v = getenv("SIMGPU_LAUNCH_US")) {
    std::string s(Trim(v));
    // Zero latency is allowed (an idealised device); negative is not.
    std::optional<double> x = s == "0" ? std::optional<double>(0.0) : ParsePositive(s);
    if (!x) return fail("SIMGPU_LAUNCH_US", v, "expected a number >= 0");
    c.machine.launch_us = *x;
  }
  if (const char* v = getenv("SIMGPU_COMPUTE")) {
    std::string_view s = Trim(v);
    if (s == "math") {
      c.compute = ComputeMode::kMath;
    } else if (s == "timing") {
      c.compute = ComputeMode::kTiming;
    } else {
      return fail("SIMGPU_COMPUTE", v, "expected math or timing");
    }
  }
  if (const char* v = getenv("SIMGPU_HAZARDS")) {
    std::string_view s = Trim(v);
    if (s == "error") {
      c.hazards = HazardMode::kError;
    } else if (s == "warn") {
      c.hazards = HazardMode::kWarn;
    } else if (s == "off") {
      c.hazards = HazardMode::kOff;
    } else {
      return fail("SIMGPU_HAZARDS", v, "expected error, warn or off");
    }
  }
  if (const char* v = getenv("SIMGPU_THREADS")) {
    std::optional<uint64_t> n = ParseCount(v, 1, 256);
    if (!n) return fail("SIMGPU_THREADS", v, "expected an integer from 1 to 256");
    c.threads = static_cast<int>(*n);
  }
  if (const char* v = getenv("SIMGPU_FAIL")) {
    std::string_view s = Trim(v);
    size_t colon = s.rfind(':');
    if (colon == std::string_view::npos) return fail("SIMGPU_FAIL", v, "expected <api>:<n>");
    std::string_view api = s.substr(0, colon);
    if (!IsFailableApi(api)) {
      return fail("SIMGPU_FAIL", v,
                  "unknown api; expected one of cudaMalloc, cudaMallocAsync, cudaMallocHost, "
                  "cudaHostAlloc, cuMemAlloc, cuMemAllocAsync, cuMemAllocHost, cuMemHostAlloc, "
                  "cuMemCreate, cuMemMap, cuMemAddressReserve");
    }
    std::optional<uint64_t> n = ParseCount(s.substr(colon + 1), 1, UINT64_MAX);
    if (!n) return fail("SIMGPU_FAIL", v, "<n> must be a positive integer");
    c.fail_api = std::string(api);
    c.fail_call = *n;
  }
  if (const char* v = getenv("SIMGPU_TRACE")) {
    if (Trim(v).empty()) return fail("SIMGPU_TRACE", v, "expected a file name");
    c.trace_path = v;
  }
  if (const char* v = getenv("SIMGPU_HOST_COSTS")) {
    std::string_view s = Trim(v);
    if (s == "on") {
      c.host_mode = HostMode::kOn;
    } else if (s == "off") {
      c.host_mode = HostMode::kOff;
    } else if (s == "shared") {
      c.host_mode = HostMode::kShared;
    } else {
      return fail("SIMGPU_HOST_COSTS", v, "expected on, off or shared");
    }
  }
  if (c.host_mode != HostMode::kOff) c.host_costs = HostCostsOf(c.machine.name);
  return c;
}

const Config& GlobalConfig() {
  static const Config* config =
      new Config(ParseConfig([](const char* n) { return std::getenv(n); }));
  return *config;
}

}  // namespace simgpu
