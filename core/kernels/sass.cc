#include "core/kernels/sass.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace pooch::kernels {
namespace {

// Splits an operand list at top-level commas (commas inside [] or () stay).
std::vector<std::string> SplitOperands(absl::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back(absl::StripAsciiWhitespace(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  std::string last(absl::StripAsciiWhitespace(cur));
  if (!last.empty()) out.push_back(last);
  for (std::string& op : out) {
    for (size_t at; (at = op.find(".reuse")) != std::string::npos;) op.erase(at, 6);
  }
  return out;
}

// "`(.L_x_9)" or "`($k$f)" to the label inside; empty when there is none.
std::string TargetOf(absl::string_view operand) {
  size_t open = operand.find("`(");
  if (open == absl::string_view::npos) return "";
  size_t close = operand.find(')', open);
  if (close == absl::string_view::npos) return "";
  return std::string(operand.substr(open + 2, close - open - 2));
}

// An instruction line: "/*0070*/  @!P0 BRA P1, `(.L_x_9) ;". False for any other line.
bool ParseInstruction(absl::string_view line, Instruction* ins) {
  line = absl::StripLeadingAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "/*")) return false;
  size_t close = line.find("*/");
  if (close == absl::string_view::npos || close == 0) return false;
  int offset = 0;
  for (char c : line.substr(0, close)) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    offset = offset * 16 +
             (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10);
  }
  line = absl::StripAsciiWhitespace(line.substr(close + 2));
  // Scheduling comments after the ';' (older nvdisasm) are not part of the instruction.
  size_t semi = line.find(';');
  if (semi != absl::string_view::npos) line = line.substr(0, semi);
  line = absl::StripAsciiWhitespace(line);
  ins->offset = offset;
  if (absl::StartsWith(line, "@")) {
    size_t sp = line.find(' ');
    ins->guard = std::string(line.substr(0, sp));
    line = sp == absl::string_view::npos ? "" : absl::StripLeadingAsciiWhitespace(line.substr(sp));
  }
  size_t sp = line.find(' ');
  ins->opcode = std::string(line.substr(0, sp));
  if (sp != absl::string_view::npos) ins->operands = SplitOperands(line.substr(sp + 1));
  for (const std::string& op : ins->operands) {
    std::string t = TargetOf(op);
    if (!t.empty()) ins->target = t;
  }
  return !ins->opcode.empty();
}

}  // namespace

absl::string_view Instruction::Base() const {
  absl::string_view op = opcode;
  return op.substr(0, op.find('.'));
}

bool Instruction::HasModifier(absl::string_view modifier) const {
  std::vector<absl::string_view> parts = absl::StrSplit(opcode, '.');
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i] == modifier) return true;
  }
  return false;
}

SassProgram ParseSass(absl::string_view text) {
  SassProgram p;
  std::vector<std::string> pending;  // labels waiting for the next instruction
  int section = -1;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::string_view s = absl::StripAsciiWhitespace(line);
    if (s.empty() || absl::StartsWith(s, "//")) continue;
    if (absl::StartsWith(s, ".section") && s.size() > 8 && absl::ascii_isspace(s[8])) {
      s = absl::StripLeadingAsciiWhitespace(s.substr(8));
      p.sections.emplace_back(s.substr(0, s.find(',')));
      section = static_cast<int>(p.sections.size()) - 1;
      pending.clear();  // a label after the last section's end (its .size marker) names nothing
      continue;
    }
    if (absl::ConsumePrefix(&s, ".target")) {
      p.target = std::string(absl::StripAsciiWhitespace(s));
      continue;
    }
    if (absl::ConsumePrefix(&s, ".other")) {
      if (absl::StrContains(s, "STO_CUDA_ENTRY")) {
        s = absl::StripLeadingAsciiWhitespace(s);
        p.kernels.emplace_back(s.substr(0, s.find(',')));
      }
      continue;
    }
    if (s.front() == '.' && !absl::EndsWith(s, ":")) continue;  // another directive
    if (absl::EndsWith(s, ":") && !absl::StartsWith(s, "/*")) {
      pending.emplace_back(s.substr(0, s.size() - 1));
      continue;
    }
    Instruction ins;
    if (section < 0 || !ParseInstruction(s, &ins)) continue;
    ins.section = section;
    int index = static_cast<int>(p.instructions.size());
    for (std::string& label : pending) p.labels[label] = index;
    pending.clear();
    p.instructions.push_back(std::move(ins));
  }
  return p;
}

}  // namespace pooch::kernels
