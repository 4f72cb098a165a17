// nccl_abi_test: pooch's declaration of NCCL's ABI (interpose/symbols/nccl_api.h) against the
// real nccl.h that CMake found (PyTorch's nvidia-nccl wheel, or the toolkit's). Compiling is most
// of the test: every NCCL hook of hooked_symbols.def has the real header's signature, and every
// result, datatype and operation value pooch declares is the real one; a datatype NCCL added
// after pooch's list would leave ncclNumTypes different, and the test fails until NcclTypeBytes
// (interpose/hooks/nccl/nccl_ranges.cc) knows it.
#include <nccl.h>  // the real one, first: nccl_api.h's declarations then stand aside
#ifndef NCCL_MAJOR
#error "nccl.h here is not NCCL's own (something included pooch's nccl_api.h first)"
#endif

#include <type_traits>

#include "gtest/gtest.h"

// pooch's, as types only, in a namespace of their own.
namespace pooch_nccl {
#undef NCCL_H_
#define POOCH_NCCL_TYPES_ONLY
#include "interpose/symbols/nccl_api.h"
#undef POOCH_NCCL_TYPES_ONLY
}  // namespace pooch_nccl

// The hooks' signatures, as hooked_symbols.def writes them, are the real header's (only the NCCL
// lines are expanded: the others name types of headers this file does not include).
#define POOCH_SAME_SIGNATURE(ret, name, params) \
  static_assert(std::is_same_v<decltype(&::name), ret(*) params>, #name);
#define POOCH_LINE_NCCL(ret, name, params) POOCH_SAME_SIGNATURE(ret, name, params)
#define POOCH_LINE_CUDART(ret, name, params)
#define POOCH_LINE_CUDA(ret, name, params)
#define POOCH_LINE_CUDNN(ret, name, params)
#define POOCH_LINE_CUBLAS(ret, name, params)
#define POOCH_LINE_CUBLASLT(ret, name, params)
#define POOCH_HOOK(lib, ret, name, params, args) POOCH_LINE_##lib(ret, name, params)
#define POOCH_REAL(lib, ret, name, params) POOCH_LINE_##lib(ret, name, params)
#define POOCH_DRIVER_HOOK(ret, name, params, args, query, version)
#define POOCH_DRIVER_HOOK_PT(ret, name, params, args, query, version)
#include "interpose/symbols/hooked_symbols.def"

#define SAME(name) \
  static_assert(static_cast<long>(::name) == static_cast<long>(pooch_nccl::name), #name)
SAME(ncclSuccess);
SAME(ncclUnhandledCudaError);
SAME(ncclSystemError);
SAME(ncclInternalError);
SAME(ncclInvalidArgument);
SAME(ncclInvalidUsage);
SAME(ncclRemoteError);
SAME(ncclInProgress);
SAME(ncclTimeout);
SAME(ncclNumResults);
SAME(ncclSum);
SAME(ncclProd);
SAME(ncclMax);
SAME(ncclMin);
SAME(ncclAvg);
SAME(ncclNumOps);
SAME(ncclMaxRedOp);
SAME(ncclInt8);
SAME(ncclUint8);
SAME(ncclInt32);
SAME(ncclUint32);
SAME(ncclInt64);
SAME(ncclUint64);
SAME(ncclFloat16);
SAME(ncclFloat32);
SAME(ncclFloat64);
SAME(ncclBfloat16);
SAME(ncclFloat8e4m3);
SAME(ncclFloat8e5m2);
SAME(ncclNumTypes);
#undef SAME
static_assert(sizeof(::ncclResult_t) == sizeof(pooch_nccl::ncclResult_t));
static_assert(sizeof(::ncclDataType_t) == sizeof(pooch_nccl::ncclDataType_t));
static_assert(sizeof(::ncclRedOp_t) == sizeof(pooch_nccl::ncclRedOp_t));
static_assert(std::is_same_v<::ncclComm_t, pooch_nccl::ncclComm_t> ||
              sizeof(::ncclComm_t) == sizeof(pooch_nccl::ncclComm_t));

TEST(NcclAbiTest, TheRealHeaderIsTheOneCompiledAgainst) {
  EXPECT_GE(NCCL_MAJOR, 2);
  EXPECT_EQ(static_cast<int>(ncclNumTypes), 12);
}
