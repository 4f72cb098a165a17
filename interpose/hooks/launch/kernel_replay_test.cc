// Unit tests of kernel launches' recipes (kernel_replay.h, Note [Kernel recipes]): verdicts
// injected, allocations from a lookup table, the relaunch recorded.
#include "interpose/hooks/launch/kernel_replay.h"

#include <cstring>
#include <optional>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

using pooch::kernels::KernelVerdict;

constexpr uint64_t kOut = 0x7f0000000000;    // a 1 MiB allocation
constexpr uint64_t kIn = 0x7f0000200000;     // another
constexpr uint64_t kOther = 0x7f0000400000;  // a third
constexpr int64_t kBytes = 1 << 20;

// Three allocations of pooch's; any other address is not its memory.
std::optional<pooch::AllocationInfo> Lookup(pooch::DeviceAddress a) {
  for (uint64_t base : {kOut, kIn, kOther}) {
    if (a >= base && a < base + kBytes) {
      pooch::AllocationInfo info;
      info.address = base;
      info.bytes = kBytes;
      info.swappable = true;
      return info;
    }
  }
  return std::nullopt;
}

// relu(float* y, const float* x, int64_t n): parameters at 0, 8, 16.
ParamBuffer Params(uint64_t y, uint64_t x, int64_t n) {
  ParamBuffer p;
  p.bytes.resize(24);
  std::memcpy(p.bytes.data(), &y, 8);
  std::memcpy(p.bytes.data() + 8, &x, 8);
  std::memcpy(p.bytes.data() + 16, &n, 8);
  p.offsets = {0, 8, 16};
  return p;
}

KernelVerdict Verdict(std::set<int> writes, std::set<int> reads) {
  KernelVerdict v;
  v.name = "relu";
  v.writes = std::move(writes);
  v.reads = std::move(reads);
  return v;
}

const KernelVerdict kOneWrite = Verdict({0}, {8});
const KernelVerdict kTwoWrites = Verdict({0, 8}, {});

struct Relaunched {
  int calls = 0;
  uintptr_t stream = 0;
  std::vector<uint64_t> words;  // the first three parameters as the relaunch saw them
};

Relaunch Recorder(Relaunched* r) {
  return [r](uintptr_t stream, void** args) {
    ++r->calls;
    r->stream = stream;
    r->words.clear();
    for (int i = 0; i < 3; ++i) {
      uint64_t w = 0;
      std::memcpy(&w, args[i], 8);
      r->words.push_back(w);
    }
    return true;
  };
}

TEST(KernelReplayTest, OutOfPlaceKernelIsARecipeOfItsOutputAllocation) {
  Relaunched r;
  std::optional<ReplayRecipe> recipe =
      KernelRecipe("relu", Verdict({0}, {8}), Params(kOut, kIn + 64, 1000), Lookup, Recorder(&r));
  ASSERT_TRUE(recipe.has_value());
  EXPECT_STREQ(recipe->name, "relu");
  EXPECT_TRUE(recipe->kernel);
  EXPECT_EQ(recipe->output, kOut);
  EXPECT_EQ(recipe->output_bytes, kBytes);
  EXPECT_EQ(recipe->workspace_bytes, 0);
  ASSERT_EQ(recipe->inputs.size(), 1u);
  EXPECT_EQ(recipe->inputs[0].address, kIn + 64);
  EXPECT_EQ(recipe->inputs[0].mode, pooch::AccessRange::Mode::kRead);
  // Issued on the stream it is given, with the parameters copied at the launch.
  ASSERT_TRUE(recipe->issue(42, nullptr));
  ASSERT_TRUE(recipe->issue(43, nullptr));
  EXPECT_EQ(r.calls, 2);
  EXPECT_EQ(r.stream, 43u);
  EXPECT_EQ(r.words, (std::vector<uint64_t>{kOut, kIn + 64, 1000}));
}

