// Unit tests of Note [Collectives as accesses] (nccl_ranges.h) and Note [Collectives in a
// group] (nccl_group.h): the ranges a collective's buffers give, and a group's.
#include "interpose/hooks/nccl/nccl_ranges.h"

#include <cstdint>
#include <optional>

#include "gtest/gtest.h"
#include "interpose/hooks/nccl/nccl_group.h"

namespace pooch::interpose {
namespace {

using Mode = pooch::AccessRange::Mode;

const void* P(uintptr_t n) { return reinterpret_cast<const void*>(n); }

TEST(NcclRangesTest, TypeSizesAreNcclsAndAnUnknownTypeIsZero) {
  EXPECT_EQ(NcclTypeBytes(ncclInt8), 1u);
  EXPECT_EQ(NcclTypeBytes(ncclFloat8e5m2), 1u);
  EXPECT_EQ(NcclTypeBytes(ncclHalf), 2u);
  EXPECT_EQ(NcclTypeBytes(ncclBfloat16), 2u);
  EXPECT_EQ(NcclTypeBytes(ncclFloat32), 4u);
  EXPECT_EQ(NcclTypeBytes(ncclUint32), 4u);
  EXPECT_EQ(NcclTypeBytes(ncclInt64), 8u);
  EXPECT_EQ(NcclTypeBytes(ncclDouble), 8u);
  EXPECT_EQ(NcclTypeBytes(static_cast<ncclDataType_t>(ncclNumTypes)), 0u);
}

TEST(NcclRangesTest, OutOfPlaceReadsTheSendBufferAndWritesTheReceiveBuffer) {
  Ranges r;
  AddNcclBuffers(r, P(0x10000), 100, P(0x20000), 100, ncclFloat32);
  ASSERT_EQ(r.get().size(), 2u);
  EXPECT_EQ(r.get()[0].address, 0x10000u);
  EXPECT_EQ(r.get()[0].bytes, 400);
  EXPECT_EQ(r.get()[0].mode, Mode::kRead);
  EXPECT_EQ(r.get()[1].address, 0x20000u);
  EXPECT_EQ(r.get()[1].bytes, 400);
  EXPECT_EQ(r.get()[1].mode, Mode::kWrite);
  EXPECT_FALSE(r.get()[1].overwritten);  // a write of part of it keeps the rest's bytes
}

TEST(NcclRangesTest, InPlaceReceiveBufferIsReadAndWritten) {
  Ranges r;
  AddNcclBuffers(r, P(0x10000), 64, P(0x10000), 64, ncclFloat16);  // all-reduce in place
  ASSERT_EQ(r.get().size(), 2u);
  EXPECT_EQ(r.get()[1].mode, Mode::kReadWrite);
  EXPECT_EQ(r.get()[1].bytes, 128);
  // An all-gather in place: the send buffer is rank 1's slice of the receive buffer.
  Ranges g;
  AddNcclBuffers(g, P(0x10000 + 256), 64, P(0x10000), TimesRanks(64, 4), ncclFloat32);
  ASSERT_EQ(g.get().size(), 2u);
  EXPECT_EQ(g.get()[1].bytes, 1024);
  EXPECT_EQ(g.get()[1].mode, Mode::kReadWrite);
}

TEST(NcclRangesTest, NullBuffersAreLeftOutAndUnknownExtentsAreOneByte) {
  Ranges r;
  AddNcclBuffers(r, P(0x10000), 10, nullptr, std::nullopt, ncclInt32);  // ncclSend
  ASSERT_EQ(r.get().size(), 1u);
  EXPECT_EQ(r.get()[0].mode, Mode::kRead);
  Ranges u;
  AddNcclBuffers(u, P(0x10000), TimesRanks(10, std::nullopt), P(0x20000), 10,
                 static_cast<ncclDataType_t>(42));
  ASSERT_EQ(u.get().size(), 2u);
  EXPECT_EQ(u.get()[0].bytes, 1);
  EXPECT_EQ(u.get()[1].bytes, 1);
  EXPECT_EQ(TimesRanks(10, 0), std::nullopt);
  Ranges o;  // a count whose bytes overflow
  AddNcclBuffers(o, P(0x10000), SIZE_MAX / 2, nullptr, std::nullopt, ncclInt64);
  EXPECT_EQ(o.get()[0].bytes, 1);
}

TEST(NcclGroupTest, TheOutermostEndHoldsEveryCallOfItsOneStream) {
  GroupCalls group;
  Ranges a, b;
  a.Add(uintptr_t{0x10000}, 16, Mode::kRead);
  b.Add(uintptr_t{0x20000}, 16, Mode::kWrite);
  group.Add(7, a);  // not open: nothing kept
  group.Start();
  group.Start();
  group.Add(7, a);
  EXPECT_EQ(group.End(), std::nullopt);  // the inner group
  group.Add(7, b);
  std::optional<GroupCalls::Closing> closing = group.End();
  ASSERT_TRUE(closing.has_value());
  ASSERT_EQ(closing->ranges.get().size(), 2u);
  EXPECT_EQ(closing->ranges.get()[0].address, 0x10000u);
  EXPECT_EQ(closing->ranges.get()[1].mode, Mode::kWrite);
  EXPECT_EQ(closing->stream, uintptr_t{7});
  EXPECT_FALSE(group.open());
  EXPECT_EQ(group.End(), std::nullopt);  // no group open: NCCL answers
}

TEST(NcclGroupTest, CallsOnSeveralStreamsNameNoStream) {
  GroupCalls group;
  Ranges a;
  a.Add(uintptr_t{0x10000}, 16, Mode::kRead);
  group.Start();
  group.Add(7, a);
  group.Add(8, a);
  std::optional<GroupCalls::Closing> closing = group.End();
  ASSERT_TRUE(closing.has_value());
  EXPECT_EQ(closing->stream, std::nullopt);
  group.Start();  // the next group starts empty
  closing = group.End();
  ASSERT_TRUE(closing.has_value());
  EXPECT_TRUE(closing->ranges.get().empty());
  EXPECT_EQ(closing->stream, uintptr_t{0});
}

}  // namespace
}  // namespace pooch::interpose
