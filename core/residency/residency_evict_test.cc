// Tests of the choice of victims (residency_evict.cc): DTR's heuristic and what each eviction
// does under it (Note [DTR eviction]), and that the LRU order of demand is unchanged by it.
#include <cstdint>
#include <optional>
#include <vector>

#include "core/testing/fake_device.h"
#include "core/residency/residency.h"
#include "core/residency/residency_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Mode = AccessRange::Mode;

constexpr int64_t kG = ::pooch::testing::ResidencyFixture::kG;

TEST(DtrScoreTest, CheaperLargerAndStalerGoFirst) {
  const double base = ResidencyManager::DtrScore(100, kG, 4);
  EXPECT_LT(ResidencyManager::DtrScore(10, kG, 4), base);       // cheaper to rebuild
  EXPECT_LT(ResidencyManager::DtrScore(100, 4 * kG, 4), base);  // frees more
  EXPECT_LT(ResidencyManager::DtrScore(100, kG, 40), base);     // idle longer
  EXPECT_DOUBLE_EQ(ResidencyManager::DtrScore(100, kG, 4), 100.0 / (kG * 4.0));
  // Degenerate inputs stay finite and ordered: no division by zero, no negative cost.
  EXPECT_DOUBLE_EQ(ResidencyManager::DtrScore(-5, kG, 1), 0);
  EXPECT_DOUBLE_EQ(ResidencyManager::DtrScore(100, 0, 0), 100);
}

class EvictTest : public ::pooch::testing::ResidencyFixture {
 protected:
  // A device whose copies take 1 us per KB, under `eviction` with a limit of `granules`.
  void Init(ResidencyOptions::Eviction eviction, int64_t granules) {
    FakeDevice::Options o;
    o.copy_bytes_per_us = 1000;
    ResidencyOptions r = Options(granules * kG);
    r.eviction = eviction;
    Start(o, r);
  }

  // Three maps of one granule, written a, b, c in that order (c the most recently used).
  void ThreeMaps() {
    for (DeviceAddress* x : {&a_, &b_, &c_}) {
      *x = *manager_->Allocate(kG);
      ASSERT_TRUE(Fill(*x, kG, static_cast<uint8_t>(x == &a_ ? 1 : x == &b_ ? 2 : 3)).ok());
    }
  }

  void FreeAll(std::vector<DeviceAddress> more = {}) {
    for (DeviceAddress x : {a_, b_, c_}) more.push_back(x);
    for (DeviceAddress x : more) ASSERT_TRUE(manager_->Free(x).ok());
  }

  DeviceAddress a_ = 0, b_ = 0, c_ = 0;
};

TEST_F(EvictTest, TheLowestHIsDroppedNotTheLeastRecentlyUsed) {
  Init(ResidencyOptions::Eviction::kDtr, 3);
  ThreeMaps();
  // c is the most recently used but by far the cheapest to rebuild: h(c) = 1 / (G x 1) is
  // below h(a) = h(b) = 1000 / (G x staleness). LRU would take a.
  ASSERT_TRUE(manager_->SetRecomputeCost(a_, 1000).ok());
  ASSERT_TRUE(manager_->SetRecomputeCost(b_, 1000).ok());
  ASSERT_TRUE(manager_->SetRecomputeCost(c_, 1).ok());
  DeviceAddress d = *manager_->Allocate(kG);
  EXPECT_EQ(StateOf(c_), ResidencyState::kDropped);
  EXPECT_EQ(StateOf(a_), ResidencyState::kResident);
  EXPECT_EQ(StateOf(b_), ResidencyState::kResident);
  const ResidencyStats s = manager_->Stats();
  EXPECT_EQ(s.eviction_drops, 1);
  EXPECT_EQ(s.swap_outs, 0);  // a drop copies nothing
  EXPECT_THAT(manager_->TakeEvictionDrops(), ElementsAre(c_));
  EXPECT_THAT(manager_->TakeEvictionDrops(), IsEmpty());  // taken once
  // A dropped map cannot be read until a replay (a write-only op) restores it.
  EXPECT_FALSE(ReadBack(c_, kG).ok());
  FreeAll({d});
}

