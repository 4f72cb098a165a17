#include "core/model/model_json.h"

#include <fstream>
#include <sstream>
#include <string>

#include "core/model/profile_testutil.h"
#include "core/plan/plan.h"
#include "core/sim/sim.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pooch {
namespace {

using ::pooch::testing::RandomProfile;
using ::pooch::testing::TestMachine;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kSmall = R"({
  "format": "pooch-profile", "version": 1, "name": "small",
  "tensors": [
    {"id": 0, "name": "x", "bytes": 1000, "feature_map": true, "alloc_before": -1, "free_after": 3},
    {"id": 1, "name": "y", "bytes": 2000, "feature_map": true, "alloc_before": 0, "free_after": 2},
    {"id": 2, "name": "gy", "bytes": 2000, "alloc_before": 1, "free_after": 3},
    {"id": 3, "name": "w", "bytes": 10}
  ],
  "ops": [
    {"name": "conv", "kind": "conv", "phase": "forward", "duration_us": 12.5,
     "reads": [0, 3], "writes": [1], "workspace_bytes": 64},
    {"name": "loss", "kind": "loss", "phase": "forward", "duration_us": 1, "reads": [1],
     "writes": [2]},
    {"name": "relu.backward", "kind": "activation", "phase": "backward", "duration_us": 3,
     "reads": [1, 2], "writes": [2]},
    {"name": "conv.backward", "kind": "conv", "phase": "backward", "duration_us": 20,
     "reads": [0, 2], "writes": [], "replayable": false}
  ]
})";

TEST(ModelJsonTest, ParsesAllFieldsAndDefaults) {
  absl::StatusOr<Profile> p = ParseProfileJson(kSmall);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "small");
  ASSERT_EQ(p->tensors.size(), 4u);
  ASSERT_EQ(p->ops.size(), 4u);
  EXPECT_EQ(p->tensors[0].alloc_before, kBeforeIteration);
  EXPECT_EQ(p->tensors[1].bytes, 2000);
  EXPECT_EQ(p->tensors[3].free_after, kAfterIteration);  // default
  EXPECT_EQ(p->tensors[3].swap_in_us, -1);               // default
  EXPECT_EQ(p->ops[0].kind, OpKind::kConv);
  EXPECT_EQ(p->ops[0].phase, Phase::kForward);
  EXPECT_EQ(p->ops[0].duration_us, 12.5);
  EXPECT_EQ(p->ops[0].workspace_bytes, 64);
  EXPECT_TRUE(p->ops[0].replayable);  // default
  EXPECT_FALSE(p->ops[3].replayable);
}

// "feature_map", which files of earlier releases carry, is read (it must still be a boolean:
// ErrorsNameThePath) and ignored: candidates come from the access pattern. ProfileToJson no
// longer writes it.
TEST(ModelJsonTest, FeatureMapIsAcceptedAndIgnored) {
  absl::StatusOr<Profile> with = ParseProfileJson(kSmall);
  ASSERT_TRUE(with.ok()) << with.status();
  nlohmann::json doc = nlohmann::json::parse(kSmall);
  for (nlohmann::json& t : doc["tensors"]) {
    if (t.contains("feature_map")) t["feature_map"] = !t["feature_map"].get<bool>();
  }
  absl::StatusOr<Profile> flipped = ParseProfileJson(doc.dump());
  ASSERT_TRUE(flipped.ok()) << flipped.status();
  EXPECT_TRUE(*flipped == *with);
  for (nlohmann::json& t : doc["tensors"]) t.erase("feature_map");
  absl::StatusOr<Profile> without = ParseProfileJson(doc.dump());
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_TRUE(*without == *with);
  const nlohmann::json written = nlohmann::json::parse(ProfileToJson(*with));
  for (const nlohmann::json& t : written["tensors"]) EXPECT_FALSE(t.contains("feature_map"));
}

TEST(ModelJsonTest, RoundTripsRandomProfiles) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    Profile p = RandomProfile(seed);
    p.tensors[0].swap_in_us = 0.1 * static_cast<double>(seed) + 1e-7;
    if (seed % 2 == 1)
      p.tensors[0].device_bytes = p.tensors[0].bytes + 4096;  // Note [Mapped bytes]
    if (seed % 3 == 1) {
      p.ops[0].unprofiled_inputs_until = static_cast<OpIndex>(p.ops.size()) - 1;
    }
    if (seed % 4 == 2) {  // Note [Program copies]
      p.ops[0].to_device_bytes = int64_t{3} << 30;
      p.ops[1].to_host_bytes = 4;
    }
    for (int indent : {-1, 1}) {
      const std::string text = ProfileToJson(p, indent);
      absl::StatusOr<Profile> back = ParseProfileJson(text);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_TRUE(*back == p) << "seed " << seed;
      EXPECT_EQ(ProfileToJson(*back, indent), text);
    }
  }
}

