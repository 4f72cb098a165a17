#include "core/sim/sim.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model/profile_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pooch {
namespace {

using ::pooch::testing::ProfileBuilder;
using ::pooch::testing::RandomProfile;
using ::pooch::testing::TestMachine;
using ::testing::HasSubstr;

constexpr double kEps = 1e-6;

double TotalDuration(const Profile& p) {
  double us = 0;
  for (const Op& op : p.ops) us += op.duration_us;
  return us;
}

// Memory in use at time t: the last sample at or before t.
int64_t MemoryAt(const SimResult& r, double t) {
  int64_t bytes = 0;
  for (const MemorySample& s : r.memory) {
    if (s.t_us > t + kEps) break;
    bytes = s.bytes;
  }
  return bytes;
}

// Every interval, whatever the machine (the tests check the copy rules on ample memory).
constexpr CandidateFilter kEveryInterval{.matter_only = false};

SimResult SimulateAllIntervals(const Profile& p, const MachineModel& m, const Plan& plan,
                               SimOptions options = {}) {
  return Simulate(p, m, plan, options, kEveryInterval);
}

// Checks a recorded timeline against the rules of sim.cc's design notes, independently of how the
// simulator computed it. Each Check* appends one line per violation to bad_.
class TimelineChecker {
 public:
  TimelineChecker(const Profile& p, const MachineModel& m, const Plan& plan, const SimResult& r,
                  std::vector<Candidate> cands)
      : p_(p), m_(m), plan_(plan), r_(r), cands_(std::move(cands)), compute_(p.ops.size()) {
    for (CandidateId c = 0; c < static_cast<CandidateId>(cands_.size()); ++c) {
      of_tensor_[cands_[c].tensor].push_back(c);
    }
  }

  std::vector<std::string> Check() {
    CollectEvents();
    CheckEngines();
    if (!CheckOpOrder()) return bad_;  // the checks below need every op's event
    CheckAvailability();
    CheckSwaps();
    CheckMemory();
    CheckIterationTime();
    return bad_;
  }

 private:
  Decision DecisionOf(CandidateId c) const { return pooch::DecisionOf(plan_, c); }

  double DurationOf(const Op& op) const {
    if (op.to_host_bytes > 0) return ToHostUs(op.to_host_bytes, m_);
    if (op.to_device_bytes > 0) return ToDeviceUs(op.to_device_bytes, m_);
    return op.duration_us;
  }

  // The interval of t that a use at op j closes or lies in, or -1.
  CandidateId IntervalAt(TensorId t, OpIndex j) const {
    auto it = of_tensor_.find(t);
    if (it == of_tensor_.end()) return -1;
    for (CandidateId c : it->second) {
      const Candidate& k = cands_[c];
      if (k.wraps ? (j <= k.close || j > k.open) : (k.open < j && j <= k.close)) return c;
    }
    return -1;
  }

  // Sorts the events by kind and engine, checking each on its own.
  void CollectEvents() {
    for (const SimEvent& e : r_.events) {
      if (e.end_us + kEps < e.start_us) bad_.push_back("event ends before it starts");
      switch (e.kind) {
        case SimEvent::Kind::kCompute:
          if (compute_[e.op] != nullptr) {
            bad_.push_back(absl::StrCat("op ", e.op, " computed twice"));
          }
          compute_[e.op] = &e;
          engine_compute_.push_back(&e);
          if (std::abs(e.end_us - e.start_us - DurationOf(p_.ops[e.op])) > kEps) {
            bad_.push_back(absl::StrCat("op ", e.op, " has the wrong duration"));
          }
          break;
        case SimEvent::Kind::kRecompute: {
          if (e.candidate >= 0) recompute_[e.candidate].push_back(&e);
          // One replay may rematerialise several intervals: one event each, same interval.
          const SimEvent* prev = engine_compute_.empty() ? nullptr : engine_compute_.back();
          if (prev == nullptr || prev->kind != e.kind || prev->op != e.op ||
              prev->start_us != e.start_us) {
            engine_compute_.push_back(&e);
          }
          const std::vector<TensorId>& w = p_.ops[e.op].writes;
          if (std::find(w.begin(), w.end(), e.tensor) == w.end()) {
            bad_.push_back(
                absl::StrCat("recompute of ", e.tensor, " replays an op not writing it"));
          }
          break;
        }
        case SimEvent::Kind::kSwapOut:
          if (swap_out_.count(e.candidate)) {
            bad_.push_back(absl::StrCat("interval ", e.candidate, " swapped out twice"));
          }
          swap_out_[e.candidate] = &e;
          engine_d2h_.push_back(&e);
          break;
        case SimEvent::Kind::kSwapIn:
          if (swap_in_.count(e.candidate)) {
            bad_.push_back(absl::StrCat("interval ", e.candidate, " swapped in twice"));
          }
          swap_in_[e.candidate] = &e;
          engine_h2d_.push_back(&e);
          break;
      }
    }
  }

