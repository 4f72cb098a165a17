// libinterpose_clash_other_absl.so: "another Abseil" for clash_probe, standing for the Abseil a
// host process brings (TensorFlow's, a PyTorch extension's, one built with other options). It
// defines absl::StrCat(a, b) under the very name libpooch.so's own copy of Abseil carries
// (absl::debian3::StrCat, compiled against the same headers), but answers differently: a tag
// the probe recognises. clash_test.sh checks that libpooch.so does carry a function of that name.
//
// Why it would fail if pooch's Abseil were visible: libpooch.so, preloaded, comes before every
// library of the program in the dynamic linker's search order, so an exported StrCat in it
// would take the program's calls, and the program would get untagged strings.
#include <string>

#include "absl/strings/str_cat.h"

std::string absl::StrCat(const AlphaNum& a, const AlphaNum& b) {
  std::string out = "other-abseil(";
  out.append(a.data(), a.size());
  out += ',';
  out.append(b.data(), b.size());
  out += ')';
  return out;
}
