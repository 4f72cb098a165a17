// ConvCore: the cuDNN side of one convolution geometry, shared by Conv (conv.cc) and
// ConvTranspose (conv_transpose.cc): the filter and convolution descriptors, and per batch size
// the tensor descriptors and the three algorithms. In cuDNN's terms a convolution maps x (its
// input) to y (its output); a transposed convolution runs the same geometry the other way, so
// its output is this x and its input this y.
//
// Determinism: the descriptor asks for FMA math only (no TF32 on real GPUs), and each of the
// three algorithms is the first that cudnnGet*Algorithm_v7 reports with status SUCCESS,
// CUDNN_DETERMINISTIC and a workspace within kMaxWorkspaceBytes. The choice depends on the
// batch size, so it is made once per batch size and cached.
#ifndef POOCH_SAMPLES_CNN_TRAIN_LAYERS_CONV_CORE_H_
#define POOCH_SAMPLES_CNN_TRAIN_LAYERS_CONV_CORE_H_

#include <map>
#include <memory>
#include <string>

#include "layers/layer.h"

namespace cnn_train {

class ConvCore {
 public:
  // Descriptors and algorithms for one batch size.
  struct State {
    State(int batch, const Dims& x_dims, const Dims& y_dims) : x(batch, x_dims), y(batch, y_dims) {}
    TensorDesc x;
    TensorDesc y;
    cudnnConvolutionFwdAlgo_t fwd{};
    cudnnConvolutionBwdDataAlgo_t data{};
    cudnnConvolutionBwdFilterAlgo_t filter{};
    size_t fwd_bytes = 0;
    size_t data_bytes = 0;
    size_t filter_bytes = 0;
  };

  // A square `kernel` from x (`x_dims`) to y (`y_dims`): filter y.c x x.c x kernel x kernel.
  // `name` is the layer's, for messages.
  ConvCore(const std::string& name, const Dims& x_dims, const Dims& y_dims, int kernel, int stride,
           int pad);
  ~ConvCore();
  ConvCore(const ConvCore&) = delete;
  ConvCore& operator=(const ConvCore&) = delete;

  const State& StateFor(Context& ctx, int batch);
  cudnnFilterDescriptor_t filter() const { return filter_; }
  cudnnConvolutionDescriptor_t conv() const { return conv_; }

 private:
  void ChooseAlgorithms(Context& ctx, State& s) const;
  [[noreturn]] void NoAlgorithm(const char* pass) const;

  std::string name_;
  Dims x_dims_;
  Dims y_dims_;
  cudnnFilterDescriptor_t filter_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  std::map<int, std::unique_ptr<State>> states_;
};

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_LAYERS_CONV_CORE_H_
