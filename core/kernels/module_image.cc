#include "core/kernels/module_image.h"

#include <algorithm>
#include <cstring>

namespace pooch::kernels {
namespace {

constexpr uint32_t kWrapperMagic = 0x466243b1;
constexpr uint32_t kFatBinaryMagic = 0xba55ed50;

template <typename T>
T Read(const uint8_t* p, size_t offset) {
  T v;
  std::memcpy(&v, p + offset, sizeof v);
  return v;
}

ModuleImage FatBinary(const uint8_t* p, size_t max_bytes) {
  const uint16_t header = Read<uint16_t>(p, 6);
  const uint64_t payload = Read<uint64_t>(p, 8);
  if (header < 16 || payload > max_bytes) return {};
  return {ModuleImage::Kind::kFatBinary, p, header + static_cast<size_t>(payload)};
}

// A 64-bit little-endian ELF file: the end of its section table, program headers and sections.
ModuleImage Elf(const uint8_t* p, size_t max_bytes) {
  if (p[4] != 2 || p[5] != 1) return {};  // ELFCLASS64, ELFDATA2LSB
  const uint64_t phoff = Read<uint64_t>(p, 0x20), shoff = Read<uint64_t>(p, 0x28);
  const uint16_t phentsize = Read<uint16_t>(p, 0x36), phnum = Read<uint16_t>(p, 0x38);
  const uint16_t shentsize = Read<uint16_t>(p, 0x3a), shnum = Read<uint16_t>(p, 0x3c);
  if (shoff > max_bytes || phoff > max_bytes || shentsize < 0x40) return {};
  uint64_t end = std::max<uint64_t>(
      {0x40, shoff + uint64_t{shnum} * shentsize, phoff + uint64_t{phnum} * phentsize});
  if (end > max_bytes) return {};
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint8_t* sh = p + shoff + uint64_t{i} * shentsize;
    const uint32_t type = Read<uint32_t>(sh, 4);
    const uint64_t offset = Read<uint64_t>(sh, 0x18), size = Read<uint64_t>(sh, 0x20);
    if (type == 8 /* SHT_NOBITS */) continue;
    if (offset > max_bytes || size > max_bytes) return {};
    end = std::max(end, offset + size);
  }
  if (end > max_bytes) return {};
  return {ModuleImage::Kind::kCubin, p, static_cast<size_t>(end)};
}

}  // namespace

ModuleImage FindModuleImage(const void* image, size_t max_bytes) {
  if (image == nullptr) return {};
  const auto* p = static_cast<const uint8_t*>(image);
  const uint32_t magic = Read<uint32_t>(p, 0);
  if (magic == kWrapperMagic) {
    const void* inner = Read<const void*>(p, 8);
    if (inner == nullptr ||
        Read<uint32_t>(static_cast<const uint8_t*>(inner), 0) != kFatBinaryMagic) {
      return {};
    }
    return FatBinary(static_cast<const uint8_t*>(inner), max_bytes);
  }
  if (magic == kFatBinaryMagic) return FatBinary(p, max_bytes);
  if (std::memcmp(p,
                  "\x7f"
                  "ELF",
                  4) == 0)
    return Elf(p, max_bytes);
  return {};
}

}  // namespace pooch::kernels
