// The control flow of one kernel in a SassProgram: the instructions reachable from its entry,
// cut into basic blocks, with direct calls followed (Note [Kernel write sets]: a return goes to
// every reachable call's next instruction, and carries only the registers the callee may write).
#ifndef POOCH_CORE_KERNELS_CFG_H_
#define POOCH_CORE_KERNELS_CFG_H_

#include <bitset>
#include <map>
#include <string>
#include <vector>

#include "core/kernels/operand.h"
#include "core/kernels/sass.h"

namespace pooch::kernels {

struct Block {
  int first = 0;  // instruction indices, inclusive
  int last = 0;
  std::vector<int> successors;  // block indices
};

// A followed call whose callee returns: the registers the callee (and what it calls) names as
// destinations. The others keep their values across the call.
struct CallSite {
  int call_block = 0;    // the block that ends in the call
  int return_block = 0;  // the block of the instruction after it
  std::bitset<kRegisterCount> callee_writes;
};

struct KernelCfg {
  std::vector<Block> blocks;  // blocks[0] is the entry
  // Control flow the analysis cannot follow (an indirect branch, a call out of the cubin), with
  // the instruction: each makes the kernel's writes unknown.
  std::vector<std::string> unfollowed;
  std::vector<CallSite> calls;
};

// Builds the CFG from `entry` (an instruction index). `bank4_symbols` (CubinInfo's) lets a call
// that halts the kernel end its path (Note [System calls] in system_calls.h).
KernelCfg BuildCfg(const SassProgram& program, int entry,
                   const std::map<int, std::string>& bank4_symbols = {});

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_CFG_H_
