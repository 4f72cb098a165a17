// A reader of SASS as nvdisasm prints it (`nvdisasm -c cubin`): every section's instructions,
// in order, with the labels that name them. It knows only the text's shape (guards, opcodes,
// operands, branch targets), not what an instruction does; opcodes.h and analysis.h give meaning.
#ifndef POOCH_CORE_KERNELS_SASS_H_
#define POOCH_CORE_KERNELS_SASS_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace pooch::kernels {

struct Instruction {
  int section = 0;                    // index into SassProgram::sections
  int offset = 0;                     // byte offset printed in /*....*/
  std::string guard;                  // "@P0", "@!UP1", or empty
  std::string opcode;                 // with modifiers: "STG.E.128"
  std::vector<std::string> operands;  // as printed, ".reuse" removed; a target keeps `(...)
  std::string target;                 // the label of a `(label) operand, or empty

  // The opcode without modifiers: "STG".
  absl::string_view Base() const;
  // Whether `modifier` is one of the opcode's dot-separated parts after the first.
  bool HasModifier(absl::string_view modifier) const;
};

struct SassProgram {
  std::vector<std::string> sections;  // ".text.k_out_of_place"
  std::vector<Instruction> instructions;
  // A label (".L_x_9", "k_out_of_place", "$k$helper") to the index of the instruction it names.
  absl::flat_hash_map<std::string, int> labels;
  std::vector<std::string> kernels;  // functions marked STO_CUDA_ENTRY
  std::string target;                // "sm_90", from the .target line
};

// Reads nvdisasm's text. Lines it does not know (directives, comments) are skipped; an
// instruction line it cannot split is kept with its opcode and no operands.
SassProgram ParseSass(absl::string_view text);

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_SASS_H_