TEST(KernelReplayTest, VerdictsThatAreNotExactAndReplayableGiveNoRecipe) {
  Relaunched r;
  KernelVerdict unknown = Verdict({0}, {8});
  unknown.writes_known = false;
  KernelVerdict reads_unknown = Verdict({0}, {8});
  reads_unknown.reads_known = false;
  KernelVerdict atomics = Verdict({0}, {8});
  atomics.uses_atomics = true;
  KernelVerdict clock = Verdict({0}, {8});
  clock.reads_clock = true;
  for (const KernelVerdict* v : {&unknown, &reads_unknown, &atomics, &clock}) {
    EXPECT_FALSE(KernelRecipe("k", *v, Params(kOut, kIn, 1), Lookup, Recorder(&r)).has_value());
    EXPECT_FALSE(MayReplayKernel(v, /*dtr=*/false));
  }
  const KernelVerdict good = Verdict({0}, {8});
  EXPECT_TRUE(MayReplayKernel(&good, false));
  EXPECT_FALSE(MayReplayKernel(&good, /*dtr=*/true));  // no plan checks the only writer
  EXPECT_FALSE(MayReplayKernel(nullptr, false));
  const KernelVerdict writes_nothing = Verdict({}, {8});
  EXPECT_FALSE(MayReplayKernel(&writes_nothing, false));
  EXPECT_EQ(r.calls, 0);
}

TEST(KernelReplayTest, OutputsMustBeWholeAllocationsOfPooch) {
  Relaunched r;
  // Two written words into one allocation: a slice, whose extent the analysis cannot bound.
  EXPECT_FALSE(
      KernelRecipe("k", Verdict({0, 8}, {}), Params(kOut, kOut + 64, 1), Lookup, Recorder(&r)));
  EXPECT_EQ(KernelRecipeOutputs(&kTwoWrites, Params(kOut, kOut + 64, 1), Lookup),
            KernelRecipeWhy::kShared);
  // The same target twice is one output.
  EXPECT_TRUE(KernelRecipe("k", Verdict({0, 8}, {}), Params(kOut, kOut, 1), Lookup, Recorder(&r)));
  // A slice of an allocation: the rest was written by someone else, or not at all.
  EXPECT_FALSE(
      KernelRecipe("k", Verdict({0}, {8}), Params(kOut + 256, kIn, 1), Lookup, Recorder(&r)));
  EXPECT_EQ(KernelRecipeOutputs(&kOneWrite, Params(kOut + 256, kIn, 1), Lookup),
            KernelRecipeWhy::kNotBase);
  // A slice beside a whole output: no recipe either.
  EXPECT_FALSE(
      KernelRecipe("k", Verdict({0, 8}, {}), Params(kOut, kIn + 256, 1), Lookup, Recorder(&r)));
  // Memory that is not pooch's would be written again behind the program's back.
  EXPECT_FALSE(KernelRecipe("k", Verdict({0}, {8}), Params(0x1000, kIn, 1), Lookup, Recorder(&r)));
  // Nothing written but null words: no output to rebuild.
  EXPECT_FALSE(KernelRecipe("k", Verdict({0}, {8}), Params(0, kIn, 1), Lookup, Recorder(&r)));
  // A null written word beside the output is kept (the replay skips it as the launch did).
  EXPECT_TRUE(KernelRecipe("k", Verdict({0, 16}, {8}), Params(kOut, kIn, 0), Lookup, Recorder(&r)));
}

TEST(KernelReplayTest, AKernelReadingItsOneOutputIsAChainLink) {
  Relaunched r;
  // An in-place addition, y = y + x, through two words holding y: a link of y's chain, which
  // the Recomputer takes only after the call that wrote y before it.
  const KernelVerdict add = Verdict({0}, {8, 16});
  ParamBuffer p = Params(kOut, kOut, 0);
  const uint64_t x = kIn;
  std::memcpy(p.bytes.data() + 16, &x, 8);
  EXPECT_EQ(KernelRecipeOutputs(&add, p, Lookup), KernelRecipeWhy::kLink);
  std::optional<ReplayRecipe> link = KernelRecipe("add_", add, p, Lookup, Recorder(&r));
  ASSERT_TRUE(link.has_value());
  EXPECT_EQ(link->output, kOut);
  EXPECT_TRUE(link->side_outputs.empty());
  ASSERT_EQ(link->inputs.size(), 2u);  // y itself (the chain's previous state) and x
  EXPECT_EQ(link->inputs[0].address, kOut);
  EXPECT_EQ(link->inputs[1].address, kIn);
  // Reading inside its output through another word is a link too.
  EXPECT_EQ(KernelRecipeOutputs(&kOneWrite, Params(kOut, kOut + 64, 1), Lookup),
            KernelRecipeWhy::kLink);
}

