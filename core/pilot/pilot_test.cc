#include "core/pilot/pilot.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "core/pilot/pilot_models.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

std::vector<uint8_t> Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

bool Has(const std::vector<PilotKey>& v, PilotKey k) {
  return std::find(v.begin(), v.end(), k) != v.end();
}

// A router of `experts` scores read back, the `k` highest run: the next block touches their
// weights (keys 100 + e), and a fresh activation each time. The read-back decides everything.
class Mixture {
 public:
  Mixture(int experts, int k) : experts_(experts), k_(k) {}
  void Iteration(Pilot& pilot) {
    pilot.IterationStart();
    const PilotKey act = 5000 + static_cast<PilotKey>(iteration_++ % 2);
    pilot.Allocated(act);
    pilot.Op(1, {act});
    std::vector<float> scores(experts_);
    std::normal_distribution<float> normal(3.0f, 0.5f);
    for (float& s : scores) s = normal(rng_);
    std::vector<int> order(experts_);
    for (int e = 0; e < experts_; ++e) order[e] = e;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
    last_ = pilot.ReadBack(Bytes(scores));
    chosen_.assign(order.begin(), order.begin() + k_);
    for (int e : chosen_) pilot.Op(2, {static_cast<PilotKey>(100 + e), act});
    pilot.Freed(act);
  }
  const Pilot::Prediction& last() const { return last_; }
  const std::vector<int>& chosen() const { return chosen_; }
  void Start(Pilot& pilot) {
    for (int e = 0; e < experts_; ++e) pilot.Allocated(100 + e);
  }

 private:
  const int experts_, k_;
  std::mt19937 rng_{7};
  int iteration_ = 0;
  Pilot::Prediction last_;
  std::vector<int> chosen_;
};

TEST(PilotTest, TheStumpModelLearnsARoutingFromTheReadBackBytes) {
  Pilot pilot(PilotMode::kOn);
  Mixture moe(8, 2);
  moe.Start(pilot);
  for (int i = 0; i < 300; ++i) moe.Iteration(pilot);
  const Pilot::Stats before = pilot.stats();
  for (int i = 0; i < 200; ++i) moe.Iteration(pilot);
  moe.Iteration(pilot);  // closes the last block
  const Pilot::Stats& after = pilot.stats();
  auto accuracy = [&](int m) {
    Pilot::ModelStats s;
    s.hits = after.models[m].hits - before.models[m].hits;
    s.misses = after.models[m].misses - before.models[m].misses;
    s.wasted = after.models[m].wasted - before.models[m].wasted;
    return s.Accuracy();
  };
  // The history says nothing here (every block has the same signature): the n-gram can only
  // predict the commonest experts, none of which runs in most iterations.
  EXPECT_GT(accuracy(1), 0.6);
  EXPECT_LT(accuracy(0), 0.2);
  EXPECT_GT(accuracy(1), accuracy(0) + 0.3);
  // `on` acts with the better one once it has shown it.
  EXPECT_EQ(moe.last().model, 1);
  EXPECT_GT(after.acted[1] - before.acted[1], 190);
  EXPECT_GT(after.models[1].queries, 400);
}

// A router that chooses against its own running mean of each score (a calibration or a
// load-balancing bias), as moe's does, but at another rate and with other sizes: 12 scores, each
// with a fixed offset so that the raw top-k would be the same experts every time, the top 3 of
// s - m chosen, m <- m + (s - m) / 4. The stumps find the rank of the right deviation; the
// n-gram can only guess the commonest experts.
TEST(PilotTest, TheStumpsLearnAChoiceAgainstTheProgramsRunningMean) {
  constexpr int kExperts = 12;
  constexpr int kChosen = 3;
  Pilot pilot(PilotMode::kOn);
  for (int e = 0; e < kExperts; ++e) pilot.Allocated(100 + e);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> mean(kExperts, 0.0f);
  Pilot::Stats before;
  for (int i = 0; i < 250; ++i) {
    if (i == 150) before = pilot.stats();
    pilot.IterationStart();
    std::vector<float> scores(kExperts), centred(kExperts);
    for (int e = 0; e < kExperts; ++e) {
      scores[e] = static_cast<float>(e) + normal(rng);
      if (i == 0) mean[e] = scores[e];
      centred[e] = scores[e] - mean[e];
      mean[e] += 0.25f * centred[e];
    }
    pilot.ReadBack(Bytes(scores));
    std::vector<int> order(kExperts);
    for (int e = 0; e < kExperts; ++e) order[e] = e;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return centred[a] > centred[b]; });
    for (int k = 0; k < kChosen; ++k) pilot.Op(2, {static_cast<PilotKey>(100 + order[k])});
  }
  pilot.ReadBack(Bytes(std::vector<float>(kExperts, 0.0f)));  // closes the last block
  auto accuracy = [&](int m) {
    Pilot::ModelStats s;
    s.hits = pilot.stats().models[m].hits - before.models[m].hits;
    s.misses = pilot.stats().models[m].misses - before.models[m].misses;
    s.wasted = pilot.stats().models[m].wasted - before.models[m].wasted;
    return s.Accuracy();
  };
  EXPECT_GT(accuracy(1), 0.8);
  EXPECT_LT(accuracy(0), 0.4);
}

