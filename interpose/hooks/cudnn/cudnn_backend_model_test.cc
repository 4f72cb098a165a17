// Unit tests of the cuDNN backend bookkeeping (cudnn_backend_model.h): descriptors built in the
// order PyTorch's cuDNN frontend builds them, with fake handles (no cuDNN), and what one execute
// reads and writes.
#include "interpose/hooks/cudnn/cudnn_backend_model.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

// A fake descriptor handle.
const void* H(uintptr_t n) { return reinterpret_cast<const void*>(0x1000 * n); }

class BackendModelTest : public ::testing::Test {
 protected:
  void Desc(uintptr_t n, cudnnBackendDescriptorType_t type) { model_.Created(H(n), type); }
  void SetDesc(uintptr_t n, cudnnBackendAttributeName_t name, std::vector<const void*> v) {
    model_.Set(H(n), name, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(v.size()), v.data());
  }
  void SetInts(uintptr_t n, cudnnBackendAttributeName_t name, std::vector<int64_t> v) {
    model_.Set(H(n), name, CUDNN_TYPE_INT64, static_cast<int64_t>(v.size()), v.data());
  }
  void SetFloat(uintptr_t n, cudnnBackendAttributeName_t name, float f) {
    model_.Set(H(n), name, CUDNN_TYPE_FLOAT, 1, &f);
  }
  // A float NCHW tensor, packed.
  void Tensor(uintptr_t n, int64_t uid, std::vector<int64_t> dims, bool is_virtual = false) {
    Desc(n, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const cudnnDataType_t type = CUDNN_DATA_FLOAT;
    model_.Set(H(n), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    std::vector<int64_t> strides(dims.size(), 1);
    for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
    SetInts(n, CUDNN_ATTR_TENSOR_DIMENSIONS, dims);
    SetInts(n, CUDNN_ATTR_TENSOR_STRIDES, strides);
    SetInts(n, CUDNN_ATTR_TENSOR_UNIQUE_ID, {uid});
    const bool v = is_virtual;
    model_.Set(H(n), CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v);
    model_.Finalized(H(n), -1);
  }
  // Graph `g` over `ops`, then heuristics -> config (filled by cuDNN) -> plan `plan`, destroying
  // the graph, its operations and tensors before the plan is finalized, as the frontend does.
  void Plan(uintptr_t g, std::vector<const void*> ops, uintptr_t plan, int64_t workspace,
            std::vector<uintptr_t> destroy) {
    Desc(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    SetDesc(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, ops);
    model_.Finalized(H(g), -1);
    Desc(90, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    SetDesc(90, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, {H(g)});
    model_.Finalized(H(90), -1);
    Desc(91, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    const void* configs[] = {H(91)};
    model_.Returned(H(90), configs, 1);
    model_.Destroyed(H(90));
    model_.Destroyed(H(g));
    for (uintptr_t d : destroy) model_.Destroyed(H(d));
    Desc(g, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);  // the graph's address reused
    Desc(plan, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    SetDesc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, {H(91)});
    model_.Finalized(H(plan), workspace);
  }
  void Pack(uintptr_t n, std::vector<int64_t> uids, std::vector<uintptr_t> pointers,
            uintptr_t workspace) {
    Desc(n, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    SetInts(n, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids);
    model_.Set(H(n), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
               static_cast<int64_t>(pointers.size()), pointers.data());
    model_.Set(H(n), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    model_.Finalized(H(n), -1);
  }
  // A conv forward (x 2x3x8x8, w 4x3x3x3, y 2x4x6x6: uids 'x', 'w', 'y') as op 10, tensors 1-3.
  void ConvForward(float beta) {
    Tensor(1, 'x', {2, 3, 8, 8});
    Tensor(2, 'w', {4, 3, 3, 3});
    Tensor(3, 'y', {2, 4, 6, 6});
    Desc(10, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    SetDesc(10, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, {H(1)});
    SetDesc(10, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, {H(2)});
    SetDesc(10, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, {H(3)});
    SetFloat(10, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1);
    SetFloat(10, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, beta);
    model_.Finalized(H(10), -1);
  }
  const BackendAccess* Access(const ExecuteModel& m, int64_t uid) {
    for (const BackendAccess& a : m.accesses) {
      if (a.uid == uid) return &a;
    }
    return nullptr;
  }

  BackendModel model_;
};

TEST_F(BackendModelTest, ConvolutionForwardReadsXAndWAndWritesY) {
  ConvForward(0);
  Plan(20, {H(10)}, 30, 4096, {10, 1, 2, 3});
  Pack(40, {'x', 'y', 'w'}, {0xA000, 0xC000, 0xB000}, 0xD000);
  absl::StatusOr<ExecuteModel> m = model_.Execute(H(30), H(40));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->accesses.size(), 4u);
  const BackendAccess* x = Access(*m, 'x');
  const BackendAccess* w = Access(*m, 'w');
  const BackendAccess* y = Access(*m, 'y');
  const BackendAccess* ws = Access(*m, -1);
  ASSERT_TRUE(x && w && y && ws);
  EXPECT_EQ(x->address, 0xA000u);
  EXPECT_EQ(x->bytes, 2 * 3 * 8 * 8 * 4);
  EXPECT_EQ(x->role, UidRole::kRead);
  EXPECT_EQ(w->address, 0xB000u);
  EXPECT_EQ(w->bytes, 4 * 3 * 3 * 3 * 4);
  EXPECT_EQ(w->role, UidRole::kRead);
  EXPECT_EQ(y->address, 0xC000u);
  EXPECT_EQ(y->bytes, 2 * 4 * 6 * 6 * 4);
  EXPECT_EQ(y->role, UidRole::kWrite);
  EXPECT_EQ(ws->address, 0xD000u);
  EXPECT_EQ(ws->bytes, 4096);
  EXPECT_EQ(ws->role, UidRole::kWrite);  // Note [Scratch workspaces]
  EXPECT_TRUE(m->plan->replayable);
  EXPECT_EQ(m->plan->ops, "conv_fwd");
}

TEST_F(BackendModelTest, NonZeroBetaReadsTheOutputAndIsNotReplayable) {
  ConvForward(1);
  Plan(20, {H(10)}, 30, 0, {});
  Pack(40, {'x', 'w', 'y'}, {0xA000, 0xB000, 0xC000}, 0);
  absl::StatusOr<ExecuteModel> m = model_.Execute(H(30), H(40));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->accesses.size(), 3u);  // no workspace
  EXPECT_EQ(Access(*m, 'y')->role, UidRole::kReadWrite);
  EXPECT_FALSE(m->plan->replayable);
}

TEST_F(BackendModelTest, BackwardDataAndFilterRoles) {
  Tensor(1, 'x', {2, 3, 8, 8});
  Tensor(2, 'w', {4, 3, 3, 3});
  Tensor(3, 'y', {2, 4, 6, 6});
  Desc(10, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
  SetDesc(10, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, {H(1)});
  SetDesc(10, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, {H(2)});
  SetDesc(10, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, {H(3)});
  SetFloat(10, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, 0);
  Plan(20, {H(10)}, 30, 0, {});
  Pack(40, {'x', 'w', 'y'}, {0xA000, 0xB000, 0xC000}, 0);
  absl::StatusOr<ExecuteModel> m = model_.Execute(H(30), H(40));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(Access(*m, 'x')->role, UidRole::kWrite);
  EXPECT_EQ(Access(*m, 'w')->role, UidRole::kRead);
  EXPECT_EQ(Access(*m, 'y')->role, UidRole::kRead);

  Desc(11, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
  SetDesc(11, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, {H(1)});
  SetDesc(11, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, {H(2)});
  SetDesc(11, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, {H(3)});
  // BETA absent: counted as non-zero (dW read and written).
  Plan(21, {H(11)}, 31, 0, {});
  absl::StatusOr<ExecuteModel> f = model_.Execute(H(31), H(40));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(Access(*f, 'x')->role, UidRole::kRead);
  EXPECT_EQ(Access(*f, 'w')->role, UidRole::kReadWrite);
  EXPECT_EQ(Access(*f, 'y')->role, UidRole::kRead);
  EXPECT_FALSE(f->plan->replayable);
}

TEST_F(BackendModelTest, VirtualTensorsAreNotMemory) {
  // conv -> virtual t -> relu -> z: x, w read; z written; t nowhere.
  Tensor(1, 'x', {2, 3, 8, 8});
  Tensor(2, 'w', {4, 3, 3, 3});
  Tensor(3, 't', {2, 4, 6, 6}, /*is_virtual=*/true);
  Tensor(4, 'z', {2, 4, 6, 6});
  Desc(10, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  SetDesc(10, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, {H(1)});
  SetDesc(10, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, {H(2)});
  SetDesc(10, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, {H(3)});
  SetFloat(10, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0);
  Desc(11, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  SetDesc(11, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, {H(3)});
  SetDesc(11, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, {H(4)});
  Plan(20, {H(10), H(11)}, 30, 0, {});
  Pack(40, {'x', 'w', 'z'}, {0xA000, 0xB000, 0xC000}, 0);
  absl::StatusOr<ExecuteModel> m = model_.Execute(H(30), H(40));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->accesses.size(), 3u);
  EXPECT_EQ(Access(*m, 't'), nullptr);
  EXPECT_EQ(Access(*m, 'z')->role, UidRole::kWrite);
  EXPECT_TRUE(m->plan->replayable);
  EXPECT_EQ(m->plan->ops, "conv_fwd+pointwise");
}

TEST_F(BackendModelTest, ByValueScalarIsNotMemoryAndNotReplayable) {
  // y = x * s, s a host scalar passed by value.
  Tensor(1, 'x', {2, 3});
  Tensor(2, 's', {1, 1});
  const bool by_value = true;
  model_.Set(H(2), CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
  Tensor(3, 'y', {2, 3});
  Desc(10, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  SetDesc(10, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, {H(1)});
  SetDesc(10, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, {H(2)});
  SetDesc(10, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, {H(3)});
  Plan(20, {H(10)}, 30, 0, {});
  Pack(40, {'x', 's', 'y'}, {0xA000, 0x7fff0000, 0xC000}, 0);
  absl::StatusOr<ExecuteModel> m = model_.Execute(H(30), H(40));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->accesses.size(), 2u);
  EXPECT_EQ(Access(*m, 's'), nullptr);
  EXPECT_FALSE(m->plan->replayable);
}

TEST_F(BackendModelTest, StridedTensorSpansToItsLastElement) {
  // 2 x 3 with row stride 5 (padding): the last element is at 1*5 + 2 = 7, so 8 floats.
  Desc(1, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t half = CUDNN_DATA_HALF;
  model_.Set(H(1), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &half);
  SetInts(1, CUDNN_ATTR_TENSOR_DIMENSIONS, {2, 3});
  SetInts(1, CUDNN_ATTR_TENSOR_STRIDES, {5, 1});
  SetInts(1, CUDNN_ATTR_TENSOR_UNIQUE_ID, {7});
  Tensor(2, 8, {2, 3});
  Desc(10, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  SetDesc(10, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, {H(1)});
  SetDesc(10, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, {H(2)});
  Plan(20, {H(10)}, 30, 0, {});
  Pack(40, {7, 8}, {0xA000, 0xB000}, 0);
  absl::StatusOr<ExecuteModel> m = model_.Execute(H(30), H(40));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(Access(*m, 7)->bytes, 8 * 2);
  EXPECT_EQ(Access(*m, 8)->bytes, 6 * 4);
}

TEST_F(BackendModelTest, OpaqueCallsAreErrors) {
  // An operation pooch does not model.
  Tensor(1, 'x', {2, 3, 8, 8});
  Desc(10, CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  Plan(20, {H(10)}, 30, 0, {});
  Pack(40, {'x'}, {0xA000}, 0);
  absl::StatusOr<ExecuteModel> m = model_.Execute(H(30), H(40));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("does not model"), std::string::npos) << m.status();
  EXPECT_EQ(model_.Plan(H(30)), nullptr);

  // A plan not seen built, and one whose config was not.
  EXPECT_FALSE(model_.Execute(H(31), H(40)).ok());
  Desc(32, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  SetDesc(32, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, {H(99)});
  model_.Finalized(H(32), 0);
  EXPECT_FALSE(model_.Execute(H(32), H(40)).ok());

  // A good plan with a pack that names a UID the graph does not, or lacks one it does.
  ConvForward(0);
  Plan(21, {H(10)}, 33, 0, {});
  ASSERT_TRUE(model_.Execute(H(33), H(40)).ok() == false);  // 'w' and 'y' missing
  Pack(41, {'x', 'w', 'y', 'q'}, {0xA000, 0xB000, 0xC000, 0xE000}, 0);
  EXPECT_FALSE(model_.Execute(H(33), H(41)).ok());
  Pack(42, {'x', 'w', 'y'}, {0xA000, 0xB000, 0xC000}, 0);
  EXPECT_TRUE(model_.Execute(H(33), H(42)).ok());
  // A plan whose workspace size could not be read.
  Plan(22, {H(10)}, 34, -1, {});
  EXPECT_FALSE(model_.Execute(H(34), H(42)).ok());
  // A destroyed plan is unknown again.
  model_.Destroyed(H(33));
  EXPECT_FALSE(model_.Execute(H(33), H(42)).ok());
}

}  // namespace
}  // namespace pooch::interpose
