#include "core/exec/plan_actions.h"

#include <vector>

#include "core/model/candidates.h"
#include "core/profile/profile_builder.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

// Note [Carried slots]: a reference that frees `loss` (made one period before it) and makes
// `out`, its successor, still live at its end. Events: alloc out (position 0), op 0 writes out and
// reads loss (1), op 1 reads out (2), op 2 reads loss (3), free loss (4).
constexpr uint64_t kLoss = 50;
constexpr uint64_t kOut = 60;

struct Carried {
  BuiltProfile built;
  OpStreamRecorder::Positions positions;
  PlanResult plan;
  TensorId loss = 0;
};

Carried MakeCarried() {
  RecordedIteration it;
  it.persistent.push_back({kLoss, 1 << 20});
  it.events.push_back({RecordedIteration::Event::kAlloc, 0, kOut, 1 << 20});
  for (int op = 0; op < 3; ++op) {
    RecordedOp o;
    o.name = "op";
    o.duration_us = 10;
    if (op == 0) o.accesses = {{kOut, RecordedAccess::kWrite}, {kLoss, RecordedAccess::kRead}};
    if (op == 1) o.accesses = {{kOut, RecordedAccess::kRead}};
    if (op == 2) o.accesses = {{kLoss, RecordedAccess::kRead}};
    it.ops.push_back(o);
    it.events.push_back({RecordedIteration::Event::kOp, op, 0, 0});
  }
  it.events.push_back({RecordedIteration::Event::kFree, 0, kLoss, 0});
  Carried c;
  absl::StatusOr<BuiltProfile> built = BuildProfile(it);
  EXPECT_TRUE(built.ok()) << built.status();
  c.built = *built;
  c.positions.ops = {1, 2, 3};
  c.positions.managed_allocs = {0};
  c.positions.carried[kLoss] = 0;  // its successor is the allocation at position 0
  for (size_t t = 0; t < c.built.tensor_allocation.size(); ++t) {
    if (c.built.tensor_allocation[t] == kLoss) c.loss = static_cast<TensorId>(t);
  }
  // The loss is swapped out between op 0 and op 2.
  c.plan.candidates = {Candidate{.tensor = c.loss, .open = 0, .close = 2}};
  c.plan.plan.decisions = {Decision::kSwap};
  return c;
}

TEST(PlanActionsTest, CarriedTensorTakesItsSuccessorsAddressEachIteration) {
  Carried c = MakeCarried();
  ASSERT_EQ(c.built.profile.tensors[static_cast<size_t>(c.loss)].alloc_before, kBeforeIteration);
  PlanActions a = MakePlanActions(c.built, c.positions, c.plan);
  ASSERT_EQ(a.carried.size(), 1u);
  EXPECT_TRUE(a.persistent.empty());  // not a fixed address
  const int slot = a.carried[0].slot;
  EXPECT_EQ(a.carried[0].successor, 0);
  EXPECT_EQ(a.carried[0].successor_allocation, kOut);
  ASSERT_EQ(a.offload_after.count(1), 1u);  // after op 0, at position 1
  EXPECT_EQ(a.offload_after.at(1), std::vector<int>{slot});

  // Made: the plan executor seeds the slot with the live successor of the reference.
  a.StartIteration();
  a.address[static_cast<size_t>(slot)] = 0x1000;
  a.slot_of[0x1000] = slot;
  // The first event of the next iteration starts it: the successor slot has no address yet, so
  // the carried one keeps the seed.
  a.StartIteration();
  EXPECT_EQ(a.address[static_cast<size_t>(slot)], 0x1000u);
  EXPECT_EQ(a.slot_of.at(0x1000), slot);
  // In the iteration, `out` is allocated at position 0 (the plan executor sets its slot) and the
  // carried loss freed (the plan executor clears it).
  a.address[0] = 0x2000;
  a.slot_of[0x2000] = 0;
  a.address[static_cast<size_t>(slot)] = 0;
  a.slot_of.erase(0x1000);
  // The next iteration frees that `out` as its loss.
  a.StartIteration();
  EXPECT_EQ(a.address[static_cast<size_t>(slot)], 0x2000u);
  EXPECT_EQ(a.slot_of.at(0x2000), slot);
  EXPECT_EQ(a.address[0], 0u);
}

