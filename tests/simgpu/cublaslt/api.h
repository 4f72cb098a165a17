// simgpu libcublasLt.so.13: what the library's source files share. The handle struct the public
// header leaves opaque, the descriptors' contents (kept inside the header's fixed-size opaque
// structs, so that the *Init_internal forms could use caller memory as well), and the helpers.
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

#include "tests/simgpu/device/simgpu.h"

struct cublasLtContext {
  int unused = 0;  // a cuBLASLt handle carries no state that matmul needs (stream is per call)
};

#endif  // POOCH_TESTS_SIMGPU_CUBLASLT_API_H_
