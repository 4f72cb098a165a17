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

#include "core/kernels/cubin_analysis.h"
#include "core/kernels/cubin_info.h"
#include "core/kernels/sass.h"
#include "core/kernels/tools.h"
#include "core/kernels/verdict_cache.h"
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
#ifndef POOCH_KERNELS_TEST_CUBINS
  ADD_FAILURE() << "no test cubins: the build found no nvcc (core/kernels/CMakeLists.txt)";
  return {};
#else
  const std::string cubin =
      std::string(POOCH_KERNELS_TEST_CUBINS) + "/analysis_kernels." + arch + ".cubin";
  absl::StatusOr<std::string> nvdisasm =
      FindTool("nvdisasm", {std::string(POOCH_SOURCE_DIR) + "/build/cuda-tools"});
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
    ParamLayout layout{k.cbank_offset, k.params_size, {}};
    for (const CubinParam& p : k.params) layout.params.emplace_back(p.offset, p.size);
    out[k.name] = AnalyzeKernel(program, k.name, layout, info->bank4_symbols);
  }
  return out;
#endif
}

// What each kernel must get on every architecture. Sound on all: no kernel is given a write set
// smaller than what its source writes. Not exact (writes unknown although the kernel is well
// behaved), with why:
//   k_generic  the generic store's address selects between shared memory and word 0x0;
// and unknown by design: k_chase, k_local_pointers, k_shared_pointers (the pointers they store
// come back as loaded values and are used as addresses), k_halves, k_print_pointer (its reads
// too: vprintf is not followed). k_escape, k_fill_scalar and k_threshold store a word's value:
// exact while that word holds no pointer into pooch's memory (Note [Conditional escapes]; the
// launch-time half is interpose/hooks/launch/kernel_args_test.cc's).
struct Expected {
  const char* name;
  std::vector<int> writes;  // empty with writes_known false: unknown
  bool writes_known;
  std::vector<int> reads;
  bool replayable;
  const char* why_contains;
  bool reads_known = true;
  std::vector<int> escapes = {};  // when writes_known
};

const Expected kExpected[] = {
    {"k_out_of_place", {0x0}, true, {0x8}, true, "writes 0x0; reads 0x8"},
    {"k_in_place", {0x0}, true, {0x0}, false, "reads what it writes"},
    {"k_struct", {0x0}, true, {0x8}, true, ""},
    {"k_chase", {}, false, {0x0}, false, "address from memory or integers"},
    {"k_atomic", {0x0}, true, {0x0, 0x8}, false, "atomics into 0x0"},
    {"k_second_output", {0x0, 0x8}, true, {0x10}, true, ""},
    {"k_select", {0x0, 0x8}, true, {0x10}, true, "writes 0x0 0x8; reads 0x10"},
    {"k_local_pointers", {}, false, {0x18}, false, "address from memory or integers"},
    {"k_shared_pointers", {}, false, {}, false, "address from memory or integers"},
    {"k_noinline", {0x0}, true, {0x8}, true, ""},
    {"k_vector", {0x0}, true, {0x8}, true, ""},
    {"k_grid_constant", {0x0}, true, {0x8}, true, ""},
    {"k_halves", {}, false, {}, false, "halves of different words"},
    {"k_generic", {}, false, {}, false, "(ST.E)"},
    {"k_cp_async", {0x0}, true, {0x8}, true, ""},
    {"k_escape", {0x0, 0x8}, true, {}, true, "escapes 0x0: exact unless a pointer", true, {0x0}},
    {"k_fill_scalar", {0x0}, true, {}, true, "writes 0x0; reads none; escapes 0x8", true, {0x8}},
    {"k_threshold", {0x0}, true, {0x8}, true, "reads 0x8; escapes 0x10", true, {0x10}},
    {"k_grid_stride", {0x0}, true, {0x8}, true, "writes 0x0; reads 0x8"},
    {"k_divide_in_loop", {0x0}, true, {0x0, 0x8}, false, "reads what it writes"},
    {"k_assert", {0x0}, true, {0x8, 0x10}, true, "writes 0x0; reads 0x8 0x10"},
    {"k_print_pointer", {}, false, {}, false, "indirect branch or call", false},
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
      EXPECT_EQ(v.escapes, std::set<int>(e.escapes.begin(), e.escapes.end())) << v.Why();
    }
    EXPECT_EQ(v.reads_known, e.reads_known) << v.Why();
    if (e.reads_known) {
      EXPECT_EQ(v.reads, std::set<int>(e.reads.begin(), e.reads.end())) << v.Why();
    }
    EXPECT_EQ(v.Replayable(), e.replayable) << v.Why();
    EXPECT_NE(v.Why().find(e.why_contains), std::string::npos) << v.Why();
  }
}

