// The backend API's descriptor rules, in process (linked against simgpu's libcudnn and the
// device model directly, so sanitizer builds cover them): counts with requestedElementCount 0,
// round trips of set attributes, descriptor-valued results filling the caller's descriptors,
// the one engine and its empty knob and note lists, graph validation (uids, virtual tensors,
// order), and a math-mode execution against the conv kernel called directly.
#include <cstring>
#include <random>

#include "backend_test_util.h"
#include "conv.h"
#include "tests/simgpu/device/device.h"

namespace {

using backend_test::Desc;
using backend_test::MakeConv;
using backend_test::MakeConvOp;
using backend_test::MakeGraph;
using backend_test::MakePack;
using backend_test::MakePlan;
using backend_test::MakeTensor;
using backend_test::Strides;

constexpr cudnnBackendDescriptorType_t kFwd =
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;

class BackendApiTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_CUDNN(cudnnCreate(&handle_)); }
  void TearDown() override { cudnnDestroy(handle_); }

  // x (2, 3, 6, 5) * w (4, 3, 3, 3), pad 1, stride 1 -> y (2, 4, 6, 5), uids 'x', 'w', 'y'.
  void MakeConvGraph(Desc* graph) {
    ASSERT_CUDNN(MakeTensor(&x_, 'x', xdims_, Strides(xdims_)));
    ASSERT_CUDNN(MakeTensor(&w_, 'w', wdims_, Strides(wdims_)));
    ASSERT_CUDNN(MakeTensor(&y_, 'y', ydims_, Strides(ydims_)));
    ASSERT_CUDNN(MakeConv(&conv_, {1, 1}, {1, 1}, {1, 1}));
    ASSERT_CUDNN(MakeConvOp(&op_, kFwd, x_, w_, y_, conv_));
    ASSERT_CUDNN(MakeGraph(graph, handle_, {&op_}));
  }

  cudnnHandle_t handle_ = nullptr;
  const std::vector<int64_t> xdims_{2, 3, 6, 5}, wdims_{4, 3, 3, 3}, ydims_{2, 4, 6, 5};
  Desc x_{CUDNN_BACKEND_TENSOR_DESCRIPTOR}, w_{CUDNN_BACKEND_TENSOR_DESCRIPTOR},
      y_{CUDNN_BACKEND_TENSOR_DESCRIPTOR}, conv_{CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR}, op_{kFwd};
};

TEST_F(BackendApiTest, AttributesRoundTripAndCountsComeWithoutArrays) {
  Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  MakeConvGraph(&graph);
  int64_t n = -1;
  // Count only: no array, requestedElementCount 0.
  ASSERT_CUDNN(cudnnBackendGetAttribute(x_.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 0,
                                        &n, nullptr));
  EXPECT_EQ(n, 4);
  int64_t strides[2] = {};
  ASSERT_CUDNN(cudnnBackendGetAttribute(x_.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 2,
                                        &n, strides));
  EXPECT_EQ(n, 2);  // as many as were asked for
  EXPECT_EQ(strides[0], 3 * 6 * 5);
  EXPECT_EQ(strides[1], 6 * 5);
  int64_t pads[3] = {};
  ASSERT_CUDNN(cudnnBackendGetAttribute(conv_.get(), CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                                        CUDNN_TYPE_INT64, 3, &n, pads));
  EXPECT_EQ(n, 2);
  EXPECT_EQ(pads[0], 1);
  // Wrong type on a get.
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, cudnnBackendGetAttribute(x_.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                                             CUDNN_TYPE_INT32, 1, &n, pads));
  // An operation's tensor comes back into a descriptor the caller created.
  Desc got(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  cudnnBackendDescriptor_t g = got.get();
  ASSERT_CUDNN(cudnnBackendGetAttribute(op_.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &g));
  int64_t uid = 0;
  ASSERT_CUDNN(
      cudnnBackendGetAttribute(g, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &n, &uid));
  EXPECT_EQ(uid, 'y');
  // ... but not into one of another type.
  Desc wrong(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  cudnnBackendDescriptor_t wr = wrong.get();
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM,
            cudnnBackendGetAttribute(op_.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &wr));
  // The graph's operations, and its one engine.
  Desc op_copy(kFwd);
  cudnnBackendDescriptor_t oc = op_copy.get();
  ASSERT_CUDNN(cudnnBackendGetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &oc));
  EXPECT_EQ(n, 1);
  int64_t engines = 0;
  ASSERT_CUDNN(cudnnBackendGetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                        CUDNN_TYPE_INT64, 1, &n, &engines));
  EXPECT_EQ(engines, 2);  // the fp32 units and tensor cores
}

