// Tests of the Recomputer (core/recompute/recomputer.h, Note [Replay] and Note [Kept inputs]) over
// a ResidencyManager on a FakeDevice. Recipes here are device kernels that write their output from
// their input: out[i] = in[0] + 1 for every byte, so a replay after the input changed, or a
// missing replay, shows in the output's bytes.
#include "core/recompute/recomputer.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/residency/residency.h"
#include "core/residency/residency_testutil.h"
#include "core/small_alloc/small_allocator.h"
#include "core/testing/fake_device.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace pooch {
namespace {

using Mode = AccessRange::Mode;

class RecomputeTest : public pooch::testing::ResidencyFixture {
 protected:
  static constexpr int64_t kG = 64 << 10;

  void SetUp() override {
    FakeDevice::Options device;
    device.granularity = kG;
    device.capacity = 64 * kG;
    device_ = std::make_unique<FakeDevice>(device);
    stream_ = *device_->CreateStream();
    ResidencyOptions options;
    options.memory_limit = 16 * kG;
    options.min_swap_bytes = kG;
    options.reuse_cache_bytes = 0;
    manager_ = *ResidencyManager::Create(*device_, options);
    SmallAllocatorOptions small;
    small.max_bytes = kG;
    small_ = *SmallAllocator::Create(*device_, std::move(small));
    recomputer_ = std::make_unique<Recomputer>(*device_, *manager_, *small_, kG, nullptr);
  }

  void TearDown() override {
    recomputer_.reset();
    small_.reset();
    manager_.reset();
    EXPECT_THAT(device_->violations(), ::testing::IsEmpty());
  }

  // The recipe of out = in[0] + 1 (reading `in`, writing all of `out`); counts its replays.
  ReplayRecipe Recipe(DeviceAddress in, DeviceAddress out) {
    ReplayRecipe r;
    r.name = "increment";
    r.output = out;
    r.output_bytes = kG;
    r.inputs = {{in, kG, Mode::kRead}};
    FakeDevice* device = device_.get();
    int* replays = &replays_;
    r.issue = [device, in, out, replays](uintptr_t stream, void*) {
      ++*replays;
      return device
          ->Launch(stream, {{in, kG}, {out, kG}},
                   [in, out](FakeDevice::Memory& m) {
                     uint8_t first = 0;
                     m.Read(in, &first, 1).IgnoreError();
                     std::vector<uint8_t> data(kG, static_cast<uint8_t>(first + 1));
                     m.Write(out, data.data(), kG).IgnoreError();
                   })
          .ok();
    };
    return r;
  }

  // The program's op: out = in[0] + 1, as the recipe does, then the recipe offered.
  void Produce(DeviceAddress in, DeviceAddress out) {
    ReplayRecipe r = Recipe(in, out);
    ASSERT_TRUE(r.issue(stream_, nullptr));
    --replays_;  // the program's own call, not a replay
    ASSERT_TRUE(recomputer_->Offer(std::move(r), 10.0));
  }

  // An op of the program touching `address` with `mode`, through the Recomputer first.
  absl::Status Touch(DeviceAddress address, Mode mode, uint8_t fill = 0) {
    absl::Status s = recomputer_->BeforeProgramOp(stream_, {{address, kG, mode}}, true);
    if (!s.ok()) return s;
    if (mode == Mode::kRead) return absl::OkStatus();
    return Fill(address, kG, fill, mode);
  }

  // Note [Chained recipes]: the recipe of an in-place link, out = out + in[0] (or out * 2 when
  // `in` is 0), reading `out` too.
  ReplayRecipe Link(DeviceAddress in, DeviceAddress out) {
    ReplayRecipe r;
    r.name = in != 0 ? "add_" : "double_";
    r.output = out;
    r.output_bytes = kG;
    if (in != 0) r.inputs.push_back({in, kG, Mode::kRead});
    r.inputs.push_back({out, kG, Mode::kRead});
    FakeDevice* device = device_.get();
    int* links = &links_;
    r.issue = [device, in, out, links](uintptr_t stream, void*) {
      ++*links;
      std::vector<FakeDevice::Range> touched = {{out, kG}};
      if (in != 0) touched.push_back({in, kG});
      return device
          ->Launch(stream, touched,
                   [in, out](FakeDevice::Memory& m) {
                     uint8_t add = 0;
                     if (in != 0) m.Read(in, &add, 1).IgnoreError();
                     std::vector<uint8_t> data(kG);
                     m.Read(out, data.data(), kG).IgnoreError();
                     for (uint8_t& v : data) v = in != 0 ? static_cast<uint8_t>(v + add) : v * 2;
                     m.Write(out, data.data(), kG).IgnoreError();
                   })
          .ok();
    };
    return r;
  }

