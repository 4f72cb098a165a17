// Tests of the Lineage's rules (core/lineage/lineage.h, Note [Replay] in
// core/recompute/recomputer.h), with no device: what each access requires, what erasing releases,
// and the JSON. The Recomputer's tests (core/recompute/recomputer_test.cc) check the same rules
// carried out on a fake device.
#include "core/lineage/lineage.h"

#include <optional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr int64_t kBytes = 0x1000;
// Allocations kBytes long, apart from each other.
constexpr DeviceAddress kA = 0x10000, kB = 0x20000, kC = 0x30000, kD = 0x40000;

// The recipe of `output` (kBytes) reading `inputs` (kBytes each), added to `lineage`.
void Add(Lineage& lineage, DeviceAddress output, std::vector<DeviceAddress> inputs,
         double profiled_us = 1.0) {
  ReplayRecipe r;
  r.name = "op";
  r.output = output;
  r.output_bytes = kBytes;
  std::vector<Lineage::Allocation> allocations;
  for (DeviceAddress in : inputs) {
    r.inputs.push_back({in, kBytes, AccessRange::Mode::kRead});
    allocations.push_back({in, kBytes});
  }
  EXPECT_THAT(lineage.Add(std::move(r), profiled_us, allocations, kBytes), IsEmpty());
}

bool Nothing(const Lineage::Needs& n) {
  return n.rebuild.empty() && n.rebuild_for_write.empty() && n.forget.empty();
}

TEST(LineageTest, ReadOfADroppedOutputAsksForARebuild) {
  Lineage lineage;
  Add(lineage, kB, {kA});
  EXPECT_TRUE(Nothing(lineage.Access(kB, kBytes, /*writes=*/false)));  // resident: nothing
  lineage.MarkDropped(kB, true);
  ASSERT_NE(lineage.Find(kB), nullptr);
  EXPECT_TRUE(lineage.Find(kB)->dropped);
  const Lineage::Needs n = lineage.Access(kB, kBytes, /*writes=*/false);
  EXPECT_THAT(n.rebuild, ElementsAre(kB));
  EXPECT_THAT(n.rebuild_for_write, IsEmpty());
  EXPECT_THAT(n.forget, IsEmpty());
  // Reading its input needs nothing: the recipe stays right.
  EXPECT_TRUE(Nothing(lineage.Access(kA, kBytes, /*writes=*/false)));
}

TEST(LineageTest, WriteToAnInputForgetsAnUndroppedReader) {
  Lineage lineage;
  Add(lineage, kB, {kA});
  const Lineage::Needs n = lineage.Access(kA, kBytes, /*writes=*/true);
  EXPECT_THAT(n.rebuild, IsEmpty());
  EXPECT_THAT(n.rebuild_for_write, IsEmpty());
  EXPECT_THAT(n.forget, ElementsAre(kB));
}

TEST(LineageTest, WriteToAnInputRebuildsADroppedReader) {
  Lineage lineage;
  Add(lineage, kB, {kA});
  lineage.MarkDropped(kB, true);
  const Lineage::Needs n = lineage.Access(kA, kBytes, /*writes=*/true);
  EXPECT_THAT(n.rebuild, IsEmpty());
  EXPECT_THAT(n.rebuild_for_write, ElementsAre(kB));
  EXPECT_THAT(n.forget, IsEmpty());
}

TEST(LineageTest, WriteToAnOutputForgetsIt) {
  Lineage lineage;
  Add(lineage, kB, {kA});
  const Lineage::Needs n = lineage.Access(kB, kBytes, /*writes=*/true);
  EXPECT_THAT(n.rebuild, IsEmpty());
  EXPECT_THAT(n.forget, ElementsAre(kB));
  // Dropped, the same write rebuilds it first, and forgets it all the same: after an in-place
  // update (a bias added, a skip summed into it) the recipe no longer rebuilds the map, and dtr,
  // which keeps a recipe past its replays, would drop it again and rebuild the map without the
  // update (Note [Replay]).
  lineage.MarkDropped(kB, true);
  const Lineage::Needs d = lineage.Access(kB, kBytes, /*writes=*/true);
  EXPECT_THAT(d.rebuild, ElementsAre(kB));
  EXPECT_THAT(d.forget, ElementsAre(kB));
  // A read of it only rebuilds it.
  const Lineage::Needs r = lineage.Access(kB, kBytes, /*writes=*/false);
  EXPECT_THAT(r.rebuild, ElementsAre(kB));
  EXPECT_THAT(r.forget, IsEmpty());
}

