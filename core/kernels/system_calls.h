// Calls to CUDA's device system functions that a kernel reaches through constant bank 4, the
// ones whose effect the analysis knows (Note [System calls]).
#ifndef POOCH_CORE_KERNELS_SYSTEM_CALLS_H_
#define POOCH_CORE_KERNELS_SYSTEM_CALLS_H_

#include <map>
#include <string>

#include "core/kernels/sass.h"

namespace pooch::kernels {

// Note [System calls]
// ~~~~~~~~~~~~~~~~~~~
// nvcc calls a device system function through its address, which the loader writes into
// constant bank 4 (the cubin's .rel(a).nv.constant4 names the symbol):
//   MOV R2, 0x0 ;  LDC.64 R2, c[0x4][R2] ;  ...  CALL.ABS.NOINC R2 ;
// An indirect call is unfollowed (the kernel unknown) unless it certainly reaches
// `__assertfail`, the failed `assert()`'s call: CUDA halts the kernel there (the programming
// guide's "Assertion": the kernel stops and the host gets cudaErrorAssert), so the call has no
// successor and writes nothing of the program's. "Certainly": the call's register pair is last
// written, in straight-line code (no instruction from the load to the call is a branch target,
// a control transfer or, with its destination as wide as DestinationWidth says, names either
// register), by an unguarded `LDC.64` from c[0x4] at an immediate offset, or at a register that
// an unguarded `MOV` of an immediate last set under the same rules; and the relocation at that
// offset names `__assertfail` with no addend. `vprintf` and any other symbol stay unfollowed:
// they return, and what they read or write is not modelled.
bool CallHaltsTheKernel(const SassProgram& program, int call,
                        const std::map<int, std::string>& bank4_symbols);

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_SYSTEM_CALLS_H_
