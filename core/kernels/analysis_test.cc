// The analysis on kernels written for it (testdata/analysis_kernels.cu), compiled by nvcc for
// sm_80, sm_90 and sm_100 in the build and disassembled here by nvdisasm.
#include "core/kernels/analysis.h"

#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/kernels/cubin_info.h"
#include "core/kernels/sass.h"
#include "core/kernels/tools.h"
#include "gtest/gtest.h"

namespace pooch::kernels {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Every kernel's verdict in the cubin for `arch`.
std::map<std::string, KernelVerdict> Analyse(const std::string& arch) {
  const std::string cubin =
      std::string(POOCH_KERNELS_TEST_CUBINS) + "/analysis_kernels." + arch + ".cubin";
  absl::StatusOr<std::string> nvdisasm = FindTool("nvdisasm");
  // No skip: CI installs the tools (scripts/setup.sh runs scripts/setup-cuda-tools.sh), and a
  // test that passes without running proves nothing.
  EXPECT_TRUE(nvdisasm.ok()) << nvdisasm.status().message();
  if (!nvdisasm.ok()) return {};
  absl::StatusOr<std::string> text = RunTool({*nvdisasm, "-c", cubin});
  EXPECT_TRUE(text.ok()) << text.status().message();
  absl::StatusOr<CubinInfo> info = ReadCubinInfo(ReadFile(cubin));
  EXPECT_TRUE(info.ok()) << info.status().message();
  if (!text.ok() || !info.ok()) return {};
  const SassProgram program = ParseSass(*text);
  std::map<std::string, KernelVerdict> out;
  for (const CubinKernel& k : info->kernels) {
    out[k.name] = AnalyzeKernel(program, k.name, {k.cbank_offset, k.params_size});
  }
  return out;
}

// What each kernel must get on every architecture. Sound on all: no kernel is given a write set
// smaller than what its source writes. Not exact (writes unknown although the kernel is well
// behaved), with why:
//   k_select   the destination is a select between two words; the analysis keeps one word per
//              register, so the merge is unknown;
//   k_generic  the generic store's address selects between shared memory and word 0x0;
// and unknown by design: k_chase, k_local_pointers, k_shared_pointers, k_halves, k_escape.
struct Expected {
  const char* name;
  std::vector<int> writes;  // empty with writes_known false: unknown
  bool writes_known;
  std::vector<int> reads;
  bool replayable;
  const char* why_contains;
};

const Expected kExpected[] = {
    {"k_out_of_place", {0x0}, true, {0x8}, true, "writes 0x0; reads 0x8"},
    {"k_in_place", {0x0}, true, {0x0}, false, "reads what it writes"},
    {"k_struct", {0x0}, true, {0x8}, true, ""},
    {"k_chase", {}, false, {0x0}, false, "address from memory or integers"},
    {"k_atomic", {0x0}, true, {0x0, 0x8}, false, "atomics into 0x0"},
    {"k_second_output", {0x0, 0x8}, true, {0x10}, true, ""},
    {"k_select", {}, false, {0x10}, false, "address may come from several words"},
    {"k_local_pointers", {}, false, {0x18}, false, "pointer escapes to shared or local memory"},
    {"k_shared_pointers", {}, false, {}, false, "pointer escapes to shared or local memory"},
    {"k_noinline", {0x0}, true, {0x8}, true, ""},
    {"k_vector", {0x0}, true, {0x8}, true, ""},
    {"k_grid_constant", {0x0}, true, {0x8}, true, ""},
    {"k_halves", {}, false, {}, false, "halves of different words"},
    {"k_generic", {}, false, {}, false, "(ST.E)"},
    {"k_cp_async", {0x0}, true, {0x8}, true, ""},
    {"k_escape", {}, false, {}, false, "writes unknown"},
};

class AnalysisOnArch : public ::testing::TestWithParam<const char*> {};

TEST_P(AnalysisOnArch, EachKernelGetsItsVerdict) {
  const std::map<std::string, KernelVerdict> verdicts = Analyse(GetParam());
  ASSERT_EQ(verdicts.size(), std::size(kExpected));
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    auto it = verdicts.find(e.name);
    ASSERT_NE(it, verdicts.end());
    const KernelVerdict& v = it->second;
    EXPECT_EQ(v.arch, GetParam());
    EXPECT_EQ(v.writes_known, e.writes_known) << v.Why();
    if (e.writes_known) {
      EXPECT_EQ(v.writes, std::set<int>(e.writes.begin(), e.writes.end()));
    }
    EXPECT_TRUE(v.reads_known) << v.Why();
    EXPECT_EQ(v.reads, std::set<int>(e.reads.begin(), e.reads.end())) << v.Why();
    EXPECT_EQ(v.Replayable(), e.replayable) << v.Why();
    EXPECT_NE(v.Why().find(e.why_contains), std::string::npos) << v.Why();
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, AnalysisOnArch, ::testing::Values("sm_80", "sm_90", "sm_100"));

}  // namespace
}  // namespace pooch::kernels
