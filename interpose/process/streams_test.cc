// Unit tests of the per-thread default stream mapping (streams.h).
#include "interpose/process/streams.h"

#include "gtest/gtest.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {
namespace {

TEST(PerThreadStream, ZeroIsTheCallersPerThreadStream) {
  EXPECT_EQ(PerThread(cudaStream_t{}), cudaStreamPerThread);
  EXPECT_EQ(PerThread(CUstream{}), CU_STREAM_PER_THREAD);
  EXPECT_EQ(PerThreadStream(0), reinterpret_cast<uintptr_t>(cudaStreamPerThread));
}

TEST(PerThreadStream, ExplicitHandlesKeepTheirMeaning) {
  EXPECT_EQ(PerThread(cudaStreamLegacy), cudaStreamLegacy);
  EXPECT_EQ(PerThread(cudaStreamPerThread), cudaStreamPerThread);
  const auto created = reinterpret_cast<cudaStream_t>(uintptr_t{0x7f0012340000});
  EXPECT_EQ(PerThread(created), created);
}

}  // namespace
}  // namespace pooch::interpose
