// superneurons: the SuperNeurons classification as PoocH §5.2 describes it.
//
// Note [SuperNeurons rule]
// ~~~~~~~~~~~~~~~~~~~~~~~~
//   - Feature maps are kept on the device preferentially from the output layer: starting from
//     the map whose last forward use is latest, each is switched to keep while the plan (simulated
//     with SuperNeurons' own swap-in schedule) still fits; the first that does not fit ends it.
//   - Of the maps that are not kept, outputs of convolutions are swapped; the others are
//     recomputed (swapped when their producer cannot be replayed). A map is a convolution's
//     output when the call that wrote it whole is one (kind kConv): for a map rebuilt by a chain
//     (Note [Chains] in core/model/candidates.cc), the chain's first link, not its last, so that
//     a convolution's output with its bias added in place stays a convolution's output.
//   - Each swap-in is issued with the immediately preceding convolution
//     (SwapInSchedule::kWithPreviousConv), regardless of memory: when that overflows even with
//     nothing kept, the policy fails with the simulator's reason (as at batch 640, §5.2).
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/model/candidates.h"
#include "core/plan/plan_internal.h"

namespace pooch {

absl::StatusOr<Plan> PlanSuperNeurons(PlanContext& ctx) {
  Plan plan = ctx.Uniform(Decision::kSwap, SwapInSchedule::kWithPreviousConv);
  const std::vector<Candidate>& cands = ctx.candidates();
  const ReplayFacts facts = ComputeReplayFacts(ctx.profile());
  for (size_t c = 0; c < cands.size(); ++c) {
    const Candidate& f = cands[c];
    const absl::Span<const OpIndex> chain =
        f.producer >= 0 ? facts.Chain(f.tensor, f.producer) : absl::Span<const OpIndex>();
    const OpIndex whole_writer = chain.empty() ? f.producer : chain.front();
    const bool conv = whole_writer >= 0 && ctx.profile().ops[whole_writer].kind == OpKind::kConv;
    if (!conv && f.recomputable) plan.decisions[c] = Decision::kRecompute;
  }
  const SimResult& first = ctx.Evaluate(plan);
  if (!first.feasible) {
    return absl::FailedPreconditionError(absl::StrCat("superneurons: ", first.failure));
  }
  for (size_t c = cands.size(); c-- > 0;) {
    const Decision before = plan.decisions[c];
    plan.decisions[c] = Decision::kKeep;
    if (!ctx.Evaluate(plan).feasible) {
      plan.decisions[c] = before;
      break;
    }
  }
  return plan;
}

}  // namespace pooch
