// cnn_train: trains a CNN (ResNet-50/18, VGG-16, AlexNet, U-Net, DenseNet or a tiny one) on
// synthetic data with the CUDA runtime, cuDNN and cuBLAS only. It is the unmodified program
// that pooch's tests and benchmarks run, on a real GPU or on simgpu. See args.cc (--help) for
// flags and output.
#include <cstdio>
#include <string>
#include <variant>

#include "args.h"
#include "checks.h"
#include "trainer.h"

int main(int argc, char** argv) {
  auto parsed = cnn_train::ParseArgs(argc, argv);
  if (std::holds_alternative<cnn_train::HelpRequested>(parsed)) {
    std::fputs(cnn_train::UsageText(), stdout);
    return 0;
  }
  if (const auto* error = std::get_if<std::string>(&parsed)) {
    std::fprintf(stderr, "cnn_train: %s (see --help)\n", error->c_str());
    return cnn_train::kExitUsage;
  }
  return cnn_train::Train(std::get<cnn_train::Options>(parsed));
}
