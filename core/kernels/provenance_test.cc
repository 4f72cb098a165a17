#include "core/kernels/provenance.h"

#include "gtest/gtest.h"

namespace pooch::kernels {
namespace {

TEST(Provenance, JoinIsTheLeastUpperBound) {
  const Provenance bottom;
  EXPECT_EQ(Join(bottom, Provenance::Lo(8)), Provenance::Lo(8));
  EXPECT_EQ(Join(Provenance::Int(), bottom), Provenance::Int());
  EXPECT_EQ(Join(Provenance::Lo(8), Provenance::Lo(8)), Provenance::Lo(8));
  const Provenance both = Join(Provenance::Lo(8), Provenance::Lo(0));
  EXPECT_EQ(both.kind, Provenance::Kind::kLo);
  EXPECT_EQ(both.Words(), (std::vector<int32_t>{0, 8}));
  EXPECT_EQ(Join(both, Provenance::Lo(0)), both);
  Provenance many = both;
  for (int w : {16, 24, 32}) many = Join(many, Provenance::Lo(w));
  EXPECT_EQ(many, Provenance::Unknown());  // past kMaxWords
  // A low half or a high half: Mixed, which names its words for escapes only.
  const Provenance mixed = Join(Provenance::Lo(8), Provenance::Hi(16));
  EXPECT_EQ(mixed.kind, Provenance::Kind::kMixed);
  EXPECT_EQ(mixed.Words(), (std::vector<int32_t>{8, 16}));
  EXPECT_FALSE(mixed.IsPointer());
  EXPECT_TRUE(mixed.MayCarryPointer());
  EXPECT_EQ(Join(mixed, Provenance::Int()), mixed);
  EXPECT_EQ(Join(Provenance::Int(), mixed), mixed);
  EXPECT_EQ(Join(mixed, Provenance::Lo(16)), mixed);
  EXPECT_EQ(Join(mixed, Join(Provenance::Hi(0), Provenance::Lo(24))).Words(),
            (std::vector<int32_t>{0, 8, 16, 24}));
  Provenance five = mixed;
  for (int w : {0, 24, 32}) five = Join(five, Provenance::Hi(w));
  EXPECT_EQ(five, Provenance::Unknown());  // past kMaxWords
  EXPECT_EQ(Join(mixed, Provenance::Unknown()), Provenance::Unknown());
  // Note [Conditional escapes]: a half or an integer stays the half's word, marked.
  const Provenance or_int = Join(Provenance::Lo(8), Provenance::Int());
  EXPECT_EQ(or_int.kind, Provenance::Kind::kLo);
  EXPECT_TRUE(or_int.or_int);
  EXPECT_EQ(or_int.Words(), std::vector<int32_t>{8});
  EXPECT_NE(or_int, Provenance::Lo(8));
  EXPECT_EQ(Join(Provenance::Int(), or_int), or_int);
  EXPECT_EQ(Join(Provenance::Lo(8), or_int), or_int);
  EXPECT_TRUE(or_int.MayCarryPointer());
  EXPECT_EQ(Join(or_int, Provenance::Hi(8)).kind, Provenance::Kind::kMixed);
  EXPECT_EQ(Join(Provenance::Unknown(), Provenance::Int()), Provenance::Unknown());
}

TEST(Provenance, SumKeepsOnePointerHalf) {
  Sum one;
  one.Add(Provenance::Int(), false);
  one.Add(Provenance::Hi(16), false);
  EXPECT_EQ(one.Result(), Provenance::Hi(16));

  Sum two;
  two.Add(Provenance::Lo(0), false);
  two.Add(Provenance::Lo(8), false);
  EXPECT_EQ(two.Result().Words(), (std::vector<int32_t>{0, 8}));

  // A low half plus a high half is no address, but stored it may carry either word's bits.
  Sum mixed;
  mixed.Add(Provenance::Lo(0), false);
  mixed.Add(Provenance::Hi(8), false);
  EXPECT_EQ(mixed.Result().kind, Provenance::Kind::kMixed);
  EXPECT_EQ(mixed.Result().Words(), (std::vector<int32_t>{0, 8}));
  Sum mixed_summand;
  mixed_summand.Add(Provenance::Int(), false);
  mixed_summand.Add(mixed.Result(), false);
  EXPECT_EQ(mixed_summand.Result(), mixed.Result());
  Sum negated_mixed;
  negated_mixed.Add(mixed.Result(), true);
  EXPECT_EQ(negated_mixed.Result(), Provenance::Unknown());

  Sum negated;
  negated.Add(Provenance::Lo(0), true);
  EXPECT_EQ(negated.Result(), Provenance::Unknown());

  // A marked half plus a certain one is certainly a pointer; plus integers it stays marked.
  const Provenance or_int = Join(Provenance::Lo(8), Provenance::Int());
  Sum certain;
  certain.Add(or_int, false);
  certain.Add(Provenance::Lo(0), false);
  EXPECT_FALSE(certain.Result().or_int);
  EXPECT_EQ(certain.Result().Words(), (std::vector<int32_t>{0, 8}));
  Sum marked;
  marked.Add(or_int, false);
  marked.Add(Provenance::Int(), false);
  EXPECT_EQ(marked.Result(), or_int);

  Sum ints;
  ints.Add(Provenance::Int(), true);
  EXPECT_EQ(ints.Result(), Provenance::Int());
  EXPECT_TRUE(Provenance::Unknown().MayCarryPointer());
  EXPECT_FALSE(Provenance::Int().MayCarryPointer());
}

}  // namespace
}  // namespace pooch::kernels
