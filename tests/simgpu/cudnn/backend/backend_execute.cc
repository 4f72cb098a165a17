// cudnnBackendExecute: one device op per plan (Note [Backend API] in backend.h). Every
// non-virtual tensor is looked up by uid in the variant pack and becomes an access of the op
// (inputs read, outputs written), so the device's mapping and hazard checks see them all. In
// math mode the body runs the graph's operations in order over kernels/, with virtual tensors
// in host buffers.
#include <map>
#include <vector>

#include "backend.h"
#include "conv.h"
#include "elementwise.h"

namespace simgpu::cudnn::backend {
namespace {

kernels::TensorNd AsNd(const TensorInfo& t) {
  kernels::TensorNd nd;
  nd.rank = t.rank;
  for (int i = 0; i < t.rank; ++i) {
    nd.dim[i] = t.dim[i];
    nd.stride[i] = t.stride[i];
  }
  return nd;
}

kernels::Tensor4 As4(const TensorInfo& t) {
  return {t.dim[0],    t.dim[1],    t.dim[2],    t.dim[3],
          t.stride[0], t.stride[1], t.stride[2], t.stride[3]};
}

// Copies a 4-d filter between its strided layout and the packed k x c x r x s one the conv
// kernels take (to_packed: strided -> packed).
void Repack(const TensorInfo& w, float* strided, float* packed, bool to_packed) {
  const kernels::Tensor4 t = As4(w);
  int64_t i = 0;
  for (int64_t k = 0; k < t.n; ++k)
    for (int64_t c = 0; c < t.c; ++c)
      for (int64_t r = 0; r < t.h; ++r)
        for (int64_t s = 0; s < t.w; ++s, ++i) {
          float& v = strided[t.Offset(k, c, r, s)];
          if (to_packed) {
            packed[i] = v;
          } else {
            v = packed[i];
          }
        }
}

bool Packed(const TensorInfo& w) {
  return w.stride[3] == 1 && w.stride[2] == w.dim[3] && w.stride[1] == w.dim[2] * w.dim[3] &&
         w.stride[0] == w.dim[1] * w.dim[2] * w.dim[3];
}

// The math of one operation; `ptr` resolves a tensor to its data.
template <typename Ptr>
void RunOp(const OpInfo& op, const Ptr& ptr) {
  const int threads = simgpu::Threads();
  const auto a = static_cast<float>(op.alpha), b = static_cast<float>(op.beta);
  switch (op.kind) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: {
      const bool fwd = op.kind == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;
      const bool dgrad = op.kind == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR;
      const bool wgrad = !fwd && !dgrad;
      const TensorInfo& x = *op.tensor[dgrad ? kDx : kX];
      const TensorInfo& w = *op.tensor[wgrad ? kDw : kW];
      const TensorInfo& y = *op.tensor[fwd ? kY : kDy];
      const ConvInfo& c = *op.conv;
      kernels::ConvShape s;
      s.x = As4(x);
      s.y = As4(y);
      s.k = w.dim[0];
      s.r = w.dim[2];
      s.s = w.dim[3];
      s.groups = x.dim[1] / w.dim[1];
      s.pad_h = c.pre[0], s.pad_w = c.pre[1];
      s.stride_h = c.stride[0], s.stride_w = c.stride[1];
      s.dil_h = c.dilation[0], s.dil_w = c.dilation[1];
      s.flip = c.mode == CUDNN_CONVOLUTION;
      float* wp = ptr(w);
      std::vector<float> packed;
      if (!Packed(w)) {
        packed.resize(static_cast<size_t>(w.Elements()));
        if (!wgrad || b != 0.0f) Repack(w, wp, packed.data(), true);
        wp = packed.data();
      }
      if (fwd) kernels::ConvForward(s, a, ptr(x), wp, b, ptr(y), threads);
      if (dgrad) kernels::ConvBackwardData(s, a, wp, ptr(y), b, ptr(x), threads);
      if (wgrad) {
        kernels::ConvBackwardFilter(s, a, ptr(x), ptr(y), b, wp, threads);
        if (!packed.empty()) Repack(w, ptr(w), packed.data(), false);
      }
      return;
    }
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: {
      const PointwiseInfo& p = *op.pointwise;
      const TensorInfo& x = *op.tensor[kX];
      const TensorInfo& y = *op.tensor[kY];
      const auto a2 = static_cast<float>(op.alpha2);
      switch (p.mode) {
        case CUDNN_POINTWISE_ADD:
        case CUDNN_POINTWISE_SUB:
        case CUDNN_POINTWISE_MUL:
        case CUDNN_POINTWISE_MIN:
        case CUDNN_POINTWISE_MAX: {
          const TensorInfo& bt = *op.tensor[kB];
          kernels::TensorOp t = p.mode == CUDNN_POINTWISE_MUL   ? kernels::TensorOp::kMul
                                : p.mode == CUDNN_POINTWISE_MIN ? kernels::TensorOp::kMin
                                : p.mode == CUDNN_POINTWISE_MAX ? kernels::TensorOp::kMax
                                                                : kernels::TensorOp::kAdd;
          // x - b is x + (-1 * b): the operand scale carries the sign.
          const float scale2 = p.mode == CUDNN_POINTWISE_SUB ? -a2 : a2;
          kernels::OpTensor(t, AsNd(x), ptr(x), a, AsNd(bt), ptr(bt), scale2, AsNd(y), 0.0f, ptr(y),
                            threads);
          return;
        }
        case CUDNN_POINTWISE_IDENTITY:
          kernels::AddTensor(AsNd(x), ptr(x), a, AsNd(y), 0.0f, ptr(y), threads);
          return;
        default: {
          kernels::Activation act =
              p.mode == CUDNN_POINTWISE_SIGMOID_FWD ? kernels::Activation::kSigmoid
              : p.mode == CUDNN_POINTWISE_TANH_FWD  ? kernels::Activation::kTanh
                                                    : kernels::Activation::kRelu;
          double coef = 0.0;
          if (act == kernels::Activation::kRelu && p.relu_upper < 3.4e38) {
            act = kernels::Activation::kClippedRelu;
            coef = p.relu_upper;
          }
          kernels::ActivationForward(act, coef, true, AsNd(x), ptr(x), AsNd(y), 1.0f, 0.0f, ptr(y),
                                     threads);
          return;
        }
      }
    }
    default:
      return;  // FinalizeGraph admits nothing else in math mode
  }
}

}  // namespace

