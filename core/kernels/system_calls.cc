#include "core/kernels/system_calls.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "core/kernels/opcodes.h"
#include "core/kernels/operand.h"

namespace pooch::kernels {
namespace {

bool Unguarded(const Instruction& ins) { return ins.guard.empty() || ins.guard == "@PT"; }

// Instructions some instruction of the program names as a target (branches, calls, LEPC, BSSY):
// control may enter there from elsewhere.
absl::flat_hash_set<int> Targets(const SassProgram& p) {
  absl::flat_hash_set<int> out;
  for (const Instruction& ins : p.instructions) {
    if (ins.target.empty()) continue;
    if (auto it = p.labels.find(ins.target); it != p.labels.end()) out.insert(it->second);
  }
  return out;
}

// Whether `ins` may write or names register `reg`: any operand (a pair covers two), or the
// first register operand as wide as its destination may be.
bool Touches(const Instruction& ins, int reg) {
  const OpClass cls = Classify(ins.Base());
  if (cls == OpClass::kMma || cls == OpClass::kUnknown) return true;
  bool first = true;
  for (const std::string& o : ins.operands) {
    const Operand op = ParseOperand(o);
    if (op.kind == Operand::Kind::kRegister && op.reg >= 0) {
      const int width =
          first ? std::max(DestinationWidth(ins.opcode, cls), op.pair ? 2 : 1) : (op.pair ? 2 : 1);
      first = false;
      if (reg >= op.reg && reg < op.reg + width) return true;
    } else if (op.kind == Operand::Kind::kConstant && op.index_reg == reg) {
      return true;
    } else if (op.kind == Operand::Kind::kMemory) {
      for (const Operand::Term& t : op.terms) {
        if (t.reg == reg || (t.pair && t.reg + 1 == reg)) return true;
      }
    }
  }
  return false;
}

// The instruction that last wrote `reg` before `from`, in straight-line code that no other
// path enters and nothing in between touches `reg`; nullopt otherwise. `also` is a second
// register that nothing in between may touch either (the pair's other half; -1 none).
std::optional<int> LastWriter(const SassProgram& p, const absl::flat_hash_set<int>& targets,
                              int from, int reg, int also) {
  const int section = p.instructions[from].section;
  for (int j = from - 1; j >= 0; --j) {
    if (targets.contains(j + 1) || p.instructions[j].section != section) return std::nullopt;
    const Instruction& ins = p.instructions[j];
    switch (Classify(ins.Base())) {
      case OpClass::kBranch:
      case OpClass::kCall:
      case OpClass::kReturn:
      case OpClass::kExit:
        return std::nullopt;
      default:
        break;
    }
    const bool writes_reg = Touches(ins, reg), writes_also = also >= 0 && Touches(ins, also);
    if (!writes_reg && !writes_also) continue;
    return j;
  }
  return std::nullopt;
}

// The immediate an unguarded `MOV Rm, imm` (MOV32I, IMAD.MOV.U32 Rm, RZ, RZ, imm) sets.
std::optional<long long> MovedImmediate(const Instruction& ins, int reg) {
  if (!Unguarded(ins) || ins.operands.empty()) return std::nullopt;
  const Operand dest = ParseOperand(ins.operands[0]);
  if (dest.kind != Operand::Kind::kRegister || dest.reg != reg || dest.pair) return std::nullopt;
  const Operand last = ParseOperand(ins.operands.back());
  if (last.kind != Operand::Kind::kImmediate) return std::nullopt;
  const absl::string_view base = ins.Base();
  if ((base == "MOV" || base == "MOV32I") && ins.operands.size() == 2) return last.immediate;
  if (ins.opcode == "IMAD.MOV.U32" && ins.operands.size() == 4 && ins.operands[1] == "RZ" &&
      ins.operands[2] == "RZ") {
    return last.immediate;
  }
  return std::nullopt;
}

}  // namespace

bool CallHaltsTheKernel(const SassProgram& program, int call,
                        const std::map<int, std::string>& bank4_symbols) {
  const Instruction& ins = program.instructions[call];
  if (bank4_symbols.empty() || Classify(ins.Base()) != OpClass::kCall || !ins.target.empty() ||
      ins.operands.size() != 1) {
    return false;
  }
  const Operand target = ParseOperand(ins.operands[0]);
  if (target.kind != Operand::Kind::kRegister || target.reg < 0 || target.reg + 1 >= kUniformBase) {
    return false;
  }
  const absl::flat_hash_set<int> targets = Targets(program);
  const std::optional<int> load = LastWriter(program, targets, call, target.reg, target.reg + 1);
  if (!load) return false;
  const Instruction& ldc = program.instructions[*load];
  if (ldc.opcode != "LDC.64" || !Unguarded(ldc) || ldc.operands.size() != 2) return false;
  const Operand dest = ParseOperand(ldc.operands[0]);
  const Operand from = ParseOperand(ldc.operands[1]);
  if (dest.kind != Operand::Kind::kRegister || dest.reg != target.reg ||
      from.kind != Operand::Kind::kConstant || from.bank != 4) {
    return false;
  }
  long long offset = from.offset;
  if (from.index_reg >= kUniformBase) return false;  // uniform, RZ-like or unnamed: not followed
  if (from.index_reg >= 0) {
    const std::optional<int> mov = LastWriter(program, targets, *load, from.index_reg, -1);
    if (!mov) return false;
    const std::optional<long long> index =
        MovedImmediate(program.instructions[*mov], from.index_reg);
    if (!index) return false;
    offset += *index;
  }
  auto it = bank4_symbols.find(static_cast<int>(offset));
  return it != bank4_symbols.end() && it->second == "__assertfail";
}

}  // namespace pooch::kernels