// A key that becomes a candidate is taught the boundaries it lived through untouched: here the
// block touches it only when the read-back word is 10 or more. Without its past (0 to 9,
// untouched), one touch at 10 and one miss at 3 would leave "above 6.5" a consistent rule, and
// 8 would predict it.
TEST(PilotTest, ACandidateIsTaughtItsPastBeforeItsFirstTouch) {
  Pilot pilot(PilotMode::kStump);
  pilot.Allocated(1);
  for (float v : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 3}) {
    pilot.ReadBack(Bytes({v}));
    if (v >= 10) pilot.Op(1, {1});
  }
  EXPECT_FALSE(Has(pilot.ReadBack(Bytes({8.0f})).likely, 1));
  EXPECT_TRUE(Has(pilot.ReadBack(Bytes({11.0f})).likely, 1));
}

TEST(PilotTest, TheNgramLearnsASequenceTheBytesDoNotCarry) {
  // Blocks alternate A, B, A, B after the same read-back of a constant: only the history tells
  // which comes next. A touches keys 1 and 2, B touches 3.
  for (PilotMode mode : {PilotMode::kOn, PilotMode::kNgram}) {
    Pilot pilot(mode);
    for (PilotKey k : {1, 2, 3}) pilot.Allocated(k);
    const std::vector<uint8_t> bytes = Bytes({1.0f});
    Pilot::Prediction p;
    for (int i = 0; i < 40; ++i) {
      const bool a = i % 2 == 0;
      p = pilot.ReadBack(bytes);
      if (i >= 10) {
        EXPECT_EQ(Has(p.likely, 1), a) << i;
        EXPECT_EQ(Has(p.likely, 3), !a) << i;
        EXPECT_EQ(Has(p.unlikely, 3), a) << i;
      }
      if (a) {
        pilot.Op(10, {1});
        pilot.Op(11, {2});
      } else {
        pilot.Op(12, {3});
      }
    }
    EXPECT_EQ(p.model, 0);
    EXPECT_GT(pilot.stats().models[0].Accuracy(), 0.8);
  }
}

TEST(PilotTest, FreedAndNewbornAllocationsAreNoCandidates) {
  Pilot pilot(PilotMode::kNgram);
  pilot.Allocated(1);
  pilot.Allocated(2);
  const std::vector<uint8_t> bytes = {7};
  for (int i = 0; i < 5; ++i) {
    pilot.IterationStart();
    pilot.ReadBack(bytes);
    pilot.Allocated(50 + i);  // born in the block: resident when made, no candidate
    pilot.Op(1, {1, 2, static_cast<PilotKey>(50 + i)});
  }
  pilot.IterationStart();
  Pilot::Prediction p = pilot.ReadBack(bytes);
  EXPECT_TRUE(Has(p.likely, 1));
  EXPECT_TRUE(Has(p.likely, 2));
  for (PilotKey k = 50; k < 55; ++k) EXPECT_FALSE(Has(p.likely, k));
  // 1 and 2 were missed while the block history was new (three boundaries), not since.
  EXPECT_EQ(pilot.stats().models[0].misses, 6);
  EXPECT_EQ(pilot.last_block().scored[0].misses, 0);
  EXPECT_EQ(pilot.last_block().scored[0].hits, 2);
  pilot.Freed(2);
  pilot.Op(1, {1});
  pilot.IterationStart();
  p = pilot.ReadBack(bytes);
  EXPECT_TRUE(Has(p.likely, 1));
  EXPECT_FALSE(Has(p.likely, 2));
  EXPECT_FALSE(Has(p.unlikely, 2));
  // The same address, allocated again, is a new allocation that nothing was learnt of.
  pilot.Allocated(2);
  pilot.IterationStart();
  p = pilot.ReadBack(bytes);
  EXPECT_FALSE(Has(p.likely, 2));
}

