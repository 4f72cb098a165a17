// The summary's lines are the text scripts and tests read (Note [Summary lines]): each is checked
// against its printf format, with every figure a different value.
#include "interpose/process/summary_lines.h"

#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

ResidencyStats NumberedResidencyStats() {
  ResidencyStats s;
  s.peak_device_bytes = 1;
  s.peak_host_bytes = 2;
  s.swap_outs = 3;
  s.bytes_swapped_out = 4;
  s.swap_ins = 5;
  s.bytes_swapped_in = 6;
  s.demand_swap_ins = 7;
  s.cancelled_swap_outs = 8;
  s.swap_wait = absl::Microseconds(1234567);
  s.out_of_memory = 9;
  s.allocations = 10;
  s.frees = 11;
  s.host_reads = 12;
  s.overwritten_ins = 13;
  s.reserve_swap_outs = 14;
  s.current_swap_outs = 15;
  s.bytes_not_copied_out = 16;
  s.reuse_hits = 17;
  s.reuse_ordered_hits = 18;
  s.reuse_misses = 19;
  s.cached_bytes = 20;
  s.chunk_reuses = 21;
  s.retained_hits = 22;
  s.eviction_drops = 23;
  s.demand_swap_outs = 24;
  return s;
}

TEST(SummaryLinesTest, Memory) {
  const ResidencyStats s = NumberedResidencyStats();
  EXPECT_EQ(MemoryLine(int64_t{1} << 40, s),
            absl::StrFormat("memory: limit %lld peak_device_bytes %lld peak_host_bytes %lld",
                            1LL << 40, 1LL, 2LL));
}

TEST(SummaryLinesTest, Swaps) {
  const ResidencyStats s = NumberedResidencyStats();
  EXPECT_EQ(
      SwapsLine(s),
      absl::StrFormat(
          "swaps: out %lld (%lld bytes) in %lld (%lld bytes) demand_in %lld cancelled %lld "
          "wait_ms %.3f oom %lld allocations %lld frees %lld host_reads %lld "
          "overwritten_ins %lld reserve_outs %lld current_outs %lld (%lld bytes not copied)",
          3LL, 4LL, 5LL, 6LL, 7LL, 8LL, 1234.567, 9LL, 10LL, 11LL, 12LL, 13LL, 14LL, 15LL, 16LL));
  EXPECT_EQ(SwapsLine(ResidencyStats{}),
            "swaps: out 0 (0 bytes) in 0 (0 bytes) demand_in 0 cancelled 0 wait_ms 0.000 oom 0 "
            "allocations 0 frees 0 host_reads 0 overwritten_ins 0 reserve_outs 0 current_outs 0 "
            "(0 bytes not copied)");
}

TEST(SummaryLinesTest, Reuse) {
  const ResidencyStats s = NumberedResidencyStats();
  EXPECT_EQ(ReuseLine(s), absl::StrFormat("reuse: hits %lld ordered_hits %lld misses %lld "
                                          "cached_bytes %lld chunk_reuses %lld retained_hits %lld",
                                          17LL, 18LL, 19LL, 20LL, 21LL, 22LL));
}

TEST(SummaryLinesTest, Host) {
  HookTimes hooks;
  hooks.of[0] = {1, 2500000};
  hooks.of[1] = {3, 4};
  hooks.of[2] = {5, 6000000000};
  DeviceCallTimes calls;
  std::string expected = "host: op 1 op_ms 2.500 alloc 3 alloc_ms 0.000 free 5 free_ms 6000.000";
  for (size_t i = 0; i < calls.of.size(); ++i) {
    calls.of[i] = {static_cast<int64_t>(10 + i), static_cast<int64_t>(1000 * i + 1)};
    const char* name = DeviceCallKindName(static_cast<DeviceCallKind>(i));
    absl::StrAppendFormat(&expected, " %s %lld %s_ms %.3f", name, 10LL + i, name,
                          (1000.0 * i + 1) / 1e6);
  }
  EXPECT_EQ(HostLine(hooks, calls), expected);
}

