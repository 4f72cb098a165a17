#include "core/kernels/verdict_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/log.h"

namespace pooch::kernels {
namespace {

// FNV-1a over the bytes, with two different starting points and a final mix each: 128 bits, so
// that two different modules sharing a key (and so each other's verdicts) is out of reach.
uint64_t Hash64(const uint8_t* data, size_t size, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  for (size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 0x100000001b3ULL;
  }
  h ^= size;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

bool MakeDirs(const std::string& dir) {
  for (size_t at = 1; at != std::string::npos;) {
    at = dir.find('/', at + 1);
    const std::string part = dir.substr(0, at);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::set<int> IntSet(const nlohmann::json& j) {
  std::set<int> out;
  for (const auto& v : j) out.insert(v.get<int>());
  return out;
}

}  // namespace

std::string VerdictCacheKey(const uint8_t* data, size_t size, const std::string& arch) {
  const std::string tag = absl::StrCat(arch, "/v", kAnalysisVersion);
  const uint64_t seed = Hash64(reinterpret_cast<const uint8_t*>(tag.data()), tag.size(), 0);
  return absl::StrFormat("%016x%016x", Hash64(data, size, seed),
                         Hash64(data, size, seed ^ 0x9e3779b97f4a7c15ULL));
}

nlohmann::json VerdictToCacheJson(const KernelVerdict& v) {
  return {{"name", v.name},
          {"arch", v.arch},
          {"writes_known", v.writes_known},
          {"writes", v.writes},
          {"reads_known", v.reads_known},
          {"reads", v.reads},
          {"atomic_writes", v.atomic_writes},
          {"uses_atomics", v.uses_atomics},
          {"reads_clock", v.reads_clock},
          {"escapes", v.escapes},
          {"write_reasons", v.write_reasons},
          {"read_reasons", v.read_reasons}};
}

std::optional<KernelVerdict> VerdictFromCacheJson(const nlohmann::json& j) {
  try {
    KernelVerdict v;
    v.name = j.at("name").get<std::string>();
    v.arch = j.at("arch").get<std::string>();
    v.writes_known = j.at("writes_known").get<bool>();
    v.writes = IntSet(j.at("writes"));
    v.reads_known = j.at("reads_known").get<bool>();
    v.reads = IntSet(j.at("reads"));
    v.atomic_writes = IntSet(j.at("atomic_writes"));
    v.uses_atomics = j.at("uses_atomics").get<bool>();
    v.reads_clock = j.at("reads_clock").get<bool>();
    v.escapes = IntSet(j.at("escapes"));
    v.write_reasons = j.at("write_reasons").get<std::vector<std::string>>();
    v.read_reasons = j.at("read_reasons").get<std::vector<std::string>>();
    // Why() and ReasonClass() read the first reason of an unknown half.
    if ((!v.writes_known && v.write_reasons.empty()) || (!v.reads_known && v.read_reasons.empty()))
      return std::nullopt;
    return v;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::string VerdictDiskCache::DefaultDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return absl::StrCat(xdg, "/pooch/kernels");
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return absl::StrCat(home, "/.cache/pooch/kernels");
  return "";
}

std::optional<std::vector<KernelVerdict>> VerdictDiskCache::Load(const std::string& key,
                                                                 const std::string& arch) const {
  const std::string path = PathOf(key);
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream text;
  text << f.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  std::vector<KernelVerdict> out;
  bool ok = j.is_object() && j.value("key", "") == key && j.value("arch", "") == arch &&
            j.value("version", -1) == kAnalysisVersion && j.contains("kernels") &&
            j["kernels"].is_array();
  if (ok) {
    for (const nlohmann::json& k : j["kernels"]) {
      std::optional<KernelVerdict> v = VerdictFromCacheJson(k);
      if (!v.has_value()) {
        ok = false;
        break;
      }
      out.push_back(std::move(*v));
    }
  }
  if (!ok) {
    LogLine("kernel cache file %s is not a verdict file of this module: ignored, analysing again",
            path.c_str());
    return std::nullopt;
  }
  return out;
}

absl::Status VerdictDiskCache::Store(const std::string& key, const std::string& arch,
                                     const std::vector<KernelVerdict>& verdicts) const {
  if (!MakeDirs(dir_)) return absl::InternalError(absl::StrCat("cannot create ", dir_));
  nlohmann::json j = {{"key", key}, {"arch", arch}, {"version", kAnalysisVersion}};
  j["kernels"] = nlohmann::json::array();
  for (const KernelVerdict& v : verdicts) j["kernels"].push_back(VerdictToCacheJson(v));
  const std::string text = j.dump();
  std::string tmp = absl::StrCat(PathOf(key), ".tmp-XXXXXX");
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot write in ", dir_));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool written = done == text.size() && fsync(fd) == 0;
  close(fd);
  if (!written || rename(tmp.c_str(), PathOf(key).c_str()) != 0) {
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", PathOf(key)));
  }
  return absl::OkStatus();
}

}  // namespace pooch::kernels
