// The provenance lattice of core/kernels' analysis (Note [Kernel write sets] in analysis.h):
// what one 32-bit register may hold, as far as addresses go.
#ifndef POOCH_CORE_KERNELS_PROVENANCE_H_
#define POOCH_CORE_KERNELS_PROVENANCE_H_

#include <cstdint>
#include <string>

namespace pooch::kernels {

// Bottom (not yet reached) < {Int, Lo(w), Hi(w)} < Unknown.
//   Int      an integer that carries no parameter word's pointer: constants, thread indices,
//            data loaded from memory (a loaded pointer is an Int too: used as an address it
//            names no word, so the access is unknown), products and logic of anything.
//   Lo(w)    the low half of parameter word w (its byte offset in the parameter buffer) plus
//            integers; Hi(w) the high half plus integers and carries.
//   Unknown  may be anything, a pointer into any word included: a merge of different kinds,
//            the sum of two pointers, a parameter read at an index not known.
struct Provenance {
  enum class Kind : uint8_t { kBottom, kInt, kLo, kHi, kUnknown };
  Kind kind = Kind::kBottom;
  int32_t word = 0;  // for kLo and kHi

  static Provenance Int() { return {Kind::kInt, 0}; }
  static Provenance Unknown() { return {Kind::kUnknown, 0}; }
  static Provenance Lo(int32_t word) { return {Kind::kLo, word}; }
  static Provenance Hi(int32_t word) { return {Kind::kHi, word}; }

  bool IsPointer() const { return kind == Kind::kLo || kind == Kind::kHi; }
  // Whether a stored copy could let a pointer into a parameter's target escape.
  bool MayCarryPointer() const { return IsPointer() || kind == Kind::kUnknown; }

  friend bool operator==(const Provenance& a, const Provenance& b) {
    return a.kind == b.kind && (!a.IsPointer() || a.word == b.word);
  }
  friend bool operator!=(const Provenance& a, const Provenance& b) { return !(a == b); }

  std::string ToString() const;
};

// The least upper bound.
Provenance Join(const Provenance& a, const Provenance& b);

// The value of a + b + ... for the given summands: at most one pointer half survives; two, or a
// pointer half negated, give Unknown (the difference of pointers is no address of either).
class Sum {
 public:
  void Add(const Provenance& p, bool negated);
  Provenance Result() const;

 private:
  Provenance pointer_;
  int pointers_ = 0;
  bool unknown_ = false;
  bool bottom_ = false;
};

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_PROVENANCE_H_
