#include "trainer.h"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "checks.h"
#include "models/models.h"
#include "rng.h"

namespace cnn_train {
namespace {

// Synthetic, learnable data: each class has a per-channel offset and a blocky +-0.5 pattern
// (8x8-pixel blocks) derived from the seed; every sample adds uniform noise. Labels and noise
// come from a stream keyed by (seed, iteration), so any iteration can be regenerated alone.
void SyntheticBatch(uint64_t seed, int iter, int batch, int image, int classes,
                    std::vector<float>* images, std::vector<int>* labels) {
  constexpr int kChannels = 3;
  constexpr int kBlockShift = 3;  // 8x8 blocks
  const uint64_t class_key = Mix64(seed ^ 0xc1a55e5ULL);
  SplitMix64 rng(Mix64(seed) ^ Mix64(0x5a3b1e0000000000ULL + static_cast<uint64_t>(iter)));
  images->resize(static_cast<size_t>(batch) * kChannels * image * image);
  labels->resize(batch);
  float* out = images->data();
  for (int n = 0; n < batch; ++n) {
    const int label = static_cast<int>(rng.Next() % static_cast<uint64_t>(classes));
    (*labels)[n] = label;
    for (int c = 0; c < kChannels; ++c) {
      const uint64_t channel_key = Mix64(class_key ^ (uint64_t(label) << 8) ^ uint64_t(c));
      const float offset = static_cast<float>(channel_key >> 40) / 16777216.0f - 0.5f;
      for (int h = 0; h < image; ++h) {
        for (int w = 0; w < image; ++w) {
          const uint64_t block = (uint64_t(h >> kBlockShift) << 32) | uint64_t(w >> kBlockShift);
          const float pattern = (Mix64(channel_key ^ block) & 1) ? 0.5f : -0.5f;
          *out++ = offset + pattern + rng.NextSymmetric(0.5f);
        }
      }
    }
  }
}

// Mean of -log p(label) over the batch, from the softmax output copied to the host.
double CrossEntropy(const std::vector<float>& probs, const std::vector<int>& labels, int classes) {
  double sum = 0.0;
  for (size_t n = 0; n < labels.size(); ++n) {
    sum -= std::log(static_cast<double>(probs[n * classes + labels[n]]));
  }
  return sum / static_cast<double>(labels.size());
}

// --host-loss: the mean cross-entropy on the device, -(1/N) * sum(onehot .* log_softmax), as a
// log-softmax and a gemv (the flattened tensors' dot product), then read back with a
// synchronous cudaMemcpy of the one float, as loss.item() does in the middle of an iteration.
float LossItem(Context& ctx, int batch, int classes, const float* logits, const float* onehot) {
  const int64_t count = int64_t{batch} * classes;
  const TensorDesc desc(batch, classes, 1, 1);
  float* log_probs = ctx.memory->AllocateFloats(count, "log-softmax output");
  float* loss = ctx.memory->AllocateFloats(1, "loss");
  const float one = 1.0f;
  const float zero = 0.0f;
  const float minus_inv_batch = -1.0f / static_cast<float>(batch);
  CUDNN_CHECK(cudnnSoftmaxForward(ctx.cudnn, CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_INSTANCE, &one,
                                  desc.get(), logits, &zero, desc.get(), log_probs));
  const int n = static_cast<int>(count);
  CUBLAS_CHECK(cublasSgemv(ctx.cublas, CUBLAS_OP_T, n, 1, &minus_inv_batch, log_probs, n, onehot, 1,
                           &zero, loss, 1));
  float host = 0.0f;
  CUDA_CHECK(cudaMemcpy(&host, loss, sizeof(float), cudaMemcpyDeviceToHost));
  ctx.memory->Free(loss);
  ctx.memory->Free(log_probs);
  return host;
}

// The loss head: softmax over the logits, and the gradient (softmax - onehot) / N formed on
// the device from a one-hot tensor uploaded per iteration (a copy, an axpy and a scal). With
// `loss_item`, the loss is also read back (LossItem) before the gradient is formed.
// Returns the softmax output, which the caller copies to the host for the loss and frees.
float* SoftmaxCrossEntropy(Context& ctx, Model& net, int batch, int classes, const float* logits,
                           const std::vector<float>& host_onehot, float* loss_item) {
  const int64_t count = int64_t{batch} * classes;
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  const TensorDesc desc(batch, classes, 1, 1);
  float* probs = ctx.memory->AllocateFloats(count, "softmax output");
  const float one = 1.0f;
  const float zero = 0.0f;
  CUDNN_CHECK(cudnnSoftmaxForward(ctx.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE,
                                  &one, desc.get(), logits, &zero, desc.get(), probs));
  float* onehot = ctx.memory->AllocateFloats(count, "one-hot labels");
  CUDA_CHECK(cudaMemcpy(onehot, host_onehot.data(), bytes, cudaMemcpyHostToDevice));
  if (loss_item != nullptr) *loss_item = LossItem(ctx, batch, classes, logits, onehot);
  float* dlogits = net.AllocateOutputGradient(ctx, batch);
  CUDA_CHECK(cudaMemcpy(dlogits, probs, bytes, cudaMemcpyDeviceToDevice));
  const float minus_one = -1.0f;
  const float inv_batch = 1.0f / static_cast<float>(batch);
  CUBLAS_CHECK(cublasSaxpy(ctx.cublas, static_cast<int>(count), &minus_one, onehot, 1, dlogits, 1));
  CUBLAS_CHECK(cublasSscal(ctx.cublas, static_cast<int>(count), &inv_batch, dlogits, 1));
  ctx.memory->Free(onehot);
  return probs;
}

// --vary-image: iteration `iter`'s index into the list of `count` sides, from a stream keyed by
// (seed, iteration) as the data's.
size_t ImageIndex(uint64_t seed, int iter, size_t count) {
  return Mix64(Mix64(seed ^ 0x1a6e5175e0000000ULL) + static_cast<uint64_t>(iter)) % count;
}

// Whether the device computes no loss. simgpu's timing mode (SIMGPU_COMPUTE=timing) runs no
// math, so the probabilities read back are whatever unwritten memory holds and a loss computed
// from them means nothing (it printed as `inf`). The CUDA API cannot say whether a device
// computes, and the sample knows nothing of pooch's or simgpu's code, so it reads the variable
// simgpu reads: it says so once and prints `-` for the loss. The run's work is unchanged: the
// probabilities are still read back from the device.
bool ComputesNoLoss() {
  const char* compute = std::getenv("SIMGPU_COMPUTE");
  return compute != nullptr && std::strcmp(compute, "timing") == 0;
}

// "%.6f", or "-" when the run computes no loss (ComputesNoLoss).
std::string LossText(bool computes_no_loss, double loss) {
  if (computes_no_loss) return "-";
  char text[64];
  std::snprintf(text, sizeof(text), "%.6f", loss);
  return text;
}

// Everything one run holds: library handles, the model, the device memory accounting.
class Trainer {
 public:
  explicit Trainer(const Options& options) : options_(options), workspace_(&memory_) {
    CUDNN_CHECK(cudnnCreate(&ctx_.cudnn));
    CUBLAS_CHECK(cublasCreate(&ctx_.cublas));
    // Plain fp32 gemms: no TF32, no reduced-precision reductions, so runs are reproducible.
    CUBLAS_CHECK(cublasSetMathMode(ctx_.cublas, CUBLAS_DEFAULT_MATH));
    CUBLAS_CHECK(cublasSetPointerMode(ctx_.cublas, CUBLAS_POINTER_MODE_HOST));
    ctx_.memory = &memory_;
    ctx_.workspace = &workspace_;
    ctx_.own_kernels = options.own_kernels;
    // One model per image side (--vary-image), all on the first one's parameters: the layers'
    // shapes follow the image, their parameters do not.
    const DynamicOptions dynamic{options.experts, options.top_k};
    sizes_ = options.vary_image;
    if (sizes_.empty()) sizes_.push_back(options.image);
    for (int image : sizes_) {
      models_.push_back(BuildModel(
          options.model, image, options.classes, dynamic,
          {options.conv_bias, options.inplace_skips, options.width, options.gated_blocks}));
      for (const std::string& choice : options.force_choices) {
        if (!models_.back()->ForceChoices(choice)) {
          Fail(kExitUsage, "--force-choices '%s' does not fit --model %s", choice.c_str(),
               options.model.c_str());
        }
      }
      if (models_.size() == 1) {
        models_[0]->InitParams(ctx_, options.seed);
      } else {
        models_.back()->ShareParams(ctx_, *models_[0]);
      }
    }
    ones_ = memory_.AllocateFloats(options.batch, "ones vector");
    const std::vector<float> host_ones(options.batch, 1.0f);
    CUDA_CHECK(cudaMemcpy(ones_, host_ones.data(), host_ones.size() * sizeof(float),
                          cudaMemcpyHostToDevice));
    ctx_.ones = ones_;
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
  }

