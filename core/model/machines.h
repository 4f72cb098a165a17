// Machine presets: named MachineModels for offline what-if planning (`pooch plan --machine`),
// for the zoo's roofline durations and for tests.
//
//   absl::StatusOr<pooch::MachineModel> m = pooch::MachinePreset("v100-pcie3");
//   m->memory_bytes = *pooch::ParseBytes("12GiB");   // what-if: a smaller budget
//
// Every figure is a public datasheet or paper number; machines.cc names the source of each.
// Compute and memory bandwidth are the *achievable* rates the roofline uses, i.e. the peak scaled
// by an efficiency factor calibrated once against the PoocH paper's in-core ResNet-50 throughput
// (machines.cc, Note [Calibration]).
//
// Thread safety: pure functions.
#ifndef POOCH_CORE_MODEL_MACHINES_H_
#define POOCH_CORE_MODEL_MACHINES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/model.h"

namespace pooch {

// The preset called `name` (exact, lower case). Unknown names give InvalidArgument whose message
// lists the known ones.
absl::StatusOr<MachineModel> MachinePreset(absl::string_view name);

// The known preset names, in a fixed order (oldest machine first).
std::vector<std::string> MachinePresetNames();

// One line describing a preset ("V100 16 GiB, PCIe gen3 16 GB/s each way (PoocH Table 1)"), for
// help text. Empty for unknown names.
std::string MachinePresetSummary(absl::string_view name);

}  // namespace pooch

#endif  // POOCH_CORE_MODEL_MACHINES_H_
