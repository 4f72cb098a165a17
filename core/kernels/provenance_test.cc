#include "core/kernels/provenance.h"

#include "gtest/gtest.h"

namespace pooch::kernels {
namespace {

TEST(Provenance, JoinIsTheLeastUpperBound) {
  const Provenance bottom;
  EXPECT_EQ(Join(bottom, Provenance::Lo(8)), Provenance::Lo(8));
  EXPECT_EQ(Join(Provenance::Int(), bottom), Provenance::Int());
  EXPECT_EQ(Join(Provenance::Lo(8), Provenance::Lo(8)), Provenance::Lo(8));
  EXPECT_EQ(Join(Provenance::Lo(8), Provenance::Lo(0)), Provenance::Unknown());
  EXPECT_EQ(Join(Provenance::Lo(8), Provenance::Hi(8)), Provenance::Unknown());
  EXPECT_EQ(Join(Provenance::Lo(8), Provenance::Int()), Provenance::Unknown());
  EXPECT_EQ(Join(Provenance::Unknown(), Provenance::Int()), Provenance::Unknown());
}

TEST(Provenance, SumKeepsOnePointerHalf) {
  Sum one;
  one.Add(Provenance::Int(), false);
  one.Add(Provenance::Hi(16), false);
  EXPECT_EQ(one.Result(), Provenance::Hi(16));

  Sum two;
  two.Add(Provenance::Lo(0), false);
  two.Add(Provenance::Lo(0), false);
  EXPECT_EQ(two.Result(), Provenance::Unknown());

  Sum negated;
  negated.Add(Provenance::Lo(0), true);
  EXPECT_EQ(negated.Result(), Provenance::Unknown());

  Sum ints;
  ints.Add(Provenance::Int(), true);
  EXPECT_EQ(ints.Result(), Provenance::Int());
  EXPECT_TRUE(Provenance::Unknown().MayCarryPointer());
  EXPECT_FALSE(Provenance::Int().MayCarryPointer());
}

}  // namespace
}  // namespace pooch::kernels
