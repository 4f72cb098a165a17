#include "core/small_alloc/small_allocator.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "core/testing/fake_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::testing::IsEmpty;

constexpr int64_t kG = 64 << 10;  // FakeDevice's default granularity

FakeDevice::Options DeviceOptions(FakeDevice::Mode mode) {
  FakeDevice::Options o;
  o.mode = mode;
  o.capacity = 64 * kG;
  return o;
}

// A budget that records what is charged and refuses beyond `limit`.
struct Budget {
  int64_t limit = int64_t{1} << 40;
  int64_t charged = 0;
  SmallAllocatorOptions Options(int64_t max_bytes) {
    SmallAllocatorOptions o;
    o.max_bytes = max_bytes;
    o.charge = [this](int64_t b) {
      if (charged + b > limit) return absl::ResourceExhaustedError("budget");
      charged += b;
      return absl::OkStatus();
    };
    o.uncharge = [this](int64_t b) { charged -= b; };
    return o;
  }
};

TEST(SmallAllocatorTest, BlocksAreAlignedDistinctAndRoundedTo512) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kImmediate));
  Budget budget;
  auto alloc = *SmallAllocator::Create(device, budget.Options(int64_t{1} << 20));
  struct Got {
    DeviceAddress address;
    int64_t bytes;
  };
  std::vector<Got> got;
  for (int64_t bytes :
       {1, 255, 256, 512, 513, 1000, 4096, 4097, 65535, 65536, 600000, (1 << 20) - 1, 7, 3000}) {
    absl::StatusOr<DeviceAddress> a = alloc->Allocate(bytes);
    ASSERT_TRUE(a.ok()) << bytes << ": " << a.status();
    EXPECT_EQ(*a % 256, 0u) << bytes;
    EXPECT_EQ(*a % SmallAllocator::kMinBlock, 0u) << bytes;
    std::optional<int64_t> block = alloc->BlockBytes(*a);
    ASSERT_TRUE(block.has_value());
    EXPECT_GE(*block, bytes);
    EXPECT_EQ(*block, (bytes + 511) / 512 * 512) << bytes;
    // The whole block is mapped and writable.
    std::vector<uint8_t> data(static_cast<size_t>(bytes), static_cast<uint8_t>(bytes));
    ASSERT_TRUE(device.Write(*a, data.data(), bytes).ok());
    got.push_back({*a, *block});
  }
  std::sort(got.begin(), got.end(),
            [](const Got& x, const Got& y) { return x.address < y.address; });
  for (size_t i = 1; i < got.size(); ++i) {
    EXPECT_LE(got[i - 1].address + static_cast<DeviceAddress>(got[i - 1].bytes), got[i].address);
  }
  const SmallAllocatorStats st = alloc->Stats();
  EXPECT_EQ(st.live_blocks, static_cast<int64_t>(got.size()));
  EXPECT_EQ(st.slab_bytes, budget.charged);
  EXPECT_EQ(device.physical_bytes(), budget.charged);
  EXPECT_FALSE(alloc->Allocate(0).ok());
  EXPECT_FALSE(alloc->Allocate(int64_t{1} << 20).ok());
  EXPECT_THAT(device.violations(), IsEmpty());
}

// With max_bytes = kG the largest block is one granule, and so is a slab.
TEST(SmallAllocatorTest, BlocksOfEverySizeShareASlab) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kImmediate));
  Budget budget;
  auto alloc = *SmallAllocator::Create(device, budget.Options(kG));
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(alloc->Allocate(300).ok());  // 25 KiB
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(alloc->Allocate(4096).ok());  // 16 KiB
  ASSERT_TRUE(alloc->Allocate(16000).ok());                             // 16 KiB
  EXPECT_EQ(alloc->Stats().slabs, 1);
  EXPECT_EQ(budget.charged, kG);
  EXPECT_EQ(device.create_physical_calls(), 1);
  ASSERT_TRUE(alloc->Allocate(8000).ok());  // only 7 KiB are free: a new slab
  EXPECT_EQ(alloc->Stats().slabs, 2);
}

