// module_image.h: the extent of a module image the program hands the CUDA runtime or driver
// (__cudaRegisterFatBinary's wrapper, cuModuleLoadData's and cuLibraryLoadData's image), found
// from its headers alone, so that pooch keeps the image by pointer and reads it only when a
// kernel of it first launches (Note [Verdicts at launch] in interpose/kernels/launch_verdicts.h).
//
// The layouts (fatbinary_section.h and the ELF standard):
//   wrapper    {u32 magic 0x466243b1, u32 version, const void* fat binary, void* extra}
//   fat binary {u32 magic 0xba55ed50, u16 version, u16 header bytes, u64 payload bytes}, the
//              entries (cubins for one architecture each, PTX, possibly compressed) follow
//   cubin      a 64-bit ELF file: its extent is the furthest of its headers and sections
// Anything else (PTX text, a 32-bit ELF) is kOther: no SASS to analyse.
#ifndef POOCH_CORE_KERNELS_MODULE_IMAGE_H_
#define POOCH_CORE_KERNELS_MODULE_IMAGE_H_

#include <cstddef>
#include <cstdint>

namespace pooch::kernels {

struct ModuleImage {
  enum class Kind { kOther, kFatBinary, kCubin };
  Kind kind = Kind::kOther;
  const uint8_t* data = nullptr;  // the fat binary (past a wrapper) or the ELF file
  size_t size = 0;
};

// What `image` holds and where it ends; kOther for null or an unknown magic. A fat binary's or
// ELF file's sizes larger than `max_bytes` are refused (kOther): a corrupt header must not make
// pooch read past the mapping.
ModuleImage FindModuleImage(const void* image, size_t max_bytes = size_t{1} << 32);

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_MODULE_IMAGE_H_