TEST(SummaryLinesTest, HostSteady) {
  EXPECT_EQ(HostSteadyLine(std::nullopt),
            "host_steady: iterations 0 (no steady iteration: no plan followed twice in a row)");
  SteadyHost::PerIteration p;
  p.iterations = 4;
  p.hook_ms[0] = 1.25;
  p.hook_ms[1] = 2;
  p.hook_ms[2] = 0.5;
  std::string expected =
      "host_steady: iterations 4 host_ms 3.750 op_ms 1.250 alloc_ms 2.000 free_ms 0.500";
  for (size_t i = 0; i < std::size(p.device_ms); ++i) {
    p.device_ms[i] = 0.125 * static_cast<double>(i);
    absl::StrAppendFormat(&expected, " %s_ms %.3f",
                          DeviceCallKindName(static_cast<DeviceCallKind>(i)), 0.125 * i);
  }
  for (size_t i = 0; i < std::size(p.memory_calls); ++i) {
    p.memory_calls[i] = 1.5 * static_cast<double>(i);
    absl::StrAppendFormat(&expected, " %s %.2f", MemoryCallName(static_cast<MemoryCall>(i)),
                          1.5 * i);
  }
  EXPECT_EQ(HostSteadyLine(p), expected);
}

TEST(SummaryLinesTest, Dtr) {
  Recomputer::Stats r;
  r.recipes = 1;
  r.refused = 2;
  r.replays = 3;
  r.chained = 4;
  r.forgotten = 5;
  r.failures = 6;
  r.replay_us = 7890.5;
  r.kernel_replays = 2;
  EXPECT_EQ(DtrLine(r, NumberedResidencyStats()),
            absl::StrFormat("dtr: recipes %lld refused %lld drops %lld replays %lld chained %lld "
                            "forgotten %lld failures %lld swapped %lld kernel_replays %lld "
                            "replay_ms %.3f (measured time of the replayed calls)",
                            1LL, 2LL, 23LL, 3LL, 4LL, 5LL, 6LL, 24LL, 2LL, 7890.5 / 1000.0));
}

TEST(SummaryLinesTest, ReplayCheck) {
  ReplayCheck::Stats c;
  c.checked = 1;
  c.checked_bytes = 2;
  c.unwritten_bytes = 3;
  c.unchecked = 4;
  c.peak_held_bytes = 5;
  EXPECT_EQ(ReplayCheckLine(c), "replay_check: checked 1 checked_bytes 2 unwritten_bytes 3 "
                                "unchecked 4 peak_held_bytes 5");
}

TEST(SummaryLinesTest, Small) {
  SmallAllocatorStats s;
  s.slabs = 1;
  s.slab_bytes = 2;
  s.peak_slab_bytes = 3;
  s.live_blocks = 4;
  s.live_bytes = 5;
  s.peak_live_bytes = 6;
  s.waits = 7;
  EXPECT_EQ(SmallLine(s), absl::StrFormat("small: slabs %lld slab_bytes %lld peak_slab_bytes %lld "
                                          "live_blocks %lld live_bytes %lld peak_live_bytes %lld "
                                          "waits %lld",
                                          1LL, 2LL, 3LL, 4LL, 5LL, 6LL, 7LL));
}

TEST(SummaryLinesTest, OpaqueAndCalls) {
  const std::vector<std::pair<std::string, uint64_t>> counts = {{"cuMemcpyDtoD", 2},
                                                                {"cudnnFoo", 1}};
  EXPECT_EQ(OpaqueLine(3, 0, counts), "opaque: calls 3 unclassified 0 cuMemcpyDtoD 2 cudnnFoo 1");
  EXPECT_EQ(OpaqueLine(0, 0, {}), "opaque: calls 0 unclassified 0");
  EXPECT_EQ(CallsLine("cudaMalloc", 18446744073709551615ULL, 2),
            "calls: cudaMalloc 18446744073709551615 (+2 nested)");
}

}  // namespace
}  // namespace pooch::interpose