TEST_F(BackendApiTest, OneEngineWithoutKnobsOrNotesInEveryHeuristicMode) {
  Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  MakeConvGraph(&graph);
  for (auto mode :
       {CUDNN_HEUR_MODE_INSTANT, CUDNN_HEUR_MODE_B, CUDNN_HEUR_MODE_FALLBACK, CUDNN_HEUR_MODE_A}) {
    Desc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    int64_t ws = -1;
    MakePlan(handle_, graph, &plan, &ws, mode);
    EXPECT_EQ(ws, 0);
  }
  // An engine built by index, as cudnn_frontend's EngineBuilder does.
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  ASSERT_CUDNN(engine.SetDesc(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph));
  ASSERT_CUDNN(engine.Set1(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, int64_t{0}));
  ASSERT_CUDNN(engine.Finalize());
  Desc knob(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR);
  cudnnBackendDescriptor_t k = knob.get();
  int64_t n = -1;
  ASSERT_CUDNN(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_KNOB_INFO,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &k));
  EXPECT_EQ(n, 0);
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  ASSERT_CUDNN(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                        CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                        &n, notes));
  EXPECT_EQ(n, 0);
  Desc engine1(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  ASSERT_CUDNN(engine1.SetDesc(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph));
  ASSERT_CUDNN(engine1.Set1(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, int64_t{1}));
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED, engine1.Finalize());  // no tf32 tensor cores on a V100
  Desc engine2(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  ASSERT_CUDNN(engine2.SetDesc(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph));
  ASSERT_CUDNN(engine2.Set1(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, int64_t{2}));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, engine2.Finalize());  // past the global count
  // A config naming knob choices the engine does not have; a plan as JSON.
  Desc choice(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
  ASSERT_CUDNN(
      choice.Set1(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, CUDNN_KNOB_TYPE_SWIZZLE));
  ASSERT_CUDNN(choice.Set1(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, int64_t{1}));
  ASSERT_CUDNN(choice.Finalize());
  Desc config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED, config.SetDesc(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, choice));
  ASSERT_CUDNN(config.SetDesc(CUDNN_ATTR_ENGINECFG_ENGINE, engine));
  ASSERT_CUDNN(config.Finalize());
  Desc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  ASSERT_CUDNN(plan.SetDesc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config));
  ASSERT_CUDNN(plan.Finalize());
  EXPECT_EQ(CUDNN_STATUS_NOT_SUPPORTED,
            cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                     CUDNN_TYPE_CHAR, 0, &n, nullptr));
}

