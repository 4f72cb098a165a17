#include "args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "kernels/own_kernels.h"

namespace cnn_train {
namespace {

constexpr std::string_view kModels[] = {"resnet50", "resnet18", "vgg16",   "alexnet", "tiny",
                                        "unet",     "densenet", "skipnet", "moe"};
constexpr std::string_view kValueFlags[] = {
    "--model",       "--batch",    "--image",   "--classes", "--iters",      "--seed",
    "--lr",          "--momentum", "--experts", "--top-k",   "--vary-image", "--force-choices",
    "--nvtx-period", "--width"};
constexpr size_t kMaxImageSizes = 16;

// Whole-string integer parse in [min, max]; no sign games, no trailing garbage.
template <typename T>
std::optional<T> ParseInt(std::string_view text, T min, T max) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::optional<float> ParseFloat(std::string_view text, float min, float max) {
  float value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (!std::isfinite(value) || value < min || value > max) return std::nullopt;
  return value;
}

// "S1,S2,...": 1 to kMaxImageSizes distinct sides in 8..4096.
std::optional<std::vector<int>> ParseSizes(std::string_view text) {
  std::vector<int> sizes;
  while (true) {
    const size_t comma = text.find(',');
    const auto size = ParseInt<int>(text.substr(0, comma), 8, 4096);
    if (!size || sizes.size() == kMaxImageSizes) return std::nullopt;
    for (int seen : sizes) {
      if (seen == *size) return std::nullopt;
    }
    sizes.push_back(*size);
    if (comma == std::string_view::npos) return sizes;
    text = text.substr(comma + 1);
  }
}

}  // namespace

const char* UsageText() {
  return "usage: cnn_train [--model resnet50|resnet18|vgg16|alexnet|tiny|unet|densenet|\n"
         "                          skipnet|moe]\n"
         "                 [--batch N] [--image S | --vary-image S1,S2,...] [--classes C]\n"
         "                 [--iters N] [--seed S] [--lr X] [--momentum X] [--experts E]\n"
         "                 [--top-k K] [--vary-batch] [--nvtx] [--host-loss]\n"
         "                 [--force-choices 'gates G' | 'experts E1,E2,...' [;...]]\n"
         "                 [--nvtx-period P] [--conv-bias] [--inplace-skips] [--width W]\n"
         "                 [--gated-blocks] [--own-kernels]\n"
         "Trains a CNN on synthetic data with cuDNN and cuBLAS. Prints one line per iteration,\n"
         "  iter N loss L ms T img_per_s R [image S] [gates G] [experts E1,E2,...]\n"
         "then peak_device_bytes B and params_checksum H (FNV-1a of the parameters, hex).\n"
         "Defaults: resnet50, batch 32, image 224 (tiny, densenet, skipnet, moe 32; unet 64, a\n"
         "multiple of 8), classes 1000 (tiny, unet, densenet, skipnet, moe 10), iters 10, seed 1,\n"
         "lr 0.01, momentum 0.9; moe: 16 experts, top 2.\n"
         "skipnet and moe decide per iteration, on the device, which blocks or experts run\n"
         "(gates: 1 per gated block that ran; experts: those chosen); --force-choices makes\n"
         "every iteration run the given ones (the scores are still computed and read back);\n"
         "several separated by ';' are run in turn, iteration i the (i mod n)-th.\n"
         "--vary-image draws each iteration's image side from the list (seeded); not for vgg16\n"
         "or alexnet.\n"
         "--vary-batch halves the batch when iter % 3 == 2.\n"
         "--nvtx wraps each iteration in an NVTX range named pooch:iteration;\n"
         "--nvtx-period P each P iterations in one (and implies --nvtx).\n"
         "--host-loss reads the loss back between forward and backward (loss.item()) and\n"
         "prints loss_item N L there.\n"
         "--conv-bias adds a bias after every convolution, in place (cudnnAddTensor on its\n"
         "output); --inplace-skips adds residual shortcuts into the main path's map in place\n"
         "(cudnnOpTensor with the output as an input); --width W sets unet's first level's\n"
         "channels (default 16). Not for skipnet or moe. --gated-blocks ends each of unet's\n"
         "decoder levels in a gated block, tanh(x) * sigmoid(conv1x1(x)) (cudnnOpTensor MUL).\n"
         "--own-kernels runs the forward ReLU, bias and residual additions as cnn_train's own\n"
         "CUDA kernels (sm_80, sm_90, sm_100) instead of cuDNN calls, with the same results.\n"
         "Exit status: 0 ok, 2 bad arguments, 3 out of device memory, 4 other CUDA/cuDNN/cuBLAS "
         "error.\n";
}

std::variant<Options, HelpRequested, std::string> ParseArgs(int argc, char** argv) {
  Options options;
  bool experts_given = false;  // --experts or --top-k: only for moe
  bool image_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg(argv[i]);
    if (arg == "--help" || arg == "-h") return HelpRequested{};
    if (arg == "--vary-batch") {
      options.vary_batch = true;
      continue;
    }
    if (arg == "--nvtx") {
      options.nvtx = true;
      continue;
    }
    if (arg == "--host-loss") {
      options.host_loss = true;
      continue;
    }
    if (arg == "--conv-bias") {
      options.conv_bias = true;
      continue;
    }
    if (arg == "--inplace-skips") {
      options.inplace_skips = true;
      continue;
    }
    if (arg == "--gated-blocks") {
      options.gated_blocks = true;
      continue;
    }
    if (arg == "--own-kernels") {
      options.own_kernels = true;
      continue;
    }
    if (!arg.starts_with("--")) return "unexpected argument '" + std::string(arg) + "'";
    std::string_view name = arg;
    std::string_view value;
    const size_t eq = arg.find('=');
    if (eq != std::string_view::npos) name = arg.substr(0, eq);
    if (name == "--vary-batch" || name == "--nvtx" || name == "--host-loss" ||
        name == "--conv-bias" || name == "--inplace-skips" || name == "--own-kernels" ||
        name == "--gated-blocks") {
      return std::string(name) + " takes no value";
    }
    bool known = false;
    for (std::string_view flag : kValueFlags) known = known || name == flag;
    if (!known) return "unknown flag '" + std::string(name) + "'";
    if (eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= argc) return std::string(name) + " needs a value";
      value = argv[++i];
    }
    const auto bad = [&](std::string_view expected) {
      return "bad value '" + std::string(value) + "' for " + std::string(name) + " (expected " +
             std::string(expected) + ")";
    };
    if (name == "--model") {
      bool known_model = false;
      for (std::string_view model : kModels) known_model = known_model || value == model;
      if (!known_model) {
        return bad("resnet50, resnet18, vgg16, alexnet, tiny, unet, densenet, skipnet or moe");
      }
      options.model = std::string(value);
    } else if (name == "--batch") {
      const auto v = ParseInt<int>(value, 1, 1 << 20);
      if (!v) return bad("an integer in 1..1048576");
      options.batch = *v;
    } else if (name == "--image") {
      const auto v = ParseInt<int>(value, 8, 4096);
      if (!v) return bad("an integer in 8..4096");
      options.image = *v;
      image_given = true;
    } else if (name == "--classes") {
      const auto v = ParseInt<int>(value, 2, 1 << 20);
      if (!v) return bad("an integer in 2..1048576");
      options.classes = *v;
    } else if (name == "--iters") {
      const auto v = ParseInt<int>(value, 1, 1 << 30);
      if (!v) return bad("a positive integer");
      options.iters = *v;
    } else if (name == "--seed") {
      const auto v = ParseInt<uint64_t>(value, 0, UINT64_MAX);
      if (!v) return bad("an unsigned 64-bit integer");
      options.seed = *v;
    } else if (name == "--lr") {
      const auto v = ParseFloat(value, 0.0f, 100.0f);
      if (!v) return bad("a number in 0..100");
      options.lr = *v;
    } else if (name == "--momentum") {
      const auto v = ParseFloat(value, 0.0f, 1.0f);
      if (!v) return bad("a number in 0..1");
      options.momentum = *v;
    } else if (name == "--experts") {
      const auto v = ParseInt<int>(value, 1, 4096);
      if (!v) return bad("an integer in 1..4096");
      options.experts = *v;
      experts_given = true;
    } else if (name == "--top-k") {
      const auto v = ParseInt<int>(value, 1, 4096);
      if (!v) return bad("an integer in 1..4096");
      options.top_k = *v;
      experts_given = true;
    } else if (name == "--vary-image") {
      const auto v = ParseSizes(value);
      if (!v) return bad("1 to 16 distinct sides in 8..4096, comma-separated");
      options.vary_image = *v;
    } else if (name == "--force-choices") {
      // One choice, or a sequence separated by ';' (each must be non-empty; the model checks it).
      options.force_choices.clear();
      size_t at = 0;
      while (true) {
        const size_t semi = std::min(value.find(';', at), value.size());
        if (semi == at) return bad("choices separated by ';', none empty");
        options.force_choices.emplace_back(value.substr(at, semi - at));
        if (semi == value.size()) break;
        at = semi + 1;
      }
    } else if (name == "--nvtx-period") {
      const auto v = ParseInt<int>(value, 1, 1 << 20);
      if (!v) return bad("an integer in 1..1048576");
      options.nvtx_period = *v;
      options.nvtx = true;
    } else if (name == "--width") {
      const auto v = ParseInt<int>(value, 1, 1024);
      if (!v) return bad("an integer in 1..1024");
      options.width = *v;
    }
  }
  if (experts_given && options.model != "moe") return "--experts and --top-k need --model moe";
  if ((options.conv_bias || options.inplace_skips || options.width != 0) &&
      (options.model == "skipnet" || options.model == "moe")) {
    return "--conv-bias, --inplace-skips and --width are not for --model " + options.model;
  }
  if (options.width != 0 && options.model != "unet") return "--width needs --model unet";
  if (options.gated_blocks && options.model != "unet") return "--gated-blocks needs --model unet";
  if (options.own_kernels && !OwnKernelsBuilt()) {
    return "--own-kernels: cnn_train was built without nvcc";
  }
  if (options.top_k > options.experts) {
    return "--top-k " + std::to_string(options.top_k) + " is more than --experts " +
           std::to_string(options.experts);
  }
  if (!options.vary_image.empty()) {
    if (image_given) return "--image and --vary-image exclude each other";
    // Their classifier's input is the flattened feature map, whose size follows the image.
    if (options.model == "vgg16" || options.model == "alexnet") {
      return "--vary-image needs a model whose classifier follows a global average pool (not " +
             options.model + ")";
    }
  }
  const bool small = options.model == "tiny" || options.model == "unet" ||
                     options.model == "densenet" || options.model == "skipnet" ||
                     options.model == "moe";
  if (options.image == 0) options.image = options.model == "unet" ? 64 : small ? 32 : 224;
  if (options.classes == 0) options.classes = small ? 10 : 1000;
  // Three 2x2 poolings down and three 2x upsamplings back must meet the skip maps' sides.
  if (options.model == "unet") {
    for (int image :
         options.vary_image.empty() ? std::vector<int>{options.image} : options.vary_image) {
      if (image % 8 != 0) {
        return "bad value '" + std::to_string(image) + "' for " +
               (options.vary_image.empty() ? "--image" : "--vary-image") +
               " (unet needs a multiple of 8)";
      }
    }
  }
  return options;
}

}  // namespace cnn_train
