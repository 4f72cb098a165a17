// Command-line options of cnn_train (the README lists them; `cnn_train --help` prints them).
#ifndef POOCH_SAMPLES_CNN_TRAIN_ARGS_H_
#define POOCH_SAMPLES_CNN_TRAIN_ARGS_H_

#include <cstdint>
#include <string>
#include <variant>

namespace cnn_train {

struct Options {
  // resnet50 | resnet18 | vgg16 | alexnet | tiny | unet | densenet
  std::string model = "resnet50";
  int batch = 32;
  int image = 0;  // input side in pixels; 0: the model's default (224; tiny, densenet 32; unet 64)
  int classes = 0;  // 0: the model's default (1000; tiny, unet, densenet 10)
  int iters = 10;
  uint64_t seed = 1;
  float lr = 0.01f;
  float momentum = 0.9f;
  // Every third iteration (i % 3 == 2) runs at half the batch, so that the op stream and the
  // allocation sizes change between iterations (for pooch's dynamic-network tests).
  bool vary_batch = false;
  bool nvtx = false;  // each iteration in an NVTX range "pooch:iteration"
  // The loss is computed on the device and read back to the host between forward and backward
  // (a synchronous cudaMemcpy of one float), and printed, as a script's loss.item() does.
  bool host_loss = false;
};

struct HelpRequested {};

// Parses argv. Returns the options, HelpRequested for --help, or a one-line error message.
// Accepts "--flag value" and "--flag=value"; numbers must be complete and in range.
std::variant<Options, HelpRequested, std::string> ParseArgs(int argc, char** argv);

// The --help text.
const char* UsageText();

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_ARGS_H_
