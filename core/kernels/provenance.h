// The provenance lattice of core/kernels' analysis (Note [Kernel write sets] in analysis.h):
// what one 32-bit register may hold, as far as addresses go.
#ifndef POOCH_CORE_KERNELS_PROVENANCE_H_
#define POOCH_CORE_KERNELS_PROVENANCE_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace pooch::kernels {

// Bottom (not yet reached) < {Int, Lo(W), Hi(W)} < Unknown, W a set of parameter words
// (their byte offsets), Lo(W) <= Lo(W') when W is a subset of W'.
//   Int      an integer that carries no parameter word's pointer: constants, thread indices,
//            data loaded from memory (a loaded pointer is an Int too: used as an address it
//            names no word, so the access is unknown), products and logic of anything.
//   Lo(W)    the low half of one of the words W plus integers (a select or a merge of words, or
//            the sum of a pointer and an 8-byte integer parameter: either may be the pointer);
//            Hi(W) the high half plus integers and carries.
//   Mixed(W) a low or a high half of one of the words W plus integers, or an Int: a merge or a
//            sum of low and high halves (a select between two scalars of a functor, one in each
//            half of its words). Names no word as an address; stored, it lets W escape.
//   Unknown  may be anything, a pointer into any word included: a negated pointer, more than
//            kMaxWords words, a parameter read at an unknown index.
// Lo(W) and Hi(W) may carry `or_int`: the value is that, or an Int (a merge of the two, as a
// select between a loaded value and a parameter's scalar: Int < Lo(W) < Lo(W) or_int <
// Mixed(W)). Used as an address such a value names no word (an Int may be a loaded pointer);
// stored, it lets only W's value escape (Note [Conditional escapes] in analysis.h).
struct Provenance {
  enum class Kind : uint8_t { kBottom, kInt, kLo, kHi, kMixed, kUnknown };
  static constexpr int kMaxWords = 4;

  Kind kind = Kind::kBottom;
  uint8_t count = 0;  // words used, sorted, for kLo and kHi
  std::array<int32_t, kMaxWords> words{};
  bool or_int = false;  // for kLo and kHi: or an Int

  static Provenance Int() { return {Kind::kInt, 0, {}}; }
  static Provenance Unknown() { return {Kind::kUnknown, 0, {}}; }
  static Provenance Lo(int32_t word) { return {Kind::kLo, 1, {word}}; }
  static Provenance Hi(int32_t word) { return {Kind::kHi, 1, {word}}; }

  bool IsPointer() const { return kind == Kind::kLo || kind == Kind::kHi; }
  // Whether it names words: a pointer half, or Mixed.
  bool HasWords() const { return IsPointer() || kind == Kind::kMixed; }
  // Whether a stored copy could let a pointer into a parameter's target escape.
  bool MayCarryPointer() const { return HasWords() || kind == Kind::kUnknown; }
  std::vector<int32_t> Words() const { return {words.begin(), words.begin() + count}; }

  friend bool operator==(const Provenance& a, const Provenance& b) {
    if (a.kind != b.kind) return false;
    if (!a.HasWords()) return true;
    return a.count == b.count && a.or_int == b.or_int &&
           std::equal(a.words.begin(), a.words.begin() + a.count, b.words.begin());
  }
  friend bool operator!=(const Provenance& a, const Provenance& b) { return !(a == b); }

  std::string ToString() const;
};

// The least upper bound.
Provenance Join(const Provenance& a, const Provenance& b);

// The value of a + b + ... for the given summands. Under Note [Kernel write sets]'s assumption at
// most one summand is really a pointer, so the sum points into one of the summands' words: their
// union (of one kind: a low half plus a high half is Unknown). A negated pointer half makes it
// Unknown (a difference of pointers is no address of either).
class Sum {
 public:
  void Add(const Provenance& p, bool negated);
  Provenance Result() const;

 private:
  Provenance pointer_;
  bool certain_ = false;  // a pointer summand without or_int: the sum is no Int
  bool mixed_ = false;    // low and high halves, or a Mixed summand: the sum is Mixed
  bool unknown_ = false;
  bool bottom_ = false;
};

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_PROVENANCE_H_