// Note [One kernel at a time]: each kernel disassembled alone (with its callees, as k_noinline's
// store_twice) gets the verdict the whole cubin's text gives it, every field; and so it does when
// the symbol table is not used (the whole text again). On sm_90 only: each nvdisasm start costs
// about a second.
TEST(AnalysisOnCubin, OneKernelAloneGetsTheWholeCubinsVerdict) {
#ifndef POOCH_KERNELS_TEST_CUBINS
  FAIL() << "no test cubins: the build found no nvcc (core/kernels/CMakeLists.txt)";
#else
  AddToolPrefix(std::string(POOCH_SOURCE_DIR) + "/build/cuda-tools");
  const std::string cubin =
      std::string(POOCH_KERNELS_TEST_CUBINS) + "/analysis_kernels.sm_90.cubin";
  absl::StatusOr<std::vector<KernelVerdict> > whole = AnalyzeFile(cubin, "sm_90");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  ASSERT_EQ(whole->size(), std::size(kExpected));
  absl::StatusOr<CubinInfo> info = ReadCubinInfo(ReadFile(cubin));
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_GE(info->functions.size(), whole->size() + 1);  // the kernels and store_twice
  CubinInfo no_symbols = *info;
  no_symbols.functions.clear();
  for (const KernelVerdict& w : *whole) {
    SCOPED_TRACE(w.name);
    for (const CubinInfo* i : {&*info, &no_symbols}) {
      if (i == &no_symbols && w.name != "k_noinline") continue;
      absl::StatusOr<KernelVerdict> alone = AnalyzeCubinKernel(cubin, *i, w.name);
      ASSERT_TRUE(alone.ok()) << alone.status().message();
      EXPECT_EQ(VerdictToCacheJson(*alone).dump(), VerdictToCacheJson(w).dump());
    }
  }
  EXPECT_EQ(AnalyzeCubinKernel(cubin, *info, "no_such_kernel").status().code(),
            absl::StatusCode::kNotFound);
#endif
}

INSTANTIATE_TEST_SUITE_P(Archs, AnalysisOnArch, ::testing::Values("sm_80", "sm_90", "sm_100"));

// Hand-written SASS (sm_90 layout: parameters at 0x210, 32 bytes) for what nvcc does not emit
// from small kernels: each case one instruction sequence and the verdict it must give.
KernelVerdict OnText(const std::string& body) {
  const std::string text =
      "\t.target\tsm_90\n\t.section\t.text.k,\"ax\",@progbits\n"
      "        .other          k,@\"STO_CUDA_ENTRY STV_DEFAULT\"\nk:\n" +
      body;
  return AnalyzeKernel(ParseSass(text), "k", {0x210, 32, {}});
}

TEST(AnalysisOnText, LoopOverAPointerKeepsItsWord) {
  const KernelVerdict v = OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x218] ;
