#include "core/kernels/cfg.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_format.h"
#include "core/kernels/opcodes.h"
#include "core/kernels/operand.h"
#include "core/kernels/system_calls.h"

namespace pooch::kernels {
namespace {

bool Guarded(const Instruction& ins) { return !ins.guard.empty() && ins.guard != "@PT"; }

// Whether a branch also falls through: guarded, or with a predicate operand (BRA P1, `(...)).
bool Conditional(const Instruction& ins) {
  if (Guarded(ins)) return true;
  for (const std::string& op : ins.operands) {
    Operand o = ParseOperand(op);
    if (o.kind == Operand::Kind::kPredicate && op != "PT") return true;
  }
  return false;
}

class Explorer {
 public:
  Explorer(const SassProgram& p, const std::map<int, std::string>& bank4_symbols, KernelCfg* cfg)
      : p_(p), bank4_symbols_(bank4_symbols), cfg_(cfg) {}

  // Successors of instruction i; `return_sites` as known so far.
  std::vector<int> Successors(int i) {
    const Instruction& ins = p_.instructions[i];
    std::vector<int> out;
    const bool next_ok = i + 1 < static_cast<int>(p_.instructions.size()) &&
                         p_.instructions[i + 1].section == ins.section;
    auto fall = [&] {
      if (next_ok) out.push_back(i + 1);
    };
    switch (Classify(ins.Base())) {
      case OpClass::kExit:
        if (Guarded(ins)) fall();
        break;
      case OpClass::kBranch:
      case OpClass::kCall: {
        auto it = ins.target.empty() ? p_.labels.end() : p_.labels.find(ins.target);
        if (it == p_.labels.end() && CallHaltsTheKernel(p_, i, bank4_symbols_)) {
          if (Guarded(ins)) fall();  // Note [System calls]: a failed assert ends the kernel
          break;
        }
        if (it == p_.labels.end()) {
          Unfollowed(i, ins.target.empty() ? "indirect branch or call"
                                           : "call or branch out of the cubin");
          fall();
          break;
        }
        out.push_back(it->second);
        if (Classify(ins.Base()) == OpClass::kCall) {
          return_sites_.insert(i + 1);
          if (Guarded(ins)) fall();
        } else if (Conditional(ins)) {
          fall();
        }
        break;
      }
      case OpClass::kReturn:
        out.assign(return_sites_.begin(), return_sites_.end());
        if (Guarded(ins)) fall();
        break;
      default:
        fall();
    }
    return out;
  }

  void Unfollowed(int i, const char* what) {
    const Instruction& ins = p_.instructions[i];
    cfg_->unfollowed.push_back(absl::StrFormat("%s at %s+0x%x (%s)", what, p_.sections[ins.section],
                                               ins.offset, ins.opcode));
  }

  // The registers that the code reachable from `callee` up to its returns may write: every
  // register it names, the first one (the destination) as wide as DestinationWidth says, all of
  // them after an MMA. Null when no return is reachable.
  std::optional<std::bitset<kRegisterCount>> CalleeWrites(int callee) {
    std::bitset<kRegisterCount> writes;
    bool returns = false;
    const size_t unfollowed = cfg_->unfollowed.size();  // Successors records them once more
    std::set<int> seen;
    std::vector<int> work{callee};
    while (!work.empty()) {
      const int i = work.back();
      work.pop_back();
      if (!seen.insert(i).second) continue;
      const Instruction& ins = p_.instructions[i];
      const OpClass cls = Classify(ins.Base());
      if (cls == OpClass::kMma) writes.set();
      int width = DestinationWidth(ins.opcode, cls);
      for (const std::string& o : ins.operands) {
        const Operand op = ParseOperand(o);
        if (op.kind != Operand::Kind::kRegister || op.reg < 0) continue;
        for (int r = op.reg; r < std::min(op.reg + width, kRegisterCount); ++r) writes.set(r);
        width = 1;
      }
      const bool next_ok = i + 1 < static_cast<int>(p_.instructions.size()) &&
                           p_.instructions[i + 1].section == ins.section;
      if (cls == OpClass::kReturn) {
        returns = true;
        if (Guarded(ins) && next_ok) work.push_back(i + 1);
        continue;
      }
      for (int s : Successors(i)) work.push_back(s);
      if (cls == OpClass::kCall && next_ok) work.push_back(i + 1);  // after a nested call
    }
    cfg_->unfollowed.resize(unfollowed);
    if (!returns) return std::nullopt;
    return writes;
  }