TEST(SmallAllocatorTest, BadFrees) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kImmediate));
  auto alloc = *SmallAllocator::Create(device, SmallAllocatorOptions{});
  DeviceAddress a = *alloc->Allocate(1000);
  EXPECT_TRUE(absl::IsNotFound(alloc->Free(0x1234)));
  EXPECT_TRUE(absl::IsInvalidArgument(alloc->Free(a + 8)));
  EXPECT_TRUE(absl::IsInvalidArgument(alloc->Free(a + 1024)));  // a block never handed out
  EXPECT_TRUE(alloc->Free(a).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(alloc->Free(a)));  // double free
  EXPECT_FALSE(alloc->BlockBytes(a).has_value());
}

// Note [Range checks]: a range that starts in a block may run to the end of its rounding, not
// into the next block; one that starts where no block is allocated is freed memory; one outside
// every slab is not this allocator's business.
TEST(SmallAllocatorTest, CheckRangeKeepsRangesInsideTheirBlock) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kImmediate));
  auto alloc = *SmallAllocator::Create(device, SmallAllocatorOptions{});
  DeviceAddress a = *alloc->Allocate(1000);  // a block of 1024
  DeviceAddress b = *alloc->Allocate(1000);
  ASSERT_EQ(b, a + 1024);  // neighbours: what a range past a's end would overwrite
  EXPECT_TRUE(alloc->CheckRange(a, 1000).ok());
  EXPECT_TRUE(alloc->CheckRange(a, 1024).ok());
  EXPECT_TRUE(alloc->CheckRange(a + 1000, 24).ok());
  EXPECT_TRUE(alloc->CheckRange(b + 8, 16).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(alloc->CheckRange(a, 1025)));
  EXPECT_TRUE(absl::IsInvalidArgument(alloc->CheckRange(a + 1000, 100)));
  EXPECT_TRUE(absl::IsInvalidArgument(alloc->CheckRange(a, int64_t{1} << 62)));
  EXPECT_TRUE(absl::IsInvalidArgument(alloc->CheckRange(b + 1024, 8)));  // never handed out
  EXPECT_TRUE(alloc->CheckRange(0x1234, 8).ok());                        // not in a slab
  ASSERT_TRUE(alloc->Free(a).ok());
  absl::Status freed = alloc->CheckRange(a, 8);
  EXPECT_TRUE(absl::IsInvalidArgument(freed));
  EXPECT_THAT(freed.message(), ::testing::HasSubstr("freed"));
  EXPECT_TRUE(alloc->CheckRange(b, 1024).ok());
}

// Freed neighbours merge back: a slab cut into 512-byte blocks serves a whole-slab request once
// every block is free again, without a second slab.
TEST(SmallAllocatorTest, FreedNeighboursMerge) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kImmediate));
  Budget budget;
  auto alloc = *SmallAllocator::Create(device, budget.Options(kG));
  std::vector<DeviceAddress> blocks;
  for (int64_t i = 0; i < kG / 512; ++i) blocks.push_back(*alloc->Allocate(512));
  // Free in an interleaved order so that merges happen in both directions.
  for (size_t i = 0; i < blocks.size(); i += 2) ASSERT_TRUE(alloc->Free(blocks[i]).ok());
  for (size_t i = 1; i < blocks.size(); i += 2) ASSERT_TRUE(alloc->Free(blocks[i]).ok());
  const DeviceAddress base = *std::min_element(blocks.begin(), blocks.end());
  absl::StatusOr<DeviceAddress> whole = alloc->Allocate(kG - 1);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(*whole, base);
  EXPECT_EQ(alloc->BlockBytes(*whole), kG);
  EXPECT_EQ(alloc->Stats().slabs, 1);
  EXPECT_EQ(device.create_physical_calls(), 1);
}