// Note [Program copies]: an op copies one way, and a profile built in memory is checked too.
TEST(ModelJsonTest, AnOpCopiesOneWay) {
  nlohmann::json doc = nlohmann::json::parse(kSmall);
  doc["ops"][1]["to_host_bytes"] = 4;
  doc["ops"][1]["to_device_bytes"] = 8;
  absl::StatusOr<Profile> p = ParseProfileJson(doc.dump());
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("ops[1].to_device_bytes: an op copies one way"));
  doc["ops"][1].erase("to_device_bytes");
  p = ParseProfileJson(doc.dump());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ops[1].to_host_bytes, 4);
  p->ops[1].to_device_bytes = 8;
  EXPECT_THAT(p->Validate().message(),
              HasSubstr("ops[1]: copies both to the host and to the device"));
  p->ops[1].to_device_bytes = -8;
  EXPECT_THAT(p->Validate().message(), HasSubstr("ops[1]: copied bytes must not be negative"));
}

// Each error class gives InvalidArgument whose message starts with the JSON path.
struct BadCase {
  const char* what;
  const char* json_pointer;  // where to put `value` in kSmall ("" = replace the document)
  const char* value;         // JSON text; "DELETE" removes the member
  const char* expected_prefix;
  const char* expected_text;
};

std::string Mutate(const BadCase& c) {
  if (std::string(c.json_pointer).empty()) return c.value;
  nlohmann::json doc = nlohmann::json::parse(kSmall);
  const nlohmann::json::json_pointer ptr(c.json_pointer);
  if (std::string(c.value) == "DELETE") {
    doc[ptr.parent_pointer()].erase(ptr.back());
  } else {
    doc[ptr] = nlohmann::json::parse(c.value);
  }
  return doc.dump();
}

TEST(ModelJsonTest, ErrorsNameThePath) {
  const BadCase cases[] = {
      {"truncated", "", R"({"format": "pooch-profile", "version": 1, "tens)", "(document)",
       "malformed JSON"},
      {"not JSON", "", "hello", "(document)", "malformed JSON"},
      {"not an object", "", "[1, 2]", "(document)", "must be a JSON object"},
      {"wrong format", "/format", R"("chrome-trace")", "format:", "expected 'pooch-profile'"},
      {"missing format", "/format", "DELETE", "format:", "missing"},
      {"future version", "/version", "2", "version:", "not supported"},
      {"tensors not array", "/tensors", "{}", "tensors:", "must be an array"},
      {"missing ops", "/ops", "DELETE", "ops:", "missing"},
      {"bytes as string", "/tensors/1/bytes", R"("2000")",
       "tensors[1].bytes:", "must be an integer"},
      {"negative bytes", "/tensors/1/bytes", "-5", "tensors[1].bytes:", "out of range"},
      {"bytes beyond int64", "/tensors/1/bytes", "9223372036854775808",
       "tensors[1].bytes:", "out of range"},
      {"bytes far beyond int64", "/tensors/1/bytes", "1e30", "tensors[1].bytes:", "not an integer"},
      {"fractional bytes", "/tensors/1/bytes", "12.5", "tensors[1].bytes:", "not an integer"},
      {"missing bytes", "/tensors/1/bytes", "DELETE", "tensors[1].bytes:", "missing"},
      {"device bytes below bytes", "/tensors/1/device_bytes", "1999",
       "tensors[1].device_bytes:", "below its bytes 2000"},
      {"negative device bytes", "/tensors/1/device_bytes", "-1",
       "tensors[1].device_bytes:", "out of range"},
      {"unprofiled inputs before the op", "/ops/1/unprofiled_inputs_until", "0",
       "ops[1].unprofiled_inputs_until:", "not -1 or an op from this one on"},
      {"unprofiled inputs past the end", "/ops/1/unprofiled_inputs_until", "4",
       "ops[1].unprofiled_inputs_until:", "not -1 or an op from this one on"},
      {"negative bytes to the host", "/ops/1/to_host_bytes", "-4",
       "ops[1].to_host_bytes:", "out of range"},
      {"bytes to the device as string", "/ops/1/to_device_bytes", R"("4")",
       "ops[1].to_device_bytes:", "must be an integer"},
      {"id not position", "/tensors/2/id", "7", "tensors[2].id:", "must equal its position"},
      {"feature_map not bool", "/tensors/0/feature_map", "1",
       "tensors[0].feature_map:", "true or false"},
      {"lifetime op missing", "/tensors/1/free_after", "99",
       "tensors[1].free_after:", "op 99 does not exist"},
      {"lifetime before -1", "/tensors/1/alloc_before", "-2",
       "tensors[1].alloc_before:", "out of range"},
      {"unknown kind", "/ops/1/kind", R"("lstm")", "ops[1].kind:", "unknown op kind 'lstm'"},
      {"unknown phase", "/ops/1/phase", R"("sideways")", "ops[1].phase:", "unknown phase"},
      {"negative duration", "/ops/1/duration_us", "-1", "ops[1].duration_us:", "negative"},
      {"duration not number", "/ops/1/duration_us", R"("fast")",
       "ops[1].duration_us:", "must be a number"},
      {"read of missing tensor", "/ops/0/reads/1", "400",
       "ops[0].reads[1]:", "tensor 400 does not exist"},
      {"write of missing tensor", "/ops/1/writes/0", "9",
       "ops[1].writes[0]:", "tensor 9 does not exist"},
      {"negative tensor id", "/ops/0/reads/0", "-1", "ops[0].reads[0]:", "out of range"},
      {"read before written", "/ops/0/reads/0", "2",
       "ops[0].reads[0]:", "depends on an op that comes later"},
      {"read after freed", "/ops/3/reads/1", "1", "ops[3].reads[1]:", "was freed after op 2"},
      {"missing op name", "/ops/2/name", "DELETE", "ops[2].name:", "missing"},
      {"op not object", "/ops/2", "3", "ops[2]:", "must be an object"},
      {"negative workspace", "/ops/0/workspace_bytes", "-64",
       "ops[0].workspace_bytes:", "out of range"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<Profile> p = ParseProfileJson(Mutate(c));
    ASSERT_FALSE(p.ok()) << c.what;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_THAT(std::string(p.status().message()), StartsWith(c.expected_prefix)) << c.what;
    EXPECT_THAT(p.status().message(), HasSubstr(c.expected_text)) << c.what;
    EXPECT_EQ(std::string(p.status().message()).find('\n'), std::string::npos) << c.what;
  }
}

