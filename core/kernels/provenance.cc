#include "core/kernels/provenance.h"

#include "absl/strings/str_format.h"

namespace pooch::kernels {

std::string Provenance::ToString() const {
  switch (kind) {
    case Kind::kBottom:
      return "bottom";
    case Kind::kInt:
      return "int";
    case Kind::kLo:
      return absl::StrFormat("lo(0x%x)", word);
    case Kind::kHi:
      return absl::StrFormat("hi(0x%x)", word);
    case Kind::kUnknown:
      return "unknown";
  }
  return "?";
}

Provenance Join(const Provenance& a, const Provenance& b) {
  if (a.kind == Provenance::Kind::kBottom) return b;
  if (b.kind == Provenance::Kind::kBottom) return a;
  if (a == b) return a;
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
      if (negated) unknown_ = true;
      pointer_ = p;
      ++pointers_;
  }
}

Provenance Sum::Result() const {
  if (unknown_ || pointers_ > 1) return Provenance::Unknown();
  if (pointers_ == 1) return pointer_;
  // A summand not yet reached: the sum is not known yet either (the fixpoint comes back).
  return bottom_ ? Provenance{} : Provenance::Int();
}

}  // namespace pooch::kernels
