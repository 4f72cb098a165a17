// Reading a kernel's parameters from PTX.
//
// Note [PTX parameters]
// ~~~~~~~~~~~~~~~~~~~~~
// A PTX entry declares its parameters in order, e.g.
//   .visible .entry _Z5k_big6BigArgPfs(
//       .param .align 8 .b8 _Z5k_big6BigArgPfs_param_0[808],
//       .param .u64 _Z5k_big6BigArgPfs_param_1,
//       .param .u16 _Z5k_big6BigArgPfs_param_2
//   )
//   .maxntid 128, 1, 1
//   { ... .shared .align 4 .b8 tile[8192]; ... }
// A parameter is `.param [.align A] .TYPE [.ptr [.SPACE] [.align N]] NAME[[COUNT]]`; its size is
// the type's (.b8/.u8/.s8: 1, ... .b64/.u64/.s64/.f64: 8) times COUNT, its alignment A or else
// the type's size, and the buffer lays them out in order, each at its alignment: the layout the
// cubin's EIATTR_KPARAM_INFO records for the same kernel (checked against nvcc's output in
// fatbin_test.cc). Static shared memory is the sum of the body's `.shared` declarations (not
// `.extern .shared`, which is dynamic).
#include "tests/simgpu/driver/modules/ptx.h"

#include <cctype>
#include <cstdint>
#include <vector>

namespace simgpu::ptx {
namespace {

// Whitespace- and comma-separated tokens of `s`, with '[', ']' kept as their own tokens.
std::vector<std::string_view> Tokens(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c)) || c == ',') {
      ++i;
    } else if (c == '[' || c == ']') {
      out.push_back(s.substr(i, 1));
      ++i;
    } else {
      size_t j = i;
      while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j])) && s[j] != ',' &&
             s[j] != '[' && s[j] != ']') {
        ++j;
      }
      out.push_back(s.substr(i, j - i));
      i = j;
    }
  }
  return out;
}

int TypeBytes(std::string_view t) {
  if (t.size() < 3 || t[0] != '.') return 0;
  char k = t[1];
  if (k != 'b' && k != 'u' && k != 's' && k != 'f') return 0;
  std::string_view bits = t.substr(2);
  if (bits == "8") return 1;
  if (bits == "16") return 2;
  if (bits == "32") return 4;
  if (bits == "64") return 8;
  return 0;
}

bool ParseUint(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
    if (v > (uint64_t{1} << 32)) return false;
  }
  *out = v;
  return true;
}

// One `.param ...` declaration (without the `.param`): size and alignment.
bool ParseParam(const std::vector<std::string_view>& t, uint32_t* bytes, uint32_t* align) {
  size_t i = 0;
  uint64_t explicit_align = 0;
  if (i + 1 < t.size() && t[i] == ".align") {
    if (!ParseUint(t[i + 1], &explicit_align) || explicit_align == 0) return false;
    i += 2;
  }
  if (i >= t.size()) return false;
  int type = TypeBytes(t[i++]);
  if (type == 0) return false;
  // Pointer attributes: .ptr, a state space, .align N (of the pointee).
  while (i < t.size() && t[i].size() > 1 && t[i][0] == '.') {
    if (t[i] == ".align") ++i;
    ++i;
  }
  if (i >= t.size()) return false;  // the name
  ++i;
  uint64_t count = 1;
  if (i < t.size()) {
    if (t[i] != "[" || i + 2 >= t.size() || !ParseUint(t[i + 1], &count) || t[i + 2] != "]" ||
        i + 3 != t.size()) {
      return false;
    }
  }
  *bytes = static_cast<uint32_t>(count * static_cast<uint64_t>(type));
  *align = static_cast<uint32_t>(explicit_align != 0 ? explicit_align : type);
  return true;
}

// The body's static shared memory: `.shared ... NAME[N];` declarations at any depth.
uint32_t SharedBytes(std::string_view body) {
  uint64_t total = 0;
  for (size_t at = body.find(".shared"); at != std::string_view::npos;
       at = body.find(".shared", at + 1)) {
    size_t line = body.rfind('\n', at);
    std::string_view before = body.substr(line == std::string_view::npos ? 0 : line + 1,
                                          at - (line == std::string_view::npos ? 0 : line + 1));
    if (before.find_first_not_of(" \t") != std::string_view::npos) continue;  // not a declaration
    size_t end = body.find(';', at);
    if (end == std::string_view::npos) break;
    std::vector<std::string_view> t = Tokens(body.substr(at + 7, end - at - 7));
    uint32_t bytes = 0, align = 0;
    if (ParseParam(t, &bytes, &align)) total = (total + align - 1) / align * align + bytes;
  }
  return static_cast<uint32_t>(total);
}

}  // namespace

Found ParseEntry(std::string_view ptx, const std::string& name, cubin::KernelInfo* out,
                 std::string* why) {
  size_t at = std::string_view::npos;
  for (size_t p = ptx.find(".entry"); p != std::string_view::npos; p = ptx.find(".entry", p + 1)) {
    size_t n = p + 6;
    while (n < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[n]))) ++n;
    if (ptx.compare(n, name.size(), name) != 0) continue;
    size_t after = n + name.size();
    if (after < ptx.size() &&
        (ptx[after] == '(' || std::isspace(static_cast<unsigned char>(ptx[after])))) {
      at = after;
      break;
    }
  }
  if (at == std::string_view::npos) return Found::kNo;
  *out = cubin::KernelInfo{};
  size_t open = ptx.find_first_not_of(" \t\r\n", at);
  size_t body = ptx.find('{', at);
  if (body == std::string_view::npos) {
    *why = "no body";
    return Found::kMalformed;
  }
  size_t close = at;
  if (open != std::string_view::npos && ptx[open] == '(') {
    close = ptx.find(')', open);
    if (close == std::string_view::npos || close > body) {
      *why = "unterminated parameter list";
      return Found::kMalformed;
    }
    std::string_view list = ptx.substr(open + 1, close - open - 1);
    uint32_t offset = 0;
    size_t start = 0;
    while (start < list.size()) {
      size_t comma = list.find(".param", start + 1);
      std::string_view decl = list.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      start = comma == std::string_view::npos ? list.size() : comma;
      std::vector<std::string_view> t = Tokens(decl);
      if (t.empty()) continue;
      uint32_t bytes = 0, align = 0;
      if (t[0] != ".param" || !ParseParam({t.begin() + 1, t.end()}, &bytes, &align)) {
        *why = "parameter " + std::to_string(out->params.size()) + " not understood";
        return Found::kMalformed;
      }
      offset = (offset + align - 1) / align * align;
      out->params.push_back(cubin::Param{offset, bytes});
      offset += bytes;
    }
    out->param_bytes = offset;
  }
  // Performance directives between the parameters and the body.
  std::vector<std::string_view> d = Tokens(ptx.substr(close + 1, body - close - 1));
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] != ".maxntid") continue;
    uint64_t product = 1, v = 0;
    for (size_t j = i + 1; j < d.size() && j <= i + 3 && ParseUint(d[j], &v); ++j) product *= v;
    out->max_threads_per_block = static_cast<int>(product);
  }
  // The body ends where its braces balance.
  int depth = 0;
  size_t end = body;
  for (; end < ptx.size(); ++end) {
    if (ptx[end] == '{') ++depth;
    if (ptx[end] == '}' && --depth == 0) break;
  }
  out->shared_bytes = SharedBytes(ptx.substr(body, end - body));
  return Found::kYes;
}

}  // namespace simgpu::ptx
