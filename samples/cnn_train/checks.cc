#include "checks.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace cnn_train {
namespace {

// "cudnnConvolutionForward(handle, ...)" -> "cudnnConvolutionForward": the arguments are
// noise in a one-line error message.
std::string_view FunctionName(const char* call) {
  std::string_view text(call);
  return text.substr(0, text.find('('));
}

[[noreturn]] void FailCall(const char* call, const char* what) {
  const std::string_view name = FunctionName(call);
  std::fflush(stdout);
  std::fprintf(stderr, "cnn_train: %.*s failed: %s\n", static_cast<int>(name.size()), name.data(),
               what);
  std::exit(kExitApiError);
}

}  // namespace

void FailCuda(const char* call, cudaError_t error) { FailCall(call, cudaGetErrorString(error)); }

void FailCudnn(const char* call, cudnnStatus_t status) {
  FailCall(call, cudnnGetErrorString(status));
}

void FailCublas(const char* call, cublasStatus_t status) {
  FailCall(call, cublasGetStatusString(status));
}

void Fail(int code, const char* format, ...) {
  std::fflush(stdout);
  std::fputs("cnn_train: ", stderr);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::exit(code);
}

}  // namespace cnn_train