TEST(PilotTest, EveryBoundaryOfAnIterationIsItsOwnContext) {
  // Two gates per iteration with blocks of one shape: gate 0 always opens (key 1), gate 1
  // never does (its block touches nothing of before).
  Pilot pilot(PilotMode::kNgram);
  pilot.Allocated(1);
  const std::vector<uint8_t> bytes = Bytes({0.5f});
  Pilot::Prediction first, second;
  for (int i = 0; i < 10; ++i) {
    pilot.IterationStart();
    first = pilot.ReadBack(bytes);
    pilot.Op(1, {1});
    second = pilot.ReadBack(bytes);
    pilot.Op(1, {});
  }
  EXPECT_TRUE(Has(first.likely, 1));
  EXPECT_FALSE(Has(second.likely, 1));
  EXPECT_NE(pilot.SummaryLine().find("pilot: mode ngram blocks 20"), std::string::npos)
      << pilot.SummaryLine();
  // Every read-back's host time is counted, once.
  EXPECT_EQ(pilot.stats().boundaries, 20);
  EXPECT_GT(pilot.stats().boundary_us, 0.0);
  EXPECT_NE(pilot.SummaryLine().find(" boundary_us "), std::string::npos) << pilot.SummaryLine();
}

// Note [Stump tables]: the stump model keeps its rules incrementally; its scores must be those
// of every one-feature rule that no block since the key's last restart contradicts, computed
// here from the blocks themselves. Keys of three kinds: touched always, decided by nothing
// (rules die out, the key restarts), and decided by a threshold on one feature; the first is
// forgotten half-way (as when freed: the last key's slots take its place) and learnt again.
TEST(PilotTest, TheStumpScoresAreThoseOfEveryRuleNoBlockContradicts) {
  constexpr size_t kFeatures = 6;
  struct Sample {
    std::vector<float> values;
    bool touched;
  };
  // The reference: the votes of every consistent rule over the samples since the last restart.
  auto rules_of = [](const std::vector<Sample>& samples, int* votes, int* voters,
                     const std::vector<float>& x) {
    *votes = *voters = 0;
    for (size_t f = 0; f < kFeatures; ++f) {
      float tmin = 1e30f, tmax = -1e30f, umin = 1e30f, umax = -1e30f;
      for (const Sample& s : samples) {
        float& lo = s.touched ? tmin : umin;
        float& hi = s.touched ? tmax : umax;
        lo = std::min(lo, s.values[f]);
        hi = std::max(hi, s.values[f]);
      }
      if (tmin > umax) {
        ++*voters;
        *votes += x[f] > 0.5f * (tmin + umax);
      }
      if (tmax < umin) {
        ++*voters;
        *votes += x[f] < 0.5f * (tmax + umin);
      }
    }
  };
  auto reference = [&](const std::vector<Sample>& samples, const std::vector<float>& x) {
    int touched = 0;
    for (const Sample& s : samples) touched += s.touched;
    const int seen = static_cast<int>(samples.size());
    if (touched == 0 || touched == seen) return touched > 0 && seen >= 2 ? 1.0f : 0.0f;
    int votes = 0, voters = 0;
    rules_of(samples, &votes, &voters, x);
    return voters == 0 ? 0.0f : static_cast<float>(votes) / static_cast<float>(voters);
  };
  StumpModel model;
  const std::vector<PilotKey> keys = {10, 20, 30};
  std::vector<std::vector<Sample>> samples(keys.size());
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  int restarts = 0, voted = 0;
  for (int block = 0; block < 300; ++block) {
    PilotBoundary b;
    b.bytes_context = 77;
    b.values.resize(kFeatures);
    for (float& v : b.values) v = uniform(rng);
    const std::vector<float> scores = model.Score(b, keys);
    for (size_t k = 0; k < keys.size(); ++k) {
      ASSERT_EQ(scores[k], reference(samples[k], b.values))
          << "key " << keys[k] << " block " << block;
      int votes = 0, voters = 0;
      rules_of(samples[k], &votes, &voters, b.values);
      voted += voters > 0;
    }
    if (block == 150) {  // a freed key is forgotten; the others keep what they learnt
      model.Forget(b, keys[0]);
      samples[0].clear();
    }
    const std::vector<bool> touched = {true, uniform(rng) > 0.0f, b.values[2] > 0.3f};
    model.Learn(b, keys, touched);
    for (size_t k = 0; k < keys.size(); ++k) {
      samples[k].push_back({b.values, touched[k]});
      int votes = 0, voters = 0;
      rules_of(samples[k], &votes, &voters, b.values);
      const int t = static_cast<int>(std::count_if(samples[k].begin(), samples[k].end(),
                                                   [](const Sample& s) { return s.touched; }));
      if (voters == 0 && t > 0 && t < static_cast<int>(samples[k].size())) {
        samples[k] = {{b.values, touched[k]}};  // the model forgets and starts again
        ++restarts;
      }
    }
  }
  EXPECT_GT(restarts, 10);  // the random key's rules died out again and again
  EXPECT_GT(voted, 200);    // and rules voted
}

}  // namespace
}  // namespace pooch
