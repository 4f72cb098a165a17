// Command-line options of cnn_train (docs/simgpu.md lists them; `cnn_train --help` prints them).
#ifndef POOCH_SAMPLES_CNN_TRAIN_ARGS_H_
#define POOCH_SAMPLES_CNN_TRAIN_ARGS_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace cnn_train {

struct Options {
  // resnet50 | resnet18 | vgg16 | alexnet | tiny | unet | densenet | skipnet | moe
  std::string model = "resnet50";
  int batch = 32;
  // Input side in pixels; 0: the model's default (224; tiny, densenet, skipnet, moe 32; unet 64).
  int image = 0;
  int classes = 0;  // 0: the model's default (1000; tiny, unet, densenet, skipnet, moe 10)
  // moe: the number of experts and how many of them run per iteration.
  int experts = 16;
  int top_k = 2;
  // --vary-image: the input sides an iteration's size is drawn from (seeded, per iteration);
  // empty: every iteration at `image`. Only models whose classifier follows a global average
  // pool (so that no parameter depends on the size): all but vgg16 and alexnet.
  std::vector<int> vary_image;
  int iters = 10;
  uint64_t seed = 1;
  float lr = 0.01f;
  float momentum = 0.9f;
  // Every third iteration (i % 3 == 2) runs at half the batch, so that the op stream and the
  // allocation sizes change between iterations (for pooch's dynamic-network tests).
  bool vary_batch = false;
  bool nvtx = false;  // each iteration in an NVTX range "pooch:iteration"
  // --nvtx-period P (implies --nvtx): each P consecutive iterations in one range, so that pooch
  // sees them as one iteration (scripts/bench_dynamic.sh's oracle of a known sequence).
  int nvtx_period = 1;
  // The loss is computed on the device and read back to the host between forward and backward
  // (a synchronous cudaMemcpy of one float), and printed, as a script's loss.item() does.
  bool host_loss = false;
  // How a static model's layers are written (NetworkVariant in network.h): --conv-bias (every
  // convolution adds its bias in place), --inplace-skips (residual additions into the main
  // path's map), --width N (unet's first level, default 16), --gated-blocks (unet's decoder
  // levels end in a gated block).
  bool conv_bias = false;
  bool inplace_skips = false;
  bool gated_blocks = false;
  // --own-kernels: Context::own_kernels (layer.h).
  bool own_kernels = false;
  int width = 0;
  // --force-choices: what a dynamic model runs (Model::ForceChoices), for
  // scripts/bench_dynamic.sh's oracles: one choice for every iteration (each iteration's choice
  // planned as a static network), or several separated by ';', iteration i running the
  // (i mod n)-th (a known sequence).
  std::vector<std::string> force_choices;
};

struct HelpRequested {};

// Parses argv. Returns the options, HelpRequested for --help, or a one-line error message.
// Accepts "--flag value" and "--flag=value"; numbers must be complete and in range.
std::variant<Options, HelpRequested, std::string> ParseArgs(int argc, char** argv);

// The --help text.
const char* UsageText();

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_ARGS_H_
