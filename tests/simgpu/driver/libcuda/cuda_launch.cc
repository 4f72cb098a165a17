// libcuda.so.1: kernel launches (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel)
// and the occupancy calculator.
//
// A launch is checked as a GPU checks it (grid and block shape, shared memory against the
// function's limit), then becomes a kernel op on its stream (Note [Kernel ops] in
// device/device_kernel.cc): the parameter buffer, laid out from the cubin's parameter info, is
// what the device scans for pointers. A kernel never runs on the CPU: in math mode
// (SIMGPU_COMPUTE=math, the default) a launch runs the kernel's CPU twin if the program brings
// one (Note [CPU twins] in cuda_twins.h) and fails with CUDA_ERROR_NOT_SUPPORTED otherwise.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "tests/simgpu/driver/libcuda/cuda_twins.h"
#include "tests/simgpu/driver/libcuda/driver_common.h"
#include "tests/simgpu/driver/modules/cuda_modules.h"

using simgpu::Device;
using simgpu::driver::CpuTwin;
using simgpu::driver::FindTwin;
using simgpu::driver::BlockLimits;
using simgpu::driver::FindFunction;
using simgpu::driver::Function;
using simgpu::driver::ToCU;

namespace {

struct Shape {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared;
};

// The checks of a real launch: CUDA_ERROR_INVALID_VALUE for a zero or oversized dimension or
// too much shared memory for the function (its static shared memory plus `shared` dynamic
// bytes, against CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
CUresult CheckShape(const char* api, const Function& f, const Shape& s) {
  BlockLimits lim = simgpu::driver::DeviceBlockLimits();
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (s.grid[i] == 0 || s.block[i] == 0) return CUDA_ERROR_INVALID_VALUE;
    if (s.grid[i] > static_cast<unsigned>(lim.max_grid[i]) ||
        s.block[i] > static_cast<unsigned>(lim.max_dim[i])) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    threads *= s.block[i];
  }
  int max_threads = lim.max_threads;
  if (f.info != nullptr && f.info->max_threads_per_block > 0) {
    max_threads = std::min(max_threads, f.info->max_threads_per_block);
  }
  if (threads > static_cast<uint64_t>(max_threads)) return CUDA_ERROR_INVALID_VALUE;
  if (s.shared > static_cast<unsigned>(std::max(0, f.max_dynamic_shared.load()))) {
    std::fprintf(stderr,
                 "simgpu: %s: %s asks for %u bytes of dynamic shared memory; its limit is %d "
                 "(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)\n",
                 api, f.name, s.shared, f.max_dynamic_shared.load());
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// The parameter buffer from `kernel_params` (one pointer per parameter, laid out by the cubin's
// parameter info) or `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE: the buffer itself).
CUresult BuildParams(const char* api, const Function& f, void** kernel_params, void** extra,
                     std::vector<uint8_t>* buf) {
  if (extra != nullptr) {
    if (kernel_params != nullptr) return CUDA_ERROR_INVALID_VALUE;
    const void* ptr = nullptr;
    size_t size = 0;
    bool has_size = false;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        ptr = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = *static_cast<const size_t*>(extra[i + 1]);
        has_size = true;
      } else {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    if (ptr == nullptr || !has_size) return CUDA_ERROR_INVALID_VALUE;
    buf->assign(static_cast<const uint8_t*>(ptr), static_cast<const uint8_t*>(ptr) + size);
    return CUDA_SUCCESS;
  }
  if (f.info == nullptr) {
    std::fprintf(stderr,
                 "simgpu: %s: %s has no parameter info (%s), so its arguments cannot be read\n",
                 api, f.name, f.no_info.c_str());
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const auto& params = f.info->params;
  buf->assign(f.info->param_bytes, 0);
  if (!params.empty() && kernel_params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < params.size(); ++i) {
    if (kernel_params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(buf->data() + params[i].offset, kernel_params[i], params[i].bytes);
  }
  return CUDA_SUCCESS;
}

// The buffer's 8-byte aligned words, each with the parameter that holds all of it (Note [Kernel
// ops] in device/device_kernel.cc): kNoParam for a word across parameters or padding, and for
// every word when the layout is unknown (a buffer given through `extra` for a kernel without
// parameter info).
std::vector<Device::KernelWord> Words(const Function& f, const std::vector<uint8_t>& buf) {
  std::vector<Device::KernelWord> words(buf.size() / 8);
  for (size_t i = 0; i < words.size(); ++i) {
    std::memcpy(&words[i].value, buf.data() + 8 * i, 8);
    words[i].param = Device::KernelWord::kNoParam;
  }
  if (f.info == nullptr) return words;
  const auto& params = f.info->params;
  for (size_t p = 0; p < params.size(); ++p) {
    uint64_t first = (uint64_t{params[p].offset} + 7) / 8;
    uint64_t end = (uint64_t{params[p].offset} + params[p].bytes) / 8;  // words wholly inside
    for (uint64_t w = first; w < end && w < words.size(); ++w) {
      words[w].param = static_cast<uint32_t>(p);
    }
  }
  return words;
}

CUresult Launch(const char* api, CUfunction func, const Shape& shape, CUstream stream,
                void** kernel_params, void** extra) {
  Function* f = FindFunction(func);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = CheckShape(api, *f, shape); r != CUDA_SUCCESS) return r;
  CpuTwin twin = simgpu::ComputeEnabled() ? FindTwin(*f) : nullptr;
  if (simgpu::ComputeEnabled() && (twin == nullptr || f->info == nullptr)) {
    if (!f->warned.exchange(true)) {
      std::fprintf(stderr,
                   "simgpu: %s: %s is device code, which simgpu cannot run on the CPU; use "
                   "SIMGPU_COMPUTE=timing or bring its CPU twin (docs/simgpu.md)\n",
                   api, f->name);
    }
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  std::vector<uint8_t> buf;
  if (CUresult r = BuildParams(api, *f, kernel_params, extra, &buf); r != CUDA_SUCCESS) return r;
  std::function<void()> body;
  if (twin != nullptr) {
    body = [&] {
      std::vector<void*> args;
      for (const auto& p : f->info->params) args.push_back(buf.data() + p.offset);
      twin(shape.grid, shape.block, shape.shared, args.data());
    };
  }
  return ToCU(
      Device::Get().LaunchKernel(f->name, stream, Words(*f, buf).data(), buf.size() / 8, body));
}

// Launch attributes whose effect simgpu models as none (hints, placement, cluster shape,
// priorities) pass; those that promise events or graph behaviour do not.
CUresult CheckAttributes(const char* api, const CUlaunchAttribute* attrs, unsigned n) {
  if (n > 0 && attrs == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; ++i) {
    switch (attrs[i].id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
      case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        break;
      default:
        std::fprintf(stderr, "simgpu: %s: launch attribute %d is not supported\n", api,
                     static_cast<int>(attrs[i].id));
        return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  return CUDA_SUCCESS;
}

CUresult LaunchEx(const char* api, const CUlaunchConfig* config, CUfunction f, void** params,
                  void** extra) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckAttributes(api, config->attrs, config->numAttrs); r != CUDA_SUCCESS) {
    return r;
  }
  Shape s{{config->gridDimX, config->gridDimY, config->gridDimZ},
          {config->blockDimX, config->blockDimY, config->blockDimZ},
          config->sharedMemBytes};
  return Launch(api, f, s, config->hStream, params, extra);
}

// Blocks of `block_size` threads that fit on one SM by threads, blocks, registers and shared
// memory (the occupancy calculator's model, at warp and register-file granularity).
CUresult MaxActiveBlocks(int* blocks, CUfunction func, int block_size, size_t dynamic_shared) {
  if (blocks == nullptr || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  Function* f = FindFunction(func);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto attr = [](CUdevice_attribute a) {
    int v = 0;
    cuDeviceGetAttribute(&v, a, 0);
    return v;
  };
  int max_threads = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  int max_blocks = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  int regs_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  int shared_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  int warps = (block_size + 31) / 32;
  int n = std::min(max_blocks, max_threads / (warps * 32));
  int regs = f->info != nullptr ? f->info->registers : 0;
  if (regs > 0) n = std::min(n, regs_per_sm / (((regs * 32 + 255) / 256) * 256 * warps));
  size_t shared = dynamic_shared + (f->info != nullptr ? f->info->shared_bytes : 0);
  if (shared > 0) n = std::min<int64_t>(n, static_cast<int64_t>(shared_per_sm / shared));
  *blocks = std::max(n, 0);
  return CUDA_SUCCESS;
}

}  // namespace

SIMGPU_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                      unsigned int gz, unsigned int bx, unsigned int by,
                                      unsigned int bz, unsigned int shared, CUstream stream,
                                      void** params, void** extra) {
  SIMGPU_DRIVER_ENTER_CTX();
  return Launch("cuLaunchKernel", f, Shape{{gx, gy, gz}, {bx, by, bz}, shared}, stream, params,
                extra);
}

SIMGPU_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                           unsigned int gz, unsigned int bx, unsigned int by,
                                           unsigned int bz, unsigned int shared, CUstream stream,
                                           void** params, void** extra) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (stream == nullptr) stream = CU_STREAM_PER_THREAD;
  return Launch("cuLaunchKernel", f, Shape{{gx, gy, gz}, {bx, by, bz}, shared}, stream, params,
                extra);
}

SIMGPU_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                        void** extra) {
  SIMGPU_DRIVER_ENTER_CTX();
  return LaunchEx("cuLaunchKernelEx", config, f, params, extra);
}