  // The program's in-place op, through the Recomputer as RunOp does it, then its link offered.
  bool Extend(DeviceAddress in, DeviceAddress out) {
    std::vector<AccessRange> ranges = {{out, kG, Mode::kReadWrite}};
    if (in != 0) ranges.push_back({in, kG, Mode::kRead});
    if (!recomputer_->BeforeProgramOp(stream_, ranges, true).ok()) return false;
    ReplayRecipe r = Link(in, out);
    if (!r.issue(stream_, nullptr)) return false;
    --links_;  // the program's own call
    return recomputer_->Offer(std::move(r), 1.0);
  }

  std::unique_ptr<SmallAllocator> small_;
  std::unique_ptr<Recomputer> recomputer_;
  int replays_ = 0;
  int links_ = 0;
};

TEST_F(RecomputeTest, AChainIsReplayedWholeAndInOrder) {
  DeviceAddress in = *manager_->Allocate(kG), b = *manager_->Allocate(kG),
                out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 3).ok());
  ASSERT_TRUE(Fill(b, kG, 5).ok());
  Produce(in, out);             // 4: written whole
  ASSERT_TRUE(Extend(b, out));  // 9: a bias added in place
  ASSERT_TRUE(Extend(0, out));  // 18: activated in place
  ASSERT_TRUE(Holds(out, kG, 18));
  ASSERT_TRUE(recomputer_->Drop(out));
  ASSERT_TRUE(Touch(out, Mode::kRead).ok());
  EXPECT_TRUE(Holds(out, kG, 18));  // in order: (3 + 1 + 5) * 2, not 4, 9 or (4 * 2) + 5
  EXPECT_EQ(replays_, 1);
  EXPECT_EQ(links_, 2);
  EXPECT_EQ(recomputer_->stats().replays, 1);
  EXPECT_EQ(recomputer_->stats().links, 3);
  EXPECT_DOUBLE_EQ(recomputer_->stats().replay_us, 12);
  for (DeviceAddress a : {in, b, out}) ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(RecomputeTest, AChainIsForgottenWhenALinksInputChanges) {
  DeviceAddress in = *manager_->Allocate(kG), b = *manager_->Allocate(kG),
                out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 3).ok());
  ASSERT_TRUE(Fill(b, kG, 5).ok());
  Produce(in, out);
  ASSERT_TRUE(Extend(b, out));
  ASSERT_TRUE(Touch(b, Mode::kWrite, 7).ok());  // the chain would now make 11, not 9
  EXPECT_FALSE(recomputer_->Drop(out));
  EXPECT_TRUE(Holds(out, kG, 9));
  // Nor is a chain extended by a write to its map that offers no link.
  Produce(in, out);
  ASSERT_TRUE(recomputer_->BeforeProgramOp(stream_, {{out, kG, Mode::kReadWrite}}, true).ok());
  ASSERT_TRUE(Fill(out, kG, 1, Mode::kReadWrite).ok());
  EXPECT_FALSE(recomputer_->Drop(out));      // open: its link may still come
  ASSERT_TRUE(Touch(in, Mode::kRead).ok());  // the next op: none came
  EXPECT_FALSE(recomputer_->Drop(out));
  EXPECT_FALSE(recomputer_->Offer(Link(b, out), 1.0));  // a link of nothing
  EXPECT_TRUE(Holds(out, kG, 1));
  EXPECT_EQ(replays_ + links_, 0);
  for (DeviceAddress a : {in, b, out}) ASSERT_TRUE(manager_->Free(a).ok());
}

