#include "core/kernels/provenance.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace pooch::kernels {
namespace {

// Lo(A) and Lo(B) to Lo(A u B); Unknown past kMaxWords words.
Provenance Union(const Provenance& a, const Provenance& b) {
  std::vector<int32_t> all = a.Words();
  for (int32_t w : b.Words()) {
    if (std::find(all.begin(), all.end(), w) == all.end()) all.push_back(w);
  }
  if (all.size() > Provenance::kMaxWords) return Provenance::Unknown();
  std::sort(all.begin(), all.end());
  Provenance u{a.kind, static_cast<uint8_t>(all.size()), {}};
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
      return absl::StrFormat("%s(%s)", kind == Kind::kLo ? "lo" : "hi",
                             absl::StrJoin(Words(), ",", [](std::string* out, int32_t w) {
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
  return Provenance::Unknown();
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
      if (negated || (pointer_.IsPointer() && pointer_.kind != p.kind)) {
        unknown_ = true;
        return;
      }
      pointer_ = pointer_.IsPointer() ? Union(pointer_, p) : p;
      if (pointer_.kind == Provenance::Kind::kUnknown) unknown_ = true;
  }
}

Provenance Sum::Result() const {
  if (unknown_) return Provenance::Unknown();
  if (pointer_.IsPointer()) return pointer_;
  // A summand not yet reached: the sum is not known yet either (the fixpoint comes back).
  return bottom_ ? Provenance{} : Provenance::Int();
}

}  // namespace pooch::kernels
