#include "core/lineage.h"

#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

LineageRecord Op(std::string name, uint64_t reads, uint64_t writes, std::string args = "") {
  LineageRecord r;
  r.name = std::move(name);
  r.stream = 7;
  if (reads != 0) r.reads.push_back({reads, 0x1000 * reads, 64});
  if (writes != 0) r.writes.push_back({writes, 0x1000 * writes, 64});
  r.args = std::move(args);
  return r;
}

TEST(LineageTest, AppendAssignsSeqAndIteration) {
  LineageLog log;
  EXPECT_EQ(log.Append(Op("a", 1, 2)), 1u);
  log.MarkIteration();
  EXPECT_EQ(log.Append(Op("b", 2, 3)), 2u);
  std::vector<LineageRecord> all = log.Snapshot();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].iteration, 0u);
  EXPECT_EQ(all[1].iteration, 1u);
  EXPECT_EQ(log.Find(2)->name, "b");
  EXPECT_FALSE(log.Find(3).has_value());
}

TEST(LineageTest, LastWriterFollowsTheChain) {
  LineageLog log;
  log.Append(Op("conv1", 1, 2));
  log.Append(Op("relu1", 2, 3));
  const uint64_t s = log.Append(Op("conv2", 3, 4));
  std::optional<LineageRecord> w = log.LastWriter(3, s);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->name, "relu1");
  w = log.LastWriter(w->reads[0].allocation, w->seq);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->name, "conv1");
  EXPECT_FALSE(log.LastWriter(1, s).has_value());
}

TEST(LineageTest, KeepsTheLastIterations) {
  LineageLog log(LineageOptions{.keep_iterations = 2});
  for (int it = 0; it < 5; ++it) {
    for (int i = 0; i < 3; ++i) log.Append(Op("op", 1, 2));
    log.MarkIteration();
  }
  log.Append(Op("op", 1, 2));
  // Iteration 5 (current, 1 op) and 4 (3 ops) remain.
  LineageLog::Counters c = log.counters();
  EXPECT_EQ(c.records, 4u);
  EXPECT_EQ(c.dropped, 12u);
  EXPECT_EQ(c.appended, 16u);
  EXPECT_EQ(log.Snapshot().front().iteration, 4u);
}

TEST(LineageTest, RecordAndArgumentCaps) {
  LineageLog log(LineageOptions{.max_records = 3, .max_arg_bytes = 10});
  for (int i = 0; i < 5; ++i) log.Append(Op("op", 0, 1));
  EXPECT_EQ(log.counters().records, 3u);
  EXPECT_EQ(log.Snapshot().front().seq, 3u);
  log.Append(Op("big", 0, 1, std::string(8, 'x')));
  log.Append(Op("big", 0, 1, std::string(8, 'y')));
  EXPECT_EQ(log.counters().records, 1u);
  EXPECT_EQ(log.counters().arg_bytes, 8);
}

TEST(LineageTest, Json) {
  LineageLog log;
  LineageRecord r = Op("cuLaunchKernel", 1, 1, std::string("\x01\xff", 2));
  r.effects = Effects::kUnknown;
  log.Append(r);
  nlohmann::json j = log.ToJson();
  EXPECT_EQ(j["format"], "pooch-lineage");
  EXPECT_EQ(j["version"], 1);
  ASSERT_EQ(j["ops"].size(), 1u);
  EXPECT_EQ(j["ops"][0]["name"], "cuLaunchKernel");
  EXPECT_EQ(j["ops"][0]["effects"], "unknown");
  EXPECT_EQ(j["ops"][0]["args"], "01ff");
  EXPECT_EQ(j["ops"][0]["reads"][0]["address"], "0x1000");
  EXPECT_EQ(j["ops"][0]["writes"][0]["allocation"], 1);

  const std::string path = ::testing::TempDir() + "/lineage.json";
  ASSERT_TRUE(log.WriteJson(path).ok());
  std::ifstream in(path);
  nlohmann::json back = nlohmann::json::parse(in);
  EXPECT_EQ(back, j);
  std::remove(path.c_str());
  EXPECT_FALSE(log.WriteJson("/nonexistent-dir/x.json").ok());
}

TEST(LineageTest, ConcurrentAppends) {
  LineageLog log(LineageOptions{.max_records = 1000});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) log.Append(Op("op", 1, 2));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(log.counters().appended, 2000u);
  EXPECT_EQ(log.counters().records, 1000u);
}

}  // namespace
}  // namespace pooch