TEST_F(RecomputeTest, DroppedMapIsRebuiltBeforeItIsRead) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 41).ok());
  Produce(in, out);
  ASSERT_TRUE(recomputer_->Drop(out));
  EXPECT_EQ(StateOf(out), ResidencyState::kDropped);
  EXPECT_EQ(replays_, 0);
  ASSERT_TRUE(Touch(out, Mode::kRead).ok());
  EXPECT_EQ(replays_, 1);
  EXPECT_TRUE(Holds(out, kG, 42));
  EXPECT_EQ(recomputer_->stats().replays, 1);
  ASSERT_TRUE(manager_->Free(in).ok());
  ASSERT_TRUE(manager_->Free(out).ok());
}

TEST_F(RecomputeTest, AMapDroppedBeforeTheManagersPollFailedIsStillRebuilt) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 3).ok());
  Produce(in, out);
  ASSERT_TRUE(Holds(out, kG, 4));  // read through the manager: its last use is an event
  // The poll after the drop queries that event, and fails: the map is dropped all the same.
  device_->FailQueryEventAfter(0);
  EXPECT_TRUE(recomputer_->Drop(out));
  EXPECT_EQ(StateOf(out), ResidencyState::kDropped);
  ASSERT_TRUE(Touch(out, Mode::kRead).ok());
  EXPECT_EQ(replays_, 1);
  EXPECT_TRUE(Holds(out, kG, 4));
  ASSERT_TRUE(manager_->Free(in).ok());
  ASSERT_TRUE(manager_->Free(out).ok());
}

// Note [Side outputs] (core/lineage/replay_recipe.h): a call that writes `out` = in[0] + 1 and
// `side` = in[0] + 2 (a LayerNorm's output and its statistics), as a kernel's recipe gives it:
// the side output among its inputs too.
ReplayRecipe TwoOutputs(FakeDevice* device, DeviceAddress in, DeviceAddress out, DeviceAddress side,
                        int64_t bytes, int* replays) {
  ReplayRecipe r;
  r.name = "norm";
  r.kernel = true;
  r.output = out;
  r.output_bytes = bytes;
  r.inputs = {{in, bytes, Mode::kRead}, {side, bytes, Mode::kRead}};
  r.side_outputs = {{side, bytes, Mode::kWrite}};
  r.issue = [device, in, out, side, bytes, replays](uintptr_t stream, void*) {
    ++*replays;
    return device
        ->Launch(stream, {{in, bytes}, {out, bytes}, {side, bytes}},
                 [in, out, side, bytes](FakeDevice::Memory& m) {
                   uint8_t first = 0;
                   m.Read(in, &first, 1).IgnoreError();
                   std::vector<uint8_t> data(static_cast<size_t>(bytes));
                   std::fill(data.begin(), data.end(), static_cast<uint8_t>(first + 1));
                   m.Write(out, data.data(), bytes).IgnoreError();
                   std::fill(data.begin(), data.end(), static_cast<uint8_t>(first + 2));
                   m.Write(side, data.data(), bytes).IgnoreError();
                 })
        .ok();
  };
  return r;
}

TEST_F(RecomputeTest, AReplayRewritesItsSideOutputWithTheBytesItHolds) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG),
                side = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 1).ok());
  ReplayRecipe r = TwoOutputs(device_.get(), in, out, side, kG, &replays_);
  ASSERT_TRUE(r.issue(stream_, nullptr));
  --replays_;
  ASSERT_TRUE(recomputer_->Offer(std::move(r), 5.0));
  ASSERT_TRUE(recomputer_->Drop(out));
  // The side output went to the host meanwhile: the replay brings it back before rewriting it
  // (the fake device reports a launch touching memory that is not resident).
  ASSERT_TRUE(manager_->Offload(side).ok());
  ASSERT_TRUE(manager_->Drain().ok());
  ASSERT_TRUE(Touch(out, Mode::kRead).ok());
  EXPECT_EQ(replays_, 1);
  EXPECT_EQ(recomputer_->stats().kernel_replays, 1);
  EXPECT_TRUE(Holds(out, kG, 2));
  EXPECT_TRUE(Holds(side, kG, 3));  // what the program's call wrote, written again
  for (DeviceAddress x : {in, out, side}) ASSERT_TRUE(manager_->Free(x).ok());
}

