// cubin.h: what the driver needs from a cubin (an NVIDIA ELF) to launch its kernels: the
// parameter layout, shared memory, registers; and its global variables (Note [Cubin info]).
//
// Thread safety: pure functions over caller-owned bytes.
#ifndef SIMGPU_DRIVER_CUBIN_H_
#define SIMGPU_DRIVER_CUBIN_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace simgpu::cubin {

struct Param {
  uint32_t offset;  // in the parameter buffer (constant bank 0 from the parameter base)
  uint32_t bytes;
};

struct KernelInfo {
  std::vector<Param> params;      // by ordinal
  uint32_t param_bytes = 0;       // the whole parameter buffer
  uint32_t shared_bytes = 0;      // static shared memory (.nv.shared.<kernel>)
  uint32_t local_bytes = 0;       // per-thread stack frame (EIATTR_FRAME_SIZE)
  uint32_t const_bytes = 0;       // user constant memory of the module (.nv.constant3)
  int registers = 0;              // per thread (EIATTR_REGCOUNT); 0 if the cubin does not say
  int max_threads_per_block = 0;  // __launch_bounds__ (EIATTR_MAX_THREADS); 0 if none
};

struct Global {
  uint64_t bytes;
  // Initial contents in the cubin (bytes long), or nullptr for zero-initialised (.nv.global).
  const uint8_t* init;
};

struct Cubin {
  int arch = 0;                               // sm_XY as 10 * X + Y (from the ELF header)
  std::map<std::string, KernelInfo> kernels;  // by mangled name
  std::map<std::string, Global> globals;      // __device__ and __constant__ variables
};

// Reads the cubin at `data`, `bytes` long. `init` pointers point into `data`. False, with `*why`
// set, if it is not a 64-bit little-endian ELF or a kernel's attributes are malformed.
bool ParseCubin(const uint8_t* data, size_t bytes, Cubin* out, std::string* why);

}  // namespace simgpu::cubin

#endif  // SIMGPU_DRIVER_CUBIN_H_
