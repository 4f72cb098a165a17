// swap-opt: PoocH §4.4.2, the keep/swap classification.
//
// Note [Overhead maps]
// ~~~~~~~~~~~~~~~~~~~~
// From the swap-all timeline (Figure 11) PoocH takes L_O, the maps whose swap-out is not hidden
// by computation, and L_I, those whose swap-in is not. We call a copy *not hidden* when it is in
// flight while the compute engine is idle (for longer than a rounding error): its time then adds
// to the iteration, directly (the op waits for it) or through the copy queue (a later copy the op
// waits for is stuck behind it). Maps in neither set are swapped immediately.
//
// Note [Swap-opt search]
// ~~~~~~~~~~~~~~~~~~~~~~
// When in-core fits it is returned at once: no plan is faster than all ops back to back.
// Otherwise, starting from swap-all (every candidate swapped, swap-in when memory allows):
//   1. simulate it and find L_O and L_I (Note [Overhead maps]);
//   2. for every keep/swap assignment of L_I (a binary search tree, Figure 14) simulate it; if
//      it fits, keep the maps of L_O \ L_I from the output layer backwards "as long as it can
//      fit in the GPU memory" (§4.4.2, Figure 13), found by bisection (Note [Scan by bisection]);
//   3. return the fastest feasible classification seen (swap-all itself included).
// That is O(2^|L_I| log |L_O \ L_I|) simulations (the paper's linear scan: O(2^|L_I| |L_O \ L_I|)).
//
// Note [Scan by bisection]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The paper scans L_O \ L_I linearly, switching one map more to keep at each step and
// simulating each classification. We first simulate the whole of it kept; if that does not fit,
// we bisect for the longest prefix (in the scan's order) that fits, each classification
// simulated being a candidate for the fastest. When fitting is monotone along the scan (keeping
// one map more never frees memory) this stops where the linear scan stops, and it takes the same
// plan when the last classification that fits is also the fastest. Both hold at every leaf of the
// zoo networks, where it takes a fraction of the linear scan's simulations (docs/measurements.md,
// "Planner").
//
// Note [Bounded brute force]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// 2^|L_I| must stay small: only the PlanOptions::brute_force_limit maps of L_I whose swap-in is
// exposed longest take part in step 2. The others stay swapped during the search and are then
// tried one by one (most exposed first) as keep on the best plan, kept when that is feasible and
// faster. A leaf whose L_I part alone does not fit is not scanned (keeping more would not fit
// either).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/plan/plan_internal.h"

