#include "core/kernels/cubin_analysis.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/kernels/analysis.h"
#include "core/kernels/cubin_info.h"
#include "core/kernels/opcodes.h"
#include "core/kernels/sass.h"
#include "core/kernels/tools.h"

namespace pooch::kernels {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A temporary folder removed with what it holds when this goes out of scope.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/pooch-kernels-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    if (path_.empty()) return;
    for (const std::string& name : ListDir(path_)) unlink((path_ + "/" + name).c_str());
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

constexpr int kMaxCalleeRounds = 8;

ParamLayout LayoutOf(const CubinKernel& k, const std::string& arch) {
  ParamLayout layout{
      k.cbank_offset >= 0 ? k.cbank_offset : DefaultParamBase(arch), k.params_size, {}};
  for (const CubinParam& p : k.params) layout.params.emplace_back(p.offset, p.size);
  return layout;
}

// The labels CALLs in `program` name that it does not hold.
std::vector<std::string> MissingCallees(const SassProgram& program) {
  std::vector<std::string> out;
  for (const Instruction& ins : program.instructions) {
    if (ins.target.empty() || Classify(ins.Base()) != OpClass::kCall) continue;
    if (!program.labels.contains(ins.target)) out.push_back(ins.target);
  }
  return out;
}

absl::StatusOr<std::vector<KernelVerdict>> AnalyzeCubinBytes(const std::string& path,
                                                             const std::string& bytes) {
  absl::StatusOr<CubinInfo> info = ReadCubinInfo(bytes);
  if (!info.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", info.status().message()));
  absl::StatusOr<std::string> nvdisasm = FindTool("nvdisasm");
  if (!nvdisasm.ok()) return nvdisasm.status();
  absl::StatusOr<std::string> text = RunTool({*nvdisasm, "-c", path});
  if (!text.ok()) return text.status();
  const SassProgram program = ParseSass(*text);
  const std::string arch = absl::StrCat("sm_", info->sm);
  std::vector<KernelVerdict> out;
  for (const CubinKernel& k : info->kernels) {
    KernelVerdict v = AnalyzeKernel(program, k.name, LayoutOf(k, arch), info->bank4_symbols);
    v.arch = arch;
    out.push_back(std::move(v));
  }
  return out;
}

bool WriteAll(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(f);
}

// The cubins for `arch` (empty: all) that cuobjdump extracts from the fat binary or ELF file at
// `path` into folder `dir`.
absl::StatusOr<std::vector<std::string>> ExtractCubins(const std::string& path,
                                                       const std::string& arch,
                                                       const std::string& dir) {
  absl::StatusOr<std::string> cuobjdump = FindTool("cuobjdump");
  if (!cuobjdump.ok()) return cuobjdump.status();
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path));
  }
  std::vector<std::string> argv{*cuobjdump, "-xelf", "all", resolved};
  if (!arch.empty()) argv.insert(argv.begin() + 1, {"-arch", arch});
  absl::StatusOr<std::string> listing = RunTool(argv, dir);
  // cuobjdump refuses an architecture it no longer supports (sm_70 for CUDA 13's), whose SASS
  // nvdisasm cannot read either.
  if (!listing.ok() && !arch.empty() &&
      absl::StrContains(listing.status().message(), "is not defined for option")) {
    return absl::FailedPreconditionError(absl::StrCat("cuobjdump and nvdisasm do not know ", arch));
  }
  if (!listing.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no cubins extracted (", listing.status().message(), ")"));
  }
  std::vector<std::string> out;
  for (const std::string& name : ListDir(dir)) {
    if (!absl::EndsWith(name, ".cubin")) continue;
    absl::StatusOr<std::string> cubin = ReadFile(dir + "/" + name);
    if (!cubin.ok()) return cubin.status();
    absl::StatusOr<CubinInfo> info = ReadCubinInfo(*cubin);
    if (info.ok() && !arch.empty() && absl::StrCat("sm_", info->sm) != arch) continue;
    out.push_back(dir + "/" + name);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<KernelVerdict>> AnalyzeCubinFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  return AnalyzeCubinBytes(path, *bytes);
}

