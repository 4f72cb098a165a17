#include "cli/flags.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch::cli {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<Flags> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "plan");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  FlagSpec spec;
  spec.values = {"model", "batch", "memory"};
  spec.switches = {"help"};
  return ParseFlags(static_cast<int>(argv.size()), argv.data(), spec);
}

TEST(FlagsTest, ValuesBothWays) {
  absl::StatusOr<Flags> f = Parse({"--model", "resnet50", "--batch=64", "--help"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->Get("model"), "resnet50");
  EXPECT_EQ(**f->GetInt("batch", 1, 100), 64);
  EXPECT_TRUE(f->Has("help"));
  EXPECT_FALSE(f->Get("memory").has_value());
  EXPECT_FALSE(f->GetBytes("memory", 1)->has_value());
}

TEST(FlagsTest, Errors) {
  EXPECT_THAT(Parse({"--nope", "1"}).status().message(), HasSubstr("unknown flag --nope"));
  EXPECT_THAT(Parse({"--model"}).status().message(), HasSubstr("missing value for --model"));
  EXPECT_THAT(Parse({"--model", "--help"}).status().message(),
              HasSubstr("missing value for --model"));
  EXPECT_THAT(Parse({"--help=1"}).status().message(), HasSubstr("takes no value"));
  EXPECT_THAT(Parse({"--batch", "1", "--batch", "2"}).status().message(), HasSubstr("given twice"));
  EXPECT_THAT(Parse({"resnet50"}).status().message(), HasSubstr("unexpected argument"));
  EXPECT_THAT(Parse({"--"}).status().message(), HasSubstr("unexpected argument"));
}

TEST(FlagsTest, IntegersAndSizes) {
  EXPECT_THAT(Parse({"--batch", "0"})->GetInt("batch", 1, 10).status().message(),
              HasSubstr("between 1 and 10"));
  EXPECT_THAT(Parse({"--batch", "1e3"})->GetInt("batch", 1, 10).status().message(),
              HasSubstr("not an integer"));
  EXPECT_THAT(Parse({"--batch", "99999999999999999999"})->GetInt("batch", 1, 10).status().message(),
              HasSubstr("not an integer"));
  EXPECT_EQ(**Parse({"--memory", "16GiB"})->GetBytes("memory", 1), int64_t{16} << 30);
  EXPECT_FALSE(Parse({"--memory", "0"})->GetBytes("memory", 1).ok());
  EXPECT_FALSE(Parse({"--memory", "-1G"})->GetBytes("memory", 1).ok());
}

}  // namespace
}  // namespace pooch::cli
