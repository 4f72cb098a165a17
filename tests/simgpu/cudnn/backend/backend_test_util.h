// Test helpers that drive cuDNN's backend API through the toolkit's libcudnn.so.9 in the order
// PyTorch's cudnn_frontend (v1.x, "v0.x" builder API as in aten/src/ATen/native/cudnn/
// Conv_v8.cpp) calls it: tensors, convolution descriptor, operation, operation graph,
// heuristics (count with requestedElementCount 0, then the configs), the deterministic / no-TF32
// note filter, plan (finalize, engine index, knob choices, notes, workspace), variant pack and
// execute. On simgpu these run through LD_LIBRARY_PATH.
#ifndef POOCH_TESTS_SIMGPU_CUDNN_BACKEND_TEST_UTIL_H_
#define POOCH_TESTS_SIMGPU_CUDNN_BACKEND_TEST_UTIL_H_

#include <cuda_runtime.h>
#include <cudnn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace backend_test {

#define ASSERT_CUDA(expr) ASSERT_EQ(cudaSuccess, (expr))
#define ASSERT_CUDNN(expr) ASSERT_EQ(CUDNN_STATUS_SUCCESS, (expr))

// Owns one backend descriptor.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) {
    status_ = cudnnBackendCreateDescriptor(type, &d_);
  }
  ~Desc() {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  cudnnStatus_t status() const { return status_; }

  template <typename T>
  cudnnStatus_t Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                    const std::vector<T>& values) {
    return cudnnBackendSetAttribute(d_, name, type, static_cast<int64_t>(values.size()),
                                    values.data());
  }
  template <typename T>
  cudnnStatus_t Set1(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, T v) {
    return cudnnBackendSetAttribute(d_, name, type, 1, &v);
  }
  cudnnStatus_t SetDesc(cudnnBackendAttributeName_t name, const Desc& other) {
    cudnnBackendDescriptor_t o = other.get();
    return cudnnBackendSetAttribute(d_, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
  }
  cudnnStatus_t Finalize() { return cudnnBackendFinalize(d_); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
  cudnnStatus_t status_;
};

// Packed strides for `dims` in NCHW order, or channels-last when `nhwc`.
inline std::vector<int64_t> Strides(const std::vector<int64_t>& dims, bool nhwc = false) {
  std::vector<int64_t> s(dims.size());
  if (!nhwc) {
    int64_t st = 1;
    for (size_t i = dims.size(); i-- > 0;) {
      s[i] = st;
      st *= dims[i];
    }
    return s;
  }
  // n, c, spatial...: c fastest, then spatial (last fastest), then n.
  int64_t st = dims[1];
  s[1] = 1;
  for (size_t i = dims.size(); i-- > 2;) {
    s[i] = st;
    st *= dims[i];
  }
  s[0] = st;
  return s;
}

inline cudnnStatus_t MakeTensor(Desc* t, int64_t uid, const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& strides,
                                cudnnDataType_t type = CUDNN_DATA_FLOAT, bool is_virtual = false) {
  cudnnStatus_t st;
  if ((st = t->Set1(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, type))) return st;
  if ((st = t->Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims))) return st;
  if ((st = t->Set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides))) return st;
  if ((st = t->Set1(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, uid))) return st;
  if ((st = t->Set1(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, int64_t{16}))) return st;
  if (is_virtual && (st = t->Set1(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, true))) {
    return st;
  }
  return t->Finalize();
}

// A 2-d convolution descriptor: symmetric pads, strides, dilations; fp32 compute.
inline cudnnStatus_t MakeConv(Desc* c, std::vector<int64_t> pad, std::vector<int64_t> stride,
                              std::vector<int64_t> dilation) {
  cudnnStatus_t st;
  const int64_t n = static_cast<int64_t>(pad.size());
  if ((st = c->Set1(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT))) {
    return st;
  }
  if ((st = c->Set1(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE,
                    CUDNN_CROSS_CORRELATION))) {
    return st;
  }
  if ((st = c->Set1(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, n))) return st;
  if ((st = c->Set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, stride))) return st;
  if ((st = c->Set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pad))) return st;
  if ((st = c->Set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, pad))) return st;
  if ((st = c->Set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dilation))) return st;
  return c->Finalize();
}

// The attribute names of one convolution operation kind.
struct ConvAttrs {
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};
inline ConvAttrs AttrsOf(cudnnBackendDescriptorType_t kind) {
  switch (kind) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
    default:
      return {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  }
}

// A convolution operation over x (dx for dgrad), w (dw for wgrad), y (dy for dgrad and wgrad).
inline cudnnStatus_t MakeConvOp(Desc* op, cudnnBackendDescriptorType_t kind, const Desc& x,
                                const Desc& w, const Desc& y, const Desc& conv, float alpha = 1.0f,
                                float beta = 0.0f) {
  const ConvAttrs a = AttrsOf(kind);
  cudnnStatus_t st;
  if ((st = op->SetDesc(a.x, x))) return st;
  if ((st = op->SetDesc(a.y, y))) return st;
  if ((st = op->SetDesc(a.w, w))) return st;
  if ((st = op->SetDesc(a.conv, conv))) return st;
  if ((st = op->Set1(a.alpha, CUDNN_TYPE_FLOAT, alpha))) return st;
  if ((st = op->Set1(a.beta, CUDNN_TYPE_FLOAT, beta))) return st;
  return op->Finalize();
}