.L_x_1:
        /*0010*/                   STG.E desc[UR4][R2.64], RZ ;
        /*0020*/                   IADD3 R2, P0, R2, 0x4, RZ ;
        /*0030*/                   IADD3.X R3, RZ, R3, RZ, P0, !PT ;
        /*0040*/               @P1 BRA `(.L_x_1) ;
        /*0050*/                   EXIT ;
)");
  EXPECT_TRUE(v.Exact()) << v.Why();
  EXPECT_EQ(v.writes, std::set<int>{0x8});
  EXPECT_TRUE(v.Replayable());
}

TEST(AnalysisOnText, SumOfTwoWordsMayPointIntoEither) {
  const KernelVerdict v = OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0010*/                   LDC.64 R4, c[0x0][0x218] ;
        /*0020*/                   IADD3 R2, P0, R2, R4, RZ ;
        /*0030*/                   IADD3.X R3, RZ, R3, R5, P0, !PT ;
        /*0040*/                   STG.E desc[UR4][R2.64], RZ ;
        /*0050*/                   EXIT ;
)");
  EXPECT_TRUE(v.writes_known) << v.Why();
  EXPECT_EQ(v.writes, (std::set<int>{0x0, 0x8}));
  // A difference of pointers is no address of either.
  const KernelVerdict difference = OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0010*/                   LDC.64 R4, c[0x0][0x218] ;
        /*0020*/                   IADD3 R2, P0, R2, -R4, RZ ;
        /*0030*/                   IADD3.X R3, RZ, R3, ~R5, P0, !PT ;
        /*0040*/                   STG.E desc[UR4][R2.64], RZ ;
        /*0050*/                   EXIT ;
)");
  EXPECT_FALSE(difference.writes_known);
  // Nor the low half of one word with the high half of another.
  const KernelVerdict halves = OnText(R"(
        /*0000*/                   LDC R2, c[0x0][0x210] ;
        /*0010*/                   LDC R3, c[0x0][0x21c] ;
        /*0020*/                   STG.E desc[UR4][R2.64], RZ ;
        /*0030*/                   EXIT ;
)");
  EXPECT_FALSE(halves.writes_known);
}

TEST(AnalysisOnText, PredicatedDefinitionMayNotHaveRun) {
  // Without the guard's instruction the register keeps its old value: either word.
  const KernelVerdict v = OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0010*/               @P0 LDC.64 R2, c[0x0][0x218] ;
        /*0020*/                   STG.E desc[UR4][R2.64], RZ ;
        /*0030*/                   EXIT ;
)");
  EXPECT_TRUE(v.writes_known) << v.Why();
  EXPECT_EQ(v.writes, (std::set<int>{0x0, 0x8}));
  // Joined with an integer (the entry's registers), unknown.
  const KernelVerdict w = OnText(R"(
        /*0000*/               @P0 LDC.64 R2, c[0x0][0x218] ;
        /*0010*/                   STG.E desc[UR4][R2.64], RZ ;
        /*0020*/                   EXIT ;
)");
  EXPECT_FALSE(w.writes_known);
}

TEST(AnalysisOnText, AStoreUnderTheLoadsGuardSeesTheLoadedPointer) {
  // Note [Guarded values]: @!P0 STG runs only when @!P0 LDC.64 did.
  const KernelVerdict v = OnText(R"(
        /*0000*/              @!P0 LDC.64 R2, c[0x0][0x218] ;
        /*0010*/              @!P0 STG.E desc[UR4][R2.64], RZ ;
        /*0020*/                   EXIT ;
)");
  EXPECT_TRUE(v.Exact()) << v.Why();
  EXPECT_EQ(v.writes, std::set<int>{0x8});
  // Not once the predicate may have changed in between, nor under the opposite guard.
  for (const char* between :
       {"        /*0008*/                   ISETP.NE.AND P0, PT, R4, RZ, PT ;\n",
        "        /*0008*/                   R2P PR, R4, 0x7f ;\n"}) {
    const KernelVerdict w = OnText(
        std::string("        /*0000*/              @!P0 LDC.64 R2, c[0x0][0x218] ;\n") + between +
        "        /*0010*/              @!P0 STG.E desc[UR4][R2.64], RZ ;\n"
        "        /*0020*/                   EXIT ;\n");
    EXPECT_FALSE(w.writes_known) << between;
  }
  const KernelVerdict opposite = OnText(R"(
        /*0000*/              @!P0 LDC.64 R2, c[0x0][0x218] ;
        /*0010*/               @P0 STG.E desc[UR4][R2.64], RZ ;
        /*0020*/                   EXIT ;
)");
  EXPECT_FALSE(opposite.writes_known);
}

// Note [System calls]: bank 4's word 0x28 holds __assertfail's address, 0x0 vprintf's.
KernelVerdict CallThroughBank4(const std::string& between, const std::string& call) {
  const std::string text =
      "\t.target\tsm_90\n\t.section\t.text.k,\"ax\",@progbits\n"
      "        .other          k,@\"STO_CUDA_ENTRY STV_DEFAULT\"\nk:\n"
      "        /*0000*/                   ISETP.GE.AND P0, PT, R16, R17, PT ;\n"
      "        /*0010*/               @P0 BRA `(.L_x_1) ;\n"
      "        /*0020*/                   MOV R2, 0x28 ;\n"
      "        /*0030*/                   LDC.64 R2, c[0x4][R2] ;\n" +
      between + "        /*0040*/                   LEPC R20, `(.L_x_1) ;\n" + call +
      ".L_x_1:\n"
      "        /*0060*/                   LDC.64 R4, c[0x0][0x210] ;\n"
      "        /*0070*/                   STG.E desc[UR4][R4.64], RZ ;\n"
      "        /*0080*/                   EXIT ;\n";
  return AnalyzeKernel(ParseSass(text), "k", {0x210, 32, {}},
                       {{0x0, "vprintf"}, {0x28, "__assertfail"}});
}

