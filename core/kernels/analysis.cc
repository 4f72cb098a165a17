#include "core/kernels/analysis.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <deque>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "core/kernels/cfg.h"
#include "core/kernels/opcodes.h"
#include "core/kernels/operand.h"
#include "core/kernels/provenance.h"
#include "core/kernels/register_state.h"

namespace pooch::kernels {
namespace {

// Comparisons and checks: their first non-predicate operand is a source, not a destination.
bool WritesOnlyPredicates(absl::string_view base) {
  for (const char* op : {"ISETP", "UISETP", "FSETP", "DSETP", "HSETP2", "PSETP", "UPSETP", "CSETP",
                         "FCHK", "PLOP3", "UPLOP3", "R2P", "UR2UP"}) {
    if (base == op) return true;
  }
  return false;
}

// One instruction's effect on the register state, and on the verdict when `v` is not null.
class Transfer {
 public:
  Transfer(const SassProgram& p, const ParamLayout& layout, RegisterState* s, KernelVerdict* v)
      : p_(p), layout_(layout), s_(*s), v_(v) {}

  void Run(const Instruction& ins) {
    if (ins.guard == "@!PT" || ins.guard == "@!UPT") return;  // never runs
    ins_ = &ins;
    guard_ = GuardId(ins.guard);
    ops_.clear();
    for (const std::string& o : ins.operands) ops_.push_back(ParseOperand(o));
    const OpClass cls = Classify(ins.Base());
    switch (cls) {
      case OpClass::kAlu:
        Alu(cls);
        break;
      case OpClass::kMma:
        SetDestinations(cls, {});
        break;
      case OpClass::kConstLoad:
        ConstLoad();
        break;
      case OpClass::kGlobalLoad:
        Access(/*write=*/false, /*read=*/true, /*nth_address=*/0);
        SetDestinations(cls, {});
        break;
      case OpClass::kGlobalStore:
        Access(/*write=*/true, /*read=*/false, 0);
        break;
      case OpClass::kGlobalAtomic:
        Access(true, true, 0);
        if (v_) v_->uses_atomics = true;
        SetDestinations(cls, {});
        break;
      case OpClass::kAsyncCopy:
        Access(false, true, 1);
        CheckEscape(0, "shared");
        break;
      case OpClass::kSharedLoad:
        SetDestinations(cls, {});
        break;
      case OpClass::kSharedStore:
        CheckEscape(0, "shared or local");
        break;
      case OpClass::kSharedAtomic:
        CheckEscape(0, "shared");
        if (v_) v_->uses_atomics = true;
        SetDestinations(cls, {});
        break;
      case OpClass::kOpaqueWrite:
        Opaque("bulk, TMA or surface store not followed");
        break;
      case OpClass::kOpaqueRead:
        Unknown(false, "TMA, texture or surface read not followed");
        SetDestinations(cls, {});
        break;
      case OpClass::kUnknown:
        Opaque(absl::StrFormat("unrecognised opcode %s", ins.Base()));
        SetDestinations(cls, Provenance::Unknown());
        break;
      case OpClass::kCall:
      case OpClass::kReturn:
        s_.ForgetGuards(0);  // the callee, or the caller after the return, may set predicates
        break;
      default:
        break;  // control flow (cfg.cc) and no-effect opcodes
    }
    // Note [Guarded values]: an instruction naming a predicate may write it.
    const bool copies_predicates = ins.Base() == "P2R" || ins.Base() == "UP2UR";
    for (const std::string& o : ins.operands) {
      if ((o == "PR" || o == "UPR") && !copies_predicates) s_.ForgetGuards(0);
      if (const int p = PredicateOf(o); p != 0) s_.ForgetGuards(p);
    }
  }

 private:
  std::string Where() const {
    return absl::StrFormat("%s+0x%x (%s)", p_.sections[ins_->section], ins_->offset, ins_->opcode);
  }

  void Unknown(bool writes, const std::string& what) {
    if (v_) v_->AddUnknown(writes, absl::StrFormat("%s at %s", what, Where()));
  }
  // Code whose every effect is unknown: its writes and its reads.
  void Opaque(const std::string& what) {
    Unknown(true, what);
    Unknown(false, what);
  }

  // A constant-bank word's provenance: a parameter half, or an integer.
  Provenance Constant(const Operand& o, int extra) const {
    if (o.bank != 0) return Provenance::Int();
    const long long off = o.offset + extra - layout_.cbank_offset;
    // An index the analysis does not know may reach any parameter word.
    if (o.index_reg >= 0) return Provenance::Unknown();
    if (off < 0 || off >= layout_.size) return Provenance::Int();
    const int word = static_cast<int>(off & ~7LL);
    if (!layout_.MayHoldPointer(word)) return Provenance::Int();
    return (off & 4) ? Provenance::Hi(word) : Provenance::Lo(word);
  }

