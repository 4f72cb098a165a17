#include "core/config/config.h"

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/residency/residency.h"
#include "core/testing/fake_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A fake environment for LoadConfig.
struct Env {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> Getenv() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

absl::StatusOr<Config> Load(std::map<std::string, std::string> vars) {
  Env env{std::move(vars)};
  return LoadConfig(env.Getenv());
}

std::string ErrorOf(std::map<std::string, std::string> vars) {
  absl::StatusOr<Config> c = Load(std::move(vars));
  EXPECT_FALSE(c.ok());
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(c.status().message());
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  return message;
}

TEST(ConfigTest, Defaults) {
  absl::StatusOr<Config> c = Load({});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->memory_limit.has_value());
  EXPECT_EQ(c->min_swap_bytes, 1 << 20);
  EXPECT_FALSE(c->host_memory_limit.has_value());
  EXPECT_EQ(c->mode, RunMode::kPlanned);
  EXPECT_EQ(c->planned_policy, Policy::kPooch);
  EXPECT_EQ(c->trace_path, "");
  EXPECT_EQ(c->plot_path, "");
  EXPECT_EQ(c->log_level, Severity::kWarn);
  EXPECT_TRUE(c->summary);
  EXPECT_EQ(c->profile_iters, 2);
  EXPECT_EQ(c->profile_out, "");
  EXPECT_EQ(c->reprofile_after, 3);
  EXPECT_EQ(c->iteration_marker, IterationMarker::kAuto);
  EXPECT_EQ(c->profile_swap, ProfileSwap::kAll);
  EXPECT_EQ(c->pilot, PilotMode::kOn);
  EXPECT_EQ(c->lineage_out, "");
  EXPECT_FALSE(c->check_replays);
}

TEST(ConfigTest, EmptyMeansDefault) {
  std::map<std::string, std::string> vars;
  for (const ConfigVariable& v : ConfigVariables()) vars[std::string(v.name)] = "";
  absl::StatusOr<Config> c = Load(vars);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->memory_limit.has_value());
  EXPECT_EQ(c->mode, RunMode::kPlanned);
}

TEST(ConfigTest, EveryVariableIsRead) {
  absl::StatusOr<Config> c = Load({
      {"POOCH_MEMORY_LIMIT", "12GiB"},
      {"POOCH_MIN_SWAP_BYTES", "4M"},
      {"POOCH_HOST_MEMORY_LIMIT", "64 GB"},
      {"POOCH_POLICY", "off"},
      {"POOCH_TRACE", "/tmp/t.json"},
      {"POOCH_PLOT", "/tmp/plan.png"},
      {"POOCH_LOG", "DEBUG"},
      {"POOCH_SUMMARY", "off"},
      {"POOCH_SUMMARY_FILE", "/tmp/s.json"},
      {"POOCH_PROFILE_ITERS", "5"},
      {"POOCH_PROFILE_OUT", "/tmp/p.json"},
      {"POOCH_REPROFILE_AFTER", "7"},
      {"POOCH_ITERATION_MARKER", "nvtx"},
      {"POOCH_PROFILE_SWAP", "Demand"},
      {"POOCH_PILOT", "ngram"},
      {"POOCH_LINEAGE_OUT", "/tmp/l.json"},
      {"POOCH_CHECK_REPLAYS", "1"},
  });
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->memory_limit, int64_t{12} << 30);
  EXPECT_EQ(c->min_swap_bytes, 4 << 20);
  EXPECT_EQ(c->host_memory_limit, int64_t{64} * 1000 * 1000 * 1000);
  EXPECT_EQ(c->mode, RunMode::kOff);
  EXPECT_EQ(c->trace_path, "/tmp/t.json");
  EXPECT_EQ(c->plot_path, "/tmp/plan.png");
  EXPECT_EQ(c->log_level, Severity::kDebug);
  EXPECT_FALSE(c->summary);
  EXPECT_EQ(c->summary_file, "/tmp/s.json");
  EXPECT_EQ(c->profile_iters, 5);
  EXPECT_EQ(c->profile_out, "/tmp/p.json");
  EXPECT_EQ(c->reprofile_after, 7);
  EXPECT_EQ(c->iteration_marker, IterationMarker::kNvtx);
  EXPECT_EQ(c->profile_swap, ProfileSwap::kDemand);
  EXPECT_EQ(c->lineage_out, "/tmp/l.json");
  EXPECT_TRUE(c->check_replays);
  EXPECT_EQ(c->pilot, PilotMode::kNgram);
}

