#include "core/kernels/operand.h"

#include <cctype>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace pooch::kernels {
namespace {

bool IsPredicateName(absl::string_view s) {
  return s == "PT" || s == "UPT" || (s.size() >= 2 && s[0] == 'P' && std::isdigit(s[1])) ||
         (s.size() >= 3 && s[0] == 'U' && s[1] == 'P' && std::isdigit(s[2]));
}

// The text between the last '[' and its ']'.
absl::string_view LastBracket(absl::string_view s) {
  size_t open = s.rfind('[');
  size_t close = s.find(']', open);
  if (open == absl::string_view::npos || close == absl::string_view::npos) return "";
  return s.substr(open + 1, close - open - 1);
}

// The terms of "R2.64+UR4+0x4" or "R1+-0x8".
void AddressTerms(absl::string_view expr, Operand* op) {
  for (absl::string_view term : absl::StrSplit(expr, '+')) {
    term = absl::StripAsciiWhitespace(term);
    if (term.empty() || ParseInteger(term)) continue;
    std::optional<int> reg = ParseRegister(term);
    if (!reg) {
      // Something the reader does not know (a name, a modifier): keep it as a term that
      // is no register, which the analysis treats as unknown.
      op->terms.push_back({-1, false});
      continue;
    }
    op->terms.push_back({*reg, absl::EndsWith(term, ".64")});
  }
}

}  // namespace

std::optional<int> ParseRegister(absl::string_view s) {
  s = s.substr(0, s.find('.'));
  if (s == "RZ") return kRZ;
  if (s == "URZ") return kURZ;
  int base = 0;
  if (absl::ConsumePrefix(&s, "UR")) {
    base = kUniformBase;
  } else if (!absl::ConsumePrefix(&s, "R")) {
    return std::nullopt;
  }
  int n = 0;
  if (s.empty() || !absl::SimpleAtoi(s, &n) || n < 0) return std::nullopt;
  if (base == 0 ? n >= 255 : n >= 63) return std::nullopt;
  return base + n;
}

std::optional<long long> ParseInteger(absl::string_view s) {
  bool negative = absl::ConsumePrefix(&s, "-");
  long long v = 0;
  if (absl::ConsumePrefix(&s, "0x")) {
    if (s.empty() || !absl::SimpleHexAtoi(s, &v)) return std::nullopt;
  } else if (s.empty() || !absl::SimpleAtoi(s, &v)) {
    return std::nullopt;
  }
  return negative ? -v : v;
}

Operand ParseOperand(absl::string_view s) {
  Operand op;
  s = absl::StripAsciiWhitespace(s);
  if (std::optional<long long> v = ParseInteger(s)) {
    op.kind = Operand::Kind::kImmediate;
    op.immediate = *v;
    return op;
  }
  while (!s.empty() && (s[0] == '-' || s[0] == '~' || s[0] == '!' || s[0] == '|')) {
    if (s[0] != '|') op.negated = true;
    s.remove_prefix(1);
  }
  while (absl::ConsumeSuffix(&s, "|")) {
  }
  if (absl::StartsWith(s, "c[") || absl::StartsWith(s, "cx[")) {
    op.kind = Operand::Kind::kConstant;
    size_t first_close = s.find(']');
    std::optional<long long> bank =
        ParseInteger(s.substr(s.find('[') + 1, first_close - s.find('[') - 1));
    op.bank = bank ? static_cast<int>(*bank) : -1;
    absl::string_view expr = LastBracket(s);
    for (absl::string_view term : absl::StrSplit(expr, '+')) {
      if (std::optional<long long> v = ParseInteger(term)) {
        op.offset += *v;
      } else if (std::optional<int> reg = ParseRegister(term)) {
        op.index_reg = *reg;
      } else {
        op.index_reg = kRegisterCount;  // an index the reader cannot name
      }
    }
    if (!bank) op.index_reg = kRegisterCount;
    return op;
  }
  if (absl::StrContains(s, "[")) {
    op.kind = Operand::Kind::kMemory;
    AddressTerms(LastBracket(s), &op);
    return op;
  }
  if (std::optional<int> reg = ParseRegister(s)) {
    op.kind = Operand::Kind::kRegister;
    op.reg = *reg;
    op.pair = absl::EndsWith(s, ".64");
    return op;
  }
  if (IsPredicateName(s.substr(0, s.find('.')))) {
    op.kind = Operand::Kind::kPredicate;
    return op;
  }
  // Floating-point immediates, special registers (SR_TID.X), labels, barriers: no address.
  return op;
}

}  // namespace pooch::kernels