absl::StatusOr<std::vector<KernelVerdict>> AnalyzeFile(const std::string& path,
                                                       const std::string& arch) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  if (absl::StatusOr<CubinInfo> info = ReadCubinInfo(*bytes); info.ok()) {
    if (!arch.empty() && absl::StrCat("sm_", info->sm) != arch) return std::vector<KernelVerdict>{};
    return AnalyzeCubinBytes(path, *bytes);
  }
  TempDir dir;
  if (dir.path().empty()) return absl::InternalError("cannot create a temporary folder");
  absl::StatusOr<std::vector<std::string>> cubins = ExtractCubins(path, arch, dir.path());
  if (!cubins.ok()) return cubins.status();
  std::vector<KernelVerdict> out;
  for (const std::string& cubin_path : *cubins) {
    absl::StatusOr<std::string> cubin = ReadFile(cubin_path);
    if (!cubin.ok()) return cubin.status();
    absl::StatusOr<std::vector<KernelVerdict>> part = AnalyzeCubinBytes(cubin_path, *cubin);
    if (!part.ok()) return part.status();
    for (KernelVerdict& v : *part) {
      if (arch.empty() || v.arch == arch) out.push_back(std::move(v));
    }
  }
  return out;
}

absl::StatusOr<std::vector<KernelVerdict>> AnalyzeModuleImage(const ModuleImage& image,
                                                              const std::string& arch) {
  if (image.kind == ModuleImage::Kind::kOther) return std::vector<KernelVerdict>{};
  TempDir dir;
  if (dir.path().empty()) return absl::InternalError("cannot create a temporary folder");
  const std::string path =
      dir.path() + (image.kind == ModuleImage::Kind::kCubin ? "/module.cubin" : "/module.fatbin");
  if (!WriteAll(path, image.data, image.size)) {
    return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return AnalyzeFile(path, arch);
}

absl::StatusOr<KernelVerdict> AnalyzeCubinKernel(const std::string& path, const CubinInfo& info,
                                                 const std::string& name) {
  const std::string arch = absl::StrCat("sm_", info.sm);
  const CubinKernel* kernel = nullptr;
  for (const CubinKernel& k : info.kernels) {
    if (k.name == name) kernel = &k;
  }
  if (kernel == nullptr) return absl::NotFoundError(absl::StrCat(path, " has no kernel ", name));
  absl::flat_hash_map<std::string, int> index_of;
  for (const CubinFunction& f : info.functions) index_of.emplace(f.name, f.index);
  absl::StatusOr<std::string> nvdisasm = FindTool("nvdisasm");
  if (!nvdisasm.ok()) return nvdisasm.status();
  std::vector<std::string> argv{*nvdisasm, "-c", path};
  std::vector<int> wanted;
  if (auto it = index_of.find(name); it != index_of.end()) wanted.push_back(it->second);
  for (int round = 0; !wanted.empty() && round < kMaxCalleeRounds; ++round) {
    absl::StatusOr<std::string> text =
        RunTool({*nvdisasm, "-c", "-fun", absl::StrJoin(wanted, ","), path});
    if (!text.ok()) return text.status();
    const SassProgram program = ParseSass(*text);
    absl::flat_hash_set<int> have(wanted.begin(), wanted.end());
    bool added = false;
    for (const std::string& callee : MissingCallees(program)) {
      auto it = index_of.find(callee);
      if (it != index_of.end() && have.insert(it->second).second) {
        wanted.push_back(it->second);
        added = true;
      }
    }
    if (!added) {
      KernelVerdict v = AnalyzeKernel(program, name, LayoutOf(*kernel, arch), info.bank4_symbols);
      v.arch = arch;
      return v;
    }
  }
  // No symbol for the kernel, or callees calling callees past kMaxCalleeRounds: the whole text.
  absl::StatusOr<std::string> text = RunTool(argv);
  if (!text.ok()) return text.status();
  KernelVerdict v =
      AnalyzeKernel(ParseSass(*text), name, LayoutOf(*kernel, arch), info.bank4_symbols);
  v.arch = arch;
  return v;
}

absl::StatusOr<std::vector<std::string>> ExtractModuleCubins(const ModuleImage& image,
                                                             const std::string& arch,
                                                             const std::string& dir) {
  if (image.kind == ModuleImage::Kind::kOther) return std::vector<std::string>{};
  if (image.kind == ModuleImage::Kind::kCubin) {
    const std::string path = dir + "/module.cubin";
    if (!WriteAll(path, image.data, image.size)) {
      return absl::InternalError(absl::StrCat("cannot write ", path));
    }
    absl::StatusOr<CubinInfo> info =
        ReadCubinInfo(absl::string_view(reinterpret_cast<const char*>(image.data), image.size));
    if (!info.ok() || absl::StrCat("sm_", info->sm) != arch) return std::vector<std::string>{};
    return std::vector<std::string>{path};
  }
  TempDir scratch;
  if (scratch.path().empty()) return absl::InternalError("cannot create a temporary folder");
  const std::string fatbin = scratch.path() + "/module.fatbin";
  if (!WriteAll(fatbin, image.data, image.size)) {
    return absl::InternalError(absl::StrCat("cannot write ", fatbin));
  }
  return ExtractCubins(fatbin, arch, dir);
}

}  // namespace pooch::kernels
