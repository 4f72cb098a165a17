#include "cli/torch_allocator.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace pooch::cli {
namespace {

// PyTorch reads PYTORCH_NO_CUDA_MEMORY_CACHING as set when it is "1" (c10's check of the
// variable); anything else leaves caching on.
bool CachingOff(const std::optional<std::string>& no_caching) {
  return no_caching.has_value() && absl::StripAsciiWhitespace(*no_caching) == "1";
}

// Whether PYTORCH_CUDA_ALLOC_CONF ("key:value,key:value") selects the cudaMallocAsync backend.
bool AsyncBackend(const std::optional<std::string>& alloc_conf) {
  if (!alloc_conf.has_value()) return false;
  for (absl::string_view option : absl::StrSplit(*alloc_conf, ',', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(option, ':');
    if (absl::StripAsciiWhitespace(kv.first) == "backend" &&
        absl::StripAsciiWhitespace(kv.second) == "cudaMallocAsync") {
      return true;
    }
  }
  return false;
}

}  // namespace

AllocatorChoice ChooseAllocator(const std::optional<std::string>& alloc_conf,
                                const std::optional<std::string>& no_caching, bool policy_off) {
  AllocatorChoice choice;
  if (policy_off) return choice;
  const bool user_set = (alloc_conf.has_value() && !alloc_conf->empty()) ||
                        (no_caching.has_value() && !no_caching->empty());
  if (!user_set) {
    choice.settings.emplace_back("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync");
    return choice;
  }
  if (!AsyncBackend(alloc_conf) && !CachingOff(no_caching)) {
    choice.warning = absl::StrCat(
        "run: PyTorch's caching allocator stays on (PYTORCH_CUDA_ALLOC_CONF='",
        alloc_conf.value_or(""), "', PYTORCH_NO_CUDA_MEMORY_CACHING='", no_caching.value_or(""),
        "' are yours): pooch sees its segments, not tensors, and cannot swap tensors one by one; "
        "unset both (pooch run then sets backend:cudaMallocAsync) or set "
        "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync");
  }
  return choice;
}

}  // namespace pooch::cli
