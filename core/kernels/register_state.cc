#include "core/kernels/register_state.h"

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"

namespace pooch::kernels {
namespace {

// "P3" -> 4, "UP3" -> 12; 0 for PT, UPT or anything else.
int PredicateNumber(absl::string_view name) {
  int base = 1;
  if (absl::ConsumePrefix(&name, "UP")) {
    base = 9;
  } else if (!absl::ConsumePrefix(&name, "P")) {
    return 0;
  }
  int n = 0;
  if (!absl::SimpleAtoi(name, &n) || n < 0 || n > 6) return 0;
  return base + n;
}

}  // namespace

int GuardId(absl::string_view guard) {
  if (!absl::ConsumePrefix(&guard, "@")) return 0;
  const bool negated = absl::ConsumePrefix(&guard, "!");
  const int p = PredicateNumber(guard);
  if (p == 0) return 0;
  return p + (negated ? 16 : 0);
}

int GuardPredicate(int guard_id) { return guard_id > 16 ? guard_id - 16 : guard_id; }

int PredicateOf(absl::string_view operand) {
  absl::ConsumePrefix(&operand, "!");
  return PredicateNumber(operand);
}

void RegisterState::SetEntry() {
  value_.fill(Provenance::Int());
  guard_.fill(0);
  reached_ = true;
}

Provenance RegisterState::Get(int reg, int guard) const {
  if (guard != 0 && guard_[reg] == guard) return guarded_[reg];
  return value_[reg];
}

void RegisterState::Set(int reg, Provenance value, int guard) {
  if (guard == 0) {
    value_[reg] = value;
    guard_[reg] = 0;
    return;
  }
  value_[reg] = Join(value_[reg], value);
  guarded_[reg] = value;
  guard_[reg] = static_cast<uint8_t>(guard);
}

void RegisterState::ForgetGuards(int predicate) {
  for (uint8_t& g : guard_) {
    if (g != 0 && (predicate == 0 || GuardPredicate(g) == predicate)) g = 0;
  }
}

RegisterState RegisterState::Keeping(const std::bitset<kRegisterCount>& keep) const {
  RegisterState out = *this;
  for (int r = 0; r < kRegisterCount; ++r) {
    if (keep[r]) continue;
    out.value_[r] = Provenance();
    out.guard_[r] = 0;
  }
  return out;
}

bool RegisterState::JoinFrom(const RegisterState& other) {
  if (!other.reached_) return false;
  if (!reached_) {
    *this = other;
    return true;
  }
  bool changed = false;
  for (int r = 0; r < kRegisterCount; ++r) {
    const Provenance j = Join(value_[r], other.value_[r]);
    if (j != value_[r] || j.kind != value_[r].kind) {
      value_[r] = j;
      changed = true;
    }
    const bool agree = guard_[r] == other.guard_[r] && guarded_[r] == other.guarded_[r] &&
                       guarded_[r].kind == other.guarded_[r].kind;
    if (guard_[r] != 0 && !agree) {
      guard_[r] = 0;
      changed = true;
    }
  }
  return changed;
}

}  // namespace pooch::kernels
