// Unit tests of kernel launches' recipes (kernel_replay.h, Note [Kernel recipes]): verdicts
// injected, allocations from a lookup table, the relaunch recorded.
#include "interpose/hooks/launch/kernel_replay.h"

#include <cstring>
#include <set>
#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

using pooch::kernels::KernelVerdict;

constexpr uint64_t kOut = 0x7f0000000000;  // a 1 MiB allocation
constexpr uint64_t kIn = 0x7f0000200000;   // another
constexpr int64_t kBytes = 1 << 20;

// Two allocations of pooch's; any other address is not its memory.
std::optional<pooch::AllocationInfo> Lookup(pooch::DeviceAddress a) {
  for (uint64_t base : {kOut, kIn}) {
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

TEST(KernelReplayTest, OutputMustBeOneWholeAllocationOfPooch) {
  Relaunched r;
  // Two written words with different targets: the extents cannot be told apart.
  EXPECT_FALSE(KernelRecipe("k", Verdict({0, 8}, {}), Params(kOut, kIn, 1), Lookup, Recorder(&r)));
  // The same target twice is one output.
  EXPECT_TRUE(KernelRecipe("k", Verdict({0, 8}, {}), Params(kOut, kOut, 1), Lookup, Recorder(&r)));
  // A slice of an allocation: the rest was written by someone else, or not at all.
  EXPECT_FALSE(
      KernelRecipe("k", Verdict({0}, {8}), Params(kOut + 256, kIn, 1), Lookup, Recorder(&r)));
  // Memory that is not pooch's would be written again behind the program's back.
  EXPECT_FALSE(KernelRecipe("k", Verdict({0}, {8}), Params(0x1000, kIn, 1), Lookup, Recorder(&r)));
  // Nothing written but null words: no output to rebuild.
  EXPECT_FALSE(KernelRecipe("k", Verdict({0}, {8}), Params(0, kIn, 1), Lookup, Recorder(&r)));
  // A null written word beside the output is kept (the replay skips it as the launch did).
  EXPECT_TRUE(KernelRecipe("k", Verdict({0, 16}, {8}), Params(kOut, kIn, 0), Lookup, Recorder(&r)));
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