TEST_F(RecomputeTest, AWriteToASideOutputRebuildsTheDroppedOutputFirstThenForgetsIt) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG),
                side = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 1).ok());
  ReplayRecipe r = TwoOutputs(device_.get(), in, out, side, kG, &replays_);
  ASSERT_TRUE(r.issue(stream_, nullptr));
  --replays_;
  ASSERT_TRUE(recomputer_->Offer(std::move(r), 5.0));
  ASSERT_TRUE(recomputer_->Drop(out));
  // A replay after this write would overwrite the program's 9s with 3s: it happens before.
  ASSERT_TRUE(Touch(side, Mode::kWrite, 9).ok());
  EXPECT_EQ(replays_, 1);
  EXPECT_TRUE(Holds(out, kG, 2));
  EXPECT_TRUE(Holds(side, kG, 9));
  EXPECT_FALSE(recomputer_->Drop(out));  // the recipe would clobber the side output now
  for (DeviceAddress x : {in, out, side}) ASSERT_TRUE(manager_->Free(x).ok());
}

TEST_F(RecomputeTest, AWrittenOrFreedSideOutputForgetsAnUndroppedRecipe) {
  for (bool free_it : {false, true}) {
    DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG),
                  side = *manager_->Allocate(kG);
    ASSERT_TRUE(Fill(in, kG, 1).ok());
    ReplayRecipe r = TwoOutputs(device_.get(), in, out, side, kG, &replays_);
    ASSERT_TRUE(r.issue(stream_, nullptr));
    --replays_;
    ASSERT_TRUE(recomputer_->Offer(std::move(r), 5.0));
    if (free_it) {
      // Its address could be handed to another allocation that a replay would write.
      absl::StatusOr<bool> kept = recomputer_->BeforeFree(side);
      ASSERT_TRUE(kept.ok() && !*kept);
      ASSERT_TRUE(manager_->Free(side).ok());
    } else {
      ASSERT_TRUE(Touch(side, Mode::kWrite, 9).ok());
    }
    EXPECT_FALSE(recomputer_->Drop(out)) << free_it;
    EXPECT_EQ(replays_, 0);
    EXPECT_TRUE(Holds(out, kG, 2));
    ASSERT_TRUE(manager_->Free(in).ok());
    ASSERT_TRUE(manager_->Free(out).ok());
    if (!free_it) {
      ASSERT_TRUE(manager_->Free(side).ok());
    }
  }
  EXPECT_EQ(recomputer_->stats().forgotten, 2);
}

TEST_F(RecomputeTest, WriteToAnInputForgetsARecipeNotYetUsed) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 1).ok());
  Produce(in, out);
  ASSERT_TRUE(Touch(in, Mode::kWrite, 7).ok());  // the recipe would now make 8, not 2
  EXPECT_FALSE(recomputer_->Drop(out));          // so the map is not dropped
  EXPECT_TRUE(Holds(out, kG, 2));
  EXPECT_EQ(recomputer_->stats().forgotten, 1);
  ASSERT_TRUE(manager_->Free(in).ok());
  ASSERT_TRUE(manager_->Free(out).ok());
}

TEST_F(RecomputeTest, WriteToAnInputRebuildsADroppedMapFirst) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 1).ok());
  Produce(in, out);
  ASSERT_TRUE(recomputer_->Drop(out));
  ASSERT_TRUE(Touch(in, Mode::kWrite, 7).ok());
  EXPECT_EQ(replays_, 1);
  EXPECT_TRUE(Holds(out, kG, 2));  // from the input before the write
  ASSERT_TRUE(manager_->Free(in).ok());
  ASSERT_TRUE(manager_->Free(out).ok());
}

TEST_F(RecomputeTest, AMapRebuiltForAWriteToItsInputIsNeverDroppedAgain) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 1).ok());
  Produce(in, out);
  ASSERT_TRUE(recomputer_->Drop(out));
  ASSERT_TRUE(Touch(in, Mode::kWrite, 7).ok());  // rebuilt from 1 first
  EXPECT_EQ(replays_, 1);
  // Its recipe would now make 8: the map must stay as it is.
  EXPECT_FALSE(recomputer_->Drop(out));
  EXPECT_EQ(StateOf(out), ResidencyState::kResident);
  ASSERT_TRUE(Touch(out, Mode::kRead).ok());
  EXPECT_EQ(replays_, 1);
  EXPECT_TRUE(Holds(out, kG, 2));
  EXPECT_EQ(recomputer_->stats().forgotten, 0);  // it was used
  ASSERT_TRUE(manager_->Free(in).ok());
  ASSERT_TRUE(manager_->Free(out).ok());
}

