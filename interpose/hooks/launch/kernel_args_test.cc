// Unit tests of kernel argument scanning (kernel_args.h) against a residency manager and a
// sub-allocator over core's FakeDevice: which parameter words count as pointers into managed
// allocations, and which as writes of small blocks.
#include "interpose/hooks/launch/kernel_args.h"

#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "core/residency/residency.h"
#include "core/small_alloc/small_allocator.h"
#include "core/testing/fake_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;

class KernelArgsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pooch::ResidencyOptions options;
    options.memory_limit = 64 * kMiB;
    options.min_swap_bytes = 1;
    auto manager = pooch::ResidencyManager::Create(device_, options);
    ASSERT_TRUE(manager.ok()) << manager.status();
    manager_ = *std::move(manager);
    auto a = manager_->Allocate(4 * kMiB);
    auto b = manager_->Allocate(4 * kMiB);
    ASSERT_TRUE(a.ok() && b.ok());
    a_ = *a;
    b_ = *b;
    auto small = pooch::SmallAllocator::Create(device_, {});
    ASSERT_TRUE(small.ok()) << small.status();
    small_ = *std::move(small);
  }

  KernelMemory Memory() const { return {manager_.get(), small_.get()}; }

  pooch::FakeDevice device_;
  std::unique_ptr<pooch::ResidencyManager> manager_;
  std::unique_ptr<pooch::SmallAllocator> small_;
  uintptr_t a_ = 0;
  uintptr_t b_ = 0;
};

// A parameter block as a compiler lays out (int n; float* x; float s; float* y; long junk).
struct Params {
  int n;
  uintptr_t x;
  float s;
  uintptr_t y;
  uintptr_t junk;
};

TEST_F(KernelArgsTest, FindsWordsInsideManagedAllocations) {
  int host = 0;
  const Params p{7, a_, 1.5f, b_ + 4096, reinterpret_cast<uintptr_t>(&host)};
  Ranges ranges;
  ScanWords(Memory(), &p, sizeof(p), &ranges);
  ASSERT_EQ(ranges.get().size(), 2u);
  EXPECT_EQ(ranges.get()[0].address, a_);
  EXPECT_EQ(ranges.get()[1].address, b_ + 4096);
}

TEST_F(KernelArgsTest, IgnoresUnmanagedAndPartialWords) {
  uintptr_t words[2] = {a_ - 1, 0};  // just below the allocation, and null
  Ranges ranges;
  ScanWords(Memory(), words, sizeof(words), &ranges);
  EXPECT_TRUE(ranges.get().empty());
  // A parameter of 4 bytes cannot hold a pointer.
  ScanWords(Memory(), &a_, 4, &ranges);
  EXPECT_TRUE(ranges.get().empty());
  ScanWords({}, &a_, sizeof(a_), &ranges);
  EXPECT_TRUE(ranges.get().empty());
}

TEST_F(KernelArgsTest, DriverLaunchWithExtraBuffer) {
  const Params p{1, b_, 0.0f, 0, a_ + 8};
  size_t size = sizeof(p);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<Params*>(&p),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  const std::optional<Ranges> ranges = DriverKernelRanges(Memory(), nullptr, nullptr, extra);
  ASSERT_TRUE(ranges.has_value());
  ASSERT_EQ(ranges->get().size(), 2u);
  EXPECT_EQ(ranges->get()[0].address, b_);
  EXPECT_EQ(ranges->get()[1].address, a_ + 8);
  // A buffer without its size cannot be scanned: the launch is opaque.
  void* unsized[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<Params*>(&p), CU_LAUNCH_PARAM_END};
  EXPECT_FALSE(DriverKernelRanges(Memory(), nullptr, nullptr, unsized).has_value());
}

// A parameter layout as a query reports it: `sizes` parameters, then past-the-end (or unknown).
struct FakeLayout {
  std::vector<size_t> sizes;
  ParamLookup after = ParamLookup::kPastEnd;
  ParamLookup operator()(size_t i, size_t* offset, size_t* size) const {
    if (i >= sizes.size()) return after;
    *offset = 8 * i;
    *size = sizes[i];
    return ParamLookup::kFound;
  }
};