TEST(LineageTest, AKeptResidentEntryIsNotForgotten) {
  // c -> z -> r with z kept and resident: a write to c or to z leaves z's recipe.
  Lineage lineage;
  Add(lineage, kB, {kA});
  Add(lineage, kC, {kB});
  lineage.MarkKept(kB);
  EXPECT_TRUE(lineage.Find(kB)->kept);
  EXPECT_TRUE(Nothing(lineage.Access(kA, kBytes, /*writes=*/true)));
  // Writing z itself still forgets its reader r.
  EXPECT_THAT(lineage.Access(kB, kBytes, /*writes=*/true).forget, ElementsAre(kC));
}

TEST(LineageTest, ErasingTheLastReaderOfAKeptInputReportsItForFreeing) {
  Lineage lineage;
  Add(lineage, kB, {kA});  // z = f(c)
  Add(lineage, kC, {kB});  // r = g(z)
  Add(lineage, kD, {kB});  // s = h(z)
  lineage.MarkKept(kB);
  lineage.MarkDropped(kB, true);
  EXPECT_TRUE(lineage.HasReaders(kB));
  EXPECT_THAT(lineage.Erase(kC), IsEmpty());  // s still reads z
  ASSERT_NE(lineage.Find(kB), nullptr);
  EXPECT_THAT(lineage.Erase(kD), ElementsAre(kB));
  EXPECT_EQ(lineage.Find(kB), nullptr);  // its recipe went with it
  EXPECT_FALSE(lineage.HasReaders(kA));
  EXPECT_TRUE(lineage.empty());
  EXPECT_TRUE(Nothing(lineage.Access(kA, 4 * kD, /*writes=*/true)));  // no watch is left
}

TEST(LineageTest, ErasingAKeptEntryWithNoReadersReportsIt) {
  Lineage lineage;
  Add(lineage, kB, {kA});
  lineage.MarkKept(kB);
  EXPECT_THAT(lineage.Erase(kB), ElementsAre(kB));
  // An entry that is not kept is the program's to free: nothing reported.
  Add(lineage, kC, {kA});
  EXPECT_THAT(lineage.Erase(kC), IsEmpty());
  EXPECT_THAT(lineage.Erase(kC), IsEmpty());  // erasing nothing is harmless
}

TEST(LineageTest, ErasingReleasesKeptInputsRecursively) {
  // a -> b -> c -> d with b and c kept: erasing d releases c, whose erase releases b.
  Lineage lineage;
  Add(lineage, kB, {kA});
  Add(lineage, kC, {kB});
  Add(lineage, kD, {kC});
  lineage.MarkKept(kB);
  lineage.MarkKept(kC);
  EXPECT_THAT(lineage.Erase(kD), ElementsAre(kB, kC));  // innermost first
  EXPECT_TRUE(lineage.empty());
}

TEST(LineageTest, RangesFindEveryAllocationTheyOverlap) {
  Lineage lineage;
  Add(lineage, kB, {kA});
  Add(lineage, kC, {kA});
  lineage.MarkDropped(kB, true);
  lineage.MarkDropped(kC, true);
  // A range inside an allocation, not at its base, concerns it.
  EXPECT_THAT(lineage.Access(kB + 0x800, 16, false).rebuild, ElementsAre(kB));
  // Ranges that end at its base or start at its end do not.
  EXPECT_TRUE(Nothing(lineage.Access(kB - 0x100, 0x100, true)));
  EXPECT_TRUE(Nothing(lineage.Access(kB + kBytes, 0x100, true)));
  // One that starts before it and reaches into it does; one over two outputs finds both.
  EXPECT_THAT(lineage.Access(kB - 0x100, 0x101, false).rebuild, ElementsAre(kB));
  EXPECT_THAT(lineage.Access(kB + 0x800, kC - kB, false).rebuild, ElementsAre(kB, kC));
  // A write to the last byte of an input reaches every reader.
  EXPECT_THAT(lineage.Access(kA + kBytes - 1, 1, true).rebuild_for_write,
              UnorderedElementsAre(kB, kC));
}

