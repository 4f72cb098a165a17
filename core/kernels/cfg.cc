#include "core/kernels/cfg.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_format.h"
#include "core/kernels/opcodes.h"
#include "core/kernels/operand.h"

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
  Explorer(const SassProgram& p, KernelCfg* cfg) : p_(p), cfg_(cfg) {}

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
  KernelCfg* cfg_;
  std::set<int> return_sites_;
};

}  // namespace

KernelCfg BuildCfg(const SassProgram& program, int entry) {
  KernelCfg cfg;
  Explorer explorer(program, &cfg);
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
  return cfg;
}

}  // namespace pooch::kernels
