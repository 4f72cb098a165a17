// The fat binary container and its two compressions.
//
// Note [Fat binary layout]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// NVIDIA does not document the container; this is what nvcc 13.0 writes and what torch 2.15's
// libtorch_cuda.so holds (checked field by field, fatbin_test.cc). All fields little-endian.
//   __fatBinC_Wrapper_t (fatbinary_section.h; the pointer given to __cudaRegisterFatBinary):
//     u32 magic 0x466243b1, u32 version, const void* data, void* filename_or_fatbins.
//   data -> fat binary header, 16 bytes:
//     u32 magic 0xba55ed50, u16 version (1), u16 header bytes (16), u64 bytes of the entries.
//   Entries follow the header back to back. Each is a header and its payload:
//     0x00 u16 kind (1 PTX, 2 ELF)     0x02 u16 version (0x101)     0x04 u32 header bytes
//     0x08 u64 payload bytes (as stored; a compressed payload is padded to 8 bytes)
//     0x10 u32 compressed bytes (exact; 0 when not compressed)
//     0x18 u16 minor, 0x1a u16 major: the ELF/PTX format version (1.8)
//     0x1c u32 arch (sm_XY as 10 * X + Y)
//     0x28 u64 flags: 0x2000 LZ4-compressed (nvcc -compress-mode=speed), 0x8000
//          zstd-compressed (-compress-mode=size/default/balance, and torch's entries)
//     0x38 u64 uncompressed payload bytes (0 when not compressed)
//   The header is 64 bytes for most entries and 104 for some (torch's sm_100 and sm_120, flag
//   0x1000000); the header-bytes field says which, and nothing beyond 0x40 is read here.
//   The payload of a compressed entry is an LZ4 block (no frame) or a zstd frame.
#include "tests/simgpu/driver/modules/fatbin.h"