SIMGPU_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                             void** params, void** extra) {
  SIMGPU_DRIVER_ENTER_CTX();
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUlaunchConfig c = *config;
  if (c.hStream == nullptr) c.hStream = CU_STREAM_PER_THREAD;
  return LaunchEx("cuLaunchKernelEx", &c, f, params, extra);
}

// All blocks of a cooperative grid must be resident at once.
SIMGPU_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                                 unsigned int gz, unsigned int bx, unsigned int by,
                                                 unsigned int bz, unsigned int shared,
                                                 CUstream stream, void** params) {
  SIMGPU_DRIVER_ENTER_CTX();
  int per_sm = 0;
  CUresult r = MaxActiveBlocks(&per_sm, f, static_cast<int>(bx * by * bz), shared);
  if (r != CUDA_SUCCESS) return r;
  int sms = 0;
  cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
  if (uint64_t{gx} * gy * gz > static_cast<uint64_t>(per_sm) * sms) {
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  return Launch("cuLaunchCooperativeKernel", f, Shape{{gx, gy, gz}, {bx, by, bz}, shared}, stream,
                params, nullptr);
}

SIMGPU_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction func,
                                                                   int block_size,
                                                                   size_t dynamic_shared) {
  SIMGPU_DRIVER_ENTER();
  return MaxActiveBlocks(blocks, func, block_size, dynamic_shared);
}