  // The provenance of operand k's `half`-th 32-bit register (0 low, 1 high of a pair).
  Provenance Value(size_t k, int half = 0) const {
    if (k >= ops_.size()) return Provenance::Int();
    const Operand& o = ops_[k];
    switch (o.kind) {
      case Operand::Kind::kRegister:
        if (o.reg == kRZ || o.reg == kURZ) return Provenance::Int();
        return s_.Get(std::min(o.reg + half, kRegisterCount - 1), guard_);
      case Operand::Kind::kConstant:
        return Constant(o, 4 * half);
      default:
        return Provenance::Int();
    }
  }

  void Set(int reg, Provenance value) {
    if (reg < 0 || reg >= kRegisterCount || reg == kRZ || reg == kURZ) return;
    // Past the last uniform register, or from R into UR: a register that does not exist.
    s_.Set(reg, value, guard_);
  }

  // The index of the destination register operand, or -1.
  int DestinationOperand() const {
    size_t k = 0;
    while (k < ops_.size() && ops_[k].kind == Operand::Kind::kPredicate) ++k;
    if (k > 0 && WritesOnlyPredicates(ins_->Base())) return -1;
    if (k < ops_.size() && ops_[k].kind == Operand::Kind::kRegister) return static_cast<int>(k);
    return -1;
  }

  // The non-predicate operands after the destination.
  std::vector<size_t> Sources(int dest) const {
    std::vector<size_t> out;
    for (size_t k = dest < 0 ? 0 : dest + 1; k < ops_.size(); ++k) {
      if (ops_[k].kind != Operand::Kind::kPredicate) out.push_back(k);
    }
    return out;
  }

  // Sets every destination register to `value` (or Int when none is given).
  void SetDestinations(OpClass cls, std::optional<Provenance> value) {
    int d = DestinationOperand();
    if (d < 0) return;
    const int width = DestinationWidth(ins_->opcode, cls);
    const int first = ops_[d].reg;
    const int end = first < kUniformBase ? kRZ : kURZ;
    const Provenance v = value.value_or(Provenance::Int());
    // A conversion's width follows its destination type, which its modifiers name beside the
    // source's (I2F.U64 writes one register, I2F.F64.S64 two): only its first register is
    // certainly written; the others may keep their old value, so they get the join of both
    // (an unknown where a pointer's half was), sound whichever way the modifiers read.
    const int certain = IsConversion(ins_->Base()) ? 1 : width;
    for (int r = first; r < std::min(first + width, end); ++r) {
      if (r - first < certain) {
        Set(r, v);
      } else {
        Set(r, Join(s_.Get(r, guard_), v));
      }
    }
  }

  static bool IsConversion(absl::string_view base) {
    if (absl::StartsWith(base, "U")) base.remove_prefix(1);
    for (const char* op : {"I2F", "F2I", "F2F", "I2I", "I2FP", "F2IP", "FRND", "F2FP", "I2IP"}) {
      if (base == op) return true;
    }
    return false;
  }

  Provenance SumOf(const std::vector<size_t>& operands, int half) const {
    Sum sum;
    for (size_t k : operands) sum.Add(Value(k, half), ops_[k].negated);
    return sum.Result();
  }

  bool IsOne(size_t k) const {
    return ops_[k].kind == Operand::Kind::kImmediate && ops_[k].immediate == 1;
  }

  void Alu(OpClass cls);
  void ConstLoad();
  void Access(bool write, bool read, int nth_address);
  void CheckEscape(int nth_address, const char* where);