TEST_F(EvictTest, WhatCannotBeRebuiltIsSwappedAndPricedByItsCopies) {
  Init(ResidencyOptions::Eviction::kDtr, 3);
  ThreeMaps();
  // a has no recipe (a weight): its copy out and back at 16 GB/s costs 2 x 64 KiB / 16000 =
  // 8.2 us, below b's 10 ms rebuild at a similar staleness, so a is swapped, never dropped.
  ASSERT_TRUE(manager_->SetRecomputeCost(b_, 10000).ok());
  ASSERT_TRUE(manager_->SetRecomputeCost(c_, 10000).ok());
  DeviceAddress d = *manager_->Allocate(kG);
  EXPECT_NE(StateOf(a_), ResidencyState::kDropped);
  EXPECT_NE(StateOf(a_), ResidencyState::kResident);
  EXPECT_EQ(manager_->Stats().eviction_drops, 0);
  EXPECT_EQ(manager_->Stats().demand_swap_outs, 1);
  EXPECT_TRUE(Holds(a_, kG, 1));  // swapped back in, every byte
  FreeAll({d});
}

TEST_F(EvictTest, AHeldMapIsSwappedNotDropped) {
  Init(ResidencyOptions::Eviction::kDtr, 3);
  ThreeMaps();
  ASSERT_TRUE(manager_->SetRecomputeCost(a_, 1).ok());
  ASSERT_TRUE(manager_->SetRecomputeCost(b_, 1).ok());
  ASSERT_TRUE(manager_->SetRecomputeCost(c_, 1000).ok());
  std::vector<AllocationId> held = manager_->Hold({{a_, kG, Mode::kRead}, {b_, 1, Mode::kRead}});
  ASSERT_EQ(held.size(), 2u);
  // a is the stalest and among the cheapest: it goes first, but held it may only be swapped
  // (priced as a swap, 8.2 us, it still has the lowest h).
  DeviceAddress d = *manager_->Allocate(kG);
  EXPECT_NE(StateOf(a_), ResidencyState::kDropped);
  EXPECT_EQ(manager_->Stats().demand_swap_outs, 1);
  EXPECT_EQ(manager_->Stats().eviction_drops, 0);
  manager_->Release(held);
  // Released, the next victim (b) is dropped.
  DeviceAddress e = *manager_->Allocate(kG);
  EXPECT_EQ(manager_->Stats().eviction_drops, 1);
  EXPECT_TRUE(Holds(a_, kG, 1));
  FreeAll({d, e});
}

TEST_F(EvictTest, WithdrawingTheCostSaysWhetherTheMapWasDropped) {
  Init(ResidencyOptions::Eviction::kDtr, 3);
  ThreeMaps();
  for (DeviceAddress x : {a_, b_, c_}) ASSERT_TRUE(manager_->SetRecomputeCost(x, 5).ok());
  absl::StatusOr<bool> dropped = manager_->SetRecomputeCost(c_, std::nullopt);
  ASSERT_TRUE(dropped.ok());
  EXPECT_FALSE(*dropped);
  DeviceAddress d = *manager_->Allocate(kG);  // a: stalest at equal cost
  EXPECT_EQ(StateOf(a_), ResidencyState::kDropped);
  dropped = manager_->SetRecomputeCost(a_, std::nullopt);
  ASSERT_TRUE(dropped.ok());
  EXPECT_TRUE(*dropped);  // the caller must rebuild it while its recipe holds
  EXPECT_TRUE(absl::IsNotFound(manager_->SetRecomputeCost(d + 7, 1).status()));
  // The drop is still reported once; once freed, it no longer is.
  ASSERT_TRUE(manager_->Free(a_).ok());
  EXPECT_THAT(manager_->TakeEvictionDrops(), IsEmpty());
  for (DeviceAddress x : {b_, c_, d}) ASSERT_TRUE(manager_->Free(x).ok());
}