TEST_F(RecomputeTest, AKeptInputRebuiltForAWriteStaysAndIsNeverDroppedAgain) {
  // c -> z -> r with z kept and dropped: a write to c rebuilds z from the old c first; z's data
  // then stays right for r's recipe, but its own recipe no longer rebuilds it.
  DeviceAddress c = *manager_->Allocate(kG), z = *manager_->Allocate(kG),
                r = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(c, kG, 10).ok());
  Produce(c, z);
  Produce(z, r);
  absl::StatusOr<bool> kept = recomputer_->BeforeFree(z);
  ASSERT_TRUE(kept.ok() && *kept);
  ASSERT_EQ(StateOf(z), ResidencyState::kDropped);
  ASSERT_TRUE(Touch(c, Mode::kWrite, 50).ok());
  EXPECT_EQ(replays_, 1);
  EXPECT_TRUE(Holds(z, kG, 11));
  EXPECT_FALSE(recomputer_->Drop(z));
  ASSERT_TRUE(recomputer_->Drop(r));
  ASSERT_TRUE(Touch(r, Mode::kRead).ok());
  EXPECT_EQ(replays_, 2);  // r alone
  EXPECT_TRUE(Holds(r, kG, 12));
  ASSERT_TRUE(manager_->Free(r).ok());
  ASSERT_TRUE(manager_->Free(c).ok());
}

TEST_F(RecomputeTest, WriteToTheOutputForgetsItsRecipe) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 1).ok());
  Produce(in, out);
  ASSERT_TRUE(Touch(out, Mode::kReadWrite, 9).ok());  // an in-place op after the producer
  EXPECT_FALSE(recomputer_->Drop(out));
  EXPECT_TRUE(Holds(out, kG, 9));
  ASSERT_TRUE(manager_->Free(in).ok());
  ASSERT_TRUE(manager_->Free(out).ok());
}

TEST_F(RecomputeTest, UnknownEffectsRebuildEveryDroppedMap) {
  DeviceAddress in = *manager_->Allocate(kG), a = *manager_->Allocate(kG),
                b = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 5).ok());
  Produce(in, a);
  Produce(in, b);
  ASSERT_TRUE(recomputer_->Drop(a));
  ASSERT_TRUE(recomputer_->Drop(b));
  // A kernel launch that reports only `in` may write anything: both maps come back first.
  ASSERT_TRUE(recomputer_->BeforeProgramOp(stream_, {{in, kG, Mode::kReadWrite}}, false).ok());
  EXPECT_EQ(replays_, 2);
  EXPECT_TRUE(Holds(a, kG, 6));
  EXPECT_TRUE(Holds(b, kG, 6));
  for (DeviceAddress x : {in, a, b}) ASSERT_TRUE(manager_->Free(x).ok());
}

TEST_F(RecomputeTest, ChainThroughAFreedIntermediate) {
  // c -> z -> r: the program frees z after r's producer read it (a batch-norm output only a
  // ReLU read). z is kept (Note [Kept inputs]); rebuilding r rebuilds z first, then z goes.
  DeviceAddress c = *manager_->Allocate(kG), z = *manager_->Allocate(kG),
                r = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(c, kG, 10).ok());
  Produce(c, z);
  Produce(z, r);
  absl::StatusOr<bool> kept = recomputer_->BeforeFree(z);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(*kept);
  EXPECT_EQ(StateOf(z), ResidencyState::kDropped);
  ASSERT_TRUE(recomputer_->Drop(r));
  ASSERT_TRUE(Touch(r, Mode::kRead).ok());
  EXPECT_EQ(replays_, 2);
  EXPECT_EQ(recomputer_->stats().chained, 1);
  EXPECT_TRUE(Holds(r, kG, 12));
  ASSERT_TRUE(manager_->Poll().ok());
  EXPECT_FALSE(manager_->Lookup(z).has_value());  // freed once nothing reads it
  ASSERT_TRUE(manager_->Free(c).ok());
  ASSERT_TRUE(manager_->Free(r).ok());
}

