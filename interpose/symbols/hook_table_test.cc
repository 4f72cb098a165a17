// Unit tests of the generated tables (hook_table.h): the driver look-up's version selection and
// the function table. hooks.cc is compiled into this test, so the hooks it exports are this
// binary's own functions; no CUDA library is loaded.
#include "interpose/symbols/hook_table.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace pooch::interpose {
namespace {

void* Addr(FunctionId id) { return HookAddress(id); }

TEST(DriverHookFor, VersionSelectsTheForm) {
  EXPECT_EQ(DriverHookFor("cuMemAlloc", 12000, false), Addr(FunctionId::cuMemAlloc_v2));
  EXPECT_EQ(DriverHookFor("cuMemAlloc", 3020, false), Addr(FunctionId::cuMemAlloc_v2));
  EXPECT_EQ(DriverHookFor("cuMemAlloc", 3019, false), Addr(FunctionId::cuMemAlloc));
  EXPECT_EQ(DriverHookFor("cuMemAlloc", 2000, false), Addr(FunctionId::cuMemAlloc));
  EXPECT_EQ(DriverHookFor("cuMemAlloc", 1999, false), nullptr);
  EXPECT_EQ(DriverHookFor("cuMemcpyDtoDAsync", 3000, false), Addr(FunctionId::cuMemcpyDtoDAsync));
  EXPECT_EQ(DriverHookFor("cuMemcpyHtoDAsync", 13000, false),
            Addr(FunctionId::cuMemcpyHtoDAsync_v2));
  EXPECT_EQ(DriverHookFor("cuGetProcAddress", 12000, false), Addr(FunctionId::cuGetProcAddress_v2));
  EXPECT_EQ(DriverHookFor("cuGetProcAddress", 11030, false), Addr(FunctionId::cuGetProcAddress));
  EXPECT_EQ(DriverHookFor("cuLaunchKernel", 12000, false), Addr(FunctionId::cuLaunchKernel));
}

// A per-thread-default-stream look-up gets the _ptsz/_ptds hook, never the legacy-stream one.
TEST(DriverHookFor, PerThreadGetsThePerThreadForm) {
  EXPECT_EQ(DriverHookFor("cuLaunchKernel", 13000, true), Addr(FunctionId::cuLaunchKernel_ptsz));
  EXPECT_EQ(DriverHookFor("cuLaunchKernelEx", 12000, true),
            Addr(FunctionId::cuLaunchKernelEx_ptsz));
  EXPECT_EQ(DriverHookFor("cuLaunchKernelEx", 12000, false), Addr(FunctionId::cuLaunchKernelEx));
  EXPECT_EQ(DriverHookFor("cuMemcpyAsync", 12000, true), Addr(FunctionId::cuMemcpyAsync_ptsz));
  EXPECT_EQ(DriverHookFor("cuMemcpyHtoD", 12000, true), Addr(FunctionId::cuMemcpyHtoD_v2_ptds));
  EXPECT_EQ(DriverHookFor("cuMemsetD8Async", 12000, true), Addr(FunctionId::cuMemsetD8Async_ptsz));
  EXPECT_EQ(DriverHookFor("cuGraphLaunch", 12000, true), Addr(FunctionId::cuGraphLaunch_ptsz));
  EXPECT_EQ(DriverHookFor("cuGraphLaunch", 12000, false), Addr(FunctionId::cuGraphLaunch));
  EXPECT_EQ(DriverHookFor("cuLaunchKernelEx", 11050, true), nullptr);  // before it existed
}

TEST(DriverHookFor, OthersAreNotHooked) {
  EXPECT_EQ(DriverHookFor("cuMemAlloc", 12000, /*per_thread=*/true), nullptr);
  EXPECT_EQ(DriverHookFor("cuMemAlloc_v2", 12000, false), nullptr);  // not a query name
  EXPECT_EQ(DriverHookFor("cuMemAllocHost", 12000, false), nullptr);
  EXPECT_EQ(DriverHookFor("cudnnCreate", 12000, false), nullptr);  // no prefix matching
  EXPECT_EQ(DriverHookFor("cuMemAllo", 12000, false), nullptr);
  EXPECT_EQ(DriverHookFor(nullptr, 12000, false), nullptr);
}

TEST(Functions, NamesAreUniqueAndHooksComeFirst) {
  std::set<std::string> names;
  for (int i = 0; i < kFunctionCount; ++i) {
    EXPECT_TRUE(names.insert(kFunctions[i].name).second) << kFunctions[i].name;
    EXPECT_EQ(kFunctions[i].hooked, i < kHookCount) << kFunctions[i].name;
  }
  EXPECT_STREQ(kFunctions[Index(FunctionId::cudaMalloc)].name, "cudaMalloc");
  EXPECT_STREQ(kFunctions[Index(FunctionId::cuMemCreate)].name, "cuMemCreate");
  EXPECT_FALSE(kFunctions[Index(FunctionId::cuMemCreate)].hooked);
  EXPECT_EQ(kFunctions[Index(FunctionId::cudnnCreate)].library, Library::CUDNN);
  EXPECT_STREQ(Soname(Library::CUBLAS), "libcublas.so.13");
}

TEST(HookScope, OnlyTheOutermostIsTop) {
  const CallCounts before = Calls(FunctionId::cudaMalloc);
  {
    HookScope outer(FunctionId::cudaMalloc);
    EXPECT_TRUE(outer.top());
    HookScope inner(FunctionId::cudaMalloc);
    EXPECT_FALSE(inner.top());
  }
  HookScope again(FunctionId::cudaMalloc);
  EXPECT_TRUE(again.top());
  const CallCounts after = Calls(FunctionId::cudaMalloc);
  EXPECT_EQ(after.top - before.top, 2u);
  EXPECT_EQ(after.nested - before.nested, 1u);
}

}  // namespace
}  // namespace pooch::interpose