TEST_F(KernelArgsTest, ScanParamsReadsEachParameterWithItsSize) {
  uintptr_t x = a_ + 16, y = b_;
  int n = 3;
  void* params[] = {&n, &x, &y};
  const std::optional<Ranges> r = ScanParams(Memory(), params, FakeLayout{{4, 8, 8}});
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->get().size(), 2u);
  EXPECT_EQ(r->get()[0].address, a_ + 16);
  EXPECT_EQ(r->get()[1].address, b_);
  EXPECT_EQ(r->get()[0].mode, pooch::AccessRange::Mode::kReadWrite);
}

TEST_F(KernelArgsTest, ScanParamsKnowsAKernelWithoutParameters) {
  const std::optional<Ranges> r = ScanParams(Memory(), nullptr, FakeLayout{{}});
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->get().empty());
}

// Note [Kernel words]: a verdict decides each word's mode by its offset in the parameter buffer.
TEST_F(KernelArgsTest, AnExactVerdictKeepsOnlyTheWordsTheKernelMayReach) {
  // k_scale(ScaleArgs{out, in, stale, n}) at offset 8 after an int: writes out, reads in.
  pooch::kernels::KernelVerdict exact;
  exact.writes = {8};
  exact.reads = {16};
  uintptr_t args[3] = {b_ + 64, a_, b_ + 128};  // out, in, stale
  int n = 3;
  void* params[] = {&n, args};
  const FakeLayout layout{{4, 24}};  // the struct at offset 8
  std::optional<Ranges> r = ScanParams(Memory(), params, layout, &exact);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->get().size(), 2u);  // the stale word is no use at all
  EXPECT_EQ(r->get()[0].address, b_ + 64);
  EXPECT_EQ(r->get()[0].mode, pooch::AccessRange::Mode::kReadWrite);  // may write: not overwrite
  EXPECT_EQ(r->get()[1].address, a_);
  EXPECT_EQ(r->get()[1].mode, pooch::AccessRange::Mode::kRead);
  // Reads unknown: the written word read and written, every other word read.
  pooch::kernels::KernelVerdict writes_only = exact;
  writes_only.AddUnknown(false, "loads through memory");
  r = ScanParams(Memory(), params, layout, &writes_only);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->get().size(), 3u);
  EXPECT_EQ(r->get()[0].mode, pooch::AccessRange::Mode::kReadWrite);
  EXPECT_EQ(r->get()[1].mode, pooch::AccessRange::Mode::kRead);
  EXPECT_EQ(r->get()[2].mode, pooch::AccessRange::Mode::kRead);
  // Writes unknown, or no verdict: every word read and written, as before the analysis.
  pooch::kernels::KernelVerdict unknown;
  unknown.AddUnknown(true, "address from memory");
  for (const pooch::kernels::KernelVerdict* v :
       {&unknown, static_cast<pooch::kernels::KernelVerdict*>(nullptr)}) {
    r = ScanParams(Memory(), params, layout, v);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->get().size(), 3u);
    for (const pooch::AccessRange& range : r->get()) {
      EXPECT_EQ(range.mode, pooch::AccessRange::Mode::kReadWrite);
    }
  }
}

