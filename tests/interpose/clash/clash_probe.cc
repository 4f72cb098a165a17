// clash_probe: a CUDA program with an Abseil of its own, which clash_test.sh runs with
// libpooch.so preloaded. Its Abseil is Debian's shared one (absl::debian3, the names libpooch.so's
// private copy carries too), with two twists that make a clash visible:
//   - absl::StrCat(a, b) comes from libinterpose_clash_other_absl.so, linked first, which tags
//     its result (clash_other_absl.cc): the program must get the tag, not pooch's StrCat;
//   - absl::Now and absl::AsciiStrToLower are defined and exported by the program itself
//     (clash_host_absl.cc): pooch must not call them.
// Then it keeps 4 buffers of 4 MiB on the device, filled from the host, and reads each back;
// under POOCH_MEMORY_LIMIT=8MiB pooch swaps them behind its back, and every byte must survive.
// Prints "clash ok" (exit 0) or each check that failed (exit 1).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clash_host_absl.h"

namespace {

constexpr size_t kBytes = size_t{4} << 20;
constexpr int kBuffers = 4;
int g_failures = 0;

void Check(bool ok, const std::string& what) {
  if (ok) return;
  std::printf("clash_probe: %s\n", what.c_str());
  ++g_failures;
}

// The program's own Abseil answers as its Abseil does.
void UseAbseil() {
  const std::string tagged = absl::StrCat("pooch", 42);
  Check(tagged == "other-abseil(pooch,42)",
        "absl::StrCat gave '" + tagged + "', not the program's Abseil's answer");
  absl::flat_hash_map<std::string, int> counts;
  for (const char* word : {"swap", "keep", "swap", "recompute", "swap"}) ++counts[word];
  Check(counts.size() == 3 && counts["swap"] == 3 && counts["keep"] == 1,
        "absl::flat_hash_map counted wrong");
  const std::string formatted = absl::StrFormat("%s=%d %.1f", "limit", 8, 0.5);
  Check(formatted == "limit=8 0.5", "absl::StrFormat gave '" + formatted + "'");
  const absl::StatusOr<int> missing = absl::NotFoundError("no such tensor");
  Check(!missing.ok() && absl::IsNotFound(missing.status()) &&
            missing.status().message() == "no such tensor",
        "absl::StatusOr/NotFoundError misbehaved");
}

unsigned char Pattern(int buffer, size_t i) {
  return static_cast<unsigned char>(buffer * 61 + i * 13 + (i >> 16));
}

// Buffers filled in order and read back in reverse, so that the first ones were swapped out.
void UseDevice() {
  std::vector<void*> device(kBuffers, nullptr);
  std::vector<unsigned char> host(kBytes);
  for (int b = 0; b < kBuffers; ++b) {
    for (size_t i = 0; i < kBytes; ++i) host[i] = Pattern(b, i);
    cudaError_t e = cudaMalloc(&device[b], kBytes);
    if (e == cudaSuccess) e = cudaMemcpy(device[b], host.data(), kBytes, cudaMemcpyHostToDevice);
    Check(e == cudaSuccess, absl::StrFormat("buffer %d: %s", b, cudaGetErrorString(e)));
    if (e != cudaSuccess) return;
  }
  for (int b = kBuffers - 1; b >= 0; --b) {
    cudaError_t e = cudaMemcpy(host.data(), device[b], kBytes, cudaMemcpyDeviceToHost);
    Check(e == cudaSuccess, absl::StrFormat("read back %d: %s", b, cudaGetErrorString(e)));
    size_t wrong = 0;
    for (size_t i = 0; i < kBytes; ++i) wrong += host[i] != Pattern(b, i);
    Check(wrong == 0, absl::StrFormat("buffer %d: %zu bytes differ", b, wrong));
    Check(cudaFree(device[b]) == cudaSuccess, absl::StrFormat("cudaFree %d", b));
  }
}

}  // namespace

int main() {
  UseAbseil();
  UseDevice();
  UseAbseil();  // once more, after pooch has run
  Check(ClashCallsFromPooch() == 0,
        absl::StrFormat("libpooch.so called the program's Abseil %d times", ClashCallsFromPooch()));
  if (g_failures != 0) return 1;
  std::printf("clash ok\n");
  return 0;
}