TEST(AnalysisOnText, AFailedAssertEndsTheKernel) {
  const std::string call = "        /*0050*/                   CALL.ABS.NOINC R2 ;\n";
  const KernelVerdict v = CallThroughBank4("", call);
  EXPECT_TRUE(v.Exact()) << v.Why();
  EXPECT_EQ(v.writes, std::set<int>{0x0});
  EXPECT_TRUE(v.Replayable());
  // A guarded call falls through when it does not run.
  EXPECT_TRUE(
      CallThroughBank4("", "        /*0050*/               @P1 CALL.ABS.NOINC R2 ;\n").Exact());
  // Not when the register may hold something else at the call: vprintf's word, a register
  // written in between (a half, through a pair, by a wide load), a guarded load, a branch target
  // in between (another path may arrive with another value).
  for (const char* between : {
           "        /*0038*/                   MOV R2, 0x0 ;\n"
           "        /*0039*/                   LDC.64 R2, c[0x4][R2] ;\n",
           "        /*0038*/                   IADD3 R3, R3, 0x10, RZ ;\n",
           "        /*0038*/                   IMAD.WIDE R2, R8, 0x4, RZ ;\n",
           "        /*0038*/                   LDG.E.128 R0, desc[UR4][R8.64] ;\n",
           "        /*0038*/               @P2 LDC.64 R2, c[0x4][0x0] ;\n",
           ".L_x_2:\n        /*0038*/                   NOP ;\n"
           "        /*0039*/               @P3 BRA `(.L_x_2) ;\n",
       }) {
    const KernelVerdict w = CallThroughBank4(between, call);
    EXPECT_FALSE(w.writes_known) << between;
    EXPECT_NE(w.Why().find("indirect branch or call"), std::string::npos) << w.Why();
  }
}

TEST(AnalysisOnText, SavingThePredicatesKeepsTheGuardedValues) {
  // P2R copies the predicates into R29 and writes none: @!P0 STG still runs only when @!P0
  // LDC.64 did (Note [Guarded values]).
  for (const char* save : {"        /*0008*/                   P2R R29, PR, RZ, 0x8 ;\n",
                           "        /*0008*/                   UP2UR UR4, UPR, URZ, 0x1 ;\n"}) {
    const KernelVerdict v = OnText(
        std::string("        /*0000*/              @!P0 LDC.64 R2, c[0x0][0x218] ;\n") + save +
        "        /*0010*/              @!P0 STG.E desc[UR4][R2.64], RZ ;\n"
        "        /*0020*/                   EXIT ;\n");
    EXPECT_TRUE(v.Exact()) << save << v.Why();
    EXPECT_EQ(v.writes, std::set<int>{0x8}) << save;
  }
  // Restoring them (R2P, UR2UP) may change P0.
  for (const char* restore : {"        /*0008*/                   R2P PR, R29, 0x8 ;\n",
                              "        /*0008*/                   UR2UP UPR, UR4, 0x1 ;\n"}) {
    const KernelVerdict v = OnText(
        std::string("        /*0000*/              @!P0 LDC.64 R2, c[0x0][0x218] ;\n") + restore +
        "        /*0010*/              @!P0 STG.E desc[UR4][R2.64], RZ ;\n"
        "        /*0020*/                   EXIT ;\n");
    EXPECT_FALSE(v.writes_known) << restore;
  }
}