TEST_F(RecomputeTest, FreeOfAnUnreadMapWithARecipeFreesIt) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 1).ok());
  Produce(in, out);
  absl::StatusOr<bool> kept = recomputer_->BeforeFree(out);
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(*kept);  // nobody's recipe reads it: the program's free goes ahead
  ASSERT_TRUE(manager_->Free(out).ok());
  ASSERT_TRUE(manager_->Free(in).ok());
}

TEST_F(RecomputeTest, AReplayThatCannotBeIssuedFailsTheOp) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 1).ok());
  ReplayRecipe r = Recipe(in, out);
  ASSERT_TRUE(r.issue(stream_, nullptr));
  r.issue = [](uintptr_t, void*) { return false; };
  ASSERT_TRUE(recomputer_->Offer(std::move(r), 1.0));
  ASSERT_TRUE(recomputer_->Drop(out));
  absl::Status s = recomputer_->BeforeProgramOp(stream_, {{out, kG, Mode::kRead}}, true);
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_EQ(recomputer_->stats().failures, 1);
  ASSERT_TRUE(manager_->Free(in).ok());
  ASSERT_TRUE(manager_->Free(out).ok());
}

TEST_F(RecomputeTest, RecipeReadingMemoryPoochDoesNotOwnIsRefused) {
  DeviceAddress out = *manager_->Allocate(kG);
  ReplayRecipe r = Recipe(/*in=*/0x1000, out);
  EXPECT_FALSE(recomputer_->Offer(std::move(r), 1.0));
  EXPECT_FALSE(recomputer_->Drop(out));
  EXPECT_EQ(recomputer_->stats().refused, 1);
  ASSERT_TRUE(manager_->Free(out).ok());
}

TEST_F(RecomputeTest, WriteLineageWritesTheRecipesHeld) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 1).ok());
  Produce(in, out);
  ASSERT_TRUE(recomputer_->Drop(out));
  const std::string path = ::testing::TempDir() + "/recomputer_test_lineage.json";
  absl::Status s = recomputer_->WriteLineage(path);
  ASSERT_TRUE(s.ok()) << s;
  std::ifstream file(path);
  const nlohmann::json j = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << "not JSON: " << path;
  EXPECT_EQ(j["format"], "pooch-lineage");
  EXPECT_EQ(j["version"], 1);
  ASSERT_EQ(j["recipes"].size(), 1u);
  const nlohmann::json& r = j["recipes"][0];
  EXPECT_EQ(r["output"], absl::StrFormat("0x%x", out));
  EXPECT_EQ(r["output_bytes"], kG);
  EXPECT_EQ(r["name"], "increment");
  EXPECT_EQ(r["profiled_us"], 10.0);
  EXPECT_EQ(r["dropped"], true);
  EXPECT_EQ(r["kept"], false);
  ASSERT_EQ(r["inputs"].size(), 1u);
  EXPECT_EQ(r["inputs"][0]["base"], absl::StrFormat("0x%x", in));
  EXPECT_EQ(r["inputs"][0]["bytes"], kG);
  EXPECT_EQ(j["stats"]["recipes"], 1);
  EXPECT_EQ(j["stats"]["drops"], 1);
  EXPECT_EQ(j["stats"]["replays"], 0);
  std::remove(path.c_str());
  // A path that cannot be written is an error, not a silent loss.
  EXPECT_FALSE(recomputer_->WriteLineage(::testing::TempDir() + "/no/such/dir/l.json").ok());
  // Rebuilt, the map's recipe is spent: the lineage no longer holds it.
  ASSERT_TRUE(Touch(out, Mode::kRead).ok());
  ASSERT_TRUE(recomputer_->WriteLineage(path).ok());
  std::ifstream again(path);
  EXPECT_EQ(nlohmann::json::parse(again)["recipes"], nlohmann::json::array());
  std::remove(path.c_str());
  ASSERT_TRUE(manager_->Free(in).ok());
  ASSERT_TRUE(manager_->Free(out).ok());
}

