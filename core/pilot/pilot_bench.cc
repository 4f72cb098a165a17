// pilot_bench: the pilot's host time per read-back (Note [Stump tables] in pilot_models.cc), on
// a synthetic mixture of experts: 16 expert scores read back, the 2 highest run and touch their
// six allocations each (weights, gradients, momentum of two layers), 20 allocations touched in
// every iteration, and a second read-back of one word (a loss) per iteration. A benchmark, not a
// test: it prints the pilot's summary line and the mean host time per boundary, over all of them
// and over the last 20.
//
//   build/bin/core_pilot_bench [ITERATIONS]   (default 200)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "core/pilot/pilot.h"

namespace {

constexpr int kExperts = 16;
constexpr int kPerExpert = 6;
constexpr int kShared = 20;

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
  if (iterations < 1) {
    std::fprintf(stderr, "pooch: core_pilot_bench: ITERATIONS must be a positive integer\n");
    return 2;
  }
  pooch::Pilot pilot(pooch::PilotMode::kOn);
  for (int e = 0; e < kExperts * kPerExpert; ++e) pilot.Allocated(1000 + e);
  for (int k = 0; k < kShared; ++k) pilot.Allocated(100 + k);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<double> us;
  auto timed_read_back = [&](const std::vector<uint8_t>& bytes) {
    const auto start = std::chrono::steady_clock::now();
    pilot.ReadBack(bytes);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                     .count());
  };
  for (int it = 0; it < iterations; ++it) {
    pilot.IterationStart();
    for (int k = 0; k < kShared; ++k) {
      const pooch::PilotKey key = 100 + k;
      pilot.Op(1, {&key, 1});
    }
    std::vector<float> scores(kExperts);
    for (float& s : scores) s = normal(rng);
    std::vector<int> order(kExperts);
    for (int e = 0; e < kExperts; ++e) order[e] = e;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
    std::vector<uint8_t> bytes(scores.size() * sizeof(float));
    std::memcpy(bytes.data(), scores.data(), bytes.size());
    timed_read_back(bytes);
    for (int j = 0; j < 2; ++j) {
      for (int p = 0; p < kPerExpert; ++p) {
        const pooch::PilotKey key = 1000 + order[j] * kPerExpert + p;
        pilot.Op(2, {&key, 1});
      }
    }
    for (int k = 0; k < kShared; ++k) {
      const pooch::PilotKey key = 100 + k;
      pilot.Op(3, {&key, 1});
    }
    timed_read_back(std::vector<uint8_t>(sizeof(float), 0));
  }
  double all = 0;
  for (double t : us) all += t;
  const size_t last = std::min<size_t>(20, us.size());
  double tail = 0;
  for (size_t i = us.size() - last; i < us.size(); ++i) tail += us[i];
  std::printf("%s\n", pilot.SummaryLine().c_str());
  std::printf("boundaries %zu mean_us %.2f last_%zu_mean_us %.2f\n", us.size(),
              all / static_cast<double>(us.size()), last, tail / static_cast<double>(last));
  return 0;
}