  ~Trainer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    memory_.Free(ones_);
    // Frees the parameter tensors while the handles still exist; the sharing models first.
    while (!models_.empty()) models_.pop_back();
    cublasDestroy(ctx_.cublas);
    cudnnDestroy(ctx_.cudnn);
  }

  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // One training iteration; prints its line.
  void Step(int iter) {
    const int batch =
        (options_.vary_batch && iter % 3 == 2) ? std::max(1, options_.batch / 2) : options_.batch;
    const int classes = options_.classes;
    const int64_t logits_count = int64_t{batch} * classes;
    const size_t size_index =
        sizes_.size() > 1 ? ImageIndex(options_.seed, iter, sizes_.size()) : 0;
    Model& net = *models_[size_index];
    if (options_.force_choices.size() > 1) {  // checked at construction
      net.ForceChoices(
          options_.force_choices[static_cast<size_t>(iter) % options_.force_choices.size()]);
    }
    SyntheticBatch(options_.seed, iter, batch, sizes_[size_index], classes, &images_, &labels_);
    host_onehot_.assign(logits_count, 0.0f);
    for (int n = 0; n < batch; ++n) host_onehot_[int64_t{n} * classes + labels_[n]] = 1.0f;

    // A framework's profiler annotations (torch.cuda.nvtx.range_push); pooch reads this one
    // with POOCH_ITERATION_MARKER=nvtx.
    const int period = options_.nvtx_period;
    if (options_.nvtx && iter % period == 0) nvtxRangePushA("pooch:iteration");
    CUDA_CHECK(cudaEventRecord(start_, 0));
    const float* logits = net.Forward(ctx_, batch, images_.data());
    float loss_item = 0.0f;
    float* probs = SoftmaxCrossEntropy(ctx_, net, batch, classes, logits, host_onehot_,
                                       options_.host_loss ? &loss_item : nullptr);
    if (options_.host_loss) {  // the host uses the value before backward, as a script would
      std::printf("loss_item %d %s\n", iter, LossText(computes_no_loss_, loss_item).c_str());
      std::fflush(stdout);
    }
    net.Backward(ctx_, batch);
    net.SgdStep(ctx_, options_.lr, options_.momentum);
    CUDA_CHECK(cudaEventRecord(stop_, 0));
    if (options_.nvtx && (iter % period == period - 1 || iter == options_.iters - 1)) {
      nvtxRangePop();
    }
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));