TEST(LineageTest, AnAccessFindsAnOutputThatAnotherWatchStartsInside) {
  // Note [Overlapping watches]: kC's recipe still watches a small input the program freed, whose
  // range a later output at kB now covers from below.
  Lineage lineage;
  Add(lineage, kB, {kA});
  ReplayRecipe r;
  r.name = "op";
  r.output = kC;
  r.output_bytes = kBytes;
  r.inputs.push_back({kB + 0x100, 0x10, AccessRange::Mode::kRead});
  EXPECT_THAT(lineage.Add(std::move(r), 1.0, {{kB + 0x100, 0x10}}, kBytes), IsEmpty());
  lineage.MarkDropped(kB, true);
  // Past the small watch, and inside it: kB is found either way.
  EXPECT_THAT(lineage.Access(kB + 0x800, 1, false).rebuild, ElementsAre(kB));
  EXPECT_THAT(lineage.Access(kB + 0x108, 1, false).rebuild, ElementsAre(kB));
  // A write inside the small watch reaches kC's recipe as well; kB's goes too, as the write
  // changes its map once rebuilt (Note [Rebuilt then written]).
  EXPECT_THAT(lineage.Access(kB + 0x108, 1, true).forget, UnorderedElementsAre(kB, kC));
  // Past kB's end nothing is found.
  EXPECT_TRUE(Nothing(lineage.Access(kB + kBytes, 1, true)));
}

TEST(LineageTest, AddReplacesTheOlderRecipeOfAnOutput) {
  Lineage lineage;
  Add(lineage, kC, {kA});
  Add(lineage, kC, {kB, kB});  // duplicates: one reader
  EXPECT_EQ(lineage.size(), 1u);
  ASSERT_EQ(lineage.Find(kC)->inputs.size(), 1u);
  EXPECT_EQ(lineage.Find(kC)->inputs[0].base, kB);
  EXPECT_FALSE(lineage.HasReaders(kA));
  EXPECT_TRUE(Nothing(lineage.Access(kA, kBytes, /*writes=*/true)));
  EXPECT_THAT(lineage.Access(kB, kBytes, /*writes=*/true).forget, ElementsAre(kC));
  EXPECT_THAT(lineage.Erase(kC), IsEmpty());
  EXPECT_FALSE(lineage.HasReaders(kB));
}

TEST(LineageTest, AnyWriteRebuildsDroppedAndForgetsTheRestButKept) {
  Lineage lineage;
  Add(lineage, kB, {kA});
  Add(lineage, kC, {kA});
  Add(lineage, kD, {kC});
  lineage.MarkDropped(kB, true);
  lineage.MarkKept(kC);
  const Lineage::Needs n = lineage.AnyWrite();
  EXPECT_THAT(n.rebuild, IsEmpty());
  EXPECT_THAT(n.rebuild_for_write, ElementsAre(kB));
  EXPECT_THAT(n.forget, ElementsAre(kD));
}

TEST(LineageTest, ToJsonHoldsEveryRecipe) {
  Lineage lineage;
  Add(lineage, kC, {kB, kA}, 12.5);
  Add(lineage, kB, {kA}, 3.0);
  lineage.MarkDropped(kC, true);
  lineage.MarkKept(kB);
  const nlohmann::json j = lineage.ToJson();
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  // By output address.
  EXPECT_EQ(j[0]["output"], "0x20000");
  EXPECT_EQ(j[0]["kept"], true);
  EXPECT_EQ(j[0]["dropped"], false);
  const nlohmann::json& c = j[1];
  EXPECT_EQ(c["output"], "0x30000");
  EXPECT_EQ(c["output_bytes"], kBytes);
  EXPECT_EQ(c["name"], "op");
  EXPECT_EQ(c["profiled_us"], 12.5);
  EXPECT_EQ(c["dropped"], true);
  EXPECT_EQ(c["kept"], false);
  ASSERT_EQ(c["inputs"].size(), 2u);
  EXPECT_EQ(c["inputs"][0]["base"], "0x20000");
  EXPECT_EQ(c["inputs"][0]["bytes"], kBytes);
  EXPECT_EQ(c["inputs"][1]["base"], "0x10000");
  EXPECT_EQ(Lineage().ToJson(), nlohmann::json::array());
}

