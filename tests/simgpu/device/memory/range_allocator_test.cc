#include "tests/simgpu/device/memory/range_allocator.h"

#include <gtest/gtest.h>

namespace simgpu {
namespace {

TEST(RangeAllocator, FirstFitAlignedAndCoalescing) {
  RangeAllocator a(1 << 20);
  EXPECT_EQ(a.Allocate(100, 256), 0u);
  EXPECT_EQ(a.Allocate(100, 256), 256u);
  EXPECT_EQ(a.Allocate(4096, 4096), 4096u);
  a.Free(256, 100);
  EXPECT_EQ(a.Allocate(50, 256), 256u);  // the hole is reused first
  a.Free(0, 100);
  a.Free(256, 50);
  a.Free(4096, 4096);
  EXPECT_EQ(a.free_bytes(), 1u << 20);
  EXPECT_EQ(a.Allocate(1 << 20, 1), 0u);  // everything coalesced back into one range
  EXPECT_FALSE(a.Allocate(1, 1).has_value());
}

TEST(RangeAllocator, HintAndFailure) {
  RangeAllocator a(1 << 20);
  EXPECT_EQ(a.Allocate(4096, 4096, 8192), 8192u);
  EXPECT_EQ(a.Allocate(4096, 4096, 8192), 0u);  // hint taken: anywhere else
  EXPECT_FALSE(a.Allocate(2 << 20, 4096).has_value());
  EXPECT_FALSE(a.Allocate(0, 4096).has_value());
  EXPECT_FALSE(a.Allocate(10, 3).has_value());  // alignment not a power of two
}

}  // namespace
}  // namespace simgpu
