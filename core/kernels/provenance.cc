#include "core/kernels/provenance.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace pooch::kernels {
namespace {

// Lo(A) and Lo(B) to Lo(A u B) (of `a`'s kind); Unknown past kMaxWords words.
Provenance Union(const Provenance& a, const Provenance& b) {
  std::vector<int32_t> all = a.Words();
  for (int32_t w : b.Words()) {
    if (std::find(all.begin(), all.end(), w) == all.end()) all.push_back(w);
  }
  if (all.size() > Provenance::kMaxWords) return Provenance::Unknown();
  std::sort(all.begin(), all.end());
  Provenance u{a.kind,
               static_cast<uint8_t>(all.size()),
               {},
               a.kind != Provenance::Kind::kMixed && (a.or_int || b.or_int)};
  std::copy(all.begin(), all.end(), u.words.begin());
  return u;
}

}  // namespace

std::string Provenance::ToString() const {
  switch (kind) {
    case Kind::kBottom:
      return "bottom";
    case Kind::kInt:
      return "int";
    case Kind::kLo:
    case Kind::kHi:
      return absl::StrFormat("%s(%s)%s", kind == Kind::kLo ? "lo" : "hi",
                             absl::StrJoin(Words(), ",",
                                           [](std::string* out, int32_t w) {
                                             absl::StrAppend(out, absl::StrFormat("0x%x", w));
                                           }),
                             or_int ? "|int" : "");
    case Kind::kMixed:
      return absl::StrFormat("mixed(%s)", absl::StrJoin(Words(), ",", [](std::string* out, int w) {
                               absl::StrAppend(out, absl::StrFormat("0x%x", w));
                             }));
    case Kind::kUnknown:
      return "unknown";
  }
  return "?";
}

Provenance Join(const Provenance& a, const Provenance& b) {
  if (a.kind == Provenance::Kind::kBottom) return b;
  if (b.kind == Provenance::Kind::kBottom) return a;
  if (a == b) return a;
  if (a.IsPointer() && a.kind == b.kind) return Union(a, b);
  // A pointer half or an integer: Note [Conditional escapes].
  if (a.IsPointer() && b.kind == Provenance::Kind::kInt)
    return Union(a, Provenance{a.kind, 0, {}, true});
  if (b.IsPointer() && a.kind == Provenance::Kind::kInt)
    return Union(b, Provenance{b.kind, 0, {}, true});
  // Halves of both kinds (or an integer): Mixed, for escapes.
  const bool a_ok = a.HasWords() || a.kind == Provenance::Kind::kInt;
  const bool b_ok = b.HasWords() || b.kind == Provenance::Kind::kInt;
  if (!a_ok || !b_ok) return Provenance::Unknown();
  const Provenance both = Union(a, b);
  if (both.kind == Provenance::Kind::kUnknown) return both;
  return Union(Provenance{Provenance::Kind::kMixed, 0, {}}, both);
}

void Sum::Add(const Provenance& p, bool negated) {
  switch (p.kind) {
    case Provenance::Kind::kBottom:
      bottom_ = true;
      return;
    case Provenance::Kind::kInt:
      return;
    case Provenance::Kind::kUnknown:
      unknown_ = true;
      return;
    default:
      if (negated) {
        unknown_ = true;
        return;
      }
      if (p.kind == Provenance::Kind::kMixed || (pointer_.HasWords() && pointer_.kind != p.kind)) {
        mixed_ = true;
      }
      pointer_ = pointer_.HasWords() ? Union(pointer_, p) : p;
      certain_ |= !p.or_int;
      if (pointer_.kind == Provenance::Kind::kUnknown) unknown_ = true;
  }
}

Provenance Sum::Result() const {
  if (unknown_) return Provenance::Unknown();
  if (mixed_) return Union(Provenance{Provenance::Kind::kMixed, 0, {}}, pointer_);
  if (pointer_.IsPointer()) {
    // An Int plus integers is an Int: the sum is one only when every pointer summand may be.
    Provenance out = pointer_;
    out.or_int = !certain_;
    return out;
  }
  // A summand not yet reached: the sum is not known yet either (the fixpoint comes back).
  return bottom_ ? Provenance{} : Provenance::Int();
}

}  // namespace pooch::kernels