// Note [Kernel links]: a launch that reads its output, through the word it writes or another,
// is a recipe that reads the whole output (the chain's previous state) besides its other inputs.
TEST(KernelReplayTest, ALaunchThatReadsItsOutputIsALinkOfItsChain) {
  Relaunched r;
  const KernelVerdict in_place = Verdict({0}, {0, 8});  // y[i] = y[i] + x[i]
  EXPECT_TRUE(MayReplayKernel(&in_place, false));
  EXPECT_FALSE(MayReplayKernel(&in_place, /*dtr=*/true));
  for (const ParamBuffer& params : {Params(kOut, kIn, 1), Params(kOut, kOut + 64, 1)}) {
    std::optional<ReplayRecipe> recipe = KernelRecipe("k", in_place, params, Lookup, Recorder(&r));
    ASSERT_TRUE(recipe.has_value());
    EXPECT_EQ(recipe->output, kOut);
    bool reads_whole_output = false;
    for (const pooch::AccessRange& in : recipe->inputs) {
      EXPECT_EQ(in.mode, pooch::AccessRange::Mode::kRead);
      if (in.address == kOut && in.bytes == kBytes) reads_whole_output = true;
      // No input but the output's own read lies inside it.
      EXPECT_TRUE(in.address == kOut || in.address < kOut || in.address >= kOut + kBytes);
    }
    EXPECT_TRUE(reads_whole_output);
  }
  // Atomics or a clock still give none, in place or not.
  KernelVerdict atomics = in_place;
  atomics.uses_atomics = true;
  EXPECT_FALSE(KernelRecipe("k", atomics, Params(kOut, kIn, 1), Lookup, Recorder(&r)));
  EXPECT_FALSE(MayReplayKernel(&atomics, false));
  EXPECT_EQ(r.calls, 0);
}

TEST(KernelReplayTest, InputsPastTheBufferGiveNoRecipe) {
  Relaunched r;
  // A verdict for another layout: a word past the end of the buffer.
  EXPECT_FALSE(KernelRecipe("k", Verdict({0}, {24}), Params(kOut, kIn, 1), Lookup, Recorder(&r)));
  // Null read words are not inputs; the length word is not a read word.
  std::optional<ReplayRecipe> recipe =
      KernelRecipe("k", Verdict({0}, {8}), Params(kOut, 0, 1), Lookup, Recorder(&r));
  ASSERT_TRUE(recipe.has_value());
  EXPECT_TRUE(recipe->inputs.empty());
}

// Note [Side outputs]: norm(float* y, float* stats, const float* x): y and stats written.
TEST(KernelReplayTest, AKernelWritingTwoAllocationsRebuildsOneAndRewritesTheOther) {
  Relaunched r;
  const KernelVerdict norm = Verdict({0, 8}, {16});
  ParamBuffer p = Params(kIn, kOut, 0);
  const uint64_t x = kOther;
  std::memcpy(p.bytes.data() + 16, &x, 8);
  EXPECT_EQ(KernelRecipeOutputs(&norm, p, Lookup), KernelRecipeWhy::kRecipe);
  std::optional<ReplayRecipe> recipe = KernelRecipe("norm", norm, p, Lookup, Recorder(&r));
  ASSERT_TRUE(recipe.has_value());
  // The first output by address; the other is a side output, watched as an input.
  EXPECT_EQ(recipe->output, kOut);
  EXPECT_EQ(recipe->output_bytes, kBytes);
  ASSERT_EQ(recipe->side_outputs.size(), 1u);
  EXPECT_EQ(recipe->side_outputs[0].address, kIn);
  EXPECT_EQ(recipe->side_outputs[0].bytes, kBytes);
  ASSERT_EQ(recipe->inputs.size(), 2u);
  EXPECT_EQ(recipe->inputs[0].address, kOther);
  EXPECT_EQ(recipe->inputs[1].address, kIn);
  EXPECT_EQ(recipe->inputs[1].mode, pooch::AccessRange::Mode::kRead);
  // The plan asks for the other one: the same launch, the roles swapped.
  std::optional<ReplayRecipe> other = ForOutput(std::move(recipe), kIn);
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->output, kIn);
  ASSERT_EQ(other->side_outputs.size(), 1u);
  EXPECT_EQ(other->side_outputs[0].address, kOut);
  EXPECT_EQ(other->inputs[1].address, kOut);
  ASSERT_TRUE(other->issue(7, nullptr));
  EXPECT_EQ(r.words, (std::vector<uint64_t>{kIn, kOut, kOther}));
}

