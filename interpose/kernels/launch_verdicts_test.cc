// Verdicts looked up by launch handle (Note [Verdicts at launch]) over core/kernels' test cubins,
// registered as a program would, with the on-disk cache in a temporary folder.
#include "interpose/kernels/launch_verdicts.h"

#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/kernels/tools.h"
#include "core/kernels/verdict_cache.h"
#include "gtest/gtest.h"
#include "interpose/kernels/module_registry.h"

namespace pooch::interpose {
namespace {

using pooch::kernels::KernelVerdict;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const void* Fake(uintptr_t n) { return reinterpret_cast<const void*>(n); }

class LaunchVerdictsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
#ifdef POOCH_KERNELS_TEST_CUBINS
    sm90_ = new std::string(
        ReadFile(std::string(POOCH_KERNELS_TEST_CUBINS) + "/analysis_kernels.sm_90.cubin"));
    sm80_ = new std::string(
        ReadFile(std::string(POOCH_KERNELS_TEST_CUBINS) + "/analysis_kernels.sm_80.cubin"));
    pooch::kernels::AddToolPrefix(std::string(POOCH_SOURCE_DIR) + "/build/cuda-tools");
#endif
    char tmpl[] = "/tmp/pooch-launch-verdicts-test-XXXXXX";
    cache_dir_ = new std::string(mkdtemp(tmpl));
    ConfigureLaunchVerdicts({.enabled = true, .arch = "sm_90", .cache_dir = *cache_dir_});
  }
  static void TearDownTestSuite() { std::system(("rm -rf '" + *cache_dir_ + "'").c_str()); }
  void SetUp() override {
    ASSERT_TRUE(sm90_ != nullptr && !sm90_->empty())
        << "no test cubins: the build found no nvcc (core/kernels/CMakeLists.txt)";
  }

  static std::string* sm90_;
  static std::string* sm80_;
  static std::string* cache_dir_;
};

std::string* LaunchVerdictsTest::sm90_ = nullptr;
std::string* LaunchVerdictsTest::sm80_ = nullptr;
std::string* LaunchVerdictsTest::cache_dir_ = nullptr;

TEST_F(LaunchVerdictsTest, LooksUpEachKindOfHandleOnceAndCachesOnDisk) {
  ModuleRegistry& registry = ModuleRegistry::Get();
  const int module = registry.AddImage(sm90_->data(), /*preserved=*/true);
  ASSERT_NE(module, ModuleRegistry::kNone);
  EXPECT_EQ(registry.AddImage(sm90_->data(), true), module);  // the same image, one module
  registry.Bind(Handle::kFunction, Fake(0x1000), module, "k_struct");
  registry.Bind(Handle::kHostStub, Fake(0x2000), module, "k_out_of_place");
  registry.Bind(Handle::kKernel, Fake(0x3000), module, "k_chase");

  const KernelVerdict* by_function = VerdictForFunction(reinterpret_cast<CUfunction>(0x1000));
  ASSERT_NE(by_function, nullptr);
  EXPECT_EQ(by_function->name, "k_struct");
  EXPECT_TRUE(by_function->Exact());
  EXPECT_EQ(by_function->writes, std::set<int>{0});
  EXPECT_EQ(by_function->reads, std::set<int>{8});
  EXPECT_EQ(VerdictForFunction(reinterpret_cast<CUfunction>(0x1000)), by_function);  // kept

  const KernelVerdict* by_stub = VerdictForHostStub(Fake(0x2000));
  ASSERT_NE(by_stub, nullptr);
  EXPECT_EQ(by_stub->name, "k_out_of_place");
  EXPECT_EQ(by_stub->writes, std::set<int>{0});

  const KernelVerdict* by_kernel =
      VerdictForKernel(static_cast<cudaKernel_t>(const_cast<void*>(Fake(0x3000))));
  ASSERT_NE(by_kernel, nullptr);
  EXPECT_FALSE(by_kernel->writes_known);  // pointer chasing: unknown, used as before

  // The launched kernels' verdicts are on disk under the module's key, and only theirs (Note
  // [One kernel at a time]).
  const std::string key = pooch::kernels::VerdictCacheKey(
      reinterpret_cast<const uint8_t*>(sm90_->data()), sm90_->size(), "sm_90");
  pooch::kernels::VerdictDiskCache cache(*cache_dir_);
  const auto stored = cache.Load(key, "sm_90");
  ASSERT_TRUE(stored.has_value());
  std::set<std::string> names;
  for (const KernelVerdict& v : *stored) names.insert(v.name);
  EXPECT_EQ(names, (std::set<std::string>{"k_chase", "k_out_of_place", "k_struct"}));
}