TEST_F(EvictTest, LruIgnoresRecomputeCosts) {
  Init(ResidencyOptions::Eviction::kLru, 3);
  ThreeMaps();
  for (DeviceAddress x : {a_, b_, c_}) ASSERT_TRUE(manager_->SetRecomputeCost(x, 1).ok());
  ASSERT_TRUE(manager_->SetRecomputeCost(c_, 0).ok());
  DeviceAddress d = *manager_->Allocate(kG);
  // demand and the planner policies: the least recently used is swapped, nothing dropped.
  EXPECT_NE(StateOf(a_), ResidencyState::kResident);
  EXPECT_NE(StateOf(a_), ResidencyState::kDropped);
  EXPECT_EQ(StateOf(c_), ResidencyState::kResident);
  EXPECT_EQ(manager_->Stats().eviction_drops, 0);
  EXPECT_THAT(manager_->TakeEvictionDrops(), IsEmpty());
  FreeAll({d});
}

// Note [Free reserve]: after an op, the least recently used allocations go until the room free
// or on its way covers the reserve; the op's own allocations, just used, stay; the data comes
// back whole; with no reserve nothing is swapped ahead.
TEST_F(EvictTest, TheReserveSwapsOutTheLeastRecentlyUsedAfterAnOp) {
  Init(ResidencyOptions::Eviction::kLru, 4);
  ThreeMaps();  // 3 of 4 granules: one granule free
  ASSERT_TRUE(Fill(c_, kG, 3).ok());
  EXPECT_EQ(manager_->Stats().swap_outs, 0);  // no reserve yet
  EXPECT_EQ(manager_->RoomBytes(), kG);
  manager_->SetFreeReserve(3 * kG);
  ASSERT_TRUE(Fill(c_, kG, 4).ok());
  // Two granules short: a then b, the least recently used; c, the op's, stays.
  EXPECT_EQ(manager_->Stats().reserve_swap_outs, 2);
  EXPECT_EQ(manager_->Stats().demand_swap_outs, 0);
  EXPECT_NE(StateOf(a_), ResidencyState::kResident);
  EXPECT_NE(StateOf(b_), ResidencyState::kResident);
  EXPECT_EQ(StateOf(c_), ResidencyState::kResident);
  EXPECT_GE(manager_->RoomBytes(), 3 * kG);
  // Covered: the next op swaps nothing more out.
  ASSERT_TRUE(Fill(c_, kG, 5).ok());
  EXPECT_EQ(manager_->Stats().reserve_swap_outs, 2);
  manager_->SetFreeReserve(0);
  EXPECT_TRUE(Holds(a_, kG, 1));
  EXPECT_TRUE(Holds(b_, kG, 2));
  EXPECT_TRUE(Holds(c_, kG, 5));
  EXPECT_EQ(manager_->Stats().reserve_swap_outs, 2);
  FreeAll();
}

// A reserve larger than what can go swaps out every unpinned allocation but the op's own, and
// the program still runs: the op that needs one back makes its room on demand.
TEST_F(EvictTest, AReserveLargerThanTheLimitLeavesTheDataCorrect) {
  Init(ResidencyOptions::Eviction::kLru, 3);
  ThreeMaps();
  manager_->SetFreeReserve(100 * kG);
  ASSERT_TRUE(Fill(a_, kG, 7).ok());
  EXPECT_EQ(manager_->Stats().reserve_swap_outs, 2);  // b and c; a was the op's
  EXPECT_TRUE(Holds(b_, kG, 2));
  EXPECT_TRUE(Holds(c_, kG, 3));
  EXPECT_TRUE(Holds(a_, kG, 7));
  EXPECT_EQ(manager_->Stats().out_of_memory, 0);
  FreeAll();
}

}  // namespace
}  // namespace pooch