TEST(AnalysisOnText, AFunnelShiftWritesOneRegister) {
  // SHF.L.U64.HI writes R5 alone: R6, the pointer's low half, keeps its word.
  const KernelVerdict v = OnText(R"(
        /*0000*/                   LDC.64 R6, c[0x0][0x218] ;
        /*0010*/                   SHF.L.U64.HI R5, R8, 0x2, R9 ;
        /*0020*/                   STG.E desc[UR4][R6.64], RZ ;
        /*0030*/                   EXIT ;
)");
  EXPECT_TRUE(v.Exact()) << v.Why();
  EXPECT_EQ(v.writes, std::set<int>{0x8});
}

TEST(AnalysisOnText, AConversionMayLeaveItsSecondRegister) {
  // I2F.U64 makes one float of R8:R9 in R6 alone, so R7 may still hold word 0x8's high half, and
  // storing R6:R7 may store that pointer: it escapes. Which register a conversion writes depends
  // on how its type modifiers read, so the second one is the join of old and new.
  const KernelVerdict v = OnText(R"(
        /*0000*/                   LDC.64 R6, c[0x0][0x218] ;
        /*0010*/                   LDC.64 R2, c[0x0][0x220] ;
        /*0020*/                   I2F.U64 R6, R8 ;
        /*0030*/                   STG.E.64 desc[UR4][R2.64], R6 ;
        /*0040*/                   EXIT ;
)");
  // Note [Conditional escapes]: exact while word 0x8 holds no pointer of pooch's.
  EXPECT_TRUE(v.writes_known) << v.Why();
  EXPECT_EQ(v.escapes, std::set<int>{0x8});
}

// Two calls of f; the first with word 0x8's pointer live in R2:R3 across it, the second with
// integers there. `callee` is f's body.
KernelVerdict TwoCallsOf(const std::string& callee) {
  return OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x218] ;
        /*0010*/                   MOV R20, 0x30 ;
        /*0020*/                   CALL.REL.NOINC `(f) ;
        /*0030*/                   STG.E desc[UR4][R2.64], RZ ;
        /*0040*/                   MOV R2, RZ ;
        /*0050*/                   MOV R20, 0x70 ;
        /*0060*/                   CALL.REL.NOINC `(f) ;
        /*0070*/                   EXIT ;
