// A cubin's kernels and their parameter layouts, from its ELF attribute records (.nv.info.<kernel>:
// EIATTR_KPARAM_INFO 0x17, its large-parameter form 0x45, EIATTR_PARAM_CBANK 0x0a,
// EIATTR_CBANK_PARAM_SIZE 0x19), the architecture from the ELF header's flags, and the symbols
// constant bank 4 holds addresses of (its relocations).
#ifndef POOCH_CORE_KERNELS_CUBIN_INFO_H_
#define POOCH_CORE_KERNELS_CUBIN_INFO_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pooch::kernels {

struct CubinParam {
  int ordinal = 0;
  int offset = 0;  // in the parameter buffer
  int size = 0;    // bytes
};

struct CubinKernel {
  std::string name;       // mangled
  int cbank_offset = -1;  // where bank 0 holds the parameters; -1 when the cubin does not say
  int params_size = 0;    // bytes
  std::vector<CubinParam> params;
};

// A function symbol of the ELF symbol table: its index is what `nvdisasm -fun` takes.
struct CubinFunction {
  std::string name;
  int index = 0;
};

struct CubinInfo {
  int sm = 0;  // 90 for sm_90
  std::vector<CubinKernel> kernels;
  std::vector<CubinFunction> functions;  // STT_FUNC symbols, kernels and device functions
  // Constant bank 4's words that the loader fills with a symbol's 64-bit address: offset to the
  // symbol's name, from .rel(a).nv.constant4 (relocation type 2, no addend). nvcc loads a system
  // call's address from there before `CALL.ABS.NOINC` (`__assertfail`, `vprintf`).
  std::map<int, std::string> bank4_symbols;
};

// Whether `bytes` start like an ELF file.
bool IsElf(absl::string_view bytes);

// Reads a cubin (an ELF64 with machine EM_CUDA). Errors name what is malformed.
absl::StatusOr<CubinInfo> ReadCubinInfo(absl::string_view bytes);

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_CUBIN_INFO_H_