TEST(ConfigTest, EveryPolicyName) {
  for (absl::string_view mode_name : {"off", "demand", "dtr", "OFF"}) {
    absl::StatusOr<Config> c = Load({{"POOCH_POLICY", std::string(mode_name)}});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_NE(c->mode, RunMode::kPlanned) << mode_name;
  }
  // Every planner policy is accepted by its planner name and round-trips through PolicyText.
  for (Policy p : AllPolicies()) {
    absl::StatusOr<Config> c = Load({{"POOCH_POLICY", std::string(PolicyName(p))}});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->mode, RunMode::kPlanned) << PolicyName(p);
    EXPECT_EQ(c->planned_policy, p) << PolicyName(p);
    EXPECT_EQ(PolicyText(*c), PolicyName(p));
  }
  absl::StatusOr<Config> bad = Load({{"POOCH_POLICY", "fastest"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("off, demand, dtr, in-core"), absl::string_view::npos)
      << bad.status();
}

TEST(ConfigTest, LogLevelsAndMarkers) {
  for (Severity l : {Severity::kError, Severity::kWarn, Severity::kInfo, Severity::kDebug}) {
    absl::StatusOr<Config> c = Load({{"POOCH_LOG", std::string(SeverityName(l))}});
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->log_level, l);
  }
  for (IterationMarker m :
       {IterationMarker::kAuto, IterationMarker::kSync, IterationMarker::kNvtx}) {
    absl::StatusOr<Config> c =
        Load({{"POOCH_ITERATION_MARKER", std::string(IterationMarkerName(m))}});
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->iteration_marker, m);
  }
}

TEST(ConfigTest, Booleans) {
  for (const char* yes : {"1", "on", "true", "TRUE", "yes", " On "}) {
    absl::StatusOr<Config> c = Load({{"POOCH_SUMMARY", yes}});
    ASSERT_TRUE(c.ok()) << yes;
    EXPECT_TRUE(c->summary) << yes;
  }
  for (const char* no : {"0", "off", "false", "no"}) {
    absl::StatusOr<Config> c = Load({{"POOCH_SUMMARY", no}});
    ASSERT_TRUE(c.ok()) << no;
    EXPECT_FALSE(c->summary) << no;
  }
}

TEST(ConfigTest, SizeErrors) {
  EXPECT_THAT(ErrorOf({{"POOCH_MEMORY_LIMIT", "12QB"}}),
              StartsWith("POOCH_MEMORY_LIMIT='12QB': unknown unit 'QB' (use B, KiB"));
  EXPECT_THAT(ErrorOf({{"POOCH_MEMORY_LIMIT", "-1G"}}),
              StartsWith("POOCH_MEMORY_LIMIT='-1G': a size cannot be negative"));
  EXPECT_THAT(ErrorOf({{"POOCH_MEMORY_LIMIT", "0"}}),
              StartsWith("POOCH_MEMORY_LIMIT='0': must be greater than 0"));
  EXPECT_THAT(ErrorOf({{"POOCH_MEMORY_LIMIT", "99999999999TiB"}}), HasSubstr("too large"));
  EXPECT_THAT(ErrorOf({{"POOCH_MIN_SWAP_BYTES", "1.5"}}),
              StartsWith("POOCH_MIN_SWAP_BYTES='1.5': "));
  EXPECT_THAT(ErrorOf({{"POOCH_HOST_MEMORY_LIMIT", "lots"}}),
              StartsWith("POOCH_HOST_MEMORY_LIMIT='lots': expected a number"));
}