TEST(PlanActionsTest, PersistentTensorWithoutSuccessorKeepsAFixedSlot) {
  Carried c = MakeCarried();
  c.positions.carried.clear();  // e.g. weights, or a successor the recorder did not see
  PlanActions a = MakePlanActions(c.built, c.positions, c.plan);
  EXPECT_TRUE(a.carried.empty());
  ASSERT_EQ(a.persistent.size(), 1u);
  EXPECT_EQ(a.persistent[0].allocation, kLoss);
}

// The slots prefetched before the op at `position`.
std::vector<int> PrefetchedAt(const PlanActions& a, int64_t position) {
  std::vector<int> slots;
  if (auto it = a.prefetch_before.find(position); it != a.prefetch_before.end()) {
    for (const PlanActions::Prefetch& p : it->second) slots.push_back(p.slot);
  }
  return slots;
}

TEST(PlanActionsTest, PrefetchIsRetriedFromItsIssueUntilTheClosingOp) {
  Carried c = MakeCarried();
  c.plan.candidates[0].close = 3;  // as if a fourth op used it
  c.plan.plan.swap_ins = {{.candidate = 0, .issue_at = 1}};
  PlanActions a = MakePlanActions(c.built, c.positions, c.plan);
  const int slot = a.carried[0].slot;
  EXPECT_TRUE(PrefetchedAt(a, 1).empty());                // op 0 opens the interval
  EXPECT_EQ(PrefetchedAt(a, 2), std::vector<int>{slot});  // op 1: issued
  EXPECT_EQ(PrefetchedAt(a, 3), std::vector<int>{slot});  // op 2: retried
  EXPECT_EQ(a.prefetch_before.size(), 2u);
}

// Note [Prefetch at the closing op]: a swap-in forced at its need is the plan's prefetch with the
// op before, not the safety net's demand swap-in at the need.
TEST(PlanActionsTest, SwapInIssuedAtTheClosingOpIsPrefetchedWithTheOpBefore) {
  Carried c = MakeCarried();
  c.plan.plan.swap_ins = {{.candidate = 0, .issue_at = 2}};
  PlanActions a = MakePlanActions(c.built, c.positions, c.plan);
  ASSERT_EQ(a.prefetch_before.size(), 1u);
  EXPECT_EQ(PrefetchedAt(a, 2), std::vector<int>{a.carried[0].slot});  // with op 1

  // A weight whose only use is op 0: with the last op of the iteration before.
  c.plan.candidates = {Candidate{.tensor = c.loss, .open = 0, .close = 0, .wraps = true}};
  c.plan.plan.swap_ins = {{.candidate = 0, .issue_at = 0}};
  a = MakePlanActions(c.built, c.positions, c.plan);
  ASSERT_EQ(a.prefetch_before.size(), 1u);
  EXPECT_EQ(PrefetchedAt(a, 3), std::vector<int>{a.carried[0].slot});  // with op 2

  // The op before is the one that opens the interval: nothing to gain.
  c.plan.candidates = {Candidate{.tensor = c.loss, .open = 1, .close = 2}};
  c.plan.plan.swap_ins = {{.candidate = 0, .issue_at = 2}};
  a = MakePlanActions(c.built, c.positions, c.plan);
  EXPECT_TRUE(a.prefetch_before.empty());
}

// Note [Kept across a new plan]: a kept interval that wraps is prefetched (once, a no-op when
// resident) from op 0 up to its closing op; a kept one inside the iteration is not.
TEST(PlanActionsTest, KeptIntervalThatWrapsIsPrefetchedUpToItsUse) {
  Carried c = MakeCarried();
  c.plan.candidates = {Candidate{.tensor = c.loss, .open = 2, .close = 2, .wraps = true}};
  c.plan.plan.decisions = {Decision::kKeep};
  PlanActions a = MakePlanActions(c.built, c.positions, c.plan);
  ASSERT_EQ(a.carried.size(), 1u);
  const int slot = a.carried[0].slot;
  EXPECT_EQ(PrefetchedAt(a, 1), std::vector<int>{slot});  // op 0
  EXPECT_EQ(PrefetchedAt(a, 2), std::vector<int>{slot});  // op 1
  EXPECT_TRUE(PrefetchedAt(a, 3).empty());                // op 2 uses it
  EXPECT_TRUE(a.offload_after.empty());

  c.plan.candidates = {Candidate{.tensor = c.loss, .open = 0, .close = 2}};
  a = MakePlanActions(c.built, c.positions, c.plan);
  EXPECT_TRUE(a.prefetch_before.empty());
}

}  // namespace
}  // namespace pooch