  // Engines run one thing at a time (one shared copy engine when not duplex).
  void CheckEngines() {
    auto serial = [&](std::vector<const SimEvent*> v, const char* what) {
      std::sort(v.begin(), v.end(),
                [](const SimEvent* a, const SimEvent* b) { return a->start_us < b->start_us; });
      for (size_t i = 1; i < v.size(); ++i) {
        if (v[i]->start_us + kEps < v[i - 1]->end_us) {
          bad_.push_back(absl::StrCat(what, " engine runs two things at once"));
        }
      }
    };
    serial(engine_compute_, "compute");
    if (m_.duplex) {
      serial(engine_d2h_, "d2h");
      serial(engine_h2d_, "h2d");
    } else {
      std::vector<const SimEvent*> all = engine_d2h_;
      all.insert(all.end(), engine_h2d_.begin(), engine_h2d_.end());
      serial(all, "copy");
    }
  }

  // Every op ran, in order. False when one never ran.
  bool CheckOpOrder() {
    for (size_t j = 0; j < p_.ops.size(); ++j) {
      if (compute_[j] == nullptr) {
        bad_.push_back(absl::StrCat("op ", j, " never ran"));
        return false;
      }
      if (j > 0 && compute_[j]->start_us + kEps < compute_[j - 1]->end_us) {
        bad_.push_back(absl::StrCat("op ", j, " starts before op ", j - 1, " ends"));
      }
    }
    return true;
  }

  // A tensor is available to a use at op j (or a replay before it) when the swap-in or the
  // recomputation ending the interval the use closes (or lies in) completed before `start`.
  void CheckAvailable(TensorId t, OpIndex j, double start, const std::string& who) {
    const CandidateId c = IntervalAt(t, j);
    if (c < 0) return;
    const Candidate& k = cands_[c];
    const Decision d = DecisionOf(c);
    if (d != Decision::kKeep && k.wraps && j > k.open) {
      bad_.push_back(absl::StrCat(who, " uses ", t, " after it left for the next iteration"));
    } else if (d == Decision::kSwap) {
      if (swap_in_.count(c) == 0) {
        bad_.push_back(absl::StrCat(who, " uses swapped tensor ", t, " never swapped in"));
      } else if (swap_in_[c]->end_us > start + kEps) {
        bad_.push_back(absl::StrCat(who, " starts before the swap-in of ", t, " completes"));
      }
    } else if (d == Decision::kRecompute) {
      bool ok = false;
      for (const SimEvent* e : recompute_[c]) {
        ok |= e->end_us <= start + kEps && e->before_op <= j;
      }
      if (!ok) bad_.push_back(absl::StrCat(who, " uses dropped tensor ", t, " not recomputed"));
    }
  }

  // What ops and replays use is available, and replays are for intervals planned so, in time.
  void CheckAvailability() {
    for (size_t j = 0; j < p_.ops.size(); ++j) {
      const std::string who = absl::StrCat("op ", j);
      for (TensorId t : p_.ops[j].reads) CheckAvailable(t, j, compute_[j]->start_us, who);
      for (TensorId t : p_.ops[j].writes) CheckAvailable(t, j, compute_[j]->start_us, who);
    }
    for (const auto& [c, events] : recompute_) {
      if (DecisionOf(c) != Decision::kRecompute) {
        bad_.push_back("recomputed an interval not planned so");
      }
      for (const SimEvent* e : events) {
        const std::string t = absl::StrCat(e->tensor);
        if (e->before_op <= cands_[c].open || e->before_op > cands_[c].close) {
          bad_.push_back(absl::StrCat("replay for ", t, " outside its interval"));
        }
        for (TensorId in : p_.ops[e->op].reads) {
          CheckAvailable(in, e->before_op, e->start_us, absl::StrCat("replay for ", t));
        }
        if (e->end_us > compute_[e->before_op]->start_us + kEps) {
          bad_.push_back(absl::StrCat("replay of ", t, " ends after the op that needs it starts"));
        }
      }
    }
  }

  // Swap-outs after the op opening the interval; swap-ins after the swap-out (in the same
  // iteration, unless the interval wraps).
  void CheckSwaps() {
    for (const auto& [c, e] : swap_out_) {
      if (DecisionOf(c) != Decision::kSwap)
        bad_.push_back("swapped out an interval not so planned");
      const OpIndex open = cands_[c].open;
      if (e->op != open || e->start_us + kEps < compute_[open]->end_us) {
        bad_.push_back(absl::StrCat("swap-out of ", c, " before its interval opens"));
      }
    }
    for (const auto& [c, e] : swap_in_) {
      if (DecisionOf(c) != Decision::kSwap) bad_.push_back("swapped in an interval not so planned");
      if (cands_[c].wraps) {
        if (e->op > cands_[c].close) {
          bad_.push_back(absl::StrCat("swap-in of wrapping ", c, " issued after its need"));
        }
        continue;
      }
      if (swap_out_.count(c) == 0) {
        bad_.push_back(absl::StrCat("swap-in of ", c, " without a swap-out"));
        continue;
      }
      if (e->start_us + kEps < swap_out_[c]->end_us) {
        bad_.push_back(absl::StrCat("swap-in of ", c, " starts before its swap-out ends"));
      }
      if (e->op <= cands_[c].open) {
        bad_.push_back(absl::StrCat("swap-in of ", c, " issued before its swap-out"));
      }
    }
  }

