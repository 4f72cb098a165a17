// Reading a cubin's kernel attributes.
//
// Note [Cubin info]
// ~~~~~~~~~~~~~~~~~
// A cubin is an ELF64 file (EM_CUDA, 190). Besides code it carries, for the driver, "EIATTR"
// attribute records: module-wide ones in the section .nv.info and per-kernel ones in
// .nv.info.<mangled kernel name>. A record is {u8 format, u8 attribute, ...}:
//   format 0x01 (no value), 0x02 (u8 value), 0x03 (u16 value): 4 bytes in all;
//   format 0x04: u16 payload size, then the payload (4 + size bytes).
// The attributes used here, as nvcc 13.0 writes them (verified against kernels of known
// signature in fatbin_test.cc, and read from torch's libtorch_cuda.so):
//   0x17 EIATTR_KPARAM_INFO (per kernel, one per parameter): u32 index, u16 ordinal, u16 offset
//        in the parameter buffer, u32 whose bits 18..31 are the parameter's size in bytes (the
//        low bits hold its constant-bank space and alignment);
//   0x45 (per kernel, one per parameter) takes 0x17's place in a kernel whose parameter buffer
//        is over 4 KiB (CUDA 12.1's large kernel parameters; torch's multi_tensor_apply kernels
//        pass 24 KB): u32 0, u16 ordinal, u16 offset, and the whole u32 is the size in bytes,
//        which 0x17's 14 bits could not hold. A kernel whose layout is in neither would look
//        like one without parameters, and pooch would take its pointers for none;
//   0x19 EIATTR_CBANK_PARAM_SIZE (per kernel, u16): the parameter buffer's size; absent for a
//        kernel without parameters;
//   0x0a EIATTR_PARAM_CBANK (per kernel): u32 symbol, u16 offset of the parameters in constant
//        bank 0, u16 their size (the same size again);
//   0x05 EIATTR_MAX_THREADS (per kernel): u32 x, y, z of __launch_bounds__;
//   0x2f EIATTR_REGCOUNT and 0x11 EIATTR_FRAME_SIZE (module-wide): u32 symbol index in .symtab,
//        u32 registers per thread / stack bytes per thread.
// A kernel's static shared memory is the size of the NOBITS section .nv.shared.<kernel>;
// __constant__ variables live in .nv.constant3 and __device__ ones in .nv.global (NOBITS) or
// .nv.global.init (with initial contents).
#include "tests/simgpu/driver/modules/cubin.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace simgpu::cubin {
namespace {

constexpr uint8_t kFmtSval = 0x04;
constexpr uint8_t kAttrParamCbank = 0x0a;
constexpr uint8_t kAttrMaxThreads = 0x05;
constexpr uint8_t kAttrFrameSize = 0x11;
constexpr uint8_t kAttrKparamInfo = 0x17;
constexpr uint8_t kAttrKparamInfoLarge = 0x45;
constexpr uint8_t kAttrCbankParamSize = 0x19;
constexpr uint8_t kAttrRegcount = 0x2f;
constexpr uint16_t kEmCuda = 190;

template <typename T>
T Read(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// One attribute record: its attribute, its small value (formats 1-3) or payload (format 4).
struct Record {
  uint8_t attr;
  uint16_t value;
  const uint8_t* payload;
  uint16_t payload_bytes;
};

// Calls `fn(record)` for each record of an .nv.info section; false if one runs past its end.
template <typename Fn>
bool ForEachRecord(const uint8_t* p, size_t bytes, Fn fn) {
  size_t i = 0;
  while (i + 4 <= bytes) {
    Record r{p[i + 1], Read<uint16_t>(p + i + 2), nullptr, 0};
    if (p[i] == kFmtSval) {
      r.payload_bytes = r.value;
      r.payload = p + i + 4;
      if (r.payload_bytes > bytes - i - 4) return false;
      i += 4 + r.payload_bytes;
    } else {
      i += 4;
    }
    fn(r);
  }
  return i == bytes;
}

struct Section {
  std::string_view name;
  const Elf64_Shdr* hdr;
};

bool ParseKernel(const uint8_t* p, size_t bytes, KernelInfo* k, std::string* why) {
  struct Raw {
    bool seen = false;
    Param p{};
  };
  std::vector<Raw> raw;
  uint32_t cbank_size = 0;
  bool bad = false;
  bool ok = ForEachRecord(p, bytes, [&](const Record& r) {
    if (r.attr == kAttrKparamInfo || r.attr == kAttrKparamInfoLarge) {
      if (r.payload_bytes < 12) {
        bad = true;
        return;
      }
      uint16_t ordinal = Read<uint16_t>(r.payload + 4);
      if (ordinal >= raw.size()) raw.resize(ordinal + 1);
      raw[ordinal].seen = true;
      raw[ordinal].p.offset = Read<uint16_t>(r.payload + 6);
      const uint32_t size_word = Read<uint32_t>(r.payload + 8);
      raw[ordinal].p.bytes = r.attr == kAttrKparamInfo ? size_word >> 18 : size_word;
    } else if (r.attr == kAttrCbankParamSize && r.payload == nullptr) {
      cbank_size = r.value;
    } else if (r.attr == kAttrParamCbank && r.payload_bytes >= 8 && cbank_size == 0) {
      cbank_size = Read<uint16_t>(r.payload + 6);
    } else if (r.attr == kAttrMaxThreads && r.payload_bytes >= 12) {
      k->max_threads_per_block =
          static_cast<int>(Read<uint32_t>(r.payload) * Read<uint32_t>(r.payload + 4) *
                           Read<uint32_t>(r.payload + 8));
    }
  });
  if (!ok || bad) {
    *why = "malformed attribute records";
    return false;
  }
  uint32_t end = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (!raw[i].seen) {
      *why = "no size for parameter " + std::to_string(i);
      return false;
    }
    k->params.push_back(raw[i].p);
    end = std::max(end, raw[i].p.offset + raw[i].p.bytes);
  }
  k->param_bytes = cbank_size != 0 ? cbank_size : end;
  if (end > k->param_bytes) {
    *why = "parameters end at " + std::to_string(end) + " past the buffer's " +
           std::to_string(k->param_bytes) + " bytes";
    return false;
  }
  return true;
}

}  // namespace

