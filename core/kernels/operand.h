// One SASS operand, taken apart: a register (general "R7" or uniform "UR4", maybe a 64-bit pair
// "R2.64"), a constant-bank read "c[0x0][0x210]", a memory address "desc[UR4][R2.64+0x4]", an
// immediate, a predicate or something else (special registers, labels).
#ifndef POOCH_CORE_KERNELS_OPERAND_H_
#define POOCH_CORE_KERNELS_OPERAND_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace pooch::kernels {

// Registers are numbered in one space: R0..R255 (RZ is 255) and UR0..UR63 (URZ is 63) at
// kUniformBase + n.
inline constexpr int kUniformBase = 256;
inline constexpr int kRegisterCount = kUniformBase + 64;
inline constexpr int kRZ = 255;
inline constexpr int kURZ = kUniformBase + 63;

// Parses "R7", "UR4", "RZ", "URZ" (suffixes after '.' ignored) to a register number.
std::optional<int> ParseRegister(absl::string_view s);
// Parses an integer immediate "0x210", "-0x3", "16".
std::optional<long long> ParseInteger(absl::string_view s);

struct Operand {
  enum class Kind { kRegister, kConstant, kMemory, kImmediate, kPredicate, kOther };
  Kind kind = Kind::kOther;
  bool negated = false;  // "-R2", "~R2", "!P0"
  // kRegister: the register, and whether it names a 64-bit pair ("R2.64").
  int reg = -1;
  bool pair = false;
  // kConstant: bank and offset; index_reg >= 0 when the offset adds a register
  // ("c[0x0][R2+0x210]").
  int bank = 0;
  long long offset = 0;
  int index_reg = -1;
  // kMemory: the registers summed into the address (the last [...]), each with whether it is a
  // 64-bit pair; the immediates are dropped (an integer offset).
  struct Term {
    int reg;
    bool pair;
  };
  std::vector<Term> terms;
  long long immediate = 0;  // kImmediate
};

Operand ParseOperand(absl::string_view s);

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_OPERAND_H_