// POOCH_MEMORY_LIMIT=40%: a fraction of the device, in (0, 100], decimals allowed.
TEST(ConfigTest, MemoryLimitAsAPercentage) {
  absl::StatusOr<Config> c = Load({{"POOCH_MEMORY_LIMIT", "40%"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->memory_limit.has_value());
  EXPECT_DOUBLE_EQ(*c->memory_limit_fraction, 0.4);
  c = Load({{"POOCH_MEMORY_LIMIT", " 12.5 % "}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(*c->memory_limit_fraction, 0.125);
  c = Load({{"POOCH_MEMORY_LIMIT", "100%"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(*c->memory_limit_fraction, 1.0);
  c = Load({{"POOCH_MEMORY_LIMIT", "1GiB"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->memory_limit_fraction.has_value());
}

TEST(ConfigTest, PercentageErrors) {
  EXPECT_EQ(ErrorOf({{"POOCH_MEMORY_LIMIT", "0%"}}),
            "POOCH_MEMORY_LIMIT='0%': a percentage must be greater than 0%");
  EXPECT_EQ(ErrorOf({{"POOCH_MEMORY_LIMIT", "0.0%"}}),
            "POOCH_MEMORY_LIMIT='0.0%': a percentage must be greater than 0%");
  EXPECT_EQ(ErrorOf({{"POOCH_MEMORY_LIMIT", "150%"}}),
            "POOCH_MEMORY_LIMIT='150%': a percentage must be at most 100%");
  EXPECT_EQ(ErrorOf({{"POOCH_MEMORY_LIMIT", "100.01%"}}),
            "POOCH_MEMORY_LIMIT='100.01%': a percentage must be at most 100%");
  EXPECT_EQ(ErrorOf({{"POOCH_MEMORY_LIMIT", "-5%"}}),
            "POOCH_MEMORY_LIMIT='-5%': a percentage cannot be negative");
  for (const char* bad : {"abc%", "40%%", "%", "4.%", ".5%", "1e2%", "40 GiB%", "0x10%"}) {
    EXPECT_EQ(ErrorOf({{"POOCH_MEMORY_LIMIT", bad}}),
              absl::StrCat("POOCH_MEMORY_LIMIT='", bad, "': expected a number before '%'"))
        << bad;
  }
}

TEST(ConfigTest, ZeroIsAllowedWhereItMeansSomething) {
  absl::StatusOr<Config> c =
      Load({{"POOCH_MIN_SWAP_BYTES", "0"}, {"POOCH_HOST_MEMORY_LIMIT", "0"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->min_swap_bytes, 0);
  EXPECT_EQ(c->host_memory_limit, 0);
}

TEST(ConfigTest, ChoiceErrors) {
  EXPECT_EQ(ErrorOf({{"POOCH_POLICY", "lru"}}),
            "POOCH_POLICY='lru': unknown value (use off, demand, dtr, in-core, swap-all-nosched, "
            "swap-all, swap-opt, pooch, superneurons, checkpoint, optimal)");
  EXPECT_EQ(ErrorOf({{"POOCH_LOG", "verbose"}}),
            "POOCH_LOG='verbose': unknown value (use error, warn, info, debug)");
  EXPECT_EQ(ErrorOf({{"POOCH_ITERATION_MARKER", "step"}}),
            "POOCH_ITERATION_MARKER='step': unknown value (use auto, sync, nvtx)");
  EXPECT_EQ(ErrorOf({{"POOCH_PILOT", "yes"}}),
            "POOCH_PILOT='yes': unknown value (use on, off, ngram, stump)");
  EXPECT_EQ(ErrorOf({{"POOCH_PROFILE_SWAP", "some"}}),
            "POOCH_PROFILE_SWAP='some': unknown value (use all, demand)");
  EXPECT_THAT(ErrorOf({{"POOCH_SUMMARY", "maybe"}}),
              StartsWith("POOCH_SUMMARY='maybe': expected 1/0"));
}

// Note [One pooch per process]: every path variable takes %r, %p and %%, kept as written until
// the process expands them; any other % sequence is refused.
TEST(ConfigTest, PathPatterns) {
  absl::StatusOr<Config> c = Load({{"POOCH_TRACE", "t-%r.json"},
                                   {"POOCH_PLOT", "p-%p.png"},
                                   {"POOCH_SUMMARY_FILE", "s-%r-%p.json"},
                                   {"POOCH_PROFILE_OUT", "100%%.json"},
                                   {"POOCH_LINEAGE_OUT", "l-%r.json"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->trace_path, "t-%r.json");
  EXPECT_EQ(c->summary_file, "s-%r-%p.json");
  EXPECT_EQ(c->profile_out, "100%%.json");
  for (const char* name : {"POOCH_TRACE", "POOCH_PLOT", "POOCH_SUMMARY_FILE", "POOCH_PROFILE_OUT",
                           "POOCH_LINEAGE_OUT"}) {
    EXPECT_EQ(ErrorOf({{name, "f-%x"}}),
              absl::StrCat(name,
                           "='f-%x': unknown pattern '%x' in the path (use %r for the rank, "
                           "%p for the process id, %% for %)"));
  }
}

TEST(ConfigTest, IntegerErrors) {
  EXPECT_EQ(ErrorOf({{"POOCH_PROFILE_ITERS", "0"}}), "POOCH_PROFILE_ITERS='0': must be >= 1");
  EXPECT_EQ(ErrorOf({{"POOCH_PROFILE_ITERS", "-3"}}), "POOCH_PROFILE_ITERS='-3': must be >= 1");
  EXPECT_EQ(ErrorOf({{"POOCH_PROFILE_ITERS", "2x"}}),
            "POOCH_PROFILE_ITERS='2x': expected a whole number >= 1");
  EXPECT_EQ(ErrorOf({{"POOCH_REPROFILE_AFTER", "abc"}}),
            "POOCH_REPROFILE_AFTER='abc': expected a whole number >= 1");
  EXPECT_EQ(ErrorOf({{"POOCH_REPROFILE_AFTER", "99999999999999"}}),
            "POOCH_REPROFILE_AFTER='99999999999999': too large");
}

TEST(ConfigTest, FirstErrorInTableOrder) {
  EXPECT_THAT(ErrorOf({{"POOCH_LOG", "x"}, {"POOCH_MEMORY_LIMIT", "y"}}),
              StartsWith("POOCH_MEMORY_LIMIT="));
}

TEST(ConfigTest, MarkdownTableListsEveryVariable) {
  const std::string table = ConfigMarkdownTable();
  EXPECT_THAT(table, StartsWith("| Variable | Default | Meaning |\n|---|---|---|\n"));
  EXPECT_EQ(ConfigVariables().size(), 20u);
  for (const ConfigVariable& v : ConfigVariables()) {
    EXPECT_THAT(table, HasSubstr(absl::StrCat("| `", v.name, "` | ", v.default_text, " |")));
  }
}

TEST(ConfigTest, UnknownVariables) {
  const std::vector<std::string> names = {"PATH", "POOCH_MEMORY_LIMIT", "POOCH_MEMORY_LIMT",
                                          "POOCH_POLICY", "SIMGPU_PRESET"};
  EXPECT_EQ(UnknownPoochVariables(names), std::vector<std::string>{"POOCH_MEMORY_LIMT"});
}

TEST(ResidencyOptionsTest, FromConfig) {
  FakeDevice::Options o;
  o.capacity = 1 << 30;
  FakeDevice device(o);
  Config config;
  absl::StatusOr<ResidencyOptions> r = ResidencyOptionsFromConfig(config, device);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->memory_limit, 1 << 30);
  config.memory_limit = 12345;
  config.host_memory_limit = 678;
  config.min_swap_bytes = 9;
  r = ResidencyOptionsFromConfig(config, device);
  EXPECT_EQ(r->memory_limit, 12345);
  EXPECT_EQ(r->host_memory_limit, 678);
  EXPECT_EQ(r->min_swap_bytes, 9);
  EXPECT_FALSE(ResidencyManager::Create(device, ResidencyOptions{}).ok());
  // Only dtr evicts by DTR's heuristic (Note [DTR eviction]); demand and the planners by LRU.
  EXPECT_EQ(r->eviction, ResidencyOptions::Eviction::kLru);
  config.mode = RunMode::kDemand;
  EXPECT_EQ(ResidencyOptionsFromConfig(config, device)->eviction, ResidencyOptions::Eviction::kLru);
  config.mode = RunMode::kDtr;
  EXPECT_EQ(ResidencyOptionsFromConfig(config, device)->eviction, ResidencyOptions::Eviction::kDtr);
}

// A percentage is of the device's total memory, not of what is free, and is clamped to the free
// memory as a size is.
TEST(ResidencyOptionsTest, PercentageOfTheDevice) {
  FakeDevice::Options o;
  o.capacity = 1000 << 20;
  FakeDevice device(o);
  Config config;
  config.memory_limit_fraction = 0.4;
  std::optional<int64_t> clamped_from = 1;
  absl::StatusOr<ResidencyOptions> r = ResidencyOptionsFromConfig(config, device, &clamped_from);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->memory_limit, 400 << 20);
  EXPECT_EQ(clamped_from, std::nullopt);
  // With 700 MiB in use, 40 % is still 400 MiB, more than the 300 MiB free: lowered to it.
  ASSERT_TRUE(device.CreatePhysical(700 << 20).ok());
  r = ResidencyOptionsFromConfig(config, device, &clamped_from);
  EXPECT_EQ(r->memory_limit, 300 << 20);
  EXPECT_EQ(clamped_from, int64_t{400} << 20);
  config.memory_limit_fraction = 0.125;
  r = ResidencyOptionsFromConfig(config, device, &clamped_from);
  EXPECT_EQ(r->memory_limit, 125 << 20);
  EXPECT_EQ(clamped_from, std::nullopt);
}

// A limit the device cannot reach is lowered to its free memory (and said, by the caller).
TEST(ResidencyOptionsTest, LimitAboveTheDeviceIsClamped) {
  FakeDevice::Options o;
  o.capacity = 1 << 30;
  FakeDevice device(o);
  Config config;
  std::optional<int64_t> clamped_from = 1;
  config.memory_limit = int64_t{3} << 30;
  absl::StatusOr<ResidencyOptions> r = ResidencyOptionsFromConfig(config, device, &clamped_from);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->memory_limit, 1 << 30);
  EXPECT_EQ(clamped_from, int64_t{3} << 30);
  config.memory_limit = 1 << 30;  // exactly what is free: kept
  r = ResidencyOptionsFromConfig(config, device, &clamped_from);
  EXPECT_EQ(r->memory_limit, 1 << 30);
  EXPECT_EQ(clamped_from, std::nullopt);
  config.memory_limit.reset();  // unset: the free memory, nothing to say
  r = ResidencyOptionsFromConfig(config, device, &clamped_from);
  EXPECT_EQ(r->memory_limit, 1 << 30);
  EXPECT_EQ(clamped_from, std::nullopt);
  // A full device: no limit can hold anything.
  ASSERT_TRUE(device.CreatePhysical(1 << 30).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(ResidencyOptionsFromConfig(config, device).status()));
}

}  // namespace
}  // namespace pooch