  // The reachable instructions and their successors; repeats while calls add return sites.
  std::map<int, std::vector<int>> Explore(int entry) {
    std::map<int, std::vector<int>> succ;
    size_t sites = static_cast<size_t>(-1);
    while (sites != return_sites_.size()) {
      sites = return_sites_.size();
      succ.clear();
      cfg_->unfollowed.clear();
      std::vector<int> work{entry};
      while (!work.empty()) {
        int i = work.back();
        work.pop_back();
        if (succ.count(i)) continue;
        succ[i] = Successors(i);
        for (int s : succ[i]) work.push_back(s);
      }
    }
    return succ;
  }

 private:
  const SassProgram& p_;
  const std::map<int, std::string>& bank4_symbols_;
  KernelCfg* cfg_;
  std::set<int> return_sites_;
};

}  // namespace

KernelCfg BuildCfg(const SassProgram& program, int entry,
                   const std::map<int, std::string>& bank4_symbols) {
  KernelCfg cfg;
  Explorer explorer(program, bank4_symbols, &cfg);
  std::map<int, std::vector<int>> succ = explorer.Explore(entry);
  // Leaders: the entry, every instruction with a predecessor other than the one before it, or
  // none, and every instruction after one that does not simply fall through.
  std::map<int, int> preds;
  std::set<int> leaders{entry};
  for (const auto& [i, ss] : succ) {
    for (int s : ss) {
      ++preds[s];
      if (s != i + 1) leaders.insert(s);
    }
    if (ss.size() != 1 || ss[0] != i + 1) {
      for (int s : ss) leaders.insert(s);
    }
  }
  for (const auto& [i, ss] : succ) {
    if (!succ.count(i - 1) || preds[i] != 1) leaders.insert(i);
    if (ss.size() != 1 || ss[0] != i + 1) {
      if (succ.count(i + 1)) leaders.insert(i + 1);
    }
  }
  std::map<int, int> block_of;  // leader -> block index
  std::vector<int> order(leaders.begin(), leaders.end());
  // The entry first.
  std::stable_partition(order.begin(), order.end(), [&](int i) { return i == entry; });
  for (int leader : order) {
    Block b{leader, leader, {}};
    while (succ.count(b.last + 1) && !leaders.count(b.last + 1) && succ[b.last].size() == 1 &&
           succ[b.last][0] == b.last + 1) {
      ++b.last;
    }
    block_of[leader] = static_cast<int>(cfg.blocks.size());
    cfg.blocks.push_back(b);
  }
  for (Block& b : cfg.blocks) {
    for (int s : succ[b.last]) b.successors.push_back(block_of.at(s));
  }
  for (size_t b = 0; b < cfg.blocks.size(); ++b) {
    const int last = cfg.blocks[b].last;
    const Instruction& ins = program.instructions[last];
    auto callee = program.labels.find(ins.target);
    if (Classify(ins.Base()) != OpClass::kCall || ins.target.empty() ||
        callee == program.labels.end() || !block_of.count(last + 1)) {
      continue;  // not a followed call, or its callee never returns
    }
    const auto writes = explorer.CalleeWrites(callee->second);
    if (writes) cfg.calls.push_back({static_cast<int>(b), block_of.at(last + 1), *writes});
  }
  return cfg;
}

}  // namespace pooch::kernels
