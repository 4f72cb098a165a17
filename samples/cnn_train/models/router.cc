#include "models/router.h"

#include <cmath>
#include <utility>

#include "checks.h"
#include "rng.h"

namespace cnn_train {

Router::Router(std::string name, Dims in, int outputs)
    : name_(std::move(name)),
      in_(in),
      outputs_(outputs),
      pool_(MakeGlobalAvgPool(in)),
      state_(std::make_shared<State>()) {}

Router::~Router() {
  if (owner_memory_ != nullptr) owner_memory_->Free(state_->weight);
}

void Router::Init(Context& ctx, uint64_t seed) {
  const int64_t count = int64_t{outputs_} * in_.c;
  std::vector<float> host(count);
  SplitMix64 rng(Mix64(seed ^ 0x60a7e5c0de000000ULL));
  const float limit = 1.0f / std::sqrt(static_cast<float>(in_.c));
  for (float& w : host) w = rng.NextSymmetric(limit);
  state_->weight = ctx.memory->AllocateFloats(count, name_ + ".weight");
  owner_memory_ = ctx.memory;
  CUDA_CHECK(
      cudaMemcpy(state_->weight, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  state_->mean.assign(outputs_, 0.0f);
}

void Router::Share(const Router& owner) {
  if (owner.outputs_ != outputs_ || owner.in_.c != in_.c) {
    Fail(kExitApiError, "internal error: %s shares a router of another shape", name_.c_str());
  }
  state_ = owner.state_;
}

std::vector<float> Router::Route(Context& ctx, int batch, const float* x) {
  const int channels = in_.c;
  float* pooled = ctx.memory->AllocateFloats(int64_t{batch} * channels, name_ + " pooled");
  float* scores = ctx.memory->AllocateFloats(int64_t{batch} * outputs_, name_ + " scores");
  float* mean = ctx.memory->AllocateFloats(outputs_, name_ + " mean");
  ForwardArgs args;
  args.batch = batch;
  args.x = {x};
  args.y = pooled;
  pool_->Forward(ctx, args);
  // Row-major [N, C] x [E, C]^T = [N, E], in cuBLAS's column-major view as in linear.cc:
  // scores^T (E x N) = W (col-major C x E)^T * pooled^T (C x N).
  const float one = 1.0f;
  const float zero = 0.0f;
  const float inv_batch = 1.0f / static_cast<float>(batch);
  CUBLAS_CHECK(cublasSgemm(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, outputs_, batch, channels, &one,
                           state_->weight, channels, pooled, channels, &zero, scores, outputs_));
  CUBLAS_CHECK(cublasSgemv(ctx.cublas, CUBLAS_OP_N, outputs_, batch, &inv_batch, scores, outputs_,
                           ctx.ones, 1, &zero, mean, 1));
  std::vector<float> host(outputs_);
  CUDA_CHECK(cudaMemcpy(host.data(), mean, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  ctx.memory->Free(mean);
  ctx.memory->Free(scores);
  ctx.memory->Free(pooled);
  std::vector<float> centred(outputs_);
  for (int e = 0; e < outputs_; ++e) {
    float& m = state_->mean[e];
    centred[e] = host[e] - m;
    m = state_->seen ? (m + host[e]) * 0.5f : host[e];
  }
  state_->seen = true;
  return centred;
}

}  // namespace cnn_train
