// Unit tests of pooch's answers for the device's memory pool (mem_pool.h, Note [Memory pools]).
#include "interpose/hooks/runtime/mem_pool.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

pooch::ResidencyStats Stats(int64_t device, int64_t cached, int64_t window_peak) {
  pooch::ResidencyStats s;
  s.device_bytes = device;
  s.cached_bytes = cached;
  s.window_peak_device_bytes = window_peak;
  s.peak_device_bytes = window_peak + 12345;  // the run's peak is not the pool's watermark
  return s;
}

uint64_t GetU64(const PoolAnswers& p, cudaMemPoolAttr attr, const pooch::ResidencyStats& s) {
  uint64_t v = 777;
  EXPECT_EQ(p.Get(attr, s, &v), cudaSuccess) << attr;
  return v;
}

TEST(PoolAnswers, MemoryFiguresArePoochs) {
  PoolAnswers p;
  const pooch::ResidencyStats s = Stats(/*device=*/96 << 20, /*cached=*/32 << 20, 200 << 20);
  EXPECT_EQ(GetU64(p, cudaMemPoolAttrReservedMemCurrent, s), uint64_t{96} << 20);
  EXPECT_EQ(GetU64(p, cudaMemPoolAttrUsedMemCurrent, s), uint64_t{64} << 20);
  EXPECT_EQ(GetU64(p, cudaMemPoolAttrReservedMemHigh, s), uint64_t{200} << 20);
  EXPECT_EQ(GetU64(p, cudaMemPoolAttrUsedMemHigh, s), uint64_t{200} << 20);
}

TEST(PoolAnswers, SettingsReadBack) {
  PoolAnswers p;
  const pooch::ResidencyStats s;
  bool reset = true;
  EXPECT_EQ(GetU64(p, cudaMemPoolAttrReleaseThreshold, s), 0u);
  const uint64_t all = UINT64_MAX;  // what PyTorch sets
  EXPECT_EQ(p.Set(cudaMemPoolAttrReleaseThreshold, &all, &reset), cudaSuccess);
  EXPECT_FALSE(reset);
  EXPECT_EQ(GetU64(p, cudaMemPoolAttrReleaseThreshold, s), UINT64_MAX);
  int flag = 0;
  EXPECT_EQ(p.Get(cudaMemPoolReuseAllowOpportunistic, s, &flag), cudaSuccess);
  EXPECT_EQ(flag, 1);
  flag = 0;
  EXPECT_EQ(p.Set(cudaMemPoolReuseAllowOpportunistic, &flag, &reset), cudaSuccess);
  flag = 5;
  EXPECT_EQ(p.Get(cudaMemPoolReuseAllowOpportunistic, s, &flag), cudaSuccess);
  EXPECT_EQ(flag, 0);
}

TEST(PoolAnswers, WatermarkResetsOnlyToZero) {
  PoolAnswers p;
  bool reset = false;
  uint64_t zero = 0, one = 1;
  EXPECT_EQ(p.Set(cudaMemPoolAttrReservedMemHigh, &zero, &reset), cudaSuccess);
  EXPECT_TRUE(reset);
  EXPECT_EQ(p.Set(cudaMemPoolAttrUsedMemHigh, &zero, &reset), cudaSuccess);
  EXPECT_TRUE(reset);
  EXPECT_EQ(p.Set(cudaMemPoolAttrUsedMemHigh, &one, &reset), cudaErrorInvalidValue);
  EXPECT_FALSE(reset);
  EXPECT_EQ(p.Set(cudaMemPoolAttrReservedMemCurrent, &zero, &reset), cudaErrorInvalidValue);
}

TEST(PoolAnswers, UnknownAttributesAreRefused) {
  PoolAnswers p;
  bool reset = false;
  uint64_t v = 0;
  const auto unknown = static_cast<cudaMemPoolAttr>(0x7777);
  EXPECT_EQ(p.Get(unknown, pooch::ResidencyStats{}, &v), cudaErrorNotSupported);
  EXPECT_EQ(p.Set(unknown, &v, &reset), cudaErrorNotSupported);
  EXPECT_EQ(p.Get(cudaMemPoolAttrUsedMemCurrent, pooch::ResidencyStats{}, nullptr),
            cudaErrorInvalidValue);
}

}  // namespace
}  // namespace pooch::interpose