// Note [DTR recipes]: the Recomputer under dtr, over a manager that evicts by DTR's heuristic.
class RecomputeDtrTest : public RecomputeTest {
 protected:
  void SetUp() override {
    RecomputeTest::SetUp();
    recomputer_.reset();
    manager_.reset();
    ResidencyOptions options;
    options.memory_limit = 3 * kG;
    options.min_swap_bytes = kG;
    options.reuse_cache_bytes = 0;
    options.pinned_wait = absl::Milliseconds(50);
    options.eviction = ResidencyOptions::Eviction::kDtr;
    manager_ = *ResidencyManager::Create(*device_, options);
    recomputer_ = std::make_unique<Recomputer>(*device_, *manager_, *small_, kG, nullptr,
                                               /*dtr=*/true);
  }

  // Two maps of kG filled with zeros: under the 3 kG limit, making room for them evicts others.
  std::pair<DeviceAddress, DeviceAddress> CrowdOut() {
    const DeviceAddress a = *manager_->Allocate(kG), b = *manager_->Allocate(kG);
    EXPECT_TRUE(Fill(a, kG, 0).ok());
    EXPECT_TRUE(Fill(b, kG, 0).ok());
    return {a, b};
  }

  // The program's op out = in[0] + 1, timed and offered as RunOp does under dtr.
  void Produce(DeviceAddress in, DeviceAddress out) {
    std::vector<AllocationId> held;
    ASSERT_TRUE(recomputer_
                    ->BeforeProgramOp(stream_, {{in, kG, Mode::kRead}, {out, kG, Mode::kWrite}},
                                      true, &held)
                    .ok());
    absl::StatusOr<OpTicket> t =
        manager_->BeforeOp(stream_, {{in, kG, Mode::kRead}, {out, kG, Mode::kWrite}});
    manager_->Release(held);
    ASSERT_TRUE(t.ok()) << t.status();
    const EventHandle start = recomputer_->BeginProduced(stream_);
    ReplayRecipe r = Recipe(in, out);
    ASSERT_TRUE(r.issue(stream_, nullptr));
    --replays_;  // the program's own call, not a replay
    ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
    ASSERT_TRUE(recomputer_->OfferProduced(std::move(r), stream_, start));
  }

  // A read of `address` by the program, as RunOp does it; true when it holds `fill` throughout.
  bool ReadsAs(DeviceAddress address, uint8_t fill) {
    std::vector<AllocationId> held;
    absl::Status s =
        recomputer_->BeforeProgramOp(stream_, {{address, kG, Mode::kRead}}, true, &held);
    manager_->Release(held);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() && Holds(address, kG, fill);
  }
};

TEST_F(RecomputeDtrTest, EvictionDropsAMapThatIsRebuiltBitForBitAgainAndAgain) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 41).ok());
  Produce(in, out);
  // The next op takes the producer's measured time: 0 on the fake device, whose kernels take
  // no virtual time. Before that, `out` was priced as a copy out and back, as `in` is, and
  // `in`, older, would have gone first.
  ASSERT_TRUE(recomputer_->BeforeProgramOp(stream_, {}, true).ok());
  for (int round = 1; round <= 2; ++round) {
    // Two more maps go past the limit: the lowest cost / (size x staleness) goes. `in` has no
    // recipe (it is swapped if chosen), `out` costs nothing to rebuild.
    DeviceAddress x = *manager_->Allocate(kG), y = *manager_->Allocate(kG);
    ASSERT_TRUE(Fill(x, kG, 1).ok());
    ASSERT_TRUE(Fill(y, kG, 2).ok());
    EXPECT_EQ(StateOf(out), ResidencyState::kDropped) << round;
    EXPECT_TRUE(ReadsAs(out, 42)) << round;
    EXPECT_EQ(replays_, round);
    ASSERT_TRUE(manager_->Free(x).ok());
    ASSERT_TRUE(manager_->Free(y).ok());
  }
  const Recomputer::Stats st = recomputer_->stats();
  EXPECT_EQ(st.recipes, 1);
  EXPECT_EQ(st.drops, 2);
  EXPECT_EQ(st.replays, 2);
  EXPECT_EQ(st.failures, 0);
  EXPECT_EQ(manager_->Stats().eviction_drops, 2);
  ASSERT_TRUE(recomputer_->BeforeFree(out).ok());
  ASSERT_TRUE(manager_->Free(out).ok());
  ASSERT_TRUE(manager_->Free(in).ok());
}