inline cudnnStatus_t MakeGraph(Desc* g, cudnnHandle_t handle, const std::vector<const Desc*>& ops) {
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const Desc* op : ops) raw.push_back(op->get());
  cudnnStatus_t st;
  if ((st = g->Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, raw))) return st;
  if ((st = g->Set1(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, handle))) return st;
  return g->Finalize();
}

// True when the config's engine carries a note PyTorch filters out for deterministic fp32
// without TF32 (Conv_v8.cpp's filterEngineConfigs).
inline bool FilteredOut(cudnnBackendDescriptor_t config) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               1, &n, &e) != CUDNN_STATUS_SUCCESS) {
    return true;
  }
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                               notes) != CUDNN_STATUS_SUCCESS) {
    return true;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC ||
        notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
        notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) {
      return true;
    }
  }
  return false;
}

// Heuristics (mode INSTANT), filter, and a finalized plan from the first config that passes,
// with the frontend's post-finalize queries (engine index, knob choices, notes, workspace).
inline void MakePlan(cudnnHandle_t handle, const Desc& graph, Desc* plan, int64_t* workspace,
                     cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_INSTANT) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  ASSERT_CUDNN(heur.SetDesc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph));
  ASSERT_CUDNN(heur.Set1(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, mode));
  ASSERT_CUDNN(heur.Finalize());
  int64_t count = -1;
  ASSERT_CUDNN(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  ASSERT_GE(count, 1);
  std::vector<std::unique_ptr<Desc>> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.push_back(std::make_unique<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back()->get());
  }
  int64_t got = -1;
  ASSERT_CUDNN(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()));
  ASSERT_EQ(got, count);
  cudnnBackendDescriptor_t chosen = nullptr;
  for (cudnnBackendDescriptor_t c : raw) {
    if (!FilteredOut(c)) {
      chosen = c;
      break;
    }
  }
  ASSERT_NE(chosen, nullptr) << "every engine config was filtered out";

  ASSERT_CUDNN(cudnnBackendSetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &chosen));
  ASSERT_CUDNN(plan->Set1(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, handle));
  ASSERT_CUDNN(plan->Finalize());

  // The frontend's tag: engine index and knob choices of the plan's config.
  Desc config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR), engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t c = config.get(), e = engine.get();
  int64_t n = 0;
  ASSERT_CUDNN(cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &c));
  ASSERT_CUDNN(cudnnBackendGetAttribute(c, CUDNN_ATTR_ENGINECFG_ENGINE,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e));
  int64_t index = -1;
  ASSERT_CUDNN(
      cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index));
  EXPECT_GE(index, 0);
  std::vector<std::unique_ptr<Desc>> knobs;
  std::vector<cudnnBackendDescriptor_t> raw_knobs;
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    knobs.push_back(std::make_unique<Desc>(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
    ASSERT_CUDNN(knobs.back()->status());
    raw_knobs.push_back(knobs.back()->get());
  }
  int64_t num_knobs = -1;
  ASSERT_CUDNN(cudnnBackendGetAttribute(c, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS,
                                        &num_knobs, raw_knobs.data()));
  EXPECT_LE(num_knobs, CUDNN_KNOB_TYPE_COUNTS);
  int64_t notes = -1;
  ASSERT_CUDNN(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                        CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT,
                                        &notes, nullptr));
  EXPECT_GE(notes, 0);
  ASSERT_CUDNN(cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                        CUDNN_TYPE_INT64, 1, nullptr, workspace));
  EXPECT_GE(*workspace, 0);
}

// A plan for global engine `index`, built the way cudnn_frontend's EngineBuilder and
// EngineConfigBuilder do (no heuristics).
inline cudnnStatus_t MakePlanForEngine(const Desc& graph, int64_t index, Desc* plan) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR), config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  cudnnStatus_t st;
  if ((st = engine.SetDesc(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph))) return st;
  if ((st = engine.Set1(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, index))) return st;
  if ((st = engine.Finalize())) return st;
  if ((st = config.SetDesc(CUDNN_ATTR_ENGINECFG_ENGINE, engine))) return st;
  if ((st = config.Finalize())) return st;
  if ((st = plan->SetDesc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config))) return st;
  return plan->Finalize();
}

inline cudnnStatus_t MakePack(Desc* pack, const std::vector<int64_t>& uids,
                              const std::vector<void*>& ptrs, void* workspace) {
  cudnnStatus_t st;
  if ((st = pack->Set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ptrs))) {
    return st;
  }
  if ((st = pack->Set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids))) return st;
  if ((st = pack->Set1(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, workspace))) {
    return st;
  }
  return pack->Finalize();
}

}  // namespace backend_test

#endif  // POOCH_TESTS_SIMGPU_CUDNN_BACKEND_TEST_UTIL_H_
