#include "core/model/machines.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace pooch {
namespace {

// Note [Calibration]
// ~~~~~~~~~~~~~~~~~~
// The roofline in the zoo (zoo_builder.cc) charges each op max(flops / compute, bytes / memory)
// plus a launch latency. Datasheet peaks are never reached by real kernels: STREAM-like kernels
// reach about 85 % of the HBM peak (kMemoryEfficiency, an assumption, not calibrated), and
// cuDNN's fp32 convolutions well below the FMA peak. kComputeEfficiency was calibrated once, so
// that in-core ResNet-50 training (zoo "resnet50", 224x224) on v100-pcie3 predicts roughly the
// PoocH paper's measured in-core throughput of 316 images/s (§5.2, Figure 17; Chainer 3,
// cuDNN 7.1, fp32): with 0.64 the model gives 314-319 img/s over batch 64-640, of which about a
// quarter of the time is bandwidth-bound BN/ReLU/add/pool work (core/zoo/zoo_test.cc,
// InCoreResNet50MatchesPaperThroughput, accepts 290-345).
// The same factors are applied to every preset: the newer GPUs were not calibrated against
// measurements, so their absolute times are estimates; their ratios of compute to link speed are
// what the planner cares about.
constexpr double kComputeEfficiency = 0.64;
constexpr double kMemoryEfficiency = 0.85;

// Launch latency of one kernel or library call (µs). Not a datasheet figure: the usual 3-7 µs
// measured for cudaLaunchKernel on the machines of the paper's era; one value for all presets.
constexpr double kLaunchUs = 5;
// Latency of one cudaMemcpyAsync between pinned host memory and the device (µs), again a typical
// measured figure rather than a datasheet one. NVLink-attached hosts (POWER9, Grace) answer
// faster than a PCIe round trip.
constexpr double kPcieCopyLatencyUs = 10;
constexpr double kNvlinkCopyLatencyUs = 5;

constexpr int64_t kGiB = int64_t{1} << 30;

struct Preset {
  const char* name;
  const char* summary;
  int64_t memory_bytes;
  double link_gbps;  // per direction; both directions at once (two copy engines)
  double copy_latency_us;
  double peak_fp32_tflops;
  double peak_memory_gbps;
};

// Sources:
// - V100: NVIDIA Tesla V100 datasheet (SXM2): 15.7 TFLOP/s fp32, 900 GB/s HBM2, 16 GB. The PCIe
//   card is rated 14 TFLOP/s; the paper's x86 machine used a PCIe link, but we keep one GPU model
//   for both machines so that the two presets differ only in the link, as in the paper.
//   16 GB is 16 GiB of HBM2 (the card reports 16160 MiB; we plan against the nominal 16 GiB).
// - PCIe gen3 x16 16 GB/s each way: PoocH Table 1 (theoretical; FIELD-NOTES.md, link speeds).
// - NVLink2 75 GB/s: PoocH Table 2 (measured on the POWER9 machine; FIELD-NOTES.md).
// - A100 40GB PCIe: NVIDIA A100 datasheet: 19.5 TFLOP/s fp32 (not TF32), 1555 GB/s HBM2.
//   PCIe gen4 x16 32 GB/s each way (FIELD-NOTES.md).
// - H100 PCIe 80GB: NVIDIA H100 datasheet: 51 TFLOP/s fp32, 2.0 TB/s HBM2e. PCIe gen5 x16
//   64 GB/s each way (FIELD-NOTES.md).
// - GH200: NVIDIA GH200 Grace Hopper datasheet: 96 GB HBM3 at 4.0 TB/s, H100 compute 67 TFLOP/s
//   fp32; NVLink-C2C 900 GB/s total, i.e. 450 GB/s per direction (FIELD-NOTES.md).
constexpr Preset kPresets[] = {
    {"v100-pcie3", "Tesla V100 16 GiB, PCIe gen3 x16 16 GB/s each way (PoocH Table 1, x86)",
     16 * kGiB, 16, kPcieCopyLatencyUs, 15.7, 900},
    {"v100-nvlink2", "Tesla V100 16 GiB, NVLink2 75 GB/s each way (PoocH Table 2, POWER9)",
     16 * kGiB, 75, kNvlinkCopyLatencyUs, 15.7, 900},
    {"a100-pcie4", "A100 40 GiB, PCIe gen4 x16 32 GB/s each way", 40 * kGiB, 32, kPcieCopyLatencyUs,
     19.5, 1555},
    {"h100-pcie5", "H100 PCIe 80 GiB, PCIe gen5 x16 64 GB/s each way", 80 * kGiB, 64,
     kPcieCopyLatencyUs, 51, 2000},
    {"gh200", "GH200 96 GiB HBM3, NVLink-C2C 450 GB/s each way", 96 * kGiB, 450,
     kNvlinkCopyLatencyUs, 67, 4000},
};

const Preset* Find(absl::string_view name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<MachineModel> MachinePreset(absl::string_view name) {
  const Preset* p = Find(name);
  if (p == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown machine '", name, "' (known: ", absl::StrJoin(MachinePresetNames(), ", "), ")"));
  }
  MachineModel m;
  m.name = p->name;
  m.memory_bytes = p->memory_bytes;
  m.h2d_gbps = p->link_gbps;
  m.d2h_gbps = p->link_gbps;
  m.h2d_latency_us = p->copy_latency_us;
  m.d2h_latency_us = p->copy_latency_us;
  m.duplex = true;  // every preset GPU has separate copy engines per direction
  m.compute_tflops = p->peak_fp32_tflops * kComputeEfficiency;
  m.memory_gbps = p->peak_memory_gbps * kMemoryEfficiency;
  m.launch_us = kLaunchUs;
  return m;
}

std::vector<std::string> MachinePresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

std::string MachinePresetSummary(absl::string_view name) {
  const Preset* p = Find(name);
  return p == nullptr ? std::string() : std::string(p->summary);
}

}  // namespace pooch
