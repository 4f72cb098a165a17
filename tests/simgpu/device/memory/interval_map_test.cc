#include "tests/simgpu/device/memory/interval_map.h"

#include <gtest/gtest.h>

#include <vector>

namespace simgpu {
namespace {

std::vector<std::tuple<uint64_t, uint64_t, int>> Dump(const IntervalMap<int>& m) {
  std::vector<std::tuple<uint64_t, uint64_t, int>> out;
  m.ForEachOverlap(0, ~uint64_t{0},
                   [&](uint64_t lo, uint64_t hi, int v) { out.emplace_back(lo, hi, v); });
  return out;
}

TEST(IntervalMap, AssignSplitsAndReplaces) {
  IntervalMap<int> m;
  m.Assign(0, 100, 1);
  m.Assign(40, 60, 2);
  using T = std::tuple<uint64_t, uint64_t, int>;
  EXPECT_EQ(Dump(m), (std::vector<T>{{0, 40, 1}, {40, 60, 2}, {60, 100, 1}}));
  m.Erase(30, 70);
  EXPECT_EQ(Dump(m), (std::vector<T>{{0, 30, 1}, {70, 100, 1}}));
  m.ForEachSplit(20, 80, [](uint64_t, uint64_t, int& v) { v = 9; });
  EXPECT_EQ(Dump(m), (std::vector<T>{{0, 20, 1}, {20, 30, 9}, {70, 80, 9}, {80, 100, 1}}));
}

TEST(IntervalMap, FindAndCovers) {
  IntervalMap<int> m;
  m.Assign(10, 20, 1);
  m.Assign(20, 30, 2);
  m.Assign(40, 50, 1);
  EXPECT_EQ(m.Find(9), m.end());
  EXPECT_EQ(m.Find(10)->first, 10u);
  EXPECT_EQ(m.Find(29)->first, 20u);
  EXPECT_EQ(m.Find(30), m.end());
  uint64_t bad = 0;
  auto any = [](int) { return true; };
  EXPECT_TRUE(m.Covers(10, 30, any, &bad));  // adjacent intervals cover together
  EXPECT_FALSE(m.Covers(15, 45, any, &bad));
  EXPECT_EQ(bad, 30u);
  EXPECT_FALSE(m.Covers(
      10, 30, [](int v) { return v == 1; }, &bad));
  EXPECT_EQ(bad, 20u);
}

}  // namespace
}  // namespace simgpu
