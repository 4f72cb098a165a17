// What an opcode may do to memory and registers, for core/kernels' analysis. Unknown opcodes
// are kUnknown: the analysis takes them to write anywhere (Note [Kernel write sets]).
#ifndef POOCH_CORE_KERNELS_OPCODES_H_
#define POOCH_CORE_KERNELS_OPCODES_H_

#include "absl/strings/string_view.h"

namespace pooch::kernels {

enum class OpClass {
  kUnknown,       // not in the tables: may write memory anywhere
  kAlu,           // registers only (integer, floating point, moves, predicates)
  kMma,           // matrix multiply-accumulate: registers only, many of them
  kConstLoad,     // LDC, ULDC, LDCU: a read of a constant bank
  kGlobalLoad,    // LDG, LD: reads global (or generic) memory at [address]
  kGlobalStore,   // STG, ST: writes global (or generic) memory at [address]
  kGlobalAtomic,  // ATOM, ATOMG, RED, REDG: reads and writes at [address], order not fixed
  kAsyncCopy,     // LDGSTS: reads global at its second address, writes shared
  kSharedLoad,    // LDS, LDL, LDSM: shared or local memory into registers
  kSharedStore,   // STS, STL, STSM: registers into shared or local memory
  kSharedAtomic,  // ATOMS: shared memory atomics
  kOpaqueWrite,   // bulk and TMA copies and reductions, surface stores: target not followed
  kOpaqueRead,    // TMA loads, texture and surface reads: source not followed
  kBranch,        // BRA, BRX, JMP, JMX
  kCall,          // CALL
  kReturn,        // RET
  kExit,          // EXIT
  kNoEffect,      // barriers, fences, NOP, reconvergence, dependency waits
};

OpClass Classify(absl::string_view base_opcode);

// Registers an ALU or MMA instruction writes from its first operand on, at least (more is
// sound: the analysis marks the extras as integers). `opcode` is the whole opcode with modifiers.
int DestinationWidth(absl::string_view opcode, OpClass cls);

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_OPCODES_H_