  // Memory: never negative, in time order, within capacity when feasible, and at least what the
  // running op touches.
  void CheckMemory() {
    for (size_t i = 0; i < r_.memory.size(); ++i) {
      if (r_.memory[i].bytes < 0) bad_.push_back("negative memory");
      if (i > 0 && r_.memory[i].t_us + kEps < r_.memory[i - 1].t_us) {
        bad_.push_back("samples unordered");
      }
      if (r_.feasible && r_.memory[i].bytes > m_.memory_bytes) {
        bad_.push_back(absl::StrCat("feasible plan uses ", r_.memory[i].bytes, " > capacity"));
      }
      if (r_.memory[i].bytes > r_.peak_bytes) bad_.push_back("sample above peak");
    }
    for (size_t j = 0; j < p_.ops.size(); ++j) {
      if (p_.ops[j].duration_us <= 0) continue;
      int64_t touched = p_.ops[j].workspace_bytes;
      std::vector<TensorId> uses = p_.ops[j].reads;
      uses.insert(uses.end(), p_.ops[j].writes.begin(), p_.ops[j].writes.end());
      std::sort(uses.begin(), uses.end());
      uses.erase(std::unique(uses.begin(), uses.end()), uses.end());
      for (TensorId t : uses) touched += p_.tensors[t].bytes;
      const double mid = (compute_[j]->start_us + compute_[j]->end_us) / 2;
      if (MemoryAt(r_, mid) < touched) {
        bad_.push_back(absl::StrCat("op ", j, " runs with less memory than it touches"));
      }
    }
  }

  // Iteration time covers all work.
  void CheckIterationTime() {
    double last_end = 0;
    for (const SimEvent& e : r_.events) last_end = std::max(last_end, e.end_us);
    if (std::abs(last_end - r_.iteration_us) > kEps) bad_.push_back("iteration time != last event");
    double computation = r_.recompute_us;
    for (const Op& op : p_.ops) computation += DurationOf(op);
    if (r_.iteration_us + kEps < computation) {
      bad_.push_back("iteration shorter than its computation");
    }
  }