bool ParseCubin(const uint8_t* data, size_t bytes, Cubin* out, std::string* why) {
  *out = Cubin{};
  if (bytes < sizeof(Elf64_Ehdr) || std::memcmp(data, ELFMAG, SELFMAG) != 0 ||
      data[EI_CLASS] != ELFCLASS64 || data[EI_DATA] != ELFDATA2LSB) {
    *why = "not a 64-bit little-endian ELF";
    return false;
  }
  Elf64_Ehdr eh = Read<Elf64_Ehdr>(data);
  if (eh.e_machine != kEmCuda) {
    *why = "not a CUDA ELF (machine " + std::to_string(eh.e_machine) + ")";
    return false;
  }
  // The architecture: e_flags bits 8..15 in the ABI nvcc 12 and 13 write (EI_ABIVERSION 8),
  // bits 0..7 before.
  out->arch =
      static_cast<int>(data[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > bytes ||
      uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > bytes - eh.e_shoff ||
      eh.e_shstrndx >= eh.e_shnum) {
    *why = "section headers out of range";
    return false;
  }
  // ELF data in a fat binary is 8-byte aligned, so the headers can be used in place.
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(data + eh.e_shoff);
  auto in_file = [&](const Elf64_Shdr& s) {
    return s.sh_type == SHT_NOBITS || (s.sh_offset <= bytes && s.sh_size <= bytes - s.sh_offset);
  };
  for (int i = 0; i < eh.e_shnum; ++i) {
    if (!in_file(sh[i])) {
      *why = "section " + std::to_string(i) + " runs past the file";
      return false;
    }
  }
  const Elf64_Shdr& names = sh[eh.e_shstrndx];
  auto str = [&](const Elf64_Shdr& tab, uint64_t off) -> std::string_view {
    if (off >= tab.sh_size) return {};
    const char* s = reinterpret_cast<const char*>(data + tab.sh_offset + off);
    return std::string_view(s, strnlen(s, tab.sh_size - off));
  };
  std::vector<Section> secs(eh.e_shnum);
  const Elf64_Shdr* symtab = nullptr;
  for (int i = 0; i < eh.e_shnum; ++i) {
    secs[i] = {str(names, sh[i].sh_name), &sh[i]};
    if (sh[i].sh_type == SHT_SYMTAB) symtab = &sh[i];
  }
  // Symbols: names for the module-wide records, and the global variables.
  std::vector<std::string_view> sym_names;
  if (symtab != nullptr && symtab->sh_link < eh.e_shnum &&
      symtab->sh_entsize == sizeof(Elf64_Sym)) {
    const Elf64_Shdr& strtab = sh[symtab->sh_link];
    size_t n = symtab->sh_size / sizeof(Elf64_Sym);
    sym_names.resize(n);
    for (size_t i = 0; i < n; ++i) {
      Elf64_Sym s = Read<Elf64_Sym>(data + symtab->sh_offset + i * sizeof(Elf64_Sym));
      sym_names[i] = str(strtab, s.st_name);
      if (ELF64_ST_TYPE(s.st_info) != STT_OBJECT || s.st_shndx >= eh.e_shnum) continue;
      const Section& home = secs[s.st_shndx];
      bool variable =
          home.name.rfind(".nv.global", 0) == 0 ||
          (home.name.rfind(".nv.constant", 0) == 0 && home.name.rfind(".nv.constant0", 0) != 0);
      if (!variable) continue;
      const uint8_t* init = nullptr;
      if (home.hdr->sh_type != SHT_NOBITS && s.st_value <= home.hdr->sh_size &&
          s.st_size <= home.hdr->sh_size - s.st_value) {
        init = data + home.hdr->sh_offset + s.st_value;
      }
      out->globals[std::string(sym_names[i])] = Global{s.st_size, init};
    }
  }
  constexpr std::string_view kInfo = ".nv.info.", kShared = ".nv.shared.";
  uint32_t const_bytes = 0;
  for (const Section& s : secs) {
    if (s.name == ".nv.constant3") const_bytes = static_cast<uint32_t>(s.hdr->sh_size);
    if (s.name.rfind(kInfo, 0) != 0) continue;
    std::string name(s.name.substr(kInfo.size()));
    KernelInfo& k = out->kernels[name];
    if (!ParseKernel(data + s.hdr->sh_offset, s.hdr->sh_size, &k, why)) {
      *why = name + ": " + *why;
      return false;
    }
  }
  for (const Section& s : secs) {
    if (s.name.rfind(kShared, 0) != 0) continue;
    auto it = out->kernels.find(std::string(s.name.substr(kShared.size())));
    if (it != out->kernels.end()) it->second.shared_bytes = static_cast<uint32_t>(s.hdr->sh_size);
  }
  for (const Section& s : secs) {
    if (s.name != ".nv.info") continue;
    ForEachRecord(data + s.hdr->sh_offset, s.hdr->sh_size, [&](const Record& r) {
      if ((r.attr != kAttrRegcount && r.attr != kAttrFrameSize) || r.payload_bytes < 8) return;
      uint32_t sym = Read<uint32_t>(r.payload);
      if (sym >= sym_names.size()) return;
      auto it = out->kernels.find(std::string(sym_names[sym]));
      if (it == out->kernels.end()) return;
      uint32_t v = Read<uint32_t>(r.payload + 4);
      if (r.attr == kAttrRegcount) {
        it->second.registers = static_cast<int>(v);
      } else {
        it->second.local_bytes = v;
      }
    });
  }
  for (auto& [name, k] : out->kernels) k.const_bytes = const_bytes;
  return true;
}

}  // namespace simgpu::cubin