// Note [Small blocks in the lineage]: a word the kernel may write that points into a small slab
// is a small write, for the lineage alone; one it only reads is nothing, nor is any word without
// a sub-allocator.
TEST_F(KernelArgsTest, WrittenWordsIntoSmallBlocksAreSmallWrites) {
  auto w = small_->Allocate(128 << 10);
  auto bias = small_->Allocate(1000);
  ASSERT_TRUE(w.ok() && bias.ok());
  int host = 0;
  // k(int n; Args{out, w, bias, host}): the struct at offset 8.
  uintptr_t args[4] = {a_, *w + 256, *bias, reinterpret_cast<uintptr_t>(&host)};
  int n = 3;
  void* params[] = {&n, args};
  const FakeLayout layout{{4, 32}};
  // No verdict (the analysis off) or writes unknown: every word may be written.
  pooch::kernels::KernelVerdict unknown;
  unknown.AddUnknown(true, "address from memory");
  for (const pooch::kernels::KernelVerdict* v :
       {&unknown, static_cast<pooch::kernels::KernelVerdict*>(nullptr)}) {
    std::optional<Ranges> r = ScanParams(Memory(), params, layout, v);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->get().size(), 1u);  // the manager and the profile see what they saw
    EXPECT_EQ(r->get()[0].address, a_);
    ASSERT_EQ(r->small_writes().size(), 2u);
    EXPECT_EQ(r->small_writes()[0].address, *w + 256);  // inside the block
    EXPECT_EQ(r->small_writes()[1].address, *bias);
    for (const pooch::AccessRange& range : r->small_writes()) {
      EXPECT_EQ(range.mode, pooch::AccessRange::Mode::kReadWrite);
    }
  }
  // Exact: writes w (offset 16), reads a_ and the bias; the host word is no use.
  pooch::kernels::KernelVerdict exact;
  exact.writes = {16};
  exact.reads = {8, 24};
  std::optional<Ranges> r = ScanParams(Memory(), params, layout, &exact);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->get().size(), 1u);
  EXPECT_EQ(r->get()[0].mode, pooch::AccessRange::Mode::kRead);
  ASSERT_EQ(r->small_writes().size(), 1u);
  EXPECT_EQ(r->small_writes()[0].address, *w + 256);
  // Writes known, reads unknown: the read-only bias word is still no write.
  pooch::kernels::KernelVerdict writes_only = exact;
  writes_only.AddUnknown(false, "loads through memory");
  r = ScanParams(Memory(), params, layout, &writes_only);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->small_writes().size(), 1u);
  EXPECT_EQ(r->small_writes()[0].address, *w + 256);
  // A word past a block's requested bytes, in the slab: a false positive only forgets a recipe.
  uintptr_t past = *bias + 1000;
  Ranges ranges;
  ScanWords(Memory(), &past, sizeof(past), &ranges);
  EXPECT_EQ(ranges.small_writes().size(), 1u);
  // Without a sub-allocator the slabs are not known.
  Ranges none;
  ScanWords({manager_.get(), nullptr}, args, sizeof(args), &none);
  EXPECT_EQ(none.get().size(), 1u);
  EXPECT_TRUE(none.small_writes().empty());
}

// Note [Conditional escapes] (core/kernels/analysis.h): a verdict whose kernel may store a word's
// value holds for a launch only while that word points into no memory of pooch's.
TEST_F(KernelArgsTest, AnEscapingPointerMakesTheLaunchUnknown) {
  // k_escape(float* out, float** slot, int n): stores word 0x0's value through word 0x8.
  pooch::kernels::KernelVerdict escape;
  escape.writes = {0, 8};
  escape.escapes = {0};
  const FakeLayout layout{{8, 8, 4}};
  int n = 4;
  // out points into an allocation: the pointer escapes, the launch is unknown (every word read
  // and written, no verdict for its recipe), whatever the analysis concluded.
  uintptr_t out = a_ + 64, slot = b_;
  void* params[] = {&out, &slot, &n};
  const pooch::kernels::KernelVerdict* launch = &escape;
  std::optional<Ranges> r = ScanParams(Memory(), params, layout, &escape, &launch);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(launch, nullptr);
  ASSERT_EQ(r->get().size(), 2u);
  for (const pooch::AccessRange& range : r->get()) {
    EXPECT_EQ(range.mode, pooch::AccessRange::Mode::kReadWrite);
  }
  // Into a small block too.
  auto block = small_->Allocate(256);
  ASSERT_TRUE(block.ok());
  out = *block;
  launch = &escape;
  r = ScanParams(Memory(), params, layout, &escape, &launch);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(launch, nullptr);
  // The same through the driver's argument buffer.
  struct {
    uintptr_t out, slot;
    int n;
  } buffer{a_, b_, 4};
  size_t size = sizeof(buffer);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  launch = &escape;
  r = DriverKernelRanges(Memory(), nullptr, nullptr, extra, &escape, &launch);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(launch, nullptr);
  // A word that is no pointer of pooch's (a host address): the exact verdict applies.
  int host = 0;
  out = reinterpret_cast<uintptr_t>(&host);
  launch = nullptr;
  r = ScanParams(Memory(), params, layout, &escape, &launch);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(launch, &escape);
  ASSERT_EQ(r->get().size(), 1u);
  EXPECT_EQ(r->get()[0].address, b_);
  buffer.out = reinterpret_cast<uintptr_t>(&host);
  r = DriverKernelRanges(Memory(), nullptr, nullptr, extra, &escape, &launch);
  EXPECT_EQ(launch, &escape);
}