  const Profile& p_;
  const MachineModel& m_;
  const Plan& plan_;
  const SimResult& r_;
  const std::vector<Candidate> cands_;
  std::map<TensorId, std::vector<CandidateId>> of_tensor_;  // the candidates by tensor
  std::vector<const SimEvent*> compute_;                    // per op
  std::map<CandidateId, const SimEvent*> swap_out_, swap_in_;
  std::map<CandidateId, std::vector<const SimEvent*>> recompute_;
  std::vector<const SimEvent*> engine_compute_, engine_d2h_, engine_h2d_;  // per engine
  std::vector<std::string> bad_;
};

// Returns one line per violation of sim.cc's design notes in r's recorded timeline; `cands` are
// what plan.decisions are indexed by (every interval unless given).
std::vector<std::string> CheckTimeline(const Profile& p, const MachineModel& m, const Plan& plan,
                                       const SimResult& r,
                                       std::optional<std::vector<Candidate>> cands = {}) {
  return TimelineChecker(p, m, plan, r, cands ? *std::move(cands) : FindCandidates(p)).Check();
}

Plan RandomPlan(const std::vector<Candidate>& cands, std::mt19937_64& rng) {
  Plan plan = KeepAllPlan(cands.size());
  const SwapInSchedule schedules[] = {SwapInSchedule::kWithPreviousOp,
                                      SwapInSchedule::kWithPreviousConv,
                                      SwapInSchedule::kWhenMemoryAllows};
  plan.schedule = schedules[rng() % 3];
  for (size_t c = 0; c < cands.size(); ++c) {
    const int choice = static_cast<int>(rng() % 3);
    if (choice == 1) plan.decisions[c] = Decision::kSwap;
    if (choice == 2 && cands[c].recomputable) plan.decisions[c] = Decision::kRecompute;
  }
  return plan;
}

TEST(SimTest, InCoreTimeIsTheSumOfDurationsAndPeakIsLiveBytes) {
  const Profile p = RandomProfile(1);
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  // Without copies or recomputation nothing waits: the iteration is the ops back to back.
  const SimResult r = SimulateAllIntervals(p, TestMachine(int64_t{1} << 40), KeepAllPlan(0));
  EXPECT_TRUE(r.feasible) << r.failure;
  EXPECT_NEAR(r.iteration_us, TotalDuration(p), kEps);
  // The peak is the largest sum of live bytes (plus workspace) over the ops.
  int64_t peak = 0;
  for (OpIndex j = 0; j < static_cast<OpIndex>(p.ops.size()); ++j) {
    int64_t live = p.ops[j].workspace_bytes;
    for (const Tensor& t : p.tensors) {
      const bool allocated = t.alloc_before == kBeforeIteration || t.alloc_before <= j;
      const bool freed = t.free_after != kAfterIteration && t.free_after < j;
      if (allocated && !freed) live += t.bytes;
    }
    peak = std::max(peak, live);
  }
  EXPECT_EQ(r.peak_bytes, peak);
  EXPECT_THAT(CheckTimeline(p, TestMachine(int64_t{1} << 40), KeepAllPlan(0), r),
              ::testing::IsEmpty());
}

TEST(SimTest, InCoreAboveCapacityIsInfeasibleAtTheOverflowingOp) {
  const Profile p = RandomProfile(2);
  const SimResult big = SimulateAllIntervals(p, TestMachine(int64_t{1} << 40), KeepAllPlan(0));
  const SimResult r = SimulateAllIntervals(p, TestMachine(big.peak_bytes - 1), KeepAllPlan(0));
  EXPECT_FALSE(r.feasible);
  EXPECT_GE(r.failed_at, 0);
  EXPECT_THAT(r.failure, HasSubstr("exceeds capacity"));
  const SimResult fits = SimulateAllIntervals(p, TestMachine(big.peak_bytes), KeepAllPlan(0));
  EXPECT_TRUE(fits.feasible) << fits.failure;
}

TEST(SimTest, AllowOverflowStillPredictsTime) {
  const Profile p = RandomProfile(3);
  SimOptions options;
  options.allow_overflow = true;
  const SimResult r = SimulateAllIntervals(p, TestMachine(1), KeepAllPlan(0), options);
  EXPECT_FALSE(r.feasible);
  EXPECT_NEAR(r.iteration_us, TotalDuration(p), kEps);
  EXPECT_GT(r.peak_bytes, 1);
}

// Three layers, all maps swapped: checks the copy rules on a case small enough to reason about.
TEST(SimTest, SwapOutAfterLastForwardUseAndSwapInBeforeBackwardUse) {
  const Profile p = RandomProfile(4, {.min_layers = 3, .max_layers = 3, .skip_probability = 0});
  const MachineModel m = TestMachine(int64_t{1} << 40);
  Plan plan = KeepAllPlan(FindCandidates(p).size());
  std::fill(plan.decisions.begin(), plan.decisions.end(), Decision::kSwap);
  for (SwapInSchedule s : {SwapInSchedule::kWithPreviousOp, SwapInSchedule::kWithPreviousConv,
                           SwapInSchedule::kWhenMemoryAllows}) {
    plan.schedule = s;
    const SimResult r = SimulateAllIntervals(p, m, plan);
    ASSERT_TRUE(r.feasible) << r.failure;
    EXPECT_THAT(CheckTimeline(p, m, plan, r), ::testing::IsEmpty());
    EXPECT_GT(r.swapped_out_bytes, 0);
    EXPECT_EQ(r.swapped_in_bytes, r.swapped_out_bytes);
    EXPECT_EQ(r.swap_ins.size(), FindCandidates(p).size());
  }
}

// Note [Swap-in scheduling]: where each schedule issues a swap-in.
TEST(SimTest, SwapInIssuePoints) {
  const Profile p = RandomProfile(8, {.min_layers = 8, .max_layers = 8});
  const MachineModel m = TestMachine(int64_t{1} << 40);
  const std::vector<Candidate> cands = FindCandidates(p);
  Plan plan = KeepAllPlan(cands.size());
  std::fill(plan.decisions.begin(), plan.decisions.end(), Decision::kSwap);
  std::map<CandidateId, OpIndex> issued;
  for (SwapInSchedule s : {SwapInSchedule::kWithPreviousOp, SwapInSchedule::kWithPreviousConv,
                           SwapInSchedule::kWhenMemoryAllows}) {
    plan.schedule = s;
    const SimResult r = SimulateAllIntervals(p, m, plan);
    ASSERT_TRUE(r.feasible) << r.failure;
    ASSERT_EQ(r.swap_ins.size(), cands.size());
    issued.clear();
    for (const Plan::SwapIn& in : r.swap_ins) issued[in.candidate] = in.issue_at;
    for (CandidateId c = 0; c < static_cast<CandidateId>(cands.size()); ++c) {
      const Candidate& f = cands[c];
      const OpIndex need = f.close;
      const OpIndex earliest = f.wraps ? 0 : f.open + 1;
      const OpIndex at = issued.at(c);
      switch (s) {
        case SwapInSchedule::kWithPreviousOp:
          EXPECT_EQ(at, std::max(need - 1, earliest));
          break;
        case SwapInSchedule::kWithPreviousConv: {
          OpIndex conv = -1;  // the last convolution before the need
          for (OpIndex k = 0; k < need; ++k) {
            if (p.ops[k].kind == OpKind::kConv) conv = k;
          }
          EXPECT_EQ(at, conv >= earliest ? conv : std::max(need - 1, earliest));
          break;
        }
        case SwapInSchedule::kWhenMemoryAllows:
          // With ample memory, as soon as the swap-out was issued and the maps needed
          // earlier were issued.
          EXPECT_GE(at, earliest);
          EXPECT_LE(at, need);
          break;
      }
    }
  }
}

TEST(SimTest, WhenMemoryAllowsIsNeverSlowerThanWithPreviousOpWithAmpleMemory) {
  for (uint64_t seed = 10; seed < 30; ++seed) {
    const Profile p = RandomProfile(seed);
    const MachineModel m = TestMachine(int64_t{1} << 40);
    Plan plan = KeepAllPlan(FindCandidates(p).size());
    std::fill(plan.decisions.begin(), plan.decisions.end(), Decision::kSwap);
    plan.schedule = SwapInSchedule::kWithPreviousOp;
    const double nosched = SimulateAllIntervals(p, m, plan).iteration_us;
    plan.schedule = SwapInSchedule::kWhenMemoryAllows;
    const double sched = SimulateAllIntervals(p, m, plan).iteration_us;
    EXPECT_LE(sched, nosched + kEps) << "seed " << seed;
  }
}

// Note [Program copies]: x (1 MiB) is written at op 0 and read at op 3; op 1 reads 4 bytes back
// to the host and op 2 uploads 1 MiB, each measured at 500 us. Each copy takes its bytes' time at
// the machine's bandwidth, in the compute engine's order; with x swapped, the read-back does not
// wait for x's swap-out, nor the upload for x's swap-in.
TEST(SimTest, ProgramCopiesTakeTheirBytesTime) {
  ProfileBuilder b("copies");
  const TensorId x = b.Tensor("x", 1 << 20);
  const TensorId y = b.Tensor("y", 1 << 20);
  b.Op("write x", OpKind::kConv, Phase::kForward, 10, {}, {x});
  b.Op("read back", OpKind::kCopy, Phase::kForward, 500, {}, {});
  b.Op("upload", OpKind::kCopy, Phase::kForward, 500, {}, {y});
  b.Op("read x", OpKind::kConv, Phase::kBackward, 10, {x, y}, {});
  Profile p = b.Finish();
  p.ops[1].to_host_bytes = 4;
  p.ops[2].to_device_bytes = 1 << 20;
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  const MachineModel m = TestMachine(int64_t{1} << 40);
  const double read_back_us = ToHostUs(4, m);
  const double upload_us = ToDeviceUs(1 << 20, m);
  ASSERT_LT(read_back_us + upload_us, 500);

  auto start_of = [](const SimResult& r, SimEvent::Kind kind, OpIndex op) {
    for (const SimEvent& e : r.events) {
      if (e.kind == kind && e.op == op) return e.start_us;
    }
    return -1.0;
  };
  const SimResult kept = SimulateAllIntervals(p, m, KeepAllPlan(FindCandidates(p).size()));
  ASSERT_TRUE(kept.feasible) << kept.failure;
  EXPECT_NEAR(start_of(kept, SimEvent::Kind::kCompute, 2), 10 + read_back_us, kEps);
  EXPECT_NEAR(kept.iteration_us, 10 + read_back_us + upload_us + 10, kEps);
  EXPECT_NEAR(kept.compute_us, kept.iteration_us, kEps);

  std::vector<Candidate> cands = FindCandidates(p);
  Plan plan = KeepAllPlan(cands.size());
  for (size_t c = 0; c < cands.size(); ++c) {
    if (cands[c].tensor == x) plan.decisions[c] = Decision::kSwap;
  }
  plan.schedule = SwapInSchedule::kWithPreviousOp;  // x's swap-in issued at op 2
  const SimResult swapped = SimulateAllIntervals(p, m, plan);
  ASSERT_TRUE(swapped.feasible) << swapped.failure;
  EXPECT_THAT(CheckTimeline(p, m, plan, swapped, cands), ::testing::IsEmpty());
  EXPECT_NEAR(start_of(swapped, SimEvent::Kind::kSwapOut, 0), 10, kEps);
  EXPECT_NEAR(start_of(swapped, SimEvent::Kind::kCompute, 1), 10, kEps);
  EXPECT_NEAR(start_of(swapped, SimEvent::Kind::kCompute, 2), 10 + read_back_us, kEps);
  // Op 3 waits for x's swap-in, which waited for its swap-out.
  const double x_in_end = start_of(swapped, SimEvent::Kind::kSwapIn, 2) + SwapInUs(p.tensors[x], m);
  EXPECT_NEAR(start_of(swapped, SimEvent::Kind::kCompute, 3),
              std::max(10 + read_back_us + upload_us, x_in_end), kEps);
}

TEST(SimTest, NonDuplexSharesOneCopyEngine) {
  const Profile p = RandomProfile(5);
  const MachineModel m = TestMachine(int64_t{1} << 40, /*duplex=*/false);
  Plan plan = KeepAllPlan(FindCandidates(p).size());
  std::fill(plan.decisions.begin(), plan.decisions.end(), Decision::kSwap);
  const SimResult r = SimulateAllIntervals(p, m, plan);
  ASSERT_TRUE(r.feasible);
  EXPECT_THAT(CheckTimeline(p, m, plan, r), ::testing::IsEmpty());
  const SimResult duplex = SimulateAllIntervals(p, TestMachine(int64_t{1} << 40, true), plan);
  EXPECT_LE(duplex.iteration_us, r.iteration_us + kEps);
}

TEST(SimTest, RejectsMalformedPlans) {
  ProfileBuilder b("tiny");
  const TensorId x = b.Tensor("x", 100);
  b.MarkInput(x);
  const TensorId y = b.Tensor("y", 100);
  const TensorId z = b.Tensor("z", 100);
  const TensorId u = b.Tensor("u", 100);
  const TensorId gx = b.Tensor("gx", 100);
  b.Op("f", OpKind::kConv, Phase::kForward, 10, {x}, {y}, 0, /*replayable=*/false);
  b.Op("g", OpKind::kActivation, Phase::kForward, 10, {y}, {z});
  b.Op("h", OpKind::kActivation, Phase::kForward, 10, {z}, {u});
  b.Op("h.backward", OpKind::kActivation, Phase::kBackward, 10, {u, y}, {gx});
  const Profile p = b.Finish();
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  const std::vector<Candidate> cands = FindCandidates(p);
  // y is idle between g and h.backward.
  ASSERT_EQ(cands.size(), 1u);
  EXPECT_EQ(cands[0].tensor, y);
  EXPECT_EQ(cands[0].open, 1);
  EXPECT_EQ(cands[0].close, 3);
  const MachineModel m = TestMachine(1 << 20);
  Plan plan = KeepAllPlan(cands.size());
  plan.decisions[0] = Decision::kRecompute;  // its producer f is not replayable
  SimResult r = SimulateAllIntervals(p, m, plan);
  EXPECT_FALSE(r.feasible);
  EXPECT_THAT(r.failure, HasSubstr("cannot be recomputed"));
  plan.decisions[0] = Decision::kSwap;
  r = SimulateAllIntervals(p, m, plan);
  EXPECT_TRUE(r.feasible) << r.failure;
  EXPECT_THAT(CheckTimeline(p, m, plan, r), ::testing::IsEmpty());
  plan.decisions.resize(2);
  r = SimulateAllIntervals(p, m, plan);
  EXPECT_FALSE(r.feasible);
  EXPECT_THAT(r.failure, HasSubstr("2 decisions for 1 candidates"));
}

// A persistent tensor's interval wraps from its last use to its first: under swap it starts the
// iteration on the host, comes back before its first use, and leaves after its last.
TEST(SimTest, WrappingIntervalStartsOnTheHost) {
  ProfileBuilder b("weights");
  const TensorId w = b.Tensor("w", 1000, /*persistent=*/true);
  const TensorId x = b.Tensor("x", 100);
  b.MarkInput(x);
  const TensorId y = b.Tensor("y", 100);
  const TensorId z = b.Tensor("z", 100);
  b.Op("data", OpKind::kCopy, Phase::kForward, 10, {}, {x});
  b.Op("f", OpKind::kConv, Phase::kForward, 10, {x, w}, {y});
  b.Op("g", OpKind::kActivation, Phase::kForward, 10, {y}, {z});
  b.Op("update", OpKind::kOptimizer, Phase::kOther, 10, {w, z}, {w});
  b.Op("tail", OpKind::kOther, Phase::kOther, 10, {z}, {});
  const Profile p = b.Finish();
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  const std::vector<Candidate> cands = FindCandidates(p);
  CandidateId wrap = -1;
  for (CandidateId c = 0; c < static_cast<CandidateId>(cands.size()); ++c) {
    if (cands[c].tensor == w) wrap = c;
  }
  ASSERT_GE(wrap, 0);
  EXPECT_TRUE(cands[wrap].wraps);
  EXPECT_EQ(cands[wrap].open, 3);
  EXPECT_EQ(cands[wrap].close, 1);
  EXPECT_FALSE(cands[wrap].recomputable);
  Plan plan = KeepAllPlan(cands.size());
  plan.decisions[wrap] = Decision::kSwap;
  const MachineModel m = TestMachine(1 << 20);
  const SimResult r = SimulateAllIntervals(p, m, plan);
  ASSERT_TRUE(r.feasible) << r.failure;
  EXPECT_THAT(CheckTimeline(p, m, plan, r), ::testing::IsEmpty());
  EXPECT_EQ(r.swapped_in_bytes, 1000);
  EXPECT_EQ(r.swapped_out_bytes, 1000);
  // It ends the iteration on the host, as it started it (the steady state).
  ASSERT_FALSE(r.memory.empty());
  const SimResult kept = SimulateAllIntervals(p, m, KeepAllPlan(cands.size()));
  EXPECT_EQ(kept.memory.back().bytes - r.memory.back().bytes, 1000);
}

// Recomputing a chain replays every dropped map back to the kept one (Note [Recomputation]).
TEST(SimTest, RecomputesChainsRecursively) {
  const Profile p = RandomProfile(
      6, {.min_layers = 6, .max_layers = 6, .skip_probability = 0, .replayable_probability = 1});
  const MachineModel m = TestMachine(int64_t{1} << 40);
  const std::vector<Candidate> cands = FindCandidates(p);
  Plan plan = KeepAllPlan(cands.size());
  int recomputed = 0;
  for (size_t c = 0; c < cands.size(); ++c) {
    if (cands[c].recomputable) {
      plan.decisions[c] = Decision::kRecompute;
      ++recomputed;
    }
  }
  ASSERT_GT(recomputed, 2);
  const SimResult r = SimulateAllIntervals(p, m, plan);
  ASSERT_TRUE(r.feasible) << r.failure;
  EXPECT_THAT(CheckTimeline(p, m, plan, r), ::testing::IsEmpty());
  EXPECT_GE(r.recomputed_ops, recomputed);
  EXPECT_GT(r.recompute_us, 0);
  EXPECT_NEAR(r.iteration_us, TotalDuration(p) + r.recompute_us, kEps);
}

// Note [Recomputation]: two chains that end at the same op but rebuild different maps are two
// replays. Op 1 writes u whole and adds into a slice of t, which op 0 wrote whole: t's chain is
// (0, 1), u's is (1). With both recomputed before op 3, the replays run 10 + 20 and 20 us; one
// replay for both would run either chain alone (and leave the other's first link out). Whichever
// map the profile lists first.
TEST(SimTest, ChainsEndingAtOneOpRebuildingDifferentMapsAreReplayedApart) {
  for (const bool t_first : {true, false}) {
    SCOPED_TRACE(t_first ? "t first" : "u first");
    ProfileBuilder b("two-chains");
    const TensorId a = b.Tensor("a", 64, /*persistent=*/true);
    const TensorId x = b.Tensor("x", 64, /*persistent=*/true);
    TensorId t = 0, u = 0;
    if (t_first) {
      t = b.Tensor("t", 1000);
      u = b.Tensor("u", 1000);
    } else {
      u = b.Tensor("u", 1000);
      t = b.Tensor("t", 1000);
    }
    const OpIndex fill = b.Op("fill", OpKind::kOther, Phase::kForward, 10, {a}, {t});  // 0
    b.op(fill).overwrites = {t};
    const OpIndex split = b.Op("split", OpKind::kOther, Phase::kForward, 20, {x}, {t, u});  // 1
    b.op(split).overwrites = {u};
    b.Op("idle", OpKind::kOther, Phase::kForward, 5, {}, {});     // 2
    b.Op("use", OpKind::kOther, Phase::kForward, 1, {t, u}, {});  // 3
    const Profile p = b.Finish();
    ASSERT_TRUE(p.Validate().ok()) << p.Validate();
    const ReplayFacts facts = ComputeReplayFacts(p);
    ASSERT_THAT(facts.Chain(t, split), ::testing::ElementsAre(fill, split));
    ASSERT_THAT(facts.Chain(u, split), ::testing::ElementsAre(split));
    const MachineModel m = TestMachine(int64_t{1} << 30);
    const std::vector<Candidate> cands = FindCandidates(p, nullptr, 1000);
    ASSERT_EQ(cands.size(), 2u);
    Plan plan = KeepAllPlan(cands.size());
    for (size_t c = 0; c < cands.size(); ++c) {
      ASSERT_TRUE(cands[c].recomputable) << c;
      plan.decisions[c] = Decision::kRecompute;
    }
    const SimResult r = Simulate(p, m, plan, {}, {.matter_only = false, .min_bytes = 1000});
    ASSERT_TRUE(r.feasible) << r.failure;
    EXPECT_EQ(r.recomputed_ops, 2);
    EXPECT_NEAR(r.recompute_us, 50, kEps);
    EXPECT_NEAR(r.iteration_us, TotalDuration(p) + 50, kEps);
  }
}

// Note [Tails]: x (1 MiB) is written at op 0 and read at op 1, and the program holds it to its
// free after op 3; y (2 MiB) is made at op 2 and read at op 3. In core ops 2 and 3 hold 3 MiB.
// With 2.5 MiB, swapping x's tail fits: op 2's allocation waits for x's swap-out, x never comes
// back, and its free releases nothing more (the iteration ends with nothing in use).
TEST(SimTest, ASwappedTailLeavesForGood) {
  ProfileBuilder pb("tail");
  const TensorId x = pb.Tensor("x", 1 << 20);
  const TensorId y = pb.Tensor("y", 2 << 20);
  pb.Op("make_x", OpKind::kOther, Phase::kForward, 10, {}, {x});  // 0
  pb.Op("read_x", OpKind::kOther, Phase::kForward, 10, {x}, {});  // 1
  pb.Op("make_y", OpKind::kOther, Phase::kForward, 10, {}, {y});  // 2
  pb.Op("read_y", OpKind::kOther, Phase::kForward, 10, {y}, {});  // 3
  Profile p = pb.Finish();
  p.tensors[x].free_after = 3;
  ASSERT_TRUE(p.Validate().ok()) << p.Validate();
  const MachineModel m = TestMachine(5 << 19);
  const std::vector<Candidate> cands = FindCandidates(p);
  ASSERT_EQ(cands.size(), 1u);
  ASSERT_TRUE(cands[0].tail);
  EXPECT_FALSE(SimulateAllIntervals(p, m, KeepAllPlan(1)).feasible);
  for (SwapInSchedule s : {SwapInSchedule::kWithPreviousOp, SwapInSchedule::kWithPreviousConv,
                           SwapInSchedule::kWhenMemoryAllows}) {
    Plan plan = KeepAllPlan(1);
    plan.decisions[0] = Decision::kSwap;
    plan.schedule = s;
    const SimResult r = SimulateAllIntervals(p, m, plan);
    ASSERT_TRUE(r.feasible) << r.failure;
    EXPECT_EQ(r.swapped_out_bytes, 1 << 20);
    EXPECT_EQ(r.swapped_in_bytes, 0);
    EXPECT_TRUE(r.swap_ins.empty());
    EXPECT_EQ(r.peak_bytes, 2 << 20);
    ASSERT_FALSE(r.memory.empty());
    EXPECT_EQ(r.memory.back().bytes, 0);
    EXPECT_THAT(CheckTimeline(p, m, plan, r), ::testing::IsEmpty());
  }
}

// The program holds each non-persistent tensor of a random iteration up to two ops past its last
// use (Note [Tails]).
Profile WithTails(Profile p, std::mt19937_64& rng) {
  const OpIndex last = static_cast<OpIndex>(p.ops.size()) - 1;
  for (Tensor& t : p.tensors) {
    if (t.free_after == kAfterIteration) continue;
    t.free_after = std::min<OpIndex>(last, t.free_after + static_cast<OpIndex>(rng() % 3));
  }
  return p;
}

// The rules hold on random iterations, random plans, random schedules and random capacities;
// a plan called feasible never exceeds capacity. Every other iteration holds its tensors past
// their last use (Note [Tails]).
TEST(SimTest, RandomPlansRespectDependenciesAndCapacity) {
  std::mt19937_64 rng(42);
  // Every interval, those that matter on the machine (the planner's first view) and those with
  // the short intervals and tails (its second, Note [Short intervals]).
  const CandidateFilter filters[] = {kEveryInterval, CandidateFilter{},
                                     CandidateFilter{.long_only = false}};
  int feasible = 0, infeasible = 0, tails = 0;
  for (uint64_t seed = 100; seed < 400; ++seed) {
    Profile p = seed % 4 < 2 ? RandomProfile(seed) : WithTails(RandomProfile(seed), rng);
    if (seed % 3 == 0) {  // Note [Program copies]: a read-back and an upload somewhere
      const size_t i = rng() % p.ops.size();
      p.ops[i].to_host_bytes = 4;
      p.ops[(i + 1) % p.ops.size()].to_device_bytes = int64_t{1} << 20;
    }
    ASSERT_TRUE(p.Validate().ok()) << p.Validate();
    const int64_t in_core =
        SimulateAllIntervals(p, TestMachine(int64_t{1} << 40), KeepAllPlan(0)).peak_bytes;
    const double fraction = std::uniform_real_distribution<double>(0.3, 1.1)(rng);
    const MachineModel m =
        TestMachine(static_cast<int64_t>(in_core * fraction), /*duplex=*/rng() % 4 != 0);
    Simulator sim(p, m, filters[seed % 3]);
    for (const Candidate& c : sim.candidates()) tails += c.tail;
    for (int k = 0; k < 4; ++k) {
      const Plan plan = RandomPlan(sim.candidates(), rng);
      const SimResult& r = sim.Run(plan);
      (r.feasible ? feasible : infeasible)++;
      if (!r.feasible) {
        EXPECT_FALSE(r.failure.empty());
        continue;
      }
      EXPECT_LE(r.peak_bytes, m.memory_bytes);
      const std::vector<std::string> bad = CheckTimeline(p, m, plan, r, sim.candidates());
      EXPECT_THAT(bad, ::testing::IsEmpty()) << "seed " << seed << " plan " << k;
      // The fast path predicts the same.
      SimOptions fast;
      fast.record = false;
      const SimResult quick = Simulate(p, m, plan, fast, filters[seed % 3]);
      EXPECT_EQ(quick.iteration_us, r.iteration_us);
      EXPECT_EQ(quick.peak_bytes, r.peak_bytes);
    }
  }
  // The generator must exercise both outcomes, and tails.
  EXPECT_GT(feasible, 100);
  EXPECT_GT(infeasible, 50);
  EXPECT_GT(tails, 100);
}

}  // namespace
}  // namespace pooch
