#include "core/kernels/cubin_info.h"

#include <elf.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace pooch::kernels {
namespace {

constexpr int kEmCuda = 190;
constexpr uint8_t kFormatSval = 0x04;
constexpr uint8_t kAttrParamCbank = 0x0a;
constexpr uint8_t kAttrKparamInfo = 0x17;
constexpr uint8_t kAttrCbankParamSize = 0x19;
constexpr uint8_t kAttrKparamInfoLarge = 0x45;

template <typename T>
T Read(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Reads one .nv.info.<kernel> section's records into `k`; false when one runs past the end.
bool ReadRecords(absl::string_view s, CubinKernel* k) {
  size_t i = 0;
  while (i + 4 <= s.size()) {
    const uint8_t format = static_cast<uint8_t>(s[i]);
    const uint8_t attr = static_cast<uint8_t>(s[i + 1]);
    const uint16_t value = Read<uint16_t>(s.data() + i + 2);
    const char* payload = s.data() + i + 4;
    size_t payload_bytes = 0;
    if (format == kFormatSval) {
      payload_bytes = value;
      if (payload_bytes > s.size() - i - 4) return false;
    }
    i += 4 + payload_bytes;
    if ((attr == kAttrKparamInfo || attr == kAttrKparamInfoLarge) && payload_bytes >= 12) {
      CubinParam p;
      p.ordinal = Read<uint16_t>(payload + 4);
      p.offset = Read<uint16_t>(payload + 6);
      const uint32_t size_word = Read<uint32_t>(payload + 8);
      p.size = static_cast<int>(attr == kAttrKparamInfo ? size_word >> 18 : size_word);
      k->params.push_back(p);
    } else if (attr == kAttrParamCbank && payload_bytes >= 8) {
      k->cbank_offset = Read<uint16_t>(payload + 4);
      k->params_size = std::max<int>(k->params_size, Read<uint16_t>(payload + 6));
    } else if (attr == kAttrCbankParamSize && format != kFormatSval) {
      k->params_size = std::max<int>(k->params_size, value);
    }
  }
  std::sort(k->params.begin(), k->params.end(),
            [](const CubinParam& a, const CubinParam& b) { return a.ordinal < b.ordinal; });
  for (const CubinParam& p : k->params)
    k->params_size = std::max(k->params_size, p.offset + p.size);
  return i == s.size();
}

// Appends the STT_FUNC symbols of symbol table `symtab` (its names in section sh_link) to
// `out`; false when the table or its names run past the file.
bool ReadFunctions(absl::string_view bytes, const Elf64_Shdr& symtab, const Elf64_Shdr& strtab,
                   std::vector<CubinFunction>* out) {
  if (symtab.sh_entsize != sizeof(Elf64_Sym) || symtab.sh_offset + symtab.sh_size > bytes.size() ||
      strtab.sh_offset + strtab.sh_size > bytes.size()) {
    return false;
  }
  const size_t count = symtab.sh_size / sizeof(Elf64_Sym);
  for (size_t i = 0; i < count; ++i) {
    const auto sym = Read<Elf64_Sym>(bytes.data() + symtab.sh_offset + i * sizeof(Elf64_Sym));
    if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_name >= strtab.sh_size) continue;
    const char* name = bytes.data() + strtab.sh_offset + sym.st_name;
    out->push_back(
        {std::string(name, strnlen(name, strtab.sh_size - sym.st_name)), static_cast<int>(i)});
  }
  return true;
}

// The symbol name of entry `index` of symbol table `symtab`, or empty.
std::string SymbolName(absl::string_view bytes, const Elf64_Shdr& symtab, const Elf64_Shdr& strtab,
                       uint64_t index) {
  if (symtab.sh_entsize != sizeof(Elf64_Sym) || index >= symtab.sh_size / sizeof(Elf64_Sym) ||
      symtab.sh_offset + symtab.sh_size > bytes.size() ||
      strtab.sh_offset + strtab.sh_size > bytes.size()) {
    return "";
  }
  const auto sym = Read<Elf64_Sym>(bytes.data() + symtab.sh_offset + index * sizeof(Elf64_Sym));
  if (sym.st_name >= strtab.sh_size) return "";
  const char* name = bytes.data() + strtab.sh_offset + sym.st_name;
  return std::string(name, strnlen(name, strtab.sh_size - sym.st_name));
}

constexpr uint32_t kRelocAbs64 = 2;  // the target word gets the symbol's 64-bit address

// Adds the entries of relocation section `rel` (SHT_REL or SHT_RELA) against .nv.constant4
// (`target`) that give a word a symbol's address with no addend; false when out of bounds.
bool ReadBank4Relocations(absl::string_view bytes, const Elf64_Shdr& rel, const Elf64_Shdr& target,
                          const Elf64_Shdr& symtab, const Elf64_Shdr& strtab,
                          std::map<int, std::string>* out) {
  const bool rela = rel.sh_type == SHT_RELA;
  const size_t entry = rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
  if (rel.sh_entsize != entry || rel.sh_offset + rel.sh_size > bytes.size()) return false;
  for (size_t i = 0; i + entry <= rel.sh_size; i += entry) {
    const char* e = bytes.data() + rel.sh_offset + i;
    const auto r = Read<Elf64_Rel>(e);
    if (ELF64_R_TYPE(r.r_info) != kRelocAbs64) continue;
    // The addend: explicit in a RELA entry, the word's own bytes under a REL one.
    int64_t addend = 0;
    if (rela) {
      addend = Read<Elf64_Rela>(e).r_addend;
    } else if (target.sh_type == SHT_PROGBITS && r.r_offset + 8 <= target.sh_size &&
               target.sh_offset + target.sh_size <= bytes.size()) {
      addend = Read<int64_t>(bytes.data() + target.sh_offset + r.r_offset);
    } else {
      continue;
    }
    if (addend != 0) continue;
    std::string name = SymbolName(bytes, symtab, strtab, ELF64_R_SYM(r.r_info));
    if (!name.empty()) (*out)[static_cast<int>(r.r_offset)] = std::move(name);
  }
  return true;
}

}  // namespace

