// presets.h: the machines simgpu can pretend to be (SIMGPU_PRESET).
//
// Thread safety: the table is constant.
#ifndef SIMGPU_DEVICE_PRESETS_H_
#define SIMGPU_DEVICE_PRESETS_H_

#include <cstdint>
#include <string_view>

namespace simgpu {

struct Preset {
  const char* name;
  double fp32_tflops;  // peak fp32 TFLOP/s
  double efficiency;   // achieved fraction of the peak on compute-bound ops
  double mem_gbps;     // device memory bandwidth, GB/s (1e9 bytes/s)
  double h2d_gbps;     // host-to-device link, GB/s per direction
  double d2h_gbps;     // device-to-host link, GB/s per direction
  double launch_us;    // latency added to every device op, microseconds
  uint64_t capacity_bytes;
  // What cuDeviceGetName / cuDeviceGetAttribute report.
  const char* gpu_name;
  int cc_major;
  int cc_minor;
  int sm_count;
  // Shared memory per block (opt-in maximum) and per SM, bytes: frameworks pick kernels by them.
  int smem_per_block_optin;
  int smem_per_sm;
};

// The preset called `name`, or nullptr.
const Preset* FindPreset(std::string_view name);

// "v100-pcie3, v100-nvlink2, ..." for error messages.
const char* PresetNames();

}  // namespace simgpu

#endif  // SIMGPU_DEVICE_PRESETS_H_