// Note [Reuse after free]: a block freed right after queuing work that uses it is not handed
// out again until that work ran. A request the pending block cannot hold gets a new slab at
// once; one it can hold waits for the work, then reuses the block rather than mapping more.
TEST(SmallAllocatorTest, ReuseWaitsForWorkQueuedBeforeFree) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kManual));
  Budget budget;
  auto alloc = *SmallAllocator::Create(device, budget.Options(kG));
  const int64_t per_slab = kG / 4096;
  // Fill the first slab so that the only way to reuse is through the freed block.
  std::vector<DeviceAddress> blocks;
  for (int64_t i = 0; i < per_slab; ++i) blocks.push_back(*alloc->Allocate(4096));
  const DeviceAddress victim = blocks[3];
  bool ran = false;
  ASSERT_TRUE(device
                  .Launch(kDefaultStream, {{victim, 4096}},
                          [&](FakeDevice::Memory& m) {
                            const uint32_t x = 7;
                            ASSERT_TRUE(m.Write(victim, &x, sizeof x).ok());
                            ran = true;
                          })
                  .ok());
  ASSERT_TRUE(alloc->Free(victim).ok());
  // 8 KiB: more than is pending, so no wait; the kernel has not run and a second slab is made.
  absl::StatusOr<DeviceAddress> bigger = alloc->Allocate(8192);
  ASSERT_TRUE(bigger.ok()) << bigger.status();
  EXPECT_FALSE(ran);
  EXPECT_EQ(alloc->Stats().slabs, 2);
  EXPECT_EQ(alloc->Stats().pending_blocks, 1);
  EXPECT_EQ(alloc->Stats().waits, 0);
  // Fill the second slab too; none of it is the victim, and nothing waits.
  for (int64_t i = 0; i < per_slab - 2; ++i) {
    absl::StatusOr<DeviceAddress> next = alloc->Allocate(4096);
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_NE(*next, victim);
  }
  EXPECT_FALSE(ran);
  EXPECT_EQ(alloc->Stats().waits, 0);
  // Now only the pending block can hold 4 KiB: the allocation waits for the kernel, then
  // reuses it; no third slab.
  absl::StatusOr<DeviceAddress> again = alloc->Allocate(4096);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(ran);
  EXPECT_EQ(*again, victim);
  EXPECT_EQ(alloc->Stats().waits, 1);
  EXPECT_EQ(alloc->Stats().slabs, 2);
  EXPECT_EQ(alloc->Stats().pending_blocks, 0);
  EXPECT_THAT(device.violations(), IsEmpty());
}

// FakeDevice's stream 0 does not wait for other streams, as a real one does not for streams
// created with cudaStreamNonBlocking: a batch must also wait for those the caller names.
TEST(SmallAllocatorTest, ReuseWaitsForWorkOnUnorderedStreams) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kManual));
  const StreamHandle side = *device.CreateStream();
  SmallAllocatorOptions options;
  options.max_bytes = kG;
  options.unordered_streams = [side](std::vector<StreamHandle>* out) { out->push_back(side); };
  auto alloc = *SmallAllocator::Create(device, std::move(options));
  std::vector<DeviceAddress> blocks;
  for (int64_t i = 0; i < kG / 4096; ++i) blocks.push_back(*alloc->Allocate(4096));
  const DeviceAddress victim = blocks[5];
  bool ran = false;
  ASSERT_TRUE(device.Launch(side, {{victim, 4096}}, [&](FakeDevice::Memory&) { ran = true; }).ok());
  ASSERT_TRUE(alloc->Free(victim).ok());
  absl::StatusOr<DeviceAddress> again = alloc->Allocate(4096);  // waits: only the victim fits
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, victim);
  EXPECT_TRUE(ran);
  EXPECT_EQ(alloc->Stats().waits, 1);
  EXPECT_THAT(device.violations(), IsEmpty());
}

// Poll hands back the blocks of batches whose work completed, without blocking.
TEST(SmallAllocatorTest, PollCollectsCompletedBatches) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kManual));
  Budget budget;
  auto alloc = *SmallAllocator::Create(device, budget.Options(kG));
  DeviceAddress a = *alloc->Allocate(kG / 2);
  ASSERT_TRUE(alloc->Allocate(kG / 2).ok());
  ASSERT_TRUE(alloc->Free(a).ok());
  // A request larger than what is pending seals the free into a batch without waiting.
  ASSERT_TRUE(alloc->Allocate(kG - 1).ok());
  EXPECT_EQ(alloc->Stats().batches, 1);
  ASSERT_TRUE(alloc->Poll().ok());
  EXPECT_EQ(alloc->Stats().pending_blocks, 1);  // the record has not run
  device.RunPending();
  ASSERT_TRUE(alloc->Poll().ok());
  EXPECT_EQ(alloc->Stats().pending_blocks, 0);
  EXPECT_EQ(alloc->Stats().batches, 0);
  EXPECT_EQ(alloc->Stats().live_blocks, 2);
  EXPECT_EQ(alloc->Stats().waits, 0);
}

