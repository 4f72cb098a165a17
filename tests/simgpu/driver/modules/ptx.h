// ptx.h: a kernel's parameter layout from PTX text, for modules that carry no cubin with the
// kernel (a PTX-only fat binary, PTX given to cuModuleLoadData) (Note [PTX parameters]).
//
// Thread safety: pure functions over caller-owned text.
#ifndef SIMGPU_DRIVER_PTX_H_
#define SIMGPU_DRIVER_PTX_H_

#include <string>
#include <string_view>

#include "tests/simgpu/driver/modules/cubin.h"

namespace simgpu::ptx {

enum class Found { kNo, kYes, kMalformed };

// Looks for `.entry <name>` in `ptx`. kYes fills `*out` (parameters, their buffer's size, static
// shared memory, .maxntid); kMalformed sets `*why` when the entry is there but its parameter
// list is not understood (then the kernel has no parameter info).
Found ParseEntry(std::string_view ptx, const std::string& name, cubin::KernelInfo* out,
                 std::string* why);

}  // namespace simgpu::ptx

#endif  // SIMGPU_DRIVER_PTX_H_
