// Fully connected layer y = x W^T + b with cuBLAS, x flattened to [N, K] (K = C*H*W),
// W [M, K] and y [N, M], all row-major. cuBLAS is column-major, so a row-major [R, C] matrix is
// its transpose as a column-major C x R matrix with leading dimension C; the gemms below are
// written in that view:
//   forward      y^T (M x N)  = W (col-major K x M)^T * x^T (K x N)
//   weight grad  W^T (K x M)  = x^T (K x N) * dy (col-major M x N)^T
//   input grad   x^T (K x N)  = W^T (K x M) * dy^T (M x N)
//   bias grad    db (M)       = dy^T (M x N) * ones (N)
#include <map>
#include <memory>

#include "checks.h"
#include "kernels/own_kernels.h"
#include "layers/layer.h"

namespace cnn_train {
namespace {

class Linear final : public Layer {
 public:
  Linear(Dims in, int out_features)
      : k_(in.count()), m_(out_features), bias_desc_(1, out_features, 1, 1) {
    out_ = {out_features, 1, 1};
    params_.push_back({"weight", int64_t{k_} * m_, Init::kFanInUniform, k_});
    params_.push_back({"bias", m_, Init::kZero, k_});
  }

  const char* kind() const override { return "linear"; }
  bool backward_reads_output() const override { return false; }

  void Forward(Context& ctx, const ForwardArgs& args) override {
    const float one = 1.0f;
    const float zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, m_, args.batch, k_, &one,
                             params_[0].value, k_, args.x[0], k_, &zero, args.y, m_));
    if (ctx.own_kernels) {
      CUDA_CHECK(LaunchBiasAdd(args.y, params_[1].value, int64_t{args.batch} * m_, m_, 1));
      return;
    }
    CUDNN_CHECK(cudnnAddTensor(ctx.cudnn, &one, bias_desc_.get(), params_[1].value, &one,
                               DescFor(args.batch).get(), args.y));
  }

  void Backward(Context& ctx, const BackwardArgs& args) override {
    const float one = 1.0f;
    const float zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_T, k_, m_, args.batch, &one,
                             args.x[0], k_, args.dy, m_, &zero, params_[0].grad, k_));
    CUBLAS_CHECK(cublasSgemv(ctx.cublas, CUBLAS_OP_N, m_, args.batch, &one, args.dy, m_, ctx.ones,
                             1, &zero, params_[1].grad, 1));
    if (args.dx[0] != nullptr) {
      CUBLAS_CHECK(cublasSgemm(ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, k_, args.batch, m_, &one,
                               params_[0].value, k_, args.dy, m_, &args.dx_beta[0], args.dx[0],
                               k_));
    }
  }

 private:
  const TensorDesc& DescFor(int batch) {
    auto& desc = descs_[batch];
    if (!desc) desc = std::make_unique<TensorDesc>(batch, m_, 1, 1);
    return *desc;
  }

  int k_;  // input features
  int m_;  // output features
  TensorDesc bias_desc_;
  std::map<int, std::unique_ptr<TensorDesc>> descs_;
};

}  // namespace

std::unique_ptr<Layer> MakeLinear(Dims in, int out_features) {
  return std::make_unique<Linear>(in, out_features);
}

}  // namespace cnn_train