TEST_F(LaunchVerdictsTest, ASecondModuleWithTheSameBytesReadsTheCache) {
  ModuleRegistry& registry = ModuleRegistry::Get();
  // Doctor the cache: what the disk says is what a module of these bytes gets, unanalysed.
  const std::string key = pooch::kernels::VerdictCacheKey(
      reinterpret_cast<const uint8_t*>(sm90_->data()), sm90_->size(), "sm_90");
  pooch::kernels::VerdictDiskCache cache(*cache_dir_);
  KernelVerdict doctored;
  doctored.name = "k_struct";
  doctored.arch = "sm_90";
  doctored.writes = {0, 8};
  ASSERT_TRUE(cache.Store(key, "sm_90", {doctored}).ok());
  // The same bytes elsewhere (another library's copy, a cuModuleLoadData buffer): another module.
  const std::string elsewhere = *sm90_;
  const int module = registry.AddImage(elsewhere.data(), /*preserved=*/false);
  registry.Bind(Handle::kFunction, Fake(0x1100), module, "k_struct");
  const KernelVerdict* v = VerdictForFunction(reinterpret_cast<CUfunction>(0x1100));
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->writes, (std::set<int>{0, 8}));
  // A corrupt file: ignored, analysed again and rewritten.
  std::ofstream(cache.PathOf(key)) << "{corrupt";
  const std::string third = *sm90_;
  const int again = registry.AddImage(third.data(), /*preserved=*/false);
  registry.Bind(Handle::kFunction, Fake(0x1200), again, "k_struct");
  v = VerdictForFunction(reinterpret_cast<CUfunction>(0x1200));
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->writes, std::set<int>{0});
  EXPECT_TRUE(cache.Load(key, "sm_90").has_value());
}

TEST_F(LaunchVerdictsTest, AVerdictStaysWhereItWasAsItsModuleGainsKernels) {
  // Each kernel of a module is analysed at its first launch and added to the module's verdicts;
  // the pointers handed out before must stay valid (a torch transformer's first run crashed
  // when a flat map moved them on growing).
  ModuleRegistry& registry = ModuleRegistry::Get();
  const std::string copy = *sm90_;
  const int module = registry.AddImage(copy.data(), /*preserved=*/false);
  // (k_select is TheRegistryKnowsEveryModuleOfAName's: the registry is the process's.)
  const char* const names[] = {"k_in_place", "k_atomic",      "k_second_output",
                               "k_noinline", "k_vector",      "k_grid_constant",
                               "k_cp_async", "k_grid_stride", "k_divide_in_loop"};
  std::vector<const KernelVerdict*> seen;
  std::vector<KernelVerdict> copies;
  for (size_t i = 0; i < std::size(names); ++i) {
    registry.Bind(Handle::kFunction, Fake(0x7000 + i), module, names[i]);
    const KernelVerdict* v = VerdictForFunction(reinterpret_cast<CUfunction>(0x7000 + i));
    ASSERT_NE(v, nullptr) << names[i];
    seen.push_back(v);
    copies.push_back(*v);
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i]->name, names[i]);
    EXPECT_EQ(seen[i]->writes, copies[i].writes) << names[i];
    EXPECT_EQ(seen[i]->reads, copies[i].reads) << names[i];
  }
}

TEST_F(LaunchVerdictsTest, UnknownWithoutSassForTheArchitectureOrAModule) {
  ModuleRegistry& registry = ModuleRegistry::Get();
  const int module = registry.AddImage(sm80_->data(), /*preserved=*/true);  // no sm_90 SASS
  registry.Bind(Handle::kFunction, Fake(0x4000), module, "k_struct");
  EXPECT_EQ(VerdictForFunction(reinterpret_cast<CUfunction>(0x4000)), nullptr);
  // A handle the registry never saw, which may not even be a kernel: unknown, nothing asked.
  EXPECT_EQ(VerdictForHostStub(Fake(0x5000)), nullptr);
  // PTX text is no module.
  EXPECT_EQ(registry.AddImage(".version 8.0\n", false), ModuleRegistry::kNone);
}

TEST_F(LaunchVerdictsTest, TheRegistryKnowsEveryModuleOfAName) {
  ModuleRegistry& registry = ModuleRegistry::Get();
  const int a = registry.AddImage(sm90_->data(), /*preserved=*/true);
  const int b = registry.AddImage(sm80_->data(), /*preserved=*/true);
  // A launch handle the registry does not know is looked up by name among these.
  registry.Bind(Handle::kHostStub, Fake(0x6000), a, "k_select");
  registry.Bind(Handle::kHostStub, Fake(0x6001), b, "k_select");
  EXPECT_EQ(registry.ModulesNaming("k_select"), (std::vector<int>{a, b}));
}

}  // namespace
}  // namespace pooch::interpose
