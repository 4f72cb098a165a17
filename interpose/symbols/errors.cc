// errors.cc: the thread's last runtime error under pooch (Note [Last error] in errors.h).
#include "interpose/symbols/errors.h"

#include <utility>

#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {
namespace {

// pooch's own last error on this thread; cudaSuccess when the runtime's is the one to report.
__attribute__((tls_model("initial-exec"))) thread_local cudaError_t t_last_error = cudaSuccess;

}  // namespace

void RecordRuntimeError(cudaError_t error) {
  // cudaErrorNotReady is a status, not an error: the runtime does not record it either.
  if (error == cudaSuccess || error == cudaErrorNotReady) return;
  NoteResult(error);
  // The runtime's last error is older than this one, which would have replaced it.
  if (const auto get_last = real::cudaGetLastError()) get_last();
  t_last_error = error;
}

cudaError_t TakeLastRuntimeError() {
  const auto get_last = real::cudaGetLastError();
  const cudaError_t runtime = get_last != nullptr ? get_last() : cudaSuccess;
  NoteResult(runtime);
  const cudaError_t own = std::exchange(t_last_error, cudaSuccess);
  return runtime != cudaSuccess ? runtime : own;
}

cudaError_t PeekLastRuntimeError() {
  const auto peek = real::cudaPeekAtLastError();
  const cudaError_t runtime = peek != nullptr ? peek() : cudaSuccess;
  NoteResult(runtime);
  return runtime != cudaSuccess ? runtime : t_last_error;
}

}  // namespace pooch::interpose