SIMGPU_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* blocks, CUfunction func, int block_size, size_t dynamic_shared, unsigned int) {
  SIMGPU_DRIVER_ENTER();
  return MaxActiveBlocks(blocks, func, block_size, dynamic_shared);
}

SIMGPU_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size,
                                                        CUfunction func,
                                                        CUoccupancyB2DSize b2d_shared,
                                                        size_t dynamic_shared, int limit) {
  SIMGPU_DRIVER_ENTER();
  if (min_grid == nullptr || block_size == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Function* f = FindFunction(func);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  int max_block = simgpu::driver::DeviceBlockLimits().max_threads;
  if (f->info != nullptr && f->info->max_threads_per_block > 0) {
    max_block = std::min(max_block, f->info->max_threads_per_block);
  }
  if (limit > 0) max_block = std::min(max_block, limit);
  int sms = 0;
  cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
  int best_threads = 0, best_block = 0, best_blocks = 0;
  for (int b = max_block - max_block % 32; b >= 32; b -= 32) {
    size_t shared = b2d_shared != nullptr ? b2d_shared(b) : dynamic_shared;
    int n = 0;
    if (MaxActiveBlocks(&n, func, b, shared) != CUDA_SUCCESS) continue;
    if (n * b > best_threads) {
      best_threads = n * b;
      best_block = b;
      best_blocks = n;
    }
  }
  *block_size = best_block;
  *min_grid = best_blocks * sms;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamic_shared,
                                                               CUfunction func, int num_blocks,
                                                               int block_size) {
  SIMGPU_DRIVER_ENTER();
  if (dynamic_shared == nullptr || num_blocks <= 0 || block_size <= 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Function* f = FindFunction(func);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  int per_sm = 0;
  cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 0);
  int64_t avail = per_sm / num_blocks - (f->info != nullptr ? f->info->shared_bytes : 0);
  avail = std::min<int64_t>(avail, f->max_dynamic_shared.load());
  *dynamic_shared = static_cast<size_t>(std::max<int64_t>(avail, 0));
  return CUDA_SUCCESS;
}