TEST(SmallAllocatorTest, WaitsForPendingFreesWhenNoSlabCanBeMade) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kManual));
  Budget budget;
  budget.limit = kG;  // one slab
  auto alloc = *SmallAllocator::Create(device, budget.Options(kG));
  std::vector<DeviceAddress> blocks;
  for (int64_t i = 0; i < kG / 8192; ++i) blocks.push_back(*alloc->Allocate(8192));
  EXPECT_TRUE(absl::IsResourceExhausted(alloc->Allocate(8192).status()));
  const DeviceAddress victim = blocks[0];
  bool ran = false;
  ASSERT_TRUE(
      device.Launch(kDefaultStream, {{victim, 8192}}, [&](FakeDevice::Memory&) { ran = true; })
          .ok());
  ASSERT_TRUE(alloc->Free(victim).ok());
  // No slab can be made: the allocation waits for the kernel, then reuses the block.
  absl::StatusOr<DeviceAddress> again = alloc->Allocate(8192);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(ran);
  EXPECT_EQ(*again, victim);
  EXPECT_EQ(alloc->Stats().waits, 1);
  EXPECT_EQ(budget.charged, kG);
  EXPECT_THAT(device.violations(), IsEmpty());
}

TEST(SmallAllocatorTest, ReleasesEmptySlabsButKeepsOne) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kImmediate));
  Budget budget;
  {
    auto alloc = *SmallAllocator::Create(device, budget.Options(kG));
    std::vector<DeviceAddress> blocks;
    const int64_t per_slab = kG / 16384;
    for (int64_t i = 0; i < 3 * per_slab; ++i) blocks.push_back(*alloc->Allocate(16384));
    EXPECT_EQ(alloc->Stats().slabs, 3);
    EXPECT_EQ(budget.charged, 3 * kG);
    for (DeviceAddress b : blocks) ASSERT_TRUE(alloc->Free(b).ok());
    // Frees are pending until an allocation or Poll looks at them; immediate mode has run the
    // (empty) work, so an allocation that finds nothing free seals and collects them.
    ASSERT_TRUE(alloc->Allocate(100).ok());
    EXPECT_EQ(alloc->Stats().pending_blocks, 0);
    EXPECT_EQ(alloc->Stats().slabs, 1);
    EXPECT_EQ(budget.charged, kG);
    EXPECT_EQ(device.physical_bytes(), kG);
    // A released slab is no slab, though its range stays in the span InSlab checks first.
    const auto in_slab = std::count_if(blocks.begin(), blocks.end(),
                                       [&](DeviceAddress b) { return alloc->InSlab(b); });
    EXPECT_EQ(in_slab, per_slab);
  }
  // The destructor gives everything back.
  EXPECT_EQ(budget.charged, 0);
  EXPECT_EQ(device.physical_bytes(), 0);
  EXPECT_EQ(device.mapped_bytes(), 0);
  EXPECT_THAT(device.violations(), IsEmpty());
}

// max_bytes may exceed a granule: the slab grows to hold the largest block.
TEST(SmallAllocatorTest, SlabHoldsTheLargestBlock) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kImmediate));
  Budget budget;
  auto alloc = *SmallAllocator::Create(device, budget.Options(int64_t{1} << 20));
  DeviceAddress a = *alloc->Allocate(600000);
  EXPECT_EQ(alloc->BlockBytes(a), 600064);
  EXPECT_EQ(budget.charged, int64_t{1} << 20);
  ASSERT_TRUE(alloc->Free(a).ok());
  ASSERT_TRUE(alloc->Poll().ok());  // nothing sealed yet: the block stays pending
  EXPECT_EQ(alloc->Stats().pending_blocks, 1);
  EXPECT_EQ(*alloc->Allocate(700000), a);  // sealed, complete, reused
  EXPECT_EQ(budget.charged, int64_t{1} << 20);
}