#include <zstd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace simgpu::fatbin {
namespace {

constexpr uint64_t kFlagLz4 = 0x2000;
constexpr uint64_t kFlagZstd = 0x8000;
constexpr uint32_t kMinEntryHeader = 0x40;

template <typename T>
T Read(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

uint64_t FatbinBytes(const void* data) {
  if (data == nullptr) return 0;
  const auto* p = static_cast<const uint8_t*>(data);
  if (Read<uint32_t>(p) != kFatbinMagic) return 0;
  return uint64_t{Read<uint16_t>(p + 6)} + Read<uint64_t>(p + 8);
}

bool ParseFatbin(const void* data, uint64_t bytes, std::vector<Entry>* out, std::string* why) {
  out->clear();
  const auto* base = static_cast<const uint8_t*>(data);
  if (bytes < 16 || Read<uint32_t>(base) != kFatbinMagic) {
    *why = "not a fat binary (bad magic)";
    return false;
  }
  uint64_t header = Read<uint16_t>(base + 6);
  uint64_t end = header + Read<uint64_t>(base + 8);
  if (header < 16 || end > bytes) {
    *why = "fat binary header sizes exceed its data";
    return false;
  }
  for (uint64_t off = header; off < end;) {
    const uint8_t* h = base + off;
    if (end - off < kMinEntryHeader) {
      *why = "truncated entry header at offset " + std::to_string(off);
      return false;
    }
    uint32_t entry_header = Read<uint32_t>(h + 4);
    uint64_t payload = Read<uint64_t>(h + 8);
    if (entry_header < kMinEntryHeader || entry_header > end - off ||
        payload > end - off - entry_header) {
      *why = "entry at offset " + std::to_string(off) + " runs past the fat binary";
      return false;
    }
    Entry e;
    e.kind = static_cast<Kind>(Read<uint16_t>(h));
    e.arch = static_cast<int>(Read<uint32_t>(h + 0x1c));
    uint64_t flags = Read<uint64_t>(h + 0x28);
    if ((flags & kFlagLz4) != 0 && (flags & kFlagZstd) != 0) {
      *why = "entry at offset " + std::to_string(off) + " claims two compressions";
      return false;
    }
    e.compression = (flags & kFlagZstd) != 0  ? Compression::kZstd
                    : (flags & kFlagLz4) != 0 ? Compression::kLz4
                                              : Compression::kNone;
    e.payload = h + entry_header;
    e.payload_bytes = payload;
    if (e.compression == Compression::kNone) {
      e.compressed_bytes = 0;
      e.uncompressed_bytes = payload;
    } else {
      e.compressed_bytes = Read<uint32_t>(h + 0x10);
      e.uncompressed_bytes = Read<uint64_t>(h + 0x38);
      if (e.compressed_bytes == 0 || e.compressed_bytes > payload) {
        *why = "compressed entry at offset " + std::to_string(off) + " has a bad size";
        return false;
      }
    }
    out->push_back(e);
    off += entry_header + payload;
  }
  return true;
}

bool Lz4BlockDecompress(const uint8_t* in, size_t in_bytes, uint8_t* out, size_t out_bytes) {
  size_t i = 0, o = 0;
  // Reads a length extension: bytes of 255 continue it.
  auto extend = [&](size_t* len) {
    uint8_t b;
    do {
      if (i >= in_bytes) return false;
      b = in[i++];
      *len += b;
    } while (b == 255);
    return true;
  };
  while (i < in_bytes) {
    uint8_t token = in[i++];
    size_t literals = token >> 4;
    if (literals == 15 && !extend(&literals)) return false;
    if (literals > in_bytes - i || literals > out_bytes - o) return false;
    std::memcpy(out + o, in + i, literals);
    i += literals;
    o += literals;
    if (i == in_bytes) break;  // the last sequence has literals only
    if (in_bytes - i < 2) return false;
    size_t offset = in[i] | (size_t{in[i + 1]} << 8);
    i += 2;
    if (offset == 0 || offset > o) return false;
    size_t match = (token & 15);
    if (match == 15 && !extend(&match)) return false;
    match += 4;
    if (match > out_bytes - o) return false;
    // Byte by byte: a match may overlap the bytes it produces (offset < length).
    for (size_t k = 0; k < match; ++k, ++o) out[o] = out[o - offset];
  }
  return o == out_bytes;
}

bool Decompress(const Entry& e, std::vector<uint8_t>* out, std::string* why) {
  switch (e.compression) {
    case Compression::kNone:
      out->assign(e.payload, e.payload + e.payload_bytes);
      return true;
    case Compression::kLz4:
      out->resize(e.uncompressed_bytes);
      if (!Lz4BlockDecompress(e.payload, e.compressed_bytes, out->data(), out->size())) {
        *why = "corrupt LZ4 payload";
        return false;
      }
      return true;
    case Compression::kZstd: {
      out->resize(e.uncompressed_bytes);
      size_t n = ZSTD_decompress(out->data(), out->size(), e.payload, e.compressed_bytes);
      if (ZSTD_isError(n) || n != e.uncompressed_bytes) {
        *why = std::string("corrupt zstd payload: ") +
               (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "size differs from the header's");
        return false;
      }
      return true;
    }
  }
  *why = "unknown compression";
  return false;
}

// Note [Any cubin will do]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A GPU runs only a cubin of its own architecture family (or JIT-compiles PTX). simgpu runs no
// device code and reads a cubin only for the kernel's parameter layout, which nvcc derives from the
// source and is the same for every architecture. So any ELF entry serves, and simgpu does not
// refuse a module that has no code for the preset's architecture (torch 2.15's cu130 wheel has none
// for the V100's sm_70). The order prefers the entry a GPU would load, then the closest, which
// keeps decompression small (torch's sm_75 entries are a quarter of its sm_80 ones).
std::vector<const Entry*> CubinSearchOrder(const std::vector<Entry>& entries, int arch) {
  std::vector<const Entry*> elf;
  for (const Entry& e : entries) {
    if (e.kind == Kind::kElf) elf.push_back(&e);
  }
  auto rank = [arch](const Entry* e) {
    if (e->arch == arch) return 0;
    if (e->arch / 10 == arch / 10 && e->arch < arch) return 1000 + (arch - e->arch);
    return 2000 + std::abs(e->arch - arch);
  };
  std::stable_sort(elf.begin(), elf.end(),
                   [&](const Entry* a, const Entry* b) { return rank(a) < rank(b); });
  return elf;
}

}  // namespace simgpu::fatbin
