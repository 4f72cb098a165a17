// verdict_cache.h: the verdicts of a module's kernels kept on disk, so that a second run of a
// program pays no disassembly (Note [Verdicts at launch] in interpose/kernels/launch_verdicts.h).
//
// Note [Kernel verdict cache]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// One file per (module bytes, architecture, analysis version), named by a 128-bit hash of the
// three: DIR/<32 hex digits>.json, holding the key's parts again and the verdicts of the
// module's kernels analysed so far (libpooch.so analyses a kernel at its first launch and merges
// it into what the file holds on disk). The bytes decide, not a path or a time: an edited
// kernel is a new module and a new file. DIR is POOCH_KERNEL_CACHE, else $XDG_CACHE_HOME/pooch/kernels, else
// $HOME/.cache/pooch/kernels; POOCH_KERNEL_CACHE=off keeps verdicts in memory only. A file is
// written whole under a temporary name and renamed into place, so several processes filling the
// same cache at once each read either nothing or a whole file (the last rename wins, with the
// same content). A file that does not parse, or whose key parts differ from the look-up's, is
// ignored with one line and rewritten after the analysis. kAnalysisVersion changes whenever the
// analysis may conclude differently, which leaves old files unread.
#ifndef POOCH_CORE_KERNELS_VERDICT_CACHE_H_
#define POOCH_CORE_KERNELS_VERDICT_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/kernels/verdict.h"

namespace pooch::kernels {

inline constexpr int kAnalysisVersion = 5;

// The cache key of a module's bytes analysed for `arch`: 32 lowercase hex digits.
std::string VerdictCacheKey(const uint8_t* data, size_t size, const std::string& arch);

// A verdict with every field, and back (nullopt when `j` is not one).
nlohmann::json VerdictToCacheJson(const KernelVerdict& v);
std::optional<KernelVerdict> VerdictFromCacheJson(const nlohmann::json& j);

class VerdictDiskCache {
 public:
  // `dir` is created (with its parents) at the first Store.
  explicit VerdictDiskCache(std::string dir) : dir_(std::move(dir)) {}

  // The folder the variables name (see the Note); "" when none can be found (no HOME).
  static std::string DefaultDir();

  // The verdicts stored under `key` for `arch`; nullopt when there is no file, or when it is
  // corrupt (then one "pooch: " line says so).
  std::optional<std::vector<KernelVerdict>> Load(const std::string& key,
                                                 const std::string& arch) const;
  // Writes the file atomically (a temporary file renamed over it).
  absl::Status Store(const std::string& key, const std::string& arch,
                     const std::vector<KernelVerdict>& verdicts) const;

  const std::string& dir() const { return dir_; }
  std::string PathOf(const std::string& key) const { return dir_ + "/" + key + ".json"; }

 private:
  std::string dir_;
};

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_VERDICT_CACHE_H_
