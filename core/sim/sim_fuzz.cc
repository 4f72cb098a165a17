// libFuzzer target: arbitrary bytes into ParseProfileJson, then the simulator. It must never crash
// or throw; what it accepts must survive ProfileToJson -> ParseProfileJson unchanged, and the
// simulator must run on it without tripping a sanitizer. Seeds: core/model/testdata/*.json.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/model/model_json.h"
#include "core/sim/sim.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<pooch::Profile> profile = pooch::ParseProfileJson(text);
  if (!profile.ok()) return 0;
  for (int indent : {-1, 1}) {
    absl::StatusOr<pooch::Profile> again =
        pooch::ParseProfileJson(pooch::ProfileToJson(*profile, indent));
    if (!again.ok() || !(*again == *profile)) std::abort();
  }
  if (profile->ops.size() <= 2000) {
    pooch::MachineModel machine;
    machine.memory_bytes = int64_t{1} << 30;
    machine.h2d_gbps = machine.d2h_gbps = 16;
    // Every interval (no machine filter), each swapped or recomputed.
    const std::vector<pooch::Candidate> cands = pooch::FindCandidates(*profile);
    pooch::Plan plan = pooch::KeepAllPlan(cands.size());
    for (size_t c = 0; c < cands.size(); ++c) {
      plan.decisions[c] =
          cands[c].recomputable && (c % 2) ? pooch::Decision::kRecompute : pooch::Decision::kSwap;
    }
    (void)pooch::Simulate(*profile, machine, plan, {}, {.matter_only = false});
  }
  return 0;
}