f:
)" + callee + R"(
        /*00a0*/                   RET.REL.NODEC R20 `(k) ;
)");
}

TEST(AnalysisOnText, ACallKeepsWhatItsCalleeDoesNotWrite) {
  // Note [Kernel write sets]: R2:R3 keep the first call site's value, not the join with the
  // second's integers.
  const KernelVerdict v =
      TwoCallsOf("        /*0080*/                   IMAD.MOV.U32 R4, RZ, RZ, 0x1 ;");
  EXPECT_TRUE(v.Exact()) << v.Why();
  EXPECT_EQ(v.writes, std::set<int>{0x8});
  // A register the callee writes comes from its returns: an integer here (R3 through the
  // 64-bit destination R2:R3, a loaded value in the other).
  for (const char* write : {"        /*0080*/                   IMAD.WIDE.U32 R2, R8, R9, RZ ;",
                            "        /*0080*/                   LDG.E.64 R2, desc[UR4][R8.64] ;",
                            "        /*0080*/               @P0 IADD3 R2, P1, R9, 0x4, RZ ;"}) {
    const KernelVerdict w = TwoCallsOf(write);
    EXPECT_FALSE(w.writes_known) << write;
  }
}

TEST(AnalysisOnText, AScalarParameterHoldsNoPointer) {
  // Word 0x8 holds only a 4-byte parameter: storing it lets no pointer escape.
  const std::string text =
      "\t.target\tsm_90\n\t.section\t.text.k,\"ax\",@progbits\n"
      "        .other          k,@\"STO_CUDA_ENTRY STV_DEFAULT\"\nk:\n"
      "        /*0000*/                   LDC.64 R2, c[0x0][0x210] ;\n"
      "        /*0010*/                   LDC R4, c[0x0][0x218] ;\n"
      "        /*0020*/                   STG.E desc[UR4][R2.64], R4 ;\n"
      "        /*0030*/                   EXIT ;\n";
  const KernelVerdict v = AnalyzeKernel(ParseSass(text), "k", {0x210, 12, {{0, 8}, {8, 4}}});
  EXPECT_TRUE(v.Exact()) << v.Why();
  EXPECT_EQ(v.writes, std::set<int>{0x0});
}

TEST(AnalysisOnText, WhatCannotBeFollowedIsUnknown) {
  for (const char* body : {
           "        /*0000*/                   BRX R2 -0x10 ;\n",
           "        /*0000*/                   CALL.ABS.NOINC R2 ;\n",
           "        /*0000*/                   CALL.ABS.NOINC `(vprintf) ;\n",
           "        /*0000*/                   UTMASTG.2D [UR4], [UR6] ;\n",
           "        /*0000*/                   FROBNICATE R2, R3 ;\n",
           "        /*0000*/                   LDC.64 R2, c[0x0][R4+0x210] ;\n"
           "        /*0010*/                   STG.E desc[UR4][R2.64], RZ ;\n",
           "        /*0000*/                   LDG.E.64 R2, desc[UR4][R6.64] ;\n"
           "        /*0010*/                   STG.E desc[UR4][R2.64], RZ ;\n",
       }) {
    const KernelVerdict v = OnText(std::string(body) + "        /*00f0*/   EXIT ;\n");
    EXPECT_FALSE(v.writes_known) << body;
    EXPECT_FALSE(v.Replayable()) << body;
  }
}

TEST(AnalysisOnText, AnMmaOverwritesItsAccumulators) {
  // R10:R11 held word 0x0's pointer; the HMMA's accumulators from R8 on overwrite it.
  const KernelVerdict v = OnText(R"(
        /*0000*/                   LDC.64 R10, c[0x0][0x210] ;
        /*0010*/                   HMMA.16816.F32 R8, R4, R2, R8 ;
        /*0020*/                   STG.E desc[UR4][R10.64], RZ ;
        /*0030*/                   EXIT ;
)");
  EXPECT_FALSE(v.writes_known);
}