TEST_F(RecomputeDtrTest, AWriteToAnInputRebuildsFromTheOldInputThenNeverDropsAgain) {
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 1).ok());
  Produce(in, out);
  ASSERT_TRUE(recomputer_->BeforeProgramOp(stream_, {}, true).ok());  // takes its cost: 0
  const auto [x, y] = CrowdOut();
  ASSERT_EQ(StateOf(out), ResidencyState::kDropped);
  // The program overwrites the input: `out` must be what the old input made, 2, not 8.
  ASSERT_TRUE(Touch(in, Mode::kWrite, 7).ok());
  EXPECT_EQ(replays_, 1);
  ASSERT_TRUE(manager_->Free(x).ok());
  ASSERT_TRUE(manager_->Free(y).ok());
  // Its recipe is gone: the next evictions swap it, never drop it.
  const auto [u, v] = CrowdOut();
  EXPECT_NE(StateOf(out), ResidencyState::kDropped);
  EXPECT_EQ(manager_->Stats().eviction_drops, 1);
  EXPECT_TRUE(ReadsAs(out, 2));
  EXPECT_EQ(replays_, 1);
  for (DeviceAddress z : {in, out, u, v}) ASSERT_TRUE(manager_->Free(z).ok());
}

TEST_F(RecomputeDtrTest, AnInPlaceUpdateOfADroppedMapRebuildsItThenNeverDropsItAgain) {
  // A convolution's output, then its bias added in place: if eviction dropped the map between
  // the two, the addition rebuilds it first; the map it leaves is no longer the producer's, so
  // a later eviction must swap it, not drop it and rebuild it without the addition.
  DeviceAddress in = *manager_->Allocate(kG), out = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 41).ok());
  Produce(in, out);
  ASSERT_TRUE(recomputer_->BeforeProgramOp(stream_, {}, true).ok());  // takes its cost: 0
  const auto [x, y] = CrowdOut();
  ASSERT_EQ(StateOf(out), ResidencyState::kDropped);
  ASSERT_TRUE(Touch(out, Mode::kReadWrite, 9).ok());  // the in-place update: 42 becomes 9
  EXPECT_EQ(replays_, 1);
  ASSERT_TRUE(manager_->Free(x).ok());
  ASSERT_TRUE(manager_->Free(y).ok());
  const auto [u, v] = CrowdOut();
  EXPECT_NE(StateOf(out), ResidencyState::kDropped);
  EXPECT_EQ(manager_->Stats().eviction_drops, 1);
  EXPECT_TRUE(ReadsAs(out, 9));
  EXPECT_EQ(replays_, 1);
  for (DeviceAddress z : {in, out, u, v}) ASSERT_TRUE(manager_->Free(z).ok());
}

TEST_F(RecomputeDtrTest, AnOpReadingTwoDroppedMapsFindsBothRebuilt) {
  // a and b, both from `in`, are dropped; the op reads both: rebuilding b must not drop a
  // again (Hold), though the limit leaves room for little else.
  DeviceAddress in = *manager_->Allocate(kG), a = *manager_->Allocate(kG),
                b = *manager_->Allocate(kG);
  ASSERT_TRUE(Fill(in, kG, 9).ok());
  Produce(in, a);
  Produce(in, b);
  const auto [x, y] = CrowdOut();
  ASSERT_EQ(StateOf(a), ResidencyState::kDropped);
  ASSERT_EQ(StateOf(b), ResidencyState::kDropped);
  const std::vector<AccessRange> op = {{a, kG, Mode::kRead}, {b, kG, Mode::kRead}};
  std::vector<AllocationId> held;
  ASSERT_TRUE(recomputer_->BeforeProgramOp(stream_, op, true, &held).ok());
  absl::StatusOr<OpTicket> t = manager_->BeforeOp(stream_, op);
  manager_->Release(held);
  ASSERT_TRUE(t.ok()) << t.status();  // a read of a dropped map would fail here
  ASSERT_TRUE(manager_->AfterOp(*std::move(t)).ok());
  EXPECT_EQ(replays_, 2);
  EXPECT_TRUE(ReadsAs(a, 10));
  EXPECT_TRUE(ReadsAs(b, 10));
  for (DeviceAddress z : {in, a, b, x, y}) ASSERT_TRUE(manager_->Free(z).ok());
}

}  // namespace
}  // namespace pooch