    // The loss is read after the timed region, as a framework reads loss.item() for logging.
    host_probs_.resize(logits_count);
    CUDA_CHECK(cudaMemcpy(host_probs_.data(), probs, host_probs_.size() * sizeof(float),
                          cudaMemcpyDeviceToHost));
    memory_.Free(probs);
    const double loss = CrossEntropy(host_probs_, labels_, classes);
    const double images_per_s = ms > 0.0f ? batch * 1000.0 / ms : 0.0;
    // What changed between iterations, after the fixed fields: the image side drawn, the
    // model's own choices (model.h).
    const std::string image =
        options_.vary_image.empty() ? "" : " image " + std::to_string(sizes_[size_index]);
    if (iter == 0 && computes_no_loss_) {
      std::printf("timing mode (SIMGPU_COMPUTE=timing) computes no loss: printed as -\n");
    }
    std::printf("iter %d loss %s ms %.3f img_per_s %.2f%s%s\n", iter,
                LossText(computes_no_loss_, loss).c_str(), ms, images_per_s, image.c_str(),
                net.Choices().c_str());
    std::fflush(stdout);
  }

  void PrintSummary() {
    std::printf("peak_device_bytes %zu\n", memory_.peak_bytes());
    std::printf("params_checksum %016" PRIx64 "\n", models_[0]->ParamsChecksum(kFnvOffsetBasis));
    std::fflush(stdout);
  }

 private:
  const Options options_;
  const bool computes_no_loss_ = ComputesNoLoss();
  DeviceMemory memory_;  // declared before, so destroyed after, everything that frees into it
  Workspace workspace_;
  Context ctx_;
  std::vector<int> sizes_;                      // image sides; one unless --vary-image
  std::vector<std::unique_ptr<Model>> models_;  // per side; [0] owns the parameters
  float* ones_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  // Host buffers reused across iterations.
  std::vector<float> images_;
  std::vector<int> labels_;
  std::vector<float> host_onehot_;
  std::vector<float> host_probs_;
};

}  // namespace

int Train(const Options& options) {
  Trainer trainer(options);
  for (int iter = 0; iter < options.iters; ++iter) trainer.Step(iter);
  trainer.PrintSummary();
  return 0;
}

}  // namespace cnn_train
