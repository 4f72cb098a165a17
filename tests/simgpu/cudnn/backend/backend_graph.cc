// Finalizing an operation graph: its data flow (uids, virtual tensors, producers, order), the
// subset simgpu runs (Note [Backend API] in backend.h), and the cost of one execution.
#include <map>

#include "backend.h"
#include "gemm_ex.h"
#include "tests/simgpu/device/device.h"

namespace simgpu::cudnn::backend {
namespace {

constexpr const char* kFn = "cudnnBackendFinalize";

bool IsConv(cudnnBackendDescriptorType_t k) {
  return k == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
         k == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
         k == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
}

// Whether math mode computes `op`; if not, prints why (one line) and returns NOT_SUPPORTED.
cudnnStatus_t MathSupports(const OpInfo& op) {
  for (const auto& t : op.tensor) {
    if (t != nullptr && t->type != CUDNN_DATA_FLOAT) {
      return NotSupported(kFn,
                          "data type %d in math mode (only CUDNN_DATA_FLOAT computes; run with "
                          "SIMGPU_COMPUTE=timing)",
                          static_cast<int>(t->type));
    }
    if (t != nullptr && t->by_value) {
      return NotSupported(kFn, "by-value tensors in math mode (run with SIMGPU_COMPUTE=timing)");
    }
  }
  if (IsConv(op.kind)) {
    const ConvInfo& c = *op.conv;
    if (c.spatial != 2) {
      return NotSupported(kFn,
                          "%d-d convolution in math mode (only 2-d computes; run with "
                          "SIMGPU_COMPUTE=timing)",
                          c.spatial);
    }
    if (c.pre[0] != c.post[0] || c.pre[1] != c.post[1]) {
      return NotSupported(kFn, "asymmetric padding in math mode (run with SIMGPU_COMPUTE=timing)");
    }
    return CUDNN_STATUS_SUCCESS;
  }
  if (op.kind == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
    const PointwiseInfo& p = *op.pointwise;
    switch (p.mode) {
      case CUDNN_POINTWISE_ADD:
      case CUDNN_POINTWISE_SUB:
      case CUDNN_POINTWISE_MUL:
      case CUDNN_POINTWISE_MIN:
      case CUDNN_POINTWISE_MAX:
      case CUDNN_POINTWISE_IDENTITY:
        return CUDNN_STATUS_SUCCESS;
      case CUDNN_POINTWISE_RELU_FWD:
      case CUDNN_POINTWISE_SIGMOID_FWD:
      case CUDNN_POINTWISE_TANH_FWD:
        // The activation kernels take x with y's dims and no input scale.
        if (op.alpha == 1.0 && op.tensor[kX]->rank == op.tensor[kY]->rank &&
            op.tensor[kX]->Elements() == op.tensor[kY]->Elements() && p.relu_lower == 0.0 &&
            p.relu_slope == 0.0) {
          return CUDNN_STATUS_SUCCESS;
        }
        return NotSupported(kFn,
                            "this activation's scale, clip or broadcast in math mode (run with "
                            "SIMGPU_COMPUTE=timing)");
      default:
        return NotSupported(kFn, "pointwise mode %d in math mode (run with SIMGPU_COMPUTE=timing)",
                            static_cast<int>(p.mode));
    }
  }
  return NotSupported(
      kFn, "%s in math mode (run with SIMGPU_COMPUTE=timing)",
      op.kind == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR ? "matmul" : "reduction");
}

// How much faster than the fp32 units tensor cores run `op` on the preset's GPU (1: they do not),
// from its data type: fp16 and bf16 on half-precision tensor cores, fp32 as tf32.
double TensorCoreSpeedup(const OpInfo& op) {
  const TensorInfo* data = nullptr;
  if (op.kind == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) {
    data = op.tensor[kA].get();
  } else if (IsConv(op.kind)) {
    data = op.tensor[op.kind == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ? kDy
                                                                                             : kX]
               .get();
  }
  if (data == nullptr) return 1.0;
  const int cc = Device::Get().config().machine.cc_major;
  switch (data->type) {
    case CUDNN_DATA_HALF:
      return blas::RateSpeedup(blas::Rate::kHalf, cc, false);
    case CUDNN_DATA_BFLOAT16:
      return blas::RateSpeedup(blas::Rate::kHalf, cc, true);
    case CUDNN_DATA_FLOAT:
      return blas::RateSpeedup(blas::Rate::kTf32, cc, false);
    default:
      return 1.0;
  }
}

}  // namespace

cudnnStatus_t FinalizeGraph(GraphInfo* g) {
  const size_t n = g->ops.size();
  if (n == 0) return CUDNN_STATUS_BAD_PARAM;

  // One layout per uid; at most one producer per uid.
  std::map<int64_t, std::shared_ptr<const TensorInfo>> tensors;
  std::map<int64_t, size_t> producer;
  std::map<int64_t, int> consumers;
  auto add = [&](const std::shared_ptr<const TensorInfo>& t) {
    auto [it, inserted] = tensors.emplace(t->uid, t);
    return inserted || it->second->SameLayout(*t);
  };
  int heavy = 0;  // convolutions and matmuls
  for (size_t i = 0; i < n; ++i) {
    const OpInfo& op = *g->ops[i];
    heavy += IsConv(op.kind) || op.kind == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR;
    for (Role r : op.Inputs()) {
      if (!add(op.tensor[r])) return CUDNN_STATUS_BAD_PARAM;
      ++consumers[op.tensor[r]->uid];
    }
    for (Role r : op.Outputs()) {
      const TensorInfo& t = *op.tensor[r];
      if (!add(op.tensor[r]) || t.by_value || !producer.emplace(t.uid, i).second) {
        return CUDNN_STATUS_BAD_PARAM;
      }
    }
  }
  for (const auto& [uid, t] : tensors) {
    if (t->is_virtual && (producer.count(uid) == 0 || consumers[uid] == 0)) {
      return CUDNN_STATUS_BAD_PARAM;  // a virtual tensor nobody writes, or nobody reads
    }
  }

  // Order: an operation after the producers of its inputs (Kahn's algorithm).
  std::vector<int> pending(n, 0);
  std::vector<std::vector<size_t>> next(n);
  for (size_t i = 0; i < n; ++i) {
    for (Role r : g->ops[i]->Inputs()) {
      auto p = producer.find(g->ops[i]->tensor[r]->uid);
      if (p == producer.end()) continue;
      if (p->second == i) return CUDNN_STATUS_BAD_PARAM;  // reads its own output
      ++pending[i];
      next[p->second].push_back(i);
    }
  }
  std::vector<std::shared_ptr<const OpInfo>> order;
  std::vector<size_t> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const size_t i = ready.front();
    ready.erase(ready.begin());
    order.push_back(g->ops[i]);
    for (size_t j : next[i]) {
      if (--pending[j] == 0) ready.push_back(j);
    }
  }
  if (order.size() != n) return CUDNN_STATUS_BAD_PARAM;  // a cycle

