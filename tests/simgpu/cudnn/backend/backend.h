// simgpu libcudnn.so.9: the backend (graph) API's descriptors, as the cudnn_frontend headers
// that PyTorch compiles in drive them (Note [Backend API]).
//
// A cudnnBackendDescriptor_t points to a Desc: its type and one Object holding the attributes.
// Set, Get and Finalize dispatch to the Object; once finalized an Object never changes, so other
// descriptors keep a shared_ptr to it rather than a copy (an operation holds its tensors, a
// graph its operations, an engine its graph...). GetAttribute of a descriptor-valued attribute
// makes the caller's (pre-created) descriptor share the Object.
//
// Note [Backend API]
// ~~~~~~~~~~~~~~~~~~
// What is supported: tensors (any type of 1..8 bytes, any strides, virtual, by value),
// convolution, pointwise, reduction and matmul descriptors and their operations, operation
// graphs of at most one convolution or matmul plus pointwise and reduction operations,
// engines, engine configs, heuristics of every mode, execution plans with a workspace of 0 (as
// the legacy convolutions: a GPU's implicit gemm needs none), variant packs and
// cudnnBackendExecute. What a graph cannot be run as is reported when the operation graph is
// finalized, with NOT_SUPPORTED and one stderr line, as cuDNN reports graphs no engine takes.
//
// Engines (global count 2, no knobs, no behaviour notes, all deterministic):
//   0: the fp32 units. No numerical notes, so it passes PyTorch's deterministic and no-TF32
//      filters; every graph has it.
//   1: tensor cores, numerical note TENSOR_CORE. Only for a convolution or matmul whose data the
//      preset's GPU runs on tensor cores (fp16 from compute capability 7, bf16 and tf32 for fp32
//      data from 8); its FLOPs go at the tensor-core multiple of the fp32 peak that cuBLAS's
//      typed GEMMs use (Note [Typed GEMM timing] in tests/simgpu/cublas/gemm_ex.cc). Heuristics
//      list it first, as cuDNN ranks its tensor-core engines; PyTorch keeps it for half precision
//      and for fp32 when TF32 is allowed (its default for convolutions), and filters it out
//      otherwise. Math mode computes in fp32 on either engine (at least as precise as tf32).
// Execution is one device op: a fused kernel reads every non-virtual input and writes every
// non-virtual output once; virtual tensors cost no memory traffic. Time is the roofline of the
// graph's FLOPs (convolutions and matmuls 2 * multiply-adds, pointwise and reductions one per
// element) and those bytes, the cost model of the legacy calls. In math mode
// (SIMGPU_COMPUTE unset) only fp32 graphs of 2-d convolutions (with symmetric padding) and
// simple pointwise ops compute, through kernels/; everything else asks for timing mode.
//
// Thread safety: as cuDNN, one thread per descriptor at a time; finalized Objects are immutable
// and may be shared across threads.
#ifndef POOCH_TESTS_SIMGPU_CUDNN_BACKEND_H_
#define POOCH_TESTS_SIMGPU_CUDNN_BACKEND_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "tests/simgpu/cudnn/api.h"

namespace simgpu::cudnn::backend {

inline constexpr int kMaxRank = 8;

// The arguments of one cudnnBackendSetAttribute call.
struct SetArgs {
  cudnnBackendAttributeType_t type;
  int64_t count;
  const void* data;
};

// The arguments of one cudnnBackendGetAttribute call.
struct GetArgs {
  cudnnBackendAttributeType_t type;
  int64_t requested;
  int64_t* count;  // may be null
  void* data;      // may be null: then only the count is returned
};

// The attributes of one descriptor. Finalize validates them; afterwards Set fails.
class Object {
 public:
  virtual ~Object() = default;
  virtual cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) = 0;
  virtual cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const = 0;
  virtual cudnnStatus_t Finalize() = 0;
  bool finalized = false;
};

// What a cudnnBackendDescriptor_t points to.
struct Desc {
  static constexpr uint64_t kMagic = 0x73696d67707564ULL;  // "simgpud"
  uint64_t magic = kMagic;
  cudnnBackendDescriptorType_t type;
  std::shared_ptr<Object> object;
};

// The descriptor behind `d`, or null when it is not one of ours (or destroyed).
Desc* FromHandle(cudnnBackendDescriptor_t d);

// A new Object for `type`, or null (with NOT_SUPPORTED's stderr line printed) when simgpu does
// not implement that descriptor type.
std::shared_ptr<Object> NewObject(cudnnBackendDescriptorType_t type);

// Objects of backend_ops.cc's types (tensor, convolution, pointwise, reduction, matmul and
// operation descriptors); null for other types.
std::shared_ptr<Object> NewDataObject(cudnnBackendDescriptorType_t type);

// ---- The finalized contents other descriptors refer to. ----

