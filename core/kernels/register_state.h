// The analysis's state at one point of a kernel: each register's Provenance, and, for a register
// last set by a predicated instruction, the value it got under that guard (Note [Guarded values]).
#ifndef POOCH_CORE_KERNELS_REGISTER_STATE_H_
#define POOCH_CORE_KERNELS_REGISTER_STATE_H_

#include <array>
#include <bitset>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "core/kernels/operand.h"
#include "core/kernels/provenance.h"

namespace pooch::kernels {

// Note [Guarded values]
// ~~~~~~~~~~~~~~~~~~~~~
// A predicated instruction may not run, so the register it sets holds the join of its old and
// new values (Note [Kernel write sets]). But an instruction under the same guard runs only when
// the first one did, as long as the guard's predicate has not been written in between: it sees
// the new value. nvcc predicates both the load of a pointer and the store through it
// (`@!P0 LDC.64 R2, c[0x0][0x218]; @!P0 STG.E.64 [R2.64], R4`). Any instruction naming the
// predicate as an operand (which may write it), any naming PR (all predicates) and any call
// forget the guarded values; a merge keeps one only where every incoming state agrees. P2R and
// UP2UR name PR (UPR) only to copy the predicates into a register, writing none, so they keep
// them (nvcc saves predicates that way when many are live: `P2R R29, PR, RZ, 0x8`). A predicate
// nvcc derives again from the saved register (`ISETP.NE.AND P3, PT, R34, RZ, PT` for P5) is
// another predicate to this analysis: torch's cunn_SoftMaxForwardReg stays unknown that way.

// A guard ("@P0", "@!UP2") as a number: 0 for none or "@PT"; otherwise distinct per predicate
// and polarity.
int GuardId(absl::string_view guard);
// The predicate a guard id tests, without the polarity (the same for "@P0" and "@!P0").
int GuardPredicate(int guard_id);
// A predicate operand's name ("P0", "!UP3", "PT") as GuardPredicate's number; 0 for PT.
int PredicateOf(absl::string_view operand);

class RegisterState {
 public:
  // Every register an integer, no guarded values: a kernel's entry.
  void SetEntry();

  // The value of `reg` as seen by an instruction under `guard` (0: unguarded).
  Provenance Get(int reg, int guard) const;
  // Sets `reg` by an instruction under `guard`: joined with the old value when guarded.
  void Set(int reg, Provenance value, int guard);
  // Forgets the guarded values of guards that test `predicate` (0: all of them).
  void ForgetGuards(int predicate);
  // This state with every register outside `keep` not yet reached (bottom, no guarded value).
  RegisterState Keeping(const std::bitset<kRegisterCount>& keep) const;
  // Joins `other` into this; true when something changed.
  bool JoinFrom(const RegisterState& other);

 private:
  std::array<Provenance, kRegisterCount> value_{};
  std::array<Provenance, kRegisterCount> guarded_{};
  std::array<uint8_t, kRegisterCount> guard_{};  // 0: no guarded value
  bool reached_ = false;  // false: bottom everywhere, the state of a block not yet reached
};

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_REGISTER_STATE_H_