TEST_F(BackendApiTest, GraphDataFlowIsValidated) {
  const std::vector<int64_t> d{2, 4, 6, 5};
  Desc a(CUDNN_BACKEND_TENSOR_DESCRIPTOR), v(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      b(CUDNN_BACKEND_TENSOR_DESCRIPTOR), c(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
      a_other(CUDNN_BACKEND_TENSOR_DESCRIPTOR), relu(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  ASSERT_CUDNN(MakeTensor(&a, 'a', d, Strides(d)));
  ASSERT_CUDNN(MakeTensor(&v, 'v', d, Strides(d), CUDNN_DATA_FLOAT, true));
  ASSERT_CUDNN(MakeTensor(&b, 'b', d, Strides(d)));
  ASSERT_CUDNN(MakeTensor(&c, 'c', d, Strides(d)));
  ASSERT_CUDNN(MakeTensor(&a_other, 'a', d, Strides(d, true)));  // same uid, other layout
  ASSERT_CUDNN(
      relu.Set1(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, CUDNN_POINTWISE_RELU_FWD));
  ASSERT_CUDNN(relu.Finalize());
  auto pw = [&](Desc* op, const Desc& x, const Desc& y) {
    EXPECT_EQ(CUDNN_STATUS_SUCCESS,
              op->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, relu));
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, op->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x));
    EXPECT_EQ(CUDNN_STATUS_SUCCESS, op->SetDesc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y));
    return op->Finalize();
  };
  Desc a_to_v(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR),
      v_to_b(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR),
      other_to_c(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR),
      a_to_b(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  ASSERT_CUDNN(pw(&a_to_v, a, v));
  ASSERT_CUDNN(pw(&v_to_b, v, b));
  ASSERT_CUDNN(pw(&other_to_c, a_other, c));
  ASSERT_CUDNN(pw(&a_to_b, a, b));
  Desc ok(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR), unread(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR),
      unwritten(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR),
      two_layouts(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR),
      two_writers(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  ASSERT_CUDNN(MakeGraph(&ok, handle_, {&v_to_b, &a_to_v}));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, MakeGraph(&unread, handle_, {&a_to_v}));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, MakeGraph(&unwritten, handle_, {&v_to_b}));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, MakeGraph(&two_layouts, handle_, {&a_to_b, &other_to_c}));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, MakeGraph(&two_writers, handle_, {&a_to_b, &v_to_b, &a_to_v}));
  // Initialize puts a finalized descriptor back to a fresh one.
  ASSERT_CUDNN(cudnnBackendInitialize(ok.get()));
  EXPECT_EQ(CUDNN_STATUS_BAD_PARAM, ok.Finalize());  // no operations yet
}

// A plan computes what kernels/linear/conv.h computes for the same shape, on device memory.
TEST_F(BackendApiTest, ExecutionComputesTheConvKernelsResult) {
  Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR),
      plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR), pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  MakeConvGraph(&graph);
  int64_t ws = -1;
  MakePlan(handle_, graph, &plan, &ws);
  const size_t nx = 2 * 3 * 6 * 5, nw = 4 * 3 * 3 * 3, ny = 2 * 4 * 6 * 5;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> hx(nx), hw(nw), ref(ny, 0.0f);
  for (float& v : hx) v = dist(rng);
  for (float& v : hw) v = dist(rng);
  void *x, *w, *y;
  simgpu::Device& dev = simgpu::Device::Get();
  ASSERT_EQ(simgpu::Err::kOk, dev.MemAlloc(nx * 4, &x));
  ASSERT_EQ(simgpu::Err::kOk, dev.MemAlloc(nw * 4, &w));
  ASSERT_EQ(simgpu::Err::kOk, dev.MemAlloc(ny * 4, &y));
  std::memcpy(x, hx.data(), nx * 4);
  std::memcpy(w, hw.data(), nw * 4);
  ASSERT_CUDNN(MakePack(&pack, {'w', 'x', 'y'}, {w, x, y}, nullptr));
  ASSERT_CUDNN(cudnnBackendExecute(handle_, plan.get(), pack.get()));

  simgpu::kernels::ConvShape s;
  s.x = simgpu::kernels::Tensor4::Packed(2, 3, 6, 5);
  s.y = simgpu::kernels::Tensor4::Packed(2, 4, 6, 5);
  s.k = 4, s.r = 3, s.s = 3, s.pad_h = 1, s.pad_w = 1;
  simgpu::kernels::ConvForward(s, 1.0f, hx.data(), hw.data(), 0.0f, ref.data(), 1);
  std::vector<float> got(ny);
  std::memcpy(got.data(), y, ny * 4);
  EXPECT_EQ(got, ref);
  for (void* p : {x, w, y}) dev.MemFree(p);
}

}  // namespace
