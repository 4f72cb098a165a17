// simgpu libcublasLt.so.13: what the library's source files share. The handle struct the public
// header leaves opaque, and the contents of the descriptors, kept inside the header's
// fixed-size opaque structs (cublasLtMatmulDescOpaque_t and friends: the caller may own that
// memory), so a descriptor is its opaque struct.
//
// Thread safety: handles and descriptors are plain data used by one thread at a time, as in
// cuBLASLt.
#ifndef POOCH_TESTS_SIMGPU_CUBLASLT_API_H_
#define POOCH_TESTS_SIMGPU_CUBLASLT_API_H_

// Only the API is exported (default visibility here, -fvisibility=hidden elsewhere); the
// version script libcublasLt.map puts it under the node "libcublasLt.so.13".
#pragma GCC visibility push(default)
#include <cublasLt.h>
#pragma GCC visibility pop

#include <cstdint>

#include "tests/simgpu/device/simgpu.h"

struct cublasLtContext {
  int unused = 0;  // matmul needs no handle state: the stream and workspace come per call
};

namespace simgpu::cublaslt {

// Set by Create/Init, checked on use: a descriptor that was never created is INVALID_VALUE.
constexpr uint64_t kLayoutMagic = 0x73696d6c61796f75;  // "simlayou"
constexpr uint64_t kDescMagic = 0x73696d6d61746d75;    // "simmatmu"
constexpr uint64_t kPrefMagic = 0x73696d7072656665;    // "simprefe"
// The one algorithm the heuristic returns (cublasLtMatmulAlgo_t::data[0]).
constexpr uint64_t kAlgoId = 0x73696d616c676f31;  // "simalgo1"

struct Layout {
  uint64_t magic;
  uint32_t type;  // cudaDataType
  int32_t order;  // cublasLtOrder_t
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch_count;
  uint32_t batch_mode;  // cublasLtBatchMode_t
  int64_t batch_stride;
  int64_t plane_offset;
};

struct MatmulDesc {
  uint64_t magic;
  int32_t compute;  // cublasComputeType_t
  int32_t scale;    // cudaDataType
  int32_t pointer_mode;
  int32_t transa, transb, transc;
  int32_t fill_mode;
  uint32_t epilogue;
  const void* bias;
  int64_t bias_batch_stride;
  int32_t bias_type;  // -1: D's type
  int32_t aux_type;   // -1: D's type
  void* aux;
  int64_t aux_ld;
  int64_t aux_batch_stride;
  int64_t alpha_vector_batch_stride;
  int32_t sm_count_target;
  int8_t fast_accum;
  // fp8 scaling and emulation: accepted by SetAttribute, refused by matmul when set.
  const void* a_scale;
  const void* b_scale;
  const void* c_scale;
  const void* d_scale;
  void* amax_d;
  const void* aux_scale;
  void* aux_amax;
  const void* d_out_scale;
  int32_t scale_mode[6];  // A, B, C, D, aux, D out
  void* emulation;
};

struct Preference {
  uint64_t magic;
  uint32_t search_mode;
  uint32_t reduction_mask;
  uint64_t max_workspace;
  uint32_t min_alignment[4];  // A, B, C, D
  float max_waves;
  uint64_t impl_mask;
};

static_assert(sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t));
static_assert(sizeof(MatmulDesc) <= sizeof(cublasLtMatmulDescOpaque_t));
static_assert(sizeof(Preference) <= sizeof(cublasLtMatmulPreferenceOpaque_t));

// The descriptor inside an opaque struct, or nullptr if it was not created here.
Layout* LayoutOf(cublasLtMatrixLayout_t p);
MatmulDesc* DescOf(cublasLtMatmulDesc_t p);
Preference* PrefOf(cublasLtMatmulPreference_t p);

// The common protocol of the Get/SetAttribute calls: copies `size` bytes between the caller's
// buffer and a field of `field_size` bytes.
cublasStatus_t SetField(void* field, size_t field_size, const void* buf, size_t size);
cublasStatus_t GetField(const void* field, size_t field_size, void* buf, size_t size,
                        size_t* written);

}  // namespace simgpu::cublaslt

#endif  // POOCH_TESTS_SIMGPU_CUBLASLT_API_H_