namespace pooch {
namespace {

struct Interval {
  double start;
  double end;
};

// Idle intervals of the compute engine within [0, iteration_us].
std::vector<Interval> IdleIntervals(const SimResult& r, double eps) {
  std::vector<Interval> idle;
  double busy_until = 0;
  for (const SimEvent& e : r.events) {
    if (e.kind != SimEvent::Kind::kCompute && e.kind != SimEvent::Kind::kRecompute) continue;
    if (e.start_us > busy_until + eps) idle.push_back({busy_until, e.start_us});
    busy_until = std::max(busy_until, e.end_us);
  }
  if (r.iteration_us > busy_until + eps) idle.push_back({busy_until, r.iteration_us});
  return idle;
}

double IdleOverlap(const std::vector<Interval>& idle, double start, double end) {
  auto it = std::upper_bound(idle.begin(), idle.end(), start,
                             [](double t, const Interval& i) { return t < i.end; });
  double overlap = 0;
  for (; it != idle.end() && it->start < end; ++it) {
    overlap += std::min(end, it->end) - std::max(start, it->start);
  }
  return overlap;
}

struct Exposed {
  CandidateId candidate;
  double us;
};

void Collect(const SimResult& r, SimEvent::Kind kind, std::vector<Exposed>* out) {
  const double eps = 1e-9 * std::max(1.0, r.iteration_us);
  const std::vector<Interval> idle = IdleIntervals(r, eps);
  for (const SimEvent& e : r.events) {
    if (e.kind != kind) continue;
    const double overlap = IdleOverlap(idle, e.start_us, e.end_us);
    if (overlap > eps) out->push_back({e.candidate, overlap});
  }
}

std::vector<CandidateId> Ids(std::vector<Exposed> v) {
  std::vector<CandidateId> ids;
  for (const Exposed& e : v) ids.push_back(e.candidate);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

OverheadMaps FindOverheadMaps(const SimResult& recorded) {
  std::vector<Exposed> out, in;
  Collect(recorded, SimEvent::Kind::kSwapOut, &out);
  Collect(recorded, SimEvent::Kind::kSwapIn, &in);
  return {Ids(out), Ids(in)};
}

absl::StatusOr<Plan> PlanSwapOpt(PlanContext& ctx) {
  // Note [Swap-opt search]: when everything fits, keeping everything is optimal.
  Plan in_core = ctx.Uniform(Decision::kKeep, SwapInSchedule::kWhenMemoryAllows);
  if (ctx.Evaluate(in_core).feasible) return in_core;
  Plan base = ctx.Uniform(Decision::kSwap, SwapInSchedule::kWhenMemoryAllows);
  const SimResult& all = ctx.Record(base);
  if (!all.feasible) {
    return absl::FailedPreconditionError(
        absl::StrCat("swap-opt: swapping every feature map does not fit: ", all.failure));
  }
  Plan best = base;
  double best_us = all.iteration_us;

  // Step 1: L_O and L_I, with how long each swap-in is exposed.
  std::vector<Exposed> exposed_in;
  Collect(all, SimEvent::Kind::kSwapIn, &exposed_in);
  const OverheadMaps sets = FindOverheadMaps(all);
  // Candidates are ordered by the op that opens them, so "from the output layer" is descending.
  auto from_output = [](CandidateId a, CandidateId b) { return a > b; };
  // L_I, most exposed first; the first brute_force_limit are searched exhaustively.
  std::sort(exposed_in.begin(), exposed_in.end(),
            [](const Exposed& a, const Exposed& b) { return a.us > b.us; });
  std::vector<CandidateId> l_i;
  for (const Exposed& e : exposed_in) {
    if (std::find(l_i.begin(), l_i.end(), e.candidate) == l_i.end()) l_i.push_back(e.candidate);
  }
  const size_t limit = static_cast<size_t>(std::max(0, ctx.options().brute_force_limit));
  std::vector<CandidateId> brute(l_i.begin(), l_i.begin() + std::min(limit, l_i.size()));
  std::vector<CandidateId> greedy(l_i.begin() + brute.size(), l_i.end());
  std::vector<CandidateId> scan;  // L_O \ L_I from the output layer backwards
  for (CandidateId t : sets.swap_out) {
    if (std::find(l_i.begin(), l_i.end(), t) == l_i.end()) scan.push_back(t);
  }
  std::sort(scan.begin(), scan.end(), from_output);

  // Step 2: brute force over L_I, linear scan of L_O \ L_I at each leaf.
  Plan plan = base;
  const uint64_t leaves = uint64_t{1} << brute.size();
  for (uint64_t mask = 0; mask < leaves; ++mask) {
    for (size_t k = 0; k < brute.size(); ++k) {
      plan.decisions[brute[k]] = (mask >> k) & 1 ? Decision::kKeep : Decision::kSwap;
    }
    for (CandidateId t : scan) plan.decisions[t] = Decision::kSwap;
    if (mask != 0) {
      const SimResult& leaf = ctx.Evaluate(plan);
      if (!leaf.feasible) continue;
      if (leaf.iteration_us < best_us) {
        best_us = leaf.iteration_us;
        best = plan;
      }
    }
    // The longest prefix of the scan that fits (Note [Scan by bisection]): the first `fits` maps
    // are known to fit kept, the first `misfit` (when at most scan.size()) are known not to.
    auto keep_prefix = [&](size_t n) {
      for (size_t i = 0; i < scan.size(); ++i) {
        plan.decisions[scan[i]] = i < n ? Decision::kKeep : Decision::kSwap;
      }
    };
    size_t fits = 0, misfit = scan.size() + 1;
    for (size_t n = scan.size(); n > fits; n = fits + (misfit - fits) / 2) {
      keep_prefix(n);
      const SimResult& r = ctx.Evaluate(plan);
      if (!r.feasible) {
        misfit = n;
        continue;
      }
      fits = n;
      if (r.iteration_us < best_us) {
        best_us = r.iteration_us;
        best = plan;
      }
    }
  }
  // The part of L_I beyond the brute-force limit, greedily (Note [Bounded brute force]).
  for (CandidateId t : greedy) {
    plan = best;
    plan.decisions[t] = Decision::kKeep;
    const SimResult& r = ctx.Evaluate(plan);
    if (r.feasible && r.iteration_us < best_us) {
      best_us = r.iteration_us;
      best = plan;
    }
  }
  return best;
}

}  // namespace pooch
