// Kernels written for core/kernels' analysis tests (analysis_test.cc): each shows one way a
// kernel may reach memory through its parameters. The build compiles this file for sm_80, sm_90
// and sm_100 into cubins (core/kernels/CMakeLists.txt); the tests disassemble them with nvdisasm
// and check each kernel's verdict. extern "C" keeps the names plain. No #include: nvcc's implicit
// ones suffice, and core/ holds no CUDA header (tests/layers checks).

struct TwoPointers {  // like TensorIterator's arrays of data pointers, passed by value
  float* out;
  const float* in;
  int n;
};

struct Node {
  float* data;
};

extern "C" {

// Out of place: reads word 0x8, writes word 0x0.
__global__ void k_out_of_place(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 2.0f + 1.0f;
}

// In place: reads and writes word 0x0.
__global__ void k_in_place(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f;
}

// Pointers in a struct passed by value: writes word 0x0, reads word 0x8.
__global__ void k_struct(TwoPointers p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) p.out[i] = p.in[i] + 3.0f;
}

// Pointer chasing: the destination is loaded from memory.
__global__ void k_chase(Node* nodes, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) nodes[i].data[0] = 1.0f;
}

// Atomics into the output: writes word 0x0, not replayable (the order of additions is not fixed).
__global__ void k_atomic(float* sum, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(sum, in[i]);
}

// A second output written only when the data says so: both words may be written.
__global__ void k_second_output(float* out, int* flag, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = in[i];
    out[i] = v;
    if (v < 0.0f) flag[0] = 1;
  }
}

// A destination selected by data: either word may be written.
__global__ void k_select(float* a, float* b, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = in[i];
    float* dst = v > 0.0f ? a : b;
    dst[i] = v;
  }
}

// Pointers through local memory: an array of pointers indexed by a runtime value.
__global__ void k_local_pointers(float* a, float* b, float* c, const int* which, int n) {
  float* ptrs[3] = {a, b, c};
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) ptrs[which[i] % 3][i] = 1.0f;
}

// Pointers through shared memory.
__global__ void k_shared_pointers(float* a, float* b, int n) {
  __shared__ float* ptr;
  if (threadIdx.x == 0) ptr = (blockIdx.x & 1) ? a : b;
  __syncthreads();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) ptr[i] = 2.0f;
}

__device__ __noinline__ void store_twice(float* p, int i, float v) {
  p[i] = v;
  p[i + 1] = v;
}

// A device function that is not inlined: writes word 0x0, reads word 0x8.
__global__ void k_noinline(float* out, const float* in, int n) {
  int i = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 1 < n) store_twice(out, i, in[i]);
}

// Vector stores behind an alignment test, as PyTorch's vectorized kernels do.
__global__ void k_vector(float* out, const float* in, int n) {
  int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  bool aligned = ((reinterpret_cast<unsigned long long>(out) |
                   reinterpret_cast<unsigned long long>(in)) & 15) == 0;
  if (aligned && i + 3 < n) {
    float4 v = *reinterpret_cast<const float4*>(in + i);
    v.x += 1.0f; v.y += 1.0f; v.z += 1.0f; v.w += 1.0f;
    *reinterpret_cast<float4*>(out + i) = v;
  } else {
    for (int j = i; j < i + 4 && j < n; ++j) out[j] = in[j] + 1.0f;
  }
}

// A __grid_constant__ struct: writes word 0x0, reads word 0x8.
__global__ void k_grid_constant(const __grid_constant__ TwoPointers p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) p.out[i] = p.in[i] - 1.0f;
}

// A pointer assembled from integer halves of two different words: unknown.
__global__ void k_halves(unsigned long long lo_word, unsigned long long hi_word, int n) {
  unsigned long long addr = (lo_word & 0xffffffffull) | (hi_word & 0xffffffff00000000ull);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) reinterpret_cast<float*>(addr)[i] = 1.0f;
}

// Generic stores: the compiler cannot prove the pointer global (it came through a cast chain).
__global__ void k_generic(float* out, int n, int use_shared) {
  __shared__ float tile[64];
  float* p = use_shared ? tile : out;
  int i = threadIdx.x;
  if (i < n && i < 64) p[i] = 5.0f;
  __syncthreads();
  if (use_shared && i < n && i < 64) out[i] = tile[i];
}

// cp.async copies from global into shared memory, then a global store.
__global__ void k_cp_async(float* out, const float* in, int n) {
  __shared__ __align__(16) float tile[128];
  int i = threadIdx.x;
  if (i < 128 && i < n) {
    unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&tile[i]));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(&in[i]));
  }
  asm volatile("cp.async.commit_group;");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  if (i < 128 && i < n) out[i] = tile[i] * 2.0f;
}

// A pointer that escapes to memory: stores word 0x0's value through word 0x8.
__global__ void k_escape(float* out, float** slot, int n) {
  if (threadIdx.x == 0 && blockIdx.x == 0) slot[0] = out;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.0f;
}

// A by-value functor holding an 8-byte scalar (PyTorch's FillFunctor<long>): its word could hold
// a pointer as far as the layout says, and its value is stored. Exact on the condition of Note
// [Conditional escapes]: word 0x8 escapes.
struct FillValue {
  long long value;
};
__global__ void k_fill_scalar(long long* out, FillValue f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = f.value;
}

// PyTorch's threshold (ReLU's backward): a select between a loaded value and a scalar of a
// by-value struct of two floats. Exact on the same condition: word 0x10 escapes.
struct Threshold {
  float threshold;
  float value;
};
__global__ void k_threshold(float* out, const float* in, Threshold t, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = in[i];
    out[i] = v <= t.threshold ? t.value : v;
  }
}

// A grid-stride loop over 64-bit indices (cnn_train's relu): nvcc keeps the pointer's halves
// apart from a funnel shift's (SHF.L.U64.HI) destination.
__global__ void k_grid_stride(float* y, const float* x, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float v = x[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

// A 64-bit division in the loop (cnn_train's bias add): the pointer stays live across calls of
// nvcc's division subroutines, which other call sites reach with other registers.
__global__ void k_divide_in_loop(float* y, const float* bias, long long n, long long channels,
                                 long long spatial) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = __fadd_rn(bias[(i / spatial) % channels], y[i]);
  }
}

// CUDA's device assert's call (crt/common_functions.h declares it for <cassert>).
__device__ void __assertfail(const char* assertion, const char* file, unsigned int line,
                             const char* function, unsigned long long char_size);

// A failed assert() calls __assertfail through constant bank 4, which halts the kernel (Note
// [System calls]): the rest is followed as without it.
__global__ void k_assert(float* out, const float* in, const int* idx, int n, int m) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int j = idx[i];
    // assert(j >= 0 && j < m) without <cassert>: what the macro expands to.
    if (!(j >= 0 && j < m)) __assertfail("j >= 0 && j < m", "analysis_kernels.cu", 1, "k_assert", 1);
    out[i] = in[j];
  }
}

// The same call sequence to vprintf, which returns, and the pointer it prints escapes to its
// argument buffer in local memory: unknown.
__global__ void k_print_pointer(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) printf("%p\n", out);
  if (i < n) out[i] = in[i];
}

}  // extern "C"