cudnnStatus_t Execute(cudnnHandle_t handle, const PlanInfo& plan, const VariantPackInfo& pack) {
  CheckConfigOrExit();
  const GraphInfo& g = *plan.config->engine->graph;
  std::map<int64_t, void*> by_uid;
  for (size_t i = 0; i < pack.uids.size(); ++i) by_uid[pack.uids[i]] = pack.pointers[i];

  std::vector<Access> accesses;
  for (const GraphInfo::External& e : g.externals) {
    auto it = by_uid.find(e.tensor->uid);
    if (it == by_uid.end() || it->second == nullptr) return CUDNN_STATUS_BAD_PARAM;
    if (e.tensor->by_value) continue;  // a host scalar, not device memory
    const size_t bytes = e.tensor->SpanBytes();
    if (e.read) accesses.push_back({it->second, bytes, false});
    if (e.written) accesses.push_back({it->second, bytes, true});
  }
  if (plan.workspace > 0) {
    if (pack.workspace == nullptr) return CUDNN_STATUS_BAD_PARAM;
    accesses.push_back({pack.workspace, static_cast<size_t>(plan.workspace), true});
  }

  // Engine 1 runs the convolution or matmul on tensor cores (Note [Backend API]).
  double flops = g.flops;
  if (plan.config->engine->index == kTensorCoreEngine) {
    flops = g.flops - g.heavy_flops + g.heavy_flops / g.tensor_core_speedup;
  }
  Err e = Launch("cudnnBackendExecute", handle->stream, accesses.data(), accesses.size(), flops,
                 g.bytes, [&] {
                   std::map<int64_t, std::vector<float>> scratch;  // virtual tensors
                   auto ptr = [&](const TensorInfo& t) -> float* {
                     if (!t.is_virtual) return static_cast<float*>(by_uid[t.uid]);
                     std::vector<float>& v = scratch[t.uid];
                     v.resize(static_cast<size_t>(t.Span()));
                     return v.data();
                   };
                   for (const auto& op : g.ops) RunOp(*op, ptr);
                 });
  return FromErr(e);
}

}  // namespace simgpu::cudnn::backend