  // What simgpu runs.
  if (heavy > 1) {
    return NotSupported(kFn, "a graph with %d convolutions or matmuls (at most one is fused)",
                        heavy);
  }
  if (ComputeEnabled()) {
    for (const auto& op : order) SIMGPU_RETURN_IF_ERROR(MathSupports(*op));
  }

  // Cost: every non-virtual input read once, every output written once (and read when a
  // convolution blends its prior value in); virtual tensors stay on chip.
  std::map<int64_t, GraphInfo::External> ext;
  double flops = 0;
  g->heavy_flops = 0;
  g->tensor_core_speedup = 1.0;
  for (const auto& op : order) {
    flops += op->Flops();
    if (IsConv(op->kind) || op->kind == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) {
      g->heavy_flops = op->Flops();
      g->tensor_core_speedup = TensorCoreSpeedup(*op);
    }
    for (Role r : op->Inputs()) {
      if (!op->tensor[r]->is_virtual) {
        ext[op->tensor[r]->uid].tensor = op->tensor[r];
        ext[op->tensor[r]->uid].read = true;
      }
    }
    for (Role r : op->Outputs()) {
      if (op->tensor[r]->is_virtual) continue;
      GraphInfo::External& e = ext[op->tensor[r]->uid];
      e.tensor = op->tensor[r];
      e.written = true;
      e.read = e.read || (IsConv(op->kind) && op->beta != 0.0);
    }
  }
  double bytes = 0;
  g->externals.clear();
  for (const auto& [uid, e] : ext) {
    const double b = static_cast<double>(e.tensor->Elements()) * ElementBytes(e.tensor->type);
    if (!e.tensor->by_value) bytes += b * ((e.read ? 1 : 0) + (e.written ? 1 : 0));
    g->externals.push_back(e);
  }
  g->ops = std::move(order);
  g->flops = flops;
  g->bytes = bytes;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace simgpu::cudnn::backend
