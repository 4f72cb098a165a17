#include "core/kernels/opcodes.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace pooch::kernels {
namespace {

// Register-only opcodes, general and (with a leading U) uniform.
constexpr const char* kAluOpcodes[] = {
    "IADD3",       "IADD",        "IADD32I",   "VIADD",     "VIADDMNMX", "IMAD",       "IMUL",
    "IMUL32I",     "ISCADD",      "LEA",       "LOP",       "LOP3",      "LOP32I",     "SHF",
    "SHL",         "SHR",         "IABS",      "IMNMX",     "VIMNMX",    "VIMNMX3",    "BMSK",
    "BREV",        "FLO",         "POPC",      "SGXT",      "PRMT",      "ISETP",      "ICMP",
    "BFE",         "BFI",         "IDP",       "IDP4A",     "I2I",       "I2IP",       "F2I",
    "I2F",         "F2F",         "F2FP",      "FRND",      "I2FP",      "F2IP",       "MOV",
    "MOV32I",      "SEL",         "FSEL",      "P2R",       "R2P",       "PLOP3",      "PSETP",
    "CSET",        "CSETP",       "S2R",       "S2UR",      "CS2R",      "R2UR",       "VOTE",
    "VOTEU",       "SHFL",        "MATCH",     "REDUX",     "CREDUX",    "FADD",       "FADD32I",
    "FMUL",        "FMUL32I",     "FFMA",      "FFMA32I",   "FMNMX",     "FMNMX3",     "FSET",
    "FSETP",       "FCHK",        "MUFU",      "FSWZADD",   "DADD",      "DMUL",       "DFMA",
    "DSETP",       "DMNMX",       "HADD2",     "HMUL2",     "HFMA2",     "HSETP2",     "HSET2",
    "HMNMX2",      "HADD2_32I",   "HFMA2_32I", "HMUL2_32I", "FADD2",     "FMUL2",      "FFMA2",
    "FMNMX2",      "LEPC",        "IMNMX3",    "UP2UR",     "UR2UP",     "ELECT",      "MOVM",
    "F2FP",        "QSPC",        "FHADD",     "FHFMA",     "FMUL32",    "BITEXTRACT", "ISBERD",
    "GETLMEMBASE", "SETLMEMBASE", "CCTLT",     "B2R"};  // B2R: a barrier into a register
constexpr const char* kMmaOpcodes[] = {"HMMA",  "IMMA",  "DMMA",  "BMMA", "HGMMA",
                                       "IGMMA", "QGMMA", "BGMMA", "OMMA", "QMMA"};
constexpr const char* kNoEffectOpcodes[] = {
    "NOP",     "BSSY",    "BSYNC",     "BREAK",         "BPT",          "WARPSYNC",
    "BAR",     "DEPBAR",  "LDGDEPBAR", "MEMBAR",        "FENCE",        "ERRBAR",
    "CCTL",    "CCTLL",   "CGAERRBAR", "UCGABAR_ARV",   "UCGABAR_WAIT", "NANOSLEEP",
    "YIELD",   "PREEXIT", "ACQBULK",   "ENDCOLLECTIVE", "USETMAXREG",   "PMTRIG",
    "ARRIVES", "SYNCS",   "UTMACCTL",  "UTMACMDFLUSH",  "WARPGROUP",    "WARPGROUPSET",
    "KILL",    "R2B"};

absl::flat_hash_map<std::string, OpClass> BuildTable() {
  absl::flat_hash_map<std::string, OpClass> t;
  for (const char* op : kAluOpcodes) {
    t[op] = OpClass::kAlu;
    t[std::string("U") + op] = OpClass::kAlu;
  }
  for (const char* op : kMmaOpcodes) t[op] = OpClass::kMma;
  for (const char* op : kNoEffectOpcodes) t[op] = OpClass::kNoEffect;
  // SYNCS (mbarriers) may load a value: its destinations are set like an ALU's.
  t["SYNCS"] = OpClass::kAlu;
  for (const char* op : {"LDC", "ULDC", "LDCU"}) t[op] = OpClass::kConstLoad;
  for (const char* op : {"LDG", "LD"}) t[op] = OpClass::kGlobalLoad;
  for (const char* op : {"STG", "ST"}) t[op] = OpClass::kGlobalStore;
  for (const char* op : {"ATOM", "ATOMG", "RED", "REDG"}) t[op] = OpClass::kGlobalAtomic;
  t["LDGSTS"] = OpClass::kAsyncCopy;
  for (const char* op : {"LDS", "LDL", "LDSM"}) t[op] = OpClass::kSharedLoad;
  for (const char* op : {"STS", "STL", "STSM"}) t[op] = OpClass::kSharedStore;
  t["ATOMS"] = OpClass::kSharedAtomic;
  for (const char* op : {"UBLKCP", "UBLKRED", "UTMASTG", "UTMAREDG", "SUST", "SURED", "SUATOM"}) {
    t[op] = OpClass::kOpaqueWrite;
  }
  for (const char* op :
       {"UTMALDG", "UTMAPF", "UBLKPF", "TEX", "TLD", "TLD4", "TXQ", "TMML", "TXD", "SULD"}) {
    t[op] = OpClass::kOpaqueRead;
  }
  for (const char* op : {"BRA", "BRX", "JMP", "JMX"}) t[op] = OpClass::kBranch;
  t["CALL"] = OpClass::kCall;
  t["RET"] = OpClass::kReturn;
  t["EXIT"] = OpClass::kExit;
  return t;
}

}  // namespace

OpClass Classify(absl::string_view base_opcode) {
  static const auto* table = new absl::flat_hash_map<std::string, OpClass>(BuildTable());
  auto it = table->find(base_opcode);
  return it == table->end() ? OpClass::kUnknown : it->second;
}

int DestinationWidth(absl::string_view opcode, OpClass cls) {
  // An MMA's accumulators span up to 128 registers (HGMMA.64x256.F32): every register from the
  // first destination on.
  if (cls == OpClass::kMma) return 256;
  std::vector<absl::string_view> parts = absl::StrSplit(opcode, '.');
  int width = 1;
  absl::string_view base = parts[0];
  if (absl::StartsWith(base, "D") || base == "CS2R" || base == "UCS2R") width = 2;
  for (size_t i = 1; i < parts.size(); ++i) {
    absl::string_view m = parts[i];
    // 64-bit results. A funnel shift (SHF.L.U64.HI) writes one register: marking its
    // neighbour an integer too would lose (or, were it stored, hide) a pointer's other half.
    const bool funnel = base == "SHF" || base == "USHF";
    if (m == "64" || m == "WIDE" || m == "F64" || ((m == "S64" || m == "U64") && !funnel)) {
      width = std::max(width, 2);
    }
    if (m == "128" || m == "x2" || m == "2") width = std::max(width, m == "128" ? 4 : 2);
    if (m == "256" || m == "x4" || m == "4") width = std::max(width, m == "256" ? 8 : 4);
  }
  return width;
}

}  // namespace pooch::kernels