// Pointer queries answer about the allocation the program asked for: its start and requested
// bytes, from any address inside them, and nothing past them or once freed.
TEST(SmallAllocatorTest, BlockContainingIsTheRequestedRange) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kImmediate));
  Budget budget;
  auto alloc = *SmallAllocator::Create(device, budget.Options(int64_t{1} << 20));
  const DeviceAddress a = *alloc->Allocate(1000);
  const DeviceAddress b = *alloc->Allocate(512);
  for (DeviceAddress p : {a, a + 1, a + 999}) {
    std::optional<SmallAllocator::Requested> r = alloc->BlockContaining(p);
    ASSERT_TRUE(r.has_value()) << p - a;
    EXPECT_EQ(r->address, a);
    EXPECT_EQ(r->bytes, 1000);
  }
  EXPECT_FALSE(alloc->BlockContaining(a + 1000).has_value());  // the block's rounding
  EXPECT_FALSE(alloc->BlockContaining(a - 1).has_value());
  ASSERT_TRUE(alloc->BlockContaining(b + 511).has_value());
  EXPECT_EQ(alloc->BlockContaining(b + 511)->address, b);
  EXPECT_FALSE(alloc->BlockContaining(b + 512).has_value());
  EXPECT_TRUE(alloc->InSlab(a + 1000));
  EXPECT_FALSE(alloc->InSlab(a + 64 * kG));
  EXPECT_FALSE(alloc->InSlab(a - 1));  // below every slab
  EXPECT_FALSE(alloc->InSlab(1000));   // a scalar word of a kernel's parameters
  ASSERT_TRUE(alloc->Free(a).ok());
  EXPECT_FALSE(alloc->BlockContaining(a).has_value());
}

// POOCH_MIN_SWAP_BYTES 0 or 1 makes every allocation swappable: the allocator exists (the
// interposer asks it about every free) but serves nothing and maps nothing.
TEST(SmallAllocatorTest, MaxBytesZeroOrOneServesNothing) {
  for (int64_t max_bytes : {0, 1}) {
    FakeDevice device(DeviceOptions(FakeDevice::Mode::kImmediate));
    Budget budget;
    absl::StatusOr<std::unique_ptr<SmallAllocator>> alloc =
        SmallAllocator::Create(device, budget.Options(max_bytes));
    ASSERT_TRUE(alloc.ok()) << max_bytes << ": " << alloc.status();
    EXPECT_TRUE(absl::IsInvalidArgument((*alloc)->Allocate(1).status())) << max_bytes;
    EXPECT_TRUE(absl::IsNotFound((*alloc)->Free(4096))) << max_bytes;
    EXPECT_EQ((*alloc)->Stats().slabs, 0);
    EXPECT_EQ(budget.charged, 0);
    EXPECT_EQ(device.mapped_bytes(), 0);
  }
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kImmediate));
  EXPECT_FALSE(SmallAllocator::Create(device, Budget().Options(-1)).ok());
}

TEST(SmallAllocatorTest, ConcurrentThreadsGetDisjointBlocks) {
  FakeDevice device(DeviceOptions(FakeDevice::Mode::kWorker));
  auto alloc = *SmallAllocator::Create(device, SmallAllocatorOptions{});
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::pair<DeviceAddress, uint64_t>> mine;
      for (int i = 0; i < 500; ++i) {
        absl::StatusOr<DeviceAddress> a = alloc->Allocate(512 * (1 + (i + t) % 4));
        if (!a.ok()) {
          ++failures;
          continue;
        }
        const uint64_t tag = (uint64_t{static_cast<uint64_t>(t)} << 32) | static_cast<uint64_t>(i);
        if (!device.Write(*a, &tag, sizeof tag).ok()) ++failures;
        mine.push_back({*a, tag});
        if (i % 3 == 0) {
          // Another thread holding the same block would have overwritten the tag.
          uint64_t back = 0;
          if (!device.Read(mine.front().first, &back, sizeof back).ok()) ++failures;
          if (back != mine.front().second) ++failures;
          if (!alloc->Free(mine.front().first).ok()) ++failures;
          mine.erase(mine.begin());
        }
      }
      for (const auto& [a, tag] : mine) {
        uint64_t back = 0;
        if (!device.Read(a, &back, sizeof back).ok() || back != tag) ++failures;
        if (!alloc->Free(a).ok()) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(alloc->Stats().live_blocks, 0);
  EXPECT_THAT(device.violations(), IsEmpty());
}

}  // namespace
}  // namespace pooch