TEST(LineageTest, AnOpenEntryTakesALinkAndWatchesItsInputs) {
  Lineage lineage;
  Add(lineage, kB, {kA});
  ReplayRecipe link;
  link.name = "add_";
  link.output = kB;
  link.output_bytes = kBytes;
  link.inputs = {{kC, kBytes, AccessRange::Mode::kRead}, {kB, kBytes, AccessRange::Mode::kRead}};
  // A write to its map alone: forgotten, listed as written (the owner may open it instead).
  const Lineage::Needs w = lineage.Access(kB, kBytes, /*writes=*/true);
  EXPECT_THAT(w.forget, ElementsAre(kB));
  EXPECT_THAT(w.written, ElementsAre(kB));
  EXPECT_FALSE(lineage.Append(link, 2.0, {{kC, kBytes}}));  // not open: no link
  lineage.MarkOpen(kB);
  ASSERT_TRUE(lineage.Append(link, 2.0, {{kC, kBytes}}));
  const Lineage::Entry* e = lineage.Find(kB);
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->open);
  ASSERT_EQ(e->chain.size(), 2u);
  EXPECT_STREQ(e->chain[1].name, "add_");
  EXPECT_DOUBLE_EQ(e->profiled_us, 3.0);
  EXPECT_FALSE(lineage.Append(link, 2.0, {{kC, kBytes}}));  // closed again
  // The link's input is watched: a write to it forgets the chain, and is not its map's write.
  const Lineage::Needs c = lineage.Access(kC, kBytes, /*writes=*/true);
  EXPECT_THAT(c.forget, ElementsAre(kB));
  EXPECT_THAT(c.written, IsEmpty());
  EXPECT_TRUE(lineage.HasReaders(kA));
  const nlohmann::json j = lineage.ToJson();
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["links"], 2);
  EXPECT_EQ(j[0]["chain"], nlohmann::json({"op", "add_"}));
  EXPECT_THAT(lineage.Erase(kB), IsEmpty());
  EXPECT_FALSE(lineage.HasReaders(kC));
}

}  // namespace
}  // namespace pooch

namespace pooch {
namespace {

// Note [Side outputs] (replay_recipe.h): a call writing kA (its output) and kB (a side output),
// reading kC.
ReplayRecipe TwoOutputRecipe() {
  ReplayRecipe r;
  r.name = "norm";
  r.output = kA;
  r.output_bytes = kBytes;
  r.inputs = {{kC, kBytes, AccessRange::Mode::kRead}, {kB, 2 * kBytes, AccessRange::Mode::kRead}};
  r.side_outputs = {{kB, 2 * kBytes, AccessRange::Mode::kWrite}};
  return r;
}

TEST(SideOutputsTest, ForOutputSwapsTheWantedSideOutputWithTheOutput) {
  std::optional<ReplayRecipe> r = ForOutput(TwoOutputRecipe(), kB);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->output, kB);
  EXPECT_EQ(r->output_bytes, 2 * kBytes);
  ASSERT_EQ(r->side_outputs.size(), 1u);
  EXPECT_EQ(r->side_outputs[0].address, kA);
  EXPECT_EQ(r->side_outputs[0].bytes, kBytes);
  // The new side output is watched as an input; the new output is not an input of its own.
  ASSERT_EQ(r->inputs.size(), 2u);
  EXPECT_EQ(r->inputs[0].address, kC);
  EXPECT_EQ(r->inputs[1].address, kA);
  EXPECT_EQ(r->inputs[1].bytes, kBytes);
  EXPECT_EQ(r->inputs[1].mode, AccessRange::Mode::kRead);
}

TEST(SideOutputsTest, ForOutputKeepsTheOutputAndRefusesAnythingElse) {
  std::optional<ReplayRecipe> same = ForOutput(TwoOutputRecipe(), kA);
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->output, kA);
  EXPECT_EQ(same->side_outputs[0].address, kB);
  EXPECT_FALSE(ForOutput(TwoOutputRecipe(), kC).has_value());  // an input is not written
  EXPECT_FALSE(ForOutput(TwoOutputRecipe(), kD).has_value());
  EXPECT_FALSE(ForOutput(std::nullopt, kA).has_value());
}

TEST(SideOutputsTest, AWriteToASideOutputRebuildsADroppedOutputOrForgetsIt) {
  // As the Recomputer adds it: the side output among the watched inputs.
  Lineage lineage;
  ReplayRecipe r = TwoOutputRecipe();
  const std::vector<Lineage::Allocation> inputs = {{kC, kBytes}, {kB, 2 * kBytes}};
  EXPECT_THAT(lineage.Add(std::move(r), 1.0, inputs, kBytes), IsEmpty());
  EXPECT_TRUE(Nothing(lineage.Access(kB, 2 * kBytes, /*writes=*/false)));  // a read: harmless
  Lineage::Needs undropped = lineage.Access(kB + 8, 8, /*writes=*/true);
  EXPECT_THAT(undropped.rebuild_for_write, IsEmpty());
  EXPECT_THAT(undropped.forget, ElementsAre(kA));
  lineage.MarkDropped(kA, true);
  // Dropped: rebuilt before the write, while the side output holds the launch's bytes (the
  // Recomputer never drops it again: its recipe was used).
  Lineage::Needs dropped = lineage.Access(kB, 8, /*writes=*/true);
  EXPECT_THAT(dropped.rebuild_for_write, ElementsAre(kA));
}

}  // namespace
}  // namespace pooch
