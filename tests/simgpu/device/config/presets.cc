// The preset table. Figures are vendor datasheet peaks unless noted:
//   V100 (SXM2/PCIe 16 GB): 15.7 fp32 TFLOP/s (SXM2), 900 GB/s HBM2 — NVIDIA Tesla V100 datasheet.
//     The PoocH paper (seeds/001, Tables 1 and 2) ran a V100 16 GB on PCIe gen3 (16 GB/s per
//     direction) and on POWER9 NVLink2 (75 GB/s per direction, measured by the paper).
//   A100 40 GB PCIe: 19.5 fp32 TFLOP/s (no TF32), 1555 GB/s HBM2, PCIe gen4 32 GB/s per
//     direction — NVIDIA A100 datasheet.
//   H100 PCIe 80 GB: 51 fp32 TFLOP/s, 2000 GB/s HBM2e, PCIe gen5 64 GB/s per direction —
//     NVIDIA H100 datasheet.
//   GH200 (96 GB HBM3): 67 fp32 TFLOP/s, 4000 GB/s, NVLink-C2C 450 GB/s per direction (900 GB/s
//     total) — NVIDIA GH200 Grace Hopper Superchip datasheet.
//   H200 SXM 141 GB: 67 fp32 TFLOP/s, 4800 GB/s HBM3e, PCIe gen5 x16 64 GB/s per direction, 132
//     SMs — NVIDIA H200 Tensor Core GPU datasheet. Its host costs (config/host_costs.cc) are the
//     ones calibrated on an H200.
// Shared memory (opt-in per block / per SM): 96/96 KiB on compute capability 7.0, 163/164 KiB on
//   8.0, 227/228 KiB on 9.0 — CUDA C++ Programming Guide, "Technical Specifications per Compute
//   Capability".
// Launch latency: a few microseconds per kernel on these generations (commonly measured 3-5 us);
// these are round estimates, not datasheet figures.
// Efficiency: the fraction of the fp32 peak that cuDNN convolutions achieve. The V100 rows use
// 0.64, calibrated (cnn_train, issue 3) so that `cnn_train --model resnet50 --batch 64` (224x224,
// SIMGPU_COMPUTE=timing, SIMGPU_MEMORY=64GiB) on v100-pcie3 gives 315 img/s against the PoocH
// paper's in-core 316 img/s on its x86 V100 PCIe machine (seeds/001, §5.2, Figure 17). The
// non-V100 rows use 0.58, an estimate from about 24.6 GFLOP per ResNet-50 image per training
// iteration plus memory-bound layers at 316 img/s, for want of a measurement to calibrate on.
#include "tests/simgpu/device/config/presets.h"

namespace simgpu {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr int kKiB = 1 << 10;

constexpr Preset kPresets[] = {
    // name, tflops, efficiency, mem, h2d, d2h GB/s, launch us, capacity, name, cc, SMs,
    // shared memory per block (opt-in) and per SM
    {"v100-pcie3", 15.7, 0.64, 900.0, 16.0, 16.0, 5.0, 16 * kGiB, "Tesla V100-PCIE-16GB (simgpu)",
     7, 0, 80, 96 * kKiB, 96 * kKiB},
    {"v100-nvlink2", 15.7, 0.64, 900.0, 75.0, 75.0, 5.0, 16 * kGiB, "Tesla V100-SXM2-16GB (simgpu)",
     7, 0, 80, 96 * kKiB, 96 * kKiB},
    {"a100-pcie4", 19.5, 0.58, 1555.0, 32.0, 32.0, 4.0, 40 * kGiB, "NVIDIA A100-PCIE-40GB (simgpu)",
     8, 0, 108, 163 * kKiB, 164 * kKiB},
    {"h100-pcie5", 51.0, 0.58, 2000.0, 64.0, 64.0, 3.0, 80 * kGiB, "NVIDIA H100 PCIe (simgpu)", 9,
     0, 114, 227 * kKiB, 228 * kKiB},
    {"gh200", 67.0, 0.58, 4000.0, 450.0, 450.0, 3.0, 96 * kGiB, "NVIDIA GH200 96GB (simgpu)", 9, 0,
     132, 227 * kKiB, 228 * kKiB},
    {"h200", 67.0, 0.58, 4800.0, 64.0, 64.0, 3.0, 141 * kGiB, "NVIDIA H200 (simgpu)", 9, 0, 132,
     227 * kKiB, 228 * kKiB},
};

}  // namespace

const Preset* FindPreset(std::string_view name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

const char* PresetNames() { return "v100-pcie3, v100-nvlink2, a100-pcie4, h100-pcie5, gh200, h200"; }

}  // namespace simgpu