  const SassProgram& p_;
  const ParamLayout& layout_;
  RegisterState& s_;
  int guard_ = 0;  // GuardId of the instruction being run
  KernelVerdict* v_;
  const Instruction* ins_ = nullptr;
  std::vector<Operand> ops_;
};

void Transfer::Alu(OpClass cls) {
  const absl::string_view base = ins_->Base();
  const absl::string_view op =
      absl::StartsWith(base, "U") && base != "UP2UR" ? base.substr(1) : base;
  const int d = DestinationOperand();
  if (d < 0) return;
  const std::vector<size_t> src = Sources(d);
  const int reg = ops_[d].reg;
  const bool wide = DestinationWidth(ins_->opcode, cls) >= 2;
  auto set_pair = [&](Provenance lo, Provenance hi) {
    SetDestinations(cls, Provenance::Int());
    Set(reg, lo);
    if (wide) Set(reg + 1, hi);
  };
  if ((op == "MOV" || op == "MOV32I" || base == "R2UR") && !src.empty()) {
    return set_pair(Value(src[0], 0), Value(src[0], 1));
  }
  if ((op == "IADD3" || op == "IADD" || op == "VIADD" || op == "IADD32I") && !src.empty()) {
    return set_pair(SumOf(src, 0), SumOf(src, 1));
  }
  if (op == "SEL" || op == "FSEL") {
    if (src.size() < 2) return SetDestinations(cls, Provenance::Unknown());
    return set_pair(Join(Value(src[0], 0), Value(src[1], 0)),
                    Join(Value(src[0], 1), Value(src[1], 1)));
  }
  if (op == "LEA" && src.size() >= 2) {  // (a << s) + b: b is the addend
    return set_pair(SumOf({src[1]}, 0), Provenance::Int());
  }
  if (op == "IMAD" && src.size() >= 3) {
    if (ins_->HasModifier("HI") || ins_->HasModifier("SHL")) return SetDestinations(cls, {});
    std::vector<size_t> summands{src[2]};
    if (ins_->HasModifier("IADD") || IsOne(src[1])) summands.push_back(src[0]);
    if (IsOne(src[0])) summands.push_back(src[1]);
    if (ins_->HasModifier("WIDE")) {
      // The product is a 64-bit integer (its halves Int); the addend is a pair.
      Sum lo, hi;
      for (size_t k : summands) {
        lo.Add(Value(k, 0), ops_[k].negated);
        hi.Add(k == src[2] ? Value(k, 1) : Provenance::Int(), ops_[k].negated);
      }
      return set_pair(lo.Result(), hi.Result());
    }
    return set_pair(SumOf(summands, 0), Provenance::Int());
  }
  SetDestinations(cls, {});
}

void Transfer::ConstLoad() {
  const int d = DestinationOperand();
  if (d < 0 || ops_.size() < 2) return;
  const int width = DestinationWidth(ins_->opcode, OpClass::kConstLoad);
  for (int h = 0; h < width; ++h) Set(ops_[d].reg + h, Value(d + 1, h));
}

void Transfer::Access(bool write, bool read, int nth_address) {
  const Operand* addr = nullptr;
  for (const Operand& o : ops_) {
    if (o.kind == Operand::Kind::kMemory && nth_address-- == 0) {
      addr = &o;
      break;
    }
  }
  std::string problem;
  std::vector<int32_t> words;  // the words the address may point into
  if (addr == nullptr) {
    problem = "no address";
  } else {
    Sum lo, hi;
    int pairs = 0;
    for (const Operand::Term& t : addr->terms) {
      if (t.reg < 0) {
        lo.Add(Provenance::Unknown(), false);
        continue;
      }
      const bool zero = t.reg == kRZ || t.reg == kURZ;
      lo.Add(zero ? Provenance::Int() : s_.Get(t.reg, guard_), false);
      if (t.pair) {
        ++pairs;
        hi.Add(zero ? Provenance::Int() : s_.Get(std::min(t.reg + 1, kRegisterCount - 1), guard_),
               false);
      }
    }
    const Provenance l = lo.Result(), h = hi.Result();
    if (l.kind == Provenance::Kind::kLo && h.kind == Provenance::Kind::kHi && !l.or_int &&
        !h.or_int) {
      // The pointer's word gave both halves (Note [Kernel write sets]).
      for (int i = 0; i < l.count; ++i) {
        for (int j = 0; j < h.count; ++j) {
          if (l.words[i] == h.words[j]) words.push_back(l.words[i]);
        }
      }
    }
    if (pairs != 1) {
      words.clear();
      problem = "32-bit or unusual address";
    } else if (!words.empty()) {
      // an address into one of `words`
    } else if (l.kind == Provenance::Kind::kInt && h.kind == Provenance::Kind::kInt) {
      problem = "address from memory or integers";
    } else if (l.kind == Provenance::Kind::kUnknown || h.kind == Provenance::Kind::kUnknown ||
               l.kind == Provenance::Kind::kMixed || h.kind == Provenance::Kind::kMixed) {
      problem = "address may come from several words";
    } else if (l.or_int || h.or_int) {
      problem = "address may come from memory or integers, or a word";
    } else {
      problem = "address assembled from halves of different words";
    }
  }
  for (int32_t w : words) {
    if (v_ == nullptr) break;
    if (write) v_->writes.insert(w);
    if (read) v_->reads.insert(w);
    if (write && read) v_->atomic_writes.insert(w);
  }
  if (words.empty()) {
    if (write) Unknown(true, problem);
    if (read && !write) Unknown(false, problem);
  }
  if (write) CheckEscape(0, "global");
}

// A store's data registers: those after its address operand (for an atomic, after the address
// too: the registers before it are results).
void Transfer::CheckEscape(int nth_address, const char* where) {
  size_t k = 0;
  for (int seen = -1; k < ops_.size(); ++k) {
    if (ops_[k].kind == Operand::Kind::kMemory && ++seen == nth_address) break;
  }
  // A store of 8 or 16 bits cannot hold a pointer's half.
  for (const char* narrow : {"U8", "S8", "U16", "S16"}) {
    if (ins_->HasModifier(narrow)) return;
  }
  const int width = DestinationWidth(ins_->opcode, OpClass::kGlobalStore);
  for (++k; k < ops_.size(); ++k) {
    if (ops_[k].kind == Operand::Kind::kMemory && ins_->Base() == "LDGSTS") continue;
    for (int h = 0; h < width; ++h) {
      const Provenance value = Value(k, h);
      if (value.HasWords()) {
        // Note [Conditional escapes]: decided at launch, from the words' values.
        if (v_) {
          for (int32_t w : value.Words()) v_->escapes.insert(w);
        }
      } else if (value.MayCarryPointer()) {
        Unknown(true, absl::StrFormat("a pointer escapes to %s memory", where));
        return;
      }
    }
  }
}

// Reads of clocks make a replay differ.
bool ReadsClock(const Instruction& ins) {
  for (const std::string& o : ins.operands) {
    if (absl::StartsWith(o, "SR_CLOCK") || absl::StartsWith(o, "SR_GLOBALTIMER")) return true;
  }
  return false;
}

// The call whose return site is block `block`, or null.
const CallSite* CallReturningTo(const KernelCfg& cfg, int block) {
  for (const CallSite& call : cfg.calls) {
    if (call.return_block == block) return &call;
  }
  return nullptr;
}

}  // namespace

bool ParamLayout::MayHoldPointer(int word) const {
  if (params.empty()) return true;
  for (const auto& [offset, bytes] : params) {
    if (bytes >= 8 && offset < word + 8 && offset + bytes > word) return true;
  }
  return false;
}

int DefaultParamBase(const std::string& arch) {
  int sm = 0;
  if (sscanf(arch.c_str(), "sm_%d", &sm) != 1) return 0x210;
  if (sm < 90) return 0x160;
  if (sm < 100) return 0x210;
  return 0x380;
}

KernelVerdict AnalyzeKernel(const SassProgram& program, const std::string& name,
                            const ParamLayout& layout,
                            const std::map<int, std::string>& bank4_symbols) {
  KernelVerdict v;
  v.name = name;
  v.arch = program.target;
  auto entry = program.labels.find(name);
  if (entry == program.labels.end()) {
    v.AddUnknown(true, "kernel not found in the SASS");
    v.reads_known = false;
    return v;
  }
  const KernelCfg cfg = BuildCfg(program, entry->second, bank4_symbols);
  for (const std::string& u : cfg.unfollowed) {
    v.AddUnknown(true, u);
    v.AddUnknown(false, u);
  }
  // The fixpoint: in-states per block, all registers integers at the entry.
  std::vector<RegisterState> in(cfg.blocks.size());
  in[0].SetEntry();
  std::vector<bool> queued(cfg.blocks.size(), false);
  std::deque<int> work{0};
  queued[0] = true;
  while (!work.empty()) {
    const int b = work.front();
    work.pop_front();
    queued[b] = false;
    RegisterState s = in[b];
    Transfer t(program, layout, &s, nullptr);
    for (int i = cfg.blocks[b].first; i <= cfg.blocks[b].last; ++i) t.Run(program.instructions[i]);
    auto flow = [&](int succ, const RegisterState& out) {
      if (in[succ].JoinFrom(out) && !queued[succ]) {
        queued[succ] = true;
        work.push_back(succ);
      }
    };
    const bool returns =
        Classify(program.instructions[cfg.blocks[b].last].Base()) == OpClass::kReturn;
    for (int succ : cfg.blocks[b].successors) {
      const CallSite* call = returns ? CallReturningTo(cfg, succ) : nullptr;
      flow(succ, call ? s.Keeping(call->callee_writes) : s);
    }
    // Note [Kernel write sets]: what the callee does not write keeps the call site's value.
    for (const CallSite& call : cfg.calls) {
      if (call.call_block == b) flow(call.return_block, s.Keeping(~call.callee_writes));
    }
  }
  // One more pass with the fixpoint's states records what each instruction does.
  for (size_t b = 0; b < cfg.blocks.size(); ++b) {
    RegisterState s = in[b];
    Transfer t(program, layout, &s, &v);
    for (int i = cfg.blocks[b].first; i <= cfg.blocks[b].last; ++i) {
      t.Run(program.instructions[i]);
      if (ReadsClock(program.instructions[i])) v.reads_clock = true;
    }
  }
  return v;
}

}  // namespace pooch::kernels
