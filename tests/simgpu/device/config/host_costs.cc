// The host cost tables (docs/simgpu.md, "Host time"). Sources:
//   VMM on an A100 (2 MiB pages, one thread; ovg-project/kvcached
//     benchmarks/bench_vmm/README.md): cuMemCreate 193 us, cuMemMap 1.5 us, cuMemSetAccess 36 us,
//     cuMemUnmap 26 us, cuMemAddressReserve 19 us. Used for the V100 and A100 presets.
//   VMM on an H200 (this project's runs, docs/measurements.md "GPU runs", 2026-11-28, on pooch's
//     hooks' thread): cuMemMap with its cuMemSetAccess and cuMemUnmap about 118 us each,
//     cuMemCreate and cuMemRelease about 44 us each. cuMemSetAccess keeps the A100's 36 us, so
//     cuMemMap is 118 - 36 = 82 us. Used for the Hopper presets (h100-pcie5, gh200, h200).
//   cuMemRelease (no public figure) takes the H200's 44 us everywhere; cuMemAddressFree takes
//     cuMemAddressReserve's 19 us.
// Estimates, not measurements: a kernel launch costs the host a few microseconds (4 us on the
// V100 presets' hosts, 3 on the A100's, 2.5 on Hopper's); cudaMalloc 20 us and cudaFree 15 us;
// the stream-ordered pool 1 us a call; pinned host memory 20 us a call plus 100 ms per GiB
// (pages zeroed and locked at about 10 GB/s); an asynchronous copy or memset costs a launch, a
// synchronous one twice that; stream creation and destruction 10 us; event creation,
// destruction and queries 1 us; recording, stream waits and synchronisation calls 2 us.
#include "tests/simgpu/device/config/host_costs.h"

namespace simgpu {
namespace {

struct VmmCosts {
  double create, release, reserve, address_free, map, unmap, set_access;
};

constexpr VmmCosts kA100Vmm = {193, 44, 19, 19, 1.5, 26, 36};
constexpr VmmCosts kH200Vmm = {44, 44, 19, 19, 82, 118, 36};

HostCosts Table(double launch_us, const VmmCosts& vmm) {
  HostCosts c;
  auto set = [&](HostCall call, double us) { c.us[static_cast<int>(call)] = us; };
  set(HostCall::kLaunch, launch_us);
  set(HostCall::kMalloc, 20);
  set(HostCall::kFree, 15);
  set(HostCall::kMallocAsync, 1);
  set(HostCall::kFreeAsync, 1);
  set(HostCall::kHostAlloc, 20);
  set(HostCall::kHostFree, 20);
  set(HostCall::kMemCreate, vmm.create);
  set(HostCall::kMemRelease, vmm.release);
  set(HostCall::kAddressReserve, vmm.reserve);
  set(HostCall::kAddressFree, vmm.address_free);
  set(HostCall::kMemMap, vmm.map);
  set(HostCall::kMemUnmap, vmm.unmap);
  set(HostCall::kMemSetAccess, vmm.set_access);
  set(HostCall::kCopyAsync, launch_us);
  set(HostCall::kCopySync, 2 * launch_us);
  set(HostCall::kMemsetAsync, launch_us);
  set(HostCall::kMemsetSync, 2 * launch_us);
  set(HostCall::kStreamCreate, 10);
  set(HostCall::kStreamDestroy, 10);
  set(HostCall::kEventCreate, 1);
  set(HostCall::kEventDestroy, 1);
  set(HostCall::kEventRecord, 2);
  set(HostCall::kStreamWait, 2);
  set(HostCall::kSynchronize, 2);
  set(HostCall::kQuery, 1);
  c.pinned_us_per_gib = 100000;
  return c;
}

}  // namespace

HostCosts HostCostsOf(std::string_view preset) {
  if (preset == "v100-pcie3" || preset == "v100-nvlink2") return Table(4, kA100Vmm);
  if (preset == "a100-pcie4") return Table(3, kA100Vmm);
  if (preset == "h100-pcie5" || preset == "gh200" || preset == "h200") return Table(2.5, kH200Vmm);
  return HostCosts{};
}

const char* HostCallName(HostCall call) {
  static constexpr const char* kNames[] = {
      "launch",           "cudaMalloc",
      "cudaFree",         "cudaMallocAsync",
      "cudaFreeAsync",    "cudaHostAlloc",
      "cudaFreeHost",     "cuMemCreate",
      "cuMemRelease",     "cuMemAddressReserve",
      "cuMemAddressFree", "cuMemMap",
      "cuMemUnmap",       "cuMemSetAccess",
      "cudaMemcpyAsync",  "cudaMemcpy",
      "cudaMemsetAsync",  "cudaMemset",
      "cudaStreamCreate", "cudaStreamDestroy",
      "cudaEventCreate",  "cudaEventDestroy",
      "cudaEventRecord",  "cudaStreamWaitEvent",
      "synchronize",      "query",
  };
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<int>(HostCall::kCount));
  return kNames[static_cast<int>(call)];
}

}  // namespace simgpu