bool IsElf(absl::string_view bytes) { return absl::StartsWith(bytes, ELFMAG); }

absl::StatusOr<CubinInfo> ReadCubinInfo(absl::string_view bytes) {
  if (bytes.size() < sizeof(Elf64_Ehdr) || !IsElf(bytes) || bytes[EI_CLASS] != ELFCLASS64) {
    return absl::InvalidArgumentError("not an ELF64 file");
  }
  const auto eh = Read<Elf64_Ehdr>(bytes.data());
  if (eh.e_machine != kEmCuda)
    return absl::InvalidArgumentError("not a cubin (machine is not CUDA)");
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > bytes.size() ||
      eh.e_shstrndx >= eh.e_shnum) {
    return absl::InvalidArgumentError("cubin section headers out of bounds");
  }
  CubinInfo info;
  // The architecture: the low byte of e_flags before CUDA 12.8's ABI, bits 8..15 after it
  // (ELF ABI version 8 and later).
  info.sm = eh.e_ident[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff;
  auto section = [&](int n) {
    return Read<Elf64_Shdr>(bytes.data() + eh.e_shoff + n * sizeof(Elf64_Shdr));
  };
  const Elf64_Shdr names = section(eh.e_shstrndx);
  if (names.sh_offset + names.sh_size > bytes.size()) {
    return absl::InvalidArgumentError("cubin section names out of bounds");
  }
  for (int n = 0; n < eh.e_shnum; ++n) {
    const Elf64_Shdr sh = section(n);
    if (sh.sh_name >= names.sh_size) continue;
    if (sh.sh_type == SHT_SYMTAB) {
      if (sh.sh_link >= eh.e_shnum ||
          !ReadFunctions(bytes, sh, section(sh.sh_link), &info.functions)) {
        return absl::InvalidArgumentError("cubin symbol table out of bounds");
      }
      continue;
    }
    const char* name = bytes.data() + names.sh_offset + sh.sh_name;
    const absl::string_view sname(name, strnlen(name, names.sh_size - sh.sh_name));
    if (sname == ".rel.nv.constant4" || sname == ".rela.nv.constant4") {
      // Optional knowledge: a section that does not read leaves bank 4's calls unfollowed.
      if (sh.sh_link < eh.e_shnum && sh.sh_info < eh.e_shnum &&
          section(sh.sh_link).sh_link < eh.e_shnum) {
        std::map<int, std::string> symbols;
        if (ReadBank4Relocations(bytes, sh, section(sh.sh_info), section(sh.sh_link),
                                 section(section(sh.sh_link).sh_link), &symbols)) {
          info.bank4_symbols.merge(symbols);
        }
      }
      continue;
    }
    if (!absl::StartsWith(sname, ".nv.info.")) continue;
    if (sh.sh_offset + sh.sh_size > bytes.size()) {
      return absl::InvalidArgumentError(absl::StrCat("section ", sname, " out of bounds"));
    }
    CubinKernel k;
    k.name = std::string(sname.substr(9));
    if (!ReadRecords(bytes.substr(sh.sh_offset, sh.sh_size), &k)) {
      return absl::InvalidArgumentError(absl::StrCat("malformed attribute records in ", sname));
    }
    info.kernels.push_back(std::move(k));
  }
  return info;
}

}  // namespace pooch::kernels