struct TensorInfo {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int rank = 0;
  int64_t dim[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
  int64_t uid = 0;
  int64_t alignment = 0;
  bool is_virtual = false;
  bool by_value = false;

  int64_t Elements() const;
  // One past the farthest element, in elements.
  int64_t Span() const;
  // Bytes from the base to one past the farthest element.
  uint64_t SpanBytes() const;
  bool SameLayout(const TensorInfo& o) const;
};

// Bytes per element of `t`; 0 for types simgpu cannot size.
int ElementBytes(cudnnDataType_t t);

struct ConvInfo {
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int spatial = 0;
  int64_t pre[kMaxRank] = {}, post[kMaxRank] = {}, dilation[kMaxRank] = {}, stride[kMaxRank] = {};
};

struct PointwiseInfo {
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_ADD;
  cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  double relu_lower = 0.0, relu_upper = 3.4028234663852886e38, relu_slope = 0.0;
  double elu_alpha = 1.0, softplus_beta = 1.0, swish_beta = 1.0;
  int64_t axis = -1;
};

// Operands of pointwise modes.
int PointwiseArity(cudnnPointwiseMode_t mode);  // 1, 2 or 3; 0 for an unknown mode
bool PointwiseBackward(cudnnPointwiseMode_t mode);

struct ReductionInfo {
  cudnnReduceTensorOp_t op = CUDNN_REDUCE_TENSOR_ADD;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
};

struct MatmulInfo {
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
};

// The tensor operands of an operation, by role.
enum Role { kX, kW, kY, kB, kT, kDx, kDy, kDw, kA, kMatB, kC, kRoleCount };

struct OpInfo {
  cudnnBackendDescriptorType_t kind;
  std::shared_ptr<const TensorInfo> tensor[kRoleCount];
  std::shared_ptr<const ConvInfo> conv;
  std::shared_ptr<const PointwiseInfo> pointwise;
  std::shared_ptr<const ReductionInfo> reduction;
  std::shared_ptr<const MatmulInfo> matmul;
  double alpha = 1.0, beta = 0.0, alpha2 = 1.0;

  // Roles read and written, in a fixed order.
  std::vector<Role> Inputs() const;
  std::vector<Role> Outputs() const;
  // FLOPs of this operation on a GPU.
  double Flops() const;
};

// The operation graph as finalized: its operations in an order that respects their data flow,
// the non-virtual tensors it reads and writes, and its cost.
struct GraphInfo {
  cudnnHandle_t handle = nullptr;
  std::vector<std::shared_ptr<const OpInfo>> ops;  // topologically ordered after Finalize
  struct External {
    std::shared_ptr<const TensorInfo> tensor;
    bool read = false;     // an input, or an output whose prior value is blended in (beta != 0)
    bool written = false;  // an output
  };
  std::vector<External> externals;  // one per uid
  double flops = 0, bytes = 0;
  double heavy_flops = 0;            // of its convolution or matmul, which tensor cores speed up
  double tensor_core_speedup = 1.0;  // > 1 when engine 1 runs the graph
};

// Global engine indices (Note [Backend API]).
inline constexpr int64_t kFp32Engine = 0, kTensorCoreEngine = 1, kEngineCount = 2;

struct EngineInfo {
  std::shared_ptr<const GraphInfo> graph;
  int64_t index = kFp32Engine;
};

struct EngineConfigInfo {
  std::shared_ptr<const EngineInfo> engine;
};

struct PlanInfo {
  std::shared_ptr<const EngineConfigInfo> config;
  cudnnHandle_t handle = nullptr;
  int64_t workspace = 0;
};

struct VariantPackInfo {
  std::vector<int64_t> uids;
  std::vector<void*> pointers;
  void* workspace = nullptr;
};

// A finalized operation descriptor's Object sharing `op`.
std::shared_ptr<Object> OpObjectFor(std::shared_ptr<const OpInfo> op);

// Validates the graph's data flow, orders its operations, and decides whether simgpu runs it
// in the current compute mode (NOT_SUPPORTED with one stderr line if not).
cudnnStatus_t FinalizeGraph(GraphInfo* g);

// Validates one operation's operands against each other (shapes, ranks, broadcasts).
cudnnStatus_t ValidateOp(const OpInfo& op);

// Runs a finalized plan over the pack's pointers on the handle's stream.
cudnnStatus_t Execute(cudnnHandle_t handle, const PlanInfo& plan, const VariantPackInfo& pack);

// The Object's contents for descriptor-valued attributes (null when `o` is of another type).
std::shared_ptr<const TensorInfo> TensorOf(const std::shared_ptr<Object>& o);
std::shared_ptr<const ConvInfo> ConvOf(const std::shared_ptr<Object>& o);
std::shared_ptr<const PointwiseInfo> PointwiseOf(const std::shared_ptr<Object>& o);
std::shared_ptr<const ReductionInfo> ReductionOf(const std::shared_ptr<Object>& o);
std::shared_ptr<const MatmulInfo> MatmulOf(const std::shared_ptr<Object>& o);
std::shared_ptr<const OpInfo> OpOf(const std::shared_ptr<Object>& o);
std::shared_ptr<const GraphInfo> GraphOf(const std::shared_ptr<Object>& o);
std::shared_ptr<const EngineInfo> EngineOf(const std::shared_ptr<Object>& o);
std::shared_ptr<const EngineConfigInfo> EngineConfigOf(const std::shared_ptr<Object>& o);
std::shared_ptr<const PlanInfo> PlanOf(const std::shared_ptr<Object>& o);
std::shared_ptr<const VariantPackInfo> VariantPackOf(const std::shared_ptr<Object>& o);

}  // namespace simgpu::cudnn::backend

#endif  // POOCH_TESTS_SIMGPU_CUDNN_BACKEND_H_
