#include "tests/simgpu/device/config/config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace simgpu {
namespace {

Config Parse(const std::map<std::string, std::string>& env) {
  return ParseConfig([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

uint64_t Size(const char* text) {
  std::string why;
  std::optional<uint64_t> v = ParseSize(text, &why);
  EXPECT_TRUE(v.has_value()) << text << ": " << why;
  return v.value_or(0);
}

std::string SizeError(const char* text) {
  std::string why;
  EXPECT_FALSE(ParseSize(text, &why).has_value()) << text;
  return why;
}

TEST(ParseSize, Units) {
  EXPECT_EQ(Size("0"), 0u);
  EXPECT_EQ(Size("1048576"), 1048576u);
  EXPECT_EQ(Size("16GiB"), uint64_t{16} << 30);
  EXPECT_EQ(Size("2KiB"), 2048u);
  EXPECT_EQ(Size("3MiB"), uint64_t{3} << 20);
  EXPECT_EQ(Size("1TiB"), uint64_t{1} << 40);
  EXPECT_EQ(Size("5KB"), 5000u);
  EXPECT_EQ(Size("7MB"), 7000000u);
  EXPECT_EQ(Size("2GB"), 2000000000u);
  EXPECT_EQ(Size("1TB"), 1000000000000u);
  EXPECT_EQ(Size("4K"), 4096u);
  EXPECT_EQ(Size("4M"), uint64_t{4} << 20);
  EXPECT_EQ(Size("4G"), uint64_t{4} << 30);
  EXPECT_EQ(Size("2T"), uint64_t{2} << 40);
  EXPECT_EQ(Size("1.5GiB"), uint64_t{3} << 29);
  EXPECT_EQ(Size(" 8 GiB "), uint64_t{8} << 30);
}

TEST(ParseSize, Errors) {
  EXPECT_EQ(SizeError(""), "empty");
  EXPECT_EQ(SizeError("-1"), "negative");
  EXPECT_EQ(SizeError("-1GiB"), "negative");
  EXPECT_EQ(SizeError("12QB"), "unknown unit 'QB'");
  EXPECT_EQ(SizeError("16GiBx"), "unknown unit 'GiBx'");
  EXPECT_EQ(SizeError("GiB"), "no number");
  EXPECT_EQ(SizeError("1.5"), "a byte count must be whole");
  EXPECT_EQ(SizeError("1.2.3GiB"), "malformed number");
  EXPECT_EQ(SizeError("99999999999999999999"), "too large");
  EXPECT_EQ(SizeError("9999999999TiB"), "too large");
  EXPECT_EQ(SizeError("18446744073709551615"), "too large");
}

TEST(ParseConfig, Defaults) {
  Config c = Parse({});
  EXPECT_EQ(c.error, "");
  EXPECT_STREQ(c.machine.name, "v100-pcie3");
  EXPECT_EQ(c.machine.capacity_bytes, uint64_t{16} << 30);
  EXPECT_DOUBLE_EQ(c.machine.fp32_tflops, 15.7);
  EXPECT_DOUBLE_EQ(c.machine.mem_gbps, 900);
  EXPECT_DOUBLE_EQ(c.machine.h2d_gbps, 16);
  EXPECT_DOUBLE_EQ(c.machine.d2h_gbps, 16);
  EXPECT_EQ(c.compute, ComputeMode::kMath);
  EXPECT_EQ(c.hazards, HazardMode::kError);
  EXPECT_EQ(c.threads, 2);
  EXPECT_EQ(c.fail_api, "");
  EXPECT_EQ(c.host_mode, HostMode::kOn);
  EXPECT_DOUBLE_EQ(c.host_costs.us[static_cast<int>(HostCall::kLaunch)], 4);
}

TEST(ParseConfig, PresetAndOverrides) {
  Config c = Parse({{"SIMGPU_PRESET", "v100-nvlink2"},
                    {"SIMGPU_MEMORY", "64GiB"},
                    {"SIMGPU_D2H_GBPS", "8.5"},
                    {"SIMGPU_LAUNCH_US", "0"},
                    {"SIMGPU_COMPUTE", "timing"},
                    {"SIMGPU_HAZARDS", "warn"},
                    {"SIMGPU_THREADS", "4"},
                    {"SIMGPU_FAIL", "cuMemCreate:3"},
                    {"SIMGPU_TRACE", "/tmp/t.json"}});
  ASSERT_EQ(c.error, "");
  EXPECT_EQ(c.trace_path, "/tmp/t.json");
  EXPECT_DOUBLE_EQ(c.machine.h2d_gbps, 75);
  EXPECT_DOUBLE_EQ(c.machine.d2h_gbps, 8.5);
  EXPECT_DOUBLE_EQ(c.machine.launch_us, 0);
  EXPECT_EQ(c.machine.capacity_bytes, uint64_t{64} << 30);
  EXPECT_EQ(c.compute, ComputeMode::kTiming);
  EXPECT_EQ(c.hazards, HazardMode::kWarn);
  EXPECT_EQ(c.threads, 4);
  EXPECT_EQ(c.fail_api, "cuMemCreate");
  EXPECT_EQ(c.fail_call, 3u);
  for (const char* p : {"a100-pcie4", "h100-pcie5", "gh200", "h200"}) {
    EXPECT_STREQ(Parse({{"SIMGPU_PRESET", p}}).machine.name, p);
  }
  Config h200 = Parse({{"SIMGPU_PRESET", "h200"}, {"SIMGPU_HOST_COSTS", "shared"}});
  EXPECT_EQ(h200.machine.capacity_bytes, uint64_t{141} << 30);
  EXPECT_DOUBLE_EQ(h200.machine.mem_gbps, 4800);
  EXPECT_EQ(h200.host_mode, HostMode::kShared);
  EXPECT_DOUBLE_EQ(h200.host_costs.us[static_cast<int>(HostCall::kMemUnmap)], 118);
  Config off = Parse({{"SIMGPU_PRESET", "h200"}, {"SIMGPU_HOST_COSTS", "off"}});
  EXPECT_EQ(off.host_mode, HostMode::kOff);
  EXPECT_DOUBLE_EQ(off.host_costs.us[static_cast<int>(HostCall::kMemUnmap)], 0);
}

TEST(ParseConfig, InvalidValuesNameTheVariable) {
  const std::pair<const char*, const char*> bad[] = {
      {"SIMGPU_PRESET", "v200"},    {"SIMGPU_MEMORY", "12QB"},       {"SIMGPU_MEMORY", "0"},
      {"SIMGPU_MEMORY", "-4GiB"},   {"SIMGPU_TFLOPS", "fast"},       {"SIMGPU_TFLOPS", "-1"},
      {"SIMGPU_MEM_GBPS", "0"},     {"SIMGPU_H2D_GBPS", "nan"},      {"SIMGPU_D2H_GBPS", "1e999"},
      {"SIMGPU_LAUNCH_US", "-2"},   {"SIMGPU_COMPUTE", "fast"},      {"SIMGPU_HAZARDS", "maybe"},
      {"SIMGPU_THREADS", "0"},      {"SIMGPU_THREADS", "2x"},        {"SIMGPU_FAIL", "cudaMalloc"},
      {"SIMGPU_FAIL", "cudaFoo:1"}, {"SIMGPU_FAIL", "cudaMalloc:0"}, {"SIMGPU_TRACE", " "},
      {"SIMGPU_HOST_COSTS", "1"},
  };
  for (const auto& [var, value] : bad) {
    Config c = Parse({{var, value}});
    EXPECT_EQ(c.error.rfind(std::string(var) + "='" + value + "'", 0), 0u)
        << var << "=" << value << " gave '" << c.error << "'";
  }
}

}  // namespace
}  // namespace simgpu