TEST_F(KernelArgsTest, AnEscapingScalarKeepsTheVerdictExact) {
  // k_threshold(float* out, const float* in, Threshold{float threshold, value}, int n): the
  // struct's word 0x10 escapes; PyTorch's ReLU backward and FillFunctor<long> are so.
  pooch::kernels::KernelVerdict threshold;
  threshold.writes = {0};
  threshold.reads = {8};
  threshold.escapes = {16};
  const FakeLayout layout{{8, 8, 8, 4}};
  float t[2] = {0.0f, 0.5f};
  uintptr_t out = a_, in = b_;
  int n = 4;
  void* params[] = {&out, &in, t, &n};
  const pooch::kernels::KernelVerdict* launch = nullptr;
  std::optional<Ranges> r = ScanParams(Memory(), params, layout, &threshold, &launch);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(launch, &threshold);
  ASSERT_EQ(r->get().size(), 2u);
  EXPECT_EQ(r->get()[0].mode, pooch::AccessRange::Mode::kReadWrite);
  EXPECT_EQ(r->get()[1].mode, pooch::AccessRange::Mode::kRead);
  // Scalars whose bits happen to be an address of pooch's: unknown, never wrong.
  static_assert(sizeof(t) == sizeof(uintptr_t));
  const uintptr_t inside = a_ + 4;
  std::memcpy(t, &inside, sizeof(t));
  r = ScanParams(Memory(), params, layout, &threshold, &launch);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(launch, nullptr);
  // A word no single parameter covers whole holds no pointer; without a manager nothing is
  // pooch's.
  const uint32_t half = static_cast<uint32_t>(a_);
  EXPECT_EQ(EscapeVerdict(Memory(), &threshold, {{16, 4, &half}}), &threshold);
  EXPECT_EQ(EscapeVerdict({}, &threshold, {{16, 8, &inside}}), &threshold);
  EXPECT_EQ(EscapeVerdict(Memory(), &threshold, {{16, 8, &inside}}), nullptr);
  EXPECT_EQ(EscapeVerdict(Memory(), nullptr, {{16, 8, &inside}}), nullptr);
}

// Note [Opaque calls]: an unknown layout is never read as "touches nothing".
TEST_F(KernelArgsTest, ScanParamsUnknownLayoutIsOpaque) {
  uintptr_t x = a_;
  void* params[] = {&x};
  EXPECT_FALSE(ScanParams(Memory(), params, FakeLayout{{}, ParamLookup::kUnknown}));
  EXPECT_THAT(UnknownLayoutReason(), HasSubstr("parameter 0's size failed"));
  EXPECT_FALSE(ScanParams(Memory(), params, FakeLayout{{8}, ParamLookup::kUnknown}));
  EXPECT_THAT(UnknownLayoutReason(), HasSubstr("parameter 1's size failed"));
  // Parameters but no argument array: nothing to scan, so opaque too.
  EXPECT_FALSE(ScanParams(Memory(), nullptr, FakeLayout{{8}}));
  EXPECT_THAT(UnknownLayoutReason(), HasSubstr("parameter 0 has a size but no argument pointer"));
}

}  // namespace
}  // namespace pooch::interpose
