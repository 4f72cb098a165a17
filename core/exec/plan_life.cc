// PlanLife (plan_life.h).
#include "core/exec/plan_life.h"

#include <errno.h>  // program_invocation_short_name

#include <algorithm>
#include <fstream>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/base/log.h"
#include "core/base/trace.h"
#include "core/measure/trace_observer.h"
#include "core/model/candidates.h"
#include "core/model/model_json.h"
#include "core/plot/plot.h"

namespace pooch {
namespace {

// How plans are made at run time: every allocation of the profile is a candidate (it holds
// only those the manager moves, POOCH_MIN_SWAP_BYTES and up).
PlanOptions RunPlanOptions() {
  PlanOptions options;
  options.min_candidate_bytes = 0;
  return options;
}

// The swap-all pass swaps every interval that matters by capacity, short ones included, so that
// the profile carries measured copy times for every tensor a plan may move.
PlanOptions SwapAllPassOptions() {
  PlanOptions options = RunPlanOptions();
  options.long_intervals_first = false;
  return options;
}

}  // namespace

void PlanLife::SetMachine(const MachineModel& machine, bool assumed) {
  machine_ = machine;
  machine_assumed_ = assumed;
}

absl::StatusOr<PlanResult> PlanLife::PlanSwapAll(const Profile& profile) const {
  return MakePlan(profile, machine_, Policy::kSwapAll, SwapAllPassOptions());
}

const PlanCache::Entry* PlanLife::FindCached(const std::vector<StreamEvent>& reference) {
  key_ = PlanCache::Key(reference);
  return cache_.Find(key_);
}

void PlanLife::SetProfile(BuiltProfile built, OpStreamRecorder::Positions positions) {
  built_ = std::make_shared<const BuiltProfile>(std::move(built));
  positions_ = std::make_shared<const OpStreamRecorder::Positions>(std::move(positions));
}

void PlanLife::TakeCached(const PlanCache::Entry& entry) {
  headroom_ = entry.headroom_bytes;
  replans_ = entry.replans;
  plan_line_ = entry.plan_line;
  if (trace_ != nullptr) trace_->OnRuntime("plan from the cache", {});
}

std::optional<PlanResult> PlanLife::PlanProfile() {
  WriteProfile(built_->profile);
  return Plan(built_->profile);
}

std::optional<uint64_t> PlanLife::Cache(const std::optional<PlanResult>& plan) {
  return cache_.Put(key_, {.plan = plan,
                           .headroom_bytes = headroom_,
                           .replans = replans_,
                           .plan_line = plan_line_,
                           .built = built_,
                           .positions = positions_});
}

const PlanCache::Entry* PlanLife::Switchable(uint64_t key) const {
  const PlanCache::Entry* entry = cache_.Peek(key);
  return entry != nullptr && entry->built != nullptr ? entry : nullptr;
}

void PlanLife::SwitchedTo(uint64_t key, const PlanCache::Entry& entry) {
  built_ = entry.built;
  positions_ = entry.positions;
  key_ = key;
  headroom_ = entry.headroom_bytes;
  replans_ = entry.replans;
  plan_line_ = entry.plan_line;
  RestartEvidence();  // a re-plan's evidence is whole iterations under this plan
  ++switches_;
}

int64_t PlanLife::HeadroomStep(int64_t memory_limit) const {
  int64_t step = memory_limit / 64;
  for (const Candidate& c : FindCandidates(built_->profile, &machine_)) {
    step = std::max(step, DeviceBytes(built_->profile.tensors[static_cast<size_t>(c.tensor)]));
  }
  return step;
}

int64_t PlanLife::SlabGrowth() const {
  int64_t other = 0;
  for (size_t t = 0; t < built_->tensor_allocation.size(); ++t) {
    if (built_->tensor_allocation[t] == kOtherAllocation) other += built_->profile.tensors[t].bytes;
  }
  return std::max<int64_t>(0, slab_peak_ - other);
}

std::optional<PlanResult> PlanLife::ReplanIfMissed(int64_t demand_swap_ins, int64_t memory_limit,
                                                   bool swap_all_pass) {
  if (iterations_under_plan_ >= 1) last_iteration_hits_ = demand_swap_ins - demand_ins_mark_;
  demand_ins_mark_ = demand_swap_ins;
  ++iterations_under_plan_;
  // From the plan's second whole iteration on (Note [Headroom]).
  if (iterations_under_plan_ >= 3)
    missed_in_a_row_ = last_iteration_hits_ > 0 ? missed_in_a_row_ + 1 : 0;
  if (missed_in_a_row_ < 2 || built_ == nullptr || replans_ >= kMaxReplans || swap_all_pass) {
    return std::nullopt;
  }
  const int64_t step = HeadroomStep(memory_limit);
  if (headroom_ + step > memory_limit / 4) return std::nullopt;
  const int64_t before = headroom_;
  headroom_ += step;
  ++replans_;
  ++total_replans_;
  const std::string previous_line = plan_line_;
  std::optional<PlanResult> plan = Plan(built_->profile);
  if (!plan.has_value() || !plan->sim.feasible) {
    headroom_ = before;
    replans_ = kMaxReplans;  // smaller memory does not help: stop trying
    --total_replans_;
    plan_line_ = previous_line;
    return std::nullopt;
  }
  POOCH_LOG_AT(kInfo,
               "re-planned: the safety net swapped in in %d iterations in a row, %lld times in "
               "the last; planned with %lld bytes of headroom",
               missed_in_a_row_, static_cast<long long>(last_iteration_hits_),
               static_cast<long long>(headroom_));
  iterations_under_plan_ = 1;  // the iteration starting now is the new plan's first
  missed_in_a_row_ = 0;
  return plan;
}

std::optional<PlanCounts> PlanLife::CurrentPlan() const {
  const PlanCache::Entry* entry = cache_.Peek(key_);
  if (entry == nullptr || !entry->plan.has_value()) return std::nullopt;
  const PlanResult& plan = *entry->plan;
  const DecisionCounts counts = CountDecisions(plan.plan, plan.candidates);
  const Policy policy = config_.mode == RunMode::kPlanned ? config_.planned_policy : Policy::kPooch;
  return PlanCounts{.policy = std::string(PolicyName(policy)),
                    .keep = counts.keep,
                    .swap = counts.swap,
                    .recompute = counts.recompute,
                    .predicted_iteration_ms = plan.sim.iteration_us / 1000.0,
                    .feasible = plan.sim.feasible};
}

void PlanLife::NoProfile(const absl::Status& why) {
  plan_line_ = absl::StrFormat("plan: none: no profile: %s", why.message());
  POOCH_LOG_AT(kInfo, "not planned: no profile: %s", std::string(why.message()).c_str());
  if (trace_ != nullptr) {
    const TraceArg args[] = {{"why", why.message()}};
    trace_->OnRuntime("no plan", args);
  }
}

void PlanLife::SetPlanLineIfNone(std::string line) {
  if (plan_line_.empty()) plan_line_ = std::move(line);
}

std::string PlanLife::CacheLine() const {
  return absl::StrFormat("plan_cache: hits %lld misses %lld entries %zu switches %lld",
                         static_cast<long long>(cache_.hits()),
                         static_cast<long long>(cache_.misses()), cache_.size(),
                         static_cast<long long>(switches_));
}

void PlanLife::WriteProfile(const Profile& profile) const {
  if (config_.profile_out.empty()) return;
  std::ofstream out(config_.profile_out, std::ios::trunc);
  out << ProfileToJson(profile) << "\n";
  out.close();
  if (!out) {
    LogLine("POOCH_PROFILE_OUT: cannot write %s; no profile file", config_.profile_out.c_str());
  }
}

std::optional<PlanResult> PlanLife::Plan(const Profile& profile) {
  const bool assumed = machine_assumed_;
  MachineModel machine = machine_;  // measured when the profile was made
  const int64_t slab_growth = built_ != nullptr && &profile == &built_->profile ? SlabGrowth() : 0;
  machine.memory_bytes -= headroom_ + slab_growth;  // Note [Headroom]
  if (slab_growth > 0) {
    POOCH_LOG_AT(kInfo,
                 "planning without %lld bytes of small-allocation slabs the profile did not count",
                 static_cast<long long>(slab_growth));
  }
  const Policy policy = config_.mode == RunMode::kPlanned ? config_.planned_policy : Policy::kPooch;
  const absl::Time started = absl::Now();
  absl::StatusOr<PlanResult> plan = MakePlan(profile, machine, policy, RunPlanOptions());
  const double plan_s = absl::ToDoubleSeconds(absl::Now() - started);
  if (!plan.ok()) {
    plan_line_ =
        absl::StrFormat("plan: policy %s failed: %s", PolicyName(policy), plan.status().message());
    POOCH_LOG_AT(kInfo, "not planned: %s", plan_line_.c_str() + 6);  // past "plan: "
    return std::nullopt;
  }
  // Counted over the planner's candidates, as `pooch plan` counts them.
  const DecisionCounts counts = CountDecisions(plan->plan, plan->candidates);
  plan_line_ = absl::StrFormat(
      "plan: policy %s keep %d swap %d recompute %d predicted_iteration_ms %.3f "
      "feasible %s h2d_gbps %.2f d2h_gbps %.2f%s headroom_bytes %lld replans %d "
      "simulations %lld plan_s %.3f; %s",
      PolicyName(policy), counts.keep, counts.swap, counts.recompute,
      plan->sim.iteration_us / 1000.0, plan->sim.feasible ? "yes" : "no", machine.h2d_gbps,
      machine.d2h_gbps, assumed ? " (a direction had no copy: assumed)" : "",
      static_cast<long long>(headroom_), replans_, static_cast<long long>(plan->simulations),
      plan_s,
      config_.mode != RunMode::kPlanned ? "not carried out (not a planner policy)" : "carried out");
  POOCH_LOG_AT(kInfo,
               "planned: policy %s keeps %d, swaps %d and recomputes %d intervals; predicted "
               "iteration %.3f ms%s, with %lld bytes of headroom, in %.3f s",
               std::string(PolicyName(policy)).c_str(), counts.keep, counts.swap, counts.recompute,
               plan->sim.iteration_us / 1000.0, plan->sim.feasible ? "" : " (infeasible)",
               static_cast<long long>(headroom_), plan_s);
  if (trace_ != nullptr) {
    const TraceArg args[] = {{"policy", PolicyName(policy)},
                             {"keep", counts.keep},
                             {"swap", counts.swap},
                             {"recompute", counts.recompute},
                             {"predicted_iteration_ms", plan->sim.iteration_us / 1000.0},
                             {"feasible", plan->sim.feasible ? "yes" : "no"},
                             {"headroom_bytes", headroom_}};
    trace_->OnRuntime("plan", args);
  }
  if (!config_.plot_path.empty()) Plot(profile, machine, *plan);
  return *std::move(plan);
}

// POOCH_PLOT: each plan made is drawn (core/plot/plot.h), so the file shows the last. It blocks
// the hook that made the plan while gnuplot runs, as planning does. A failure is said once and
// not tried again.
void PlanLife::Plot(const Profile& profile, const MachineModel& machine, const PlanResult& plan) {
  if (plot_failed_) return;
  const std::string title = absl::StrFormat(
      "%s under pooch: the measured iteration (%d ops), copies at %.1f GB/s to the device",
      program_invocation_short_name, profile.ops.size(), machine.h2d_gbps);
  if (absl::Status s =
          WritePlanPlot(config_.plot_path, title, profile, machine, plan.plan, plan.sim);
      !s.ok()) {
    plot_failed_ = true;
    LogLine("POOCH_PLOT: %s; no picture of the plan", std::string(s.message()).c_str());
    return;
  }
  POOCH_LOG_AT(kInfo, "POOCH_PLOT: the plan is drawn in %s", config_.plot_path.c_str());
}

}  // namespace pooch
