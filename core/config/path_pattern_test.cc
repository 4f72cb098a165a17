#include "core/config/path_pattern.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace pooch {
namespace {

std::function<const char*(const char*)> Env(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(ProcessRank, RankFirstThenLocalRank) {
  EXPECT_EQ(ProcessRank(Env({{"RANK", "3"}, {"LOCAL_RANK", "1"}})), 3);
  EXPECT_EQ(ProcessRank(Env({{"LOCAL_RANK", "1"}})), 1);
  EXPECT_EQ(ProcessRank(Env({{"RANK", "x"}, {"LOCAL_RANK", "2"}})), 2);
}

TEST(ProcessRank, NoneWithoutANonNegativeInteger) {
  EXPECT_EQ(ProcessRank(Env({})), std::nullopt);
  EXPECT_EQ(ProcessRank(Env({{"RANK", "-1"}})), std::nullopt);
  EXPECT_EQ(ProcessRank(Env({{"RANK", ""}, {"LOCAL_RANK", "one"}})), std::nullopt);
}

TEST(ExpandPathPattern, RankPidAndPercent) {
  const ProcessIdentity id{.rank = 1, .pid = 4242};
  EXPECT_EQ(ExpandPathPattern("trace-%r.json", id), "trace-1.json");
  EXPECT_EQ(ExpandPathPattern("/tmp/%r/%p-%r.json", id), "/tmp/1/4242-1.json");
  EXPECT_EQ(ExpandPathPattern("100%%-%p", id), "100%-4242");
  EXPECT_EQ(ExpandPathPattern("plain.json", id), "plain.json");
}

TEST(ExpandPathPattern, NoRankIsZero) {
  EXPECT_EQ(ExpandPathPattern("s-%r.json", {.rank = std::nullopt, .pid = 7}), "s-0.json");
}

TEST(CheckPathPattern, AcceptsTheKnownSequences) {
  EXPECT_TRUE(CheckPathPattern("POOCH_TRACE", "t-%r-%p-%%.json").ok());
  EXPECT_TRUE(CheckPathPattern("POOCH_TRACE", "t.json").ok());
}

TEST(CheckPathPattern, RefusesOthersInOneLine) {
  const absl::Status s = CheckPathPattern("POOCH_TRACE", "t-%x.json");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "POOCH_TRACE='t-%x.json': unknown pattern '%x' in the path (use %r for the rank, %p "
            "for the process id, %% for %)");
  EXPECT_FALSE(CheckPathPattern("POOCH_PLOT", "plot%").ok());
  EXPECT_FALSE(CheckPathPattern("POOCH_PLOT", "%R").ok());
}

}  // namespace
}  // namespace pooch
