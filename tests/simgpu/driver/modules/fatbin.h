// fatbin.h: reading the fat binaries nvcc embeds in host programs (Note [Fat binary layout]).
//
// A fat binary holds one entry per target: ELF cubins for real architectures and PTX text for
// virtual ones, each possibly compressed. simgpu never runs device code; it reads a cubin only
// for what the driver must know to launch a kernel (parameter sizes, shared memory; cubin.h).
//
// Thread safety: pure functions over caller-owned bytes.
#ifndef SIMGPU_DRIVER_FATBIN_H_
#define SIMGPU_DRIVER_FATBIN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace simgpu::fatbin {

inline constexpr uint32_t kWrapperMagic = 0x466243b1;  // __fatBinC_Wrapper_t::magic
inline constexpr uint32_t kFatbinMagic = 0xba55ed50;   // the fat binary's own header
inline constexpr uint32_t kElfMagic = 0x464c457f;      // "\x7fELF", little-endian

enum class Kind : uint16_t { kPtx = 1, kElf = 2 };
enum class Compression { kNone, kLz4, kZstd };

// One entry of a fat binary; `payload` points into the fat binary's bytes.
struct Entry {
  Kind kind;
  int arch;  // sm_XY as 10 * X + Y
  Compression compression;
  const uint8_t* payload;
  uint64_t payload_bytes;       // as stored (compressed size rounded up, when compressed)
  uint64_t compressed_bytes;    // the compressed stream's exact size (0 when not compressed)
  uint64_t uncompressed_bytes;  // the payload's size once decompressed
};

// The fat binary's data (its header's magic must be kFatbinMagic): its total size from the
// header, or 0 if `data` is not one.
uint64_t FatbinBytes(const void* data);

// The entries of the fat binary at `data`, `bytes` long (FatbinBytes). False, with `*why` set,
// if the container is malformed (entries past its end, unknown compression flags).
bool ParseFatbin(const void* data, uint64_t bytes, std::vector<Entry>* out, std::string* why);

// The entry's payload, decompressed. False, with `*why` set, if it is corrupt.
bool Decompress(const Entry& e, std::vector<uint8_t>* out, std::string* why);

// ELF entries in the order the driver should search them for a kernel on a device of
// compute capability `arch`: the exact architecture, then lower ones of the same major version
// (binary compatible), then the rest from the closest (Note [Any cubin will do]).
std::vector<const Entry*> CubinSearchOrder(const std::vector<Entry>& entries, int arch);

// An LZ4 block (no frame) decoder, what fatbinary's "speed" compression stores. False if the
// stream is corrupt or does not decode to exactly `out_bytes`.
bool Lz4BlockDecompress(const uint8_t* in, size_t in_bytes, uint8_t* out, size_t out_bytes);

}  // namespace simgpu::fatbin

#endif  // SIMGPU_DRIVER_FATBIN_H_