TEST(KernelReplayTest, AKernelReadingOneOfItsOutputsIsNoRecipe) {
  Relaunched r;
  const KernelVerdict norm = Verdict({0, 8}, {16});
  // Reads the side output through a third word: a replay would read what the launch wrote
  // there, not what it read.
  ParamBuffer p = Params(kOut, kIn, 0);
  const uint64_t x = kIn + 128;
  std::memcpy(p.bytes.data() + 16, &x, 8);
  EXPECT_EQ(KernelRecipeOutputs(&norm, p, Lookup), KernelRecipeWhy::kReadWritten);
  EXPECT_FALSE(KernelRecipe("norm", norm, p, Lookup, Recorder(&r)).has_value());
  // Not pooch's memory as the second output: written again behind the program's back.
  EXPECT_EQ(KernelRecipeOutputs(&norm, Params(kOut, 0x1000, 0), Lookup), KernelRecipeWhy::kNotBase);
}

TEST(KernelReplayTest, EachRuleHasItsReason) {
  KernelVerdict unknown = Verdict({0}, {8});
  unknown.writes_known = false;
  KernelVerdict atomics = Verdict({0}, {8});
  atomics.uses_atomics = true;
  const ParamBuffer p = Params(kOut, kIn, 1);
  EXPECT_EQ(KernelRecipeOutputs(nullptr, p, Lookup), KernelRecipeWhy::kNoVerdict);
  EXPECT_EQ(KernelRecipeOutputs(&unknown, p, Lookup), KernelRecipeWhy::kUnknown);
  EXPECT_EQ(KernelRecipeOutputs(&atomics, p, Lookup), KernelRecipeWhy::kNotReplayable);
  EXPECT_EQ(KernelRecipeOutputs(&kOneWrite, Params(0, kIn, 1), Lookup), KernelRecipeWhy::kNoWrites);
  const KernelVerdict past_end = Verdict({0}, {24});
  EXPECT_EQ(KernelRecipeOutputs(&past_end, p, Lookup), KernelRecipeWhy::kLayout);
  const KernelVerdict norm = Verdict({0, 8}, {16});
  ParamBuffer reads_side = Params(kOut, kIn, 0);
  const uint64_t in_side = kIn + 8;
  std::memcpy(reads_side.bytes.data() + 16, &in_side, 8);
  EXPECT_EQ(KernelRecipeOutputs(&norm, reads_side, Lookup), KernelRecipeWhy::kReadWritten);
  EXPECT_EQ(KernelRecipeOutputs(&kOneWrite, Params(kOut, kOut + 8, 1), Lookup),
            KernelRecipeWhy::kLink);
  EXPECT_EQ(KernelRecipeOutputs(&kOneWrite, p, Lookup), KernelRecipeWhy::kRecipe);
}

TEST(KernelReplayTest, ARelaunchTheEntryPointRefusesIsAFailedIssue) {
  std::optional<ReplayRecipe> recipe =
      KernelRecipe("k", Verdict({0}, {8}), Params(kOut, kIn, 1), Lookup,
                   [](uintptr_t, void**) { return false; });
  ASSERT_TRUE(recipe.has_value());
  EXPECT_FALSE(recipe->issue(1, nullptr));
  EXPECT_FALSE(KernelRecipe("k", Verdict({0}, {8}), Params(kOut, kIn, 1), Lookup, nullptr));
}

}  // namespace
}  // namespace pooch::interpose