TEST(AnalysisOnText, CallsFromTwoSitesJoinAtTheCallee) {
  const KernelVerdict v = OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0010*/                   CALL.REL.NOINC `($k$store) ;
        /*0020*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0030*/                   CALL.REL.NOINC `($k$store) ;
        /*0040*/                   EXIT ;
$k$store:
        /*0050*/                   STG.E desc[UR4][R2.64], RZ ;
        /*0060*/                   RET.REL.NODEC R20 `(k) ;
)");
  EXPECT_TRUE(v.Exact()) << v.Why();
  EXPECT_EQ(v.writes, std::set<int>{0x0});
}

TEST(AnalysisOnText, ClockReadsAndSharedAtomicsAreNotReplayable) {
  const KernelVerdict clock = OnText(R"(
        /*0000*/                   CS2R R4, SR_CLOCKLO ;
        /*0010*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0020*/                   STG.E desc[UR4][R2.64], R4 ;
        /*0030*/                   EXIT ;
)");
  EXPECT_TRUE(clock.Exact());
  EXPECT_FALSE(clock.Replayable());
  const KernelVerdict atoms = OnText(R"(
        /*0000*/                   ATOMS.ADD RZ, [R3], R4 ;
        /*0010*/                   EXIT ;
)");
  EXPECT_TRUE(atoms.Exact());
  EXPECT_FALSE(atoms.Replayable());
}

TEST(AnalysisOnText, StoringAPointerHalfIsAnEscape) {
  const KernelVerdict v = OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0010*/                   LDC R4, c[0x0][0x218] ;
        /*0020*/                   STG.E desc[UR4][R2.64], R4 ;
        /*0030*/                   EXIT ;
)");
  // Note [Conditional escapes]: word 0x8's low half escapes, so the verdict holds only for a
  // launch whose word 0x8 points into no memory of pooch's (kernel_args_test.cc checks that a
  // launch with a pointer there is unknown).
  EXPECT_TRUE(v.writes_known) << v.Why();
  EXPECT_EQ(v.escapes, std::set<int>{0x8});
  EXPECT_NE(v.Why().find("escapes 0x8"), std::string::npos) << v.Why();
  // A value that may be a parameter's half or anything else escapes unconditionally: unknown.
  const KernelVerdict unknown = OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0010*/                   LDC R4, c[0x0][R5+0x218] ;
        /*0020*/                   STG.E desc[UR4][R2.64], R4 ;
        /*0030*/                   EXIT ;
)");
  EXPECT_FALSE(unknown.writes_known);
  EXPECT_NE(unknown.Why().find("a pointer escapes to global memory"), std::string::npos)
      << unknown.Why();
  // A select between a loaded value and a parameter's half (PyTorch's threshold) lets only the
  // half's word escape; used as an address, such a value names no word.
  const KernelVerdict select = OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0010*/                   LDG.E R6, desc[UR4][R2.64] ;
        /*0020*/                   LDC R4, c[0x0][0x21c] ;
        /*0030*/                   FSEL R4, R4, R6, P0 ;
        /*0040*/                   STG.E desc[UR4][R2.64], R4 ;
        /*0050*/                   LDC.64 R8, c[0x0][0x218] ;
        /*0060*/                   SEL R8, R8, R6, P1 ;
        /*0070*/                   STG.E desc[UR4][R8.64], RZ ;
        /*0080*/                   EXIT ;
)");
  EXPECT_FALSE(select.writes_known);
  EXPECT_NE(select.Why().find("memory or integers, or a word"), std::string::npos) << select.Why();
  const KernelVerdict select_only = OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0010*/                   LDG.E R6, desc[UR4][R2.64] ;
        /*0020*/                   LDC R4, c[0x0][0x21c] ;
        /*0030*/                   FSEL R4, R4, R6, P0 ;
        /*0040*/                   STG.E desc[UR4][R2.64], R4 ;
        /*0050*/                   EXIT ;
)");
  EXPECT_TRUE(select_only.Exact()) << select_only.Why();
  EXPECT_EQ(select_only.escapes, std::set<int>{0x8});
  // PyTorch's clamp (ReLU forward): a select between a loaded value and the functor's lower
  // bound (word 0x8's high half), then, guarded, its upper bound (word 0x10's low half): either
  // word may escape, and the value still names no word as an address.
  const KernelVerdict clamp = OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0010*/                   LDG.E R6, desc[UR4][R2.64] ;
        /*0020*/                   ULDC UR6, c[0x0][0x21c] ;
        /*0030*/                   FSEL R6, R6, UR6, P1 ;
        /*0040*/               @P2 LDC R6, c[0x0][0x220] ;
        /*0050*/                   STG.E desc[UR4][R2.64], R6 ;
        /*0060*/                   EXIT ;
)");
  EXPECT_TRUE(clamp.Exact()) << clamp.Why();
  EXPECT_EQ(clamp.escapes, (std::set<int>{0x8, 0x10}));
  const KernelVerdict clamp_address = OnText(R"(
        /*0000*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0010*/                   LDC R6, c[0x0][0x21c] ;
        /*0020*/               @P2 LDC R6, c[0x0][0x220] ;
        /*0030*/                   LDC R7, c[0x0][0x21c] ;
        /*0040*/                   STG.E desc[UR4][R6.64], RZ ;
        /*0050*/                   EXIT ;
)");
  EXPECT_FALSE(clamp_address.writes_known);
  EXPECT_NE(clamp_address.Why().find("several words"), std::string::npos) << clamp_address.Why();
}

}  // namespace
}  // namespace pooch::kernels