TEST(ModelJsonTest, Plan) {
  const Profile p = RandomProfile(3);
  // Below the in-core peak, so that there are intervals to plan; RandomProfile's maps are at
  // least 64 KiB, its weights 4 KiB.
  const int64_t peak = Simulate(p, TestMachine(int64_t{1} << 40), Plan{}).peak_bytes;
  PlanOptions options;
  options.min_candidate_bytes = 8 << 10;
  absl::StatusOr<PlanResult> r = MakePlan(p, TestMachine(peak * 7 / 10), Policy::kSwapAll, options);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<Candidate>& cands = r->candidates;
  ASSERT_FALSE(cands.empty());
  const nlohmann::json plan = nlohmann::json::parse(PlanToJson(r->plan, p, cands));
  EXPECT_EQ(plan["format"], "pooch-plan");
  EXPECT_EQ(plan["version"], 2);
  EXPECT_EQ(plan["policy"], "swap-all");
  EXPECT_EQ(plan["schedule"], "when-memory-allows");
  // One entry per candidate, in candidate order, naming its interval.
  ASSERT_EQ(plan["decisions"].size(), cands.size());
  for (size_t c = 0; c < cands.size(); ++c) {
    const nlohmann::json& d = plan["decisions"][c];
    const Tensor& t = p.tensors[cands[c].tensor];
    EXPECT_EQ(d["candidate"], c);
    EXPECT_EQ(d["tensor"], t.id);
    EXPECT_EQ(d["name"], t.name);
    EXPECT_EQ(d["bytes"], t.bytes);
    EXPECT_EQ(d["open"], cands[c].open);
    EXPECT_EQ(d["close"], cands[c].close);
    EXPECT_EQ(d["wraps"], cands[c].wraps);
    EXPECT_EQ(d["tail"], cands[c].tail);
    EXPECT_EQ(d["decision"], "swap");
  }
  EXPECT_EQ(plan["counts"]["swap"], cands.size());
  EXPECT_EQ(plan["counts"]["keep"], 0);
  EXPECT_EQ(plan["counts"]["recompute"], 0);
  ASSERT_EQ(plan["swap_ins"].size(), r->plan.swap_ins.size());
  ASSERT_FALSE(r->plan.swap_ins.empty());
  for (size_t i = 0; i < r->plan.swap_ins.size(); ++i) {
    const Plan::SwapIn& s = r->plan.swap_ins[i];
    const nlohmann::json& j = plan["swap_ins"][i];
    EXPECT_EQ(j["candidate"], s.candidate);
    EXPECT_EQ(j["issue_at"], s.issue_at);
    EXPECT_EQ(j["name"], p.tensors[cands[s.candidate].tensor].name);
  }
  // A plan with fewer decisions than candidates keeps the rest.
  Plan partial = r->plan;
  partial.decisions.resize(1);
  const nlohmann::json short_plan = nlohmann::json::parse(PlanToJson(partial, p, cands));
  ASSERT_EQ(short_plan["decisions"].size(), cands.size());
  EXPECT_EQ(short_plan["decisions"][0]["decision"], "swap");
  if (cands.size() > 1) {
    EXPECT_EQ(short_plan["decisions"][1]["decision"], "keep");
  }
  EXPECT_EQ(short_plan["counts"]["keep"], cands.size() - 1);
}

TEST(ModelJsonTest, TestdataFilesParse) {
  for (const char* name : {"small.json", "figure11.json"}) {
    const std::string here = __FILE__;
    std::ifstream in(here.substr(0, here.rfind('/')) + "/testdata/" + name);
    ASSERT_TRUE(in.good()) << name;
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<Profile> p = ParseProfileJson(text.str());
    EXPECT_TRUE(p.ok()) << name << ": " << p.status();
  }
}

}  // namespace
}  // namespace pooch
