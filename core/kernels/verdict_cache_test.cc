// The on-disk verdict cache (Note [Kernel verdict cache]), module image extents and merged
// verdicts.
#include "core/kernels/verdict_cache.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/kernels/module_image.h"
#include "gtest/gtest.h"

namespace pooch::kernels {
namespace {

class TempFolder {
 public:
  TempFolder() {
    char tmpl[] = "/tmp/pooch-verdict-cache-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempFolder() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

KernelVerdict Exact(const std::string& name, std::set<int> writes, std::set<int> reads) {
  KernelVerdict v;
  v.name = name;
  v.arch = "sm_90";
  v.writes = std::move(writes);
  v.reads = std::move(reads);
  return v;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(VerdictCacheKeyTest, DependsOnBytesArchAndLengthOnly) {
  const std::vector<uint8_t> a(1000, 7);
  std::vector<uint8_t> b = a;
  b[500] = 8;
  const std::string key = VerdictCacheKey(a.data(), a.size(), "sm_90");
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key, VerdictCacheKey(a.data(), a.size(), "sm_90"));
  const std::vector<uint8_t> copy = a;  // the bytes decide, not where they are
  EXPECT_EQ(key, VerdictCacheKey(copy.data(), copy.size(), "sm_90"));
  EXPECT_NE(key, VerdictCacheKey(b.data(), b.size(), "sm_90"));
  EXPECT_NE(key, VerdictCacheKey(a.data(), a.size(), "sm_80"));
  EXPECT_NE(key, VerdictCacheKey(a.data(), a.size() - 1, "sm_90"));
}

TEST(VerdictDiskCacheTest, StoresAndLoadsEveryField) {
  TempFolder tmp;
  VerdictDiskCache cache(tmp.path() + "/deep/kernels");  // created at the first Store
  EXPECT_FALSE(cache.Load("00112233445566778899aabbccddeeff", "sm_90").has_value());
  KernelVerdict unknown;
  unknown.name = "k_chase";
  unknown.arch = "sm_90";
  unknown.AddUnknown(true, "address from memory at 0x40");
  unknown.reads = {0};
  unknown.uses_atomics = true;
  unknown.atomic_writes = {8};
  unknown.reads_clock = true;
  const std::vector<KernelVerdict> stored = {Exact("k_a", {0}, {8, 16}), unknown};
  ASSERT_TRUE(cache.Store("00112233445566778899aabbccddeeff", "sm_90", stored).ok());
  const auto loaded = cache.Load("00112233445566778899aabbccddeeff", "sm_90");
  ASSERT_TRUE(loaded.has_value());
  ASSERT_EQ(loaded->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(VerdictToCacheJson((*loaded)[i]), VerdictToCacheJson(stored[i]));
  }
  EXPECT_EQ((*loaded)[1].Why(), unknown.Why());
  // The same key for another architecture is not this file's.
  EXPECT_FALSE(cache.Load("00112233445566778899aabbccddeeff", "sm_80").has_value());
  // An empty list (no SASS for the architecture) is a verdict too.
  ASSERT_TRUE(cache.Store("ffeeddccbbaa99887766554433221100", "sm_90", {}).ok());
  const auto empty = cache.Load("ffeeddccbbaa99887766554433221100", "sm_90");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
}

TEST(VerdictDiskCacheTest, CorruptFileIsIgnoredAndRewritten) {
  TempFolder tmp;
  VerdictDiskCache cache(tmp.path());
  const std::string key = "0123456789abcdef0123456789abcdef";
  for (const std::string& bad :
       {std::string("{not json"), std::string("[]"), std::string("{\"key\": \"x\"}"),
        "{\"key\": \"0123456789abcdef0123456789abcdef\", \"arch\": \"sm_90\", \"version\": " +
            std::to_string(kAnalysisVersion) + ", \"kernels\": [{\"name\": 3}]}"}) {
    std::ofstream(cache.PathOf(key)) << bad;
    EXPECT_FALSE(cache.Load(key, "sm_90").has_value()) << bad;
  }
  ASSERT_TRUE(cache.Store(key, "sm_90", {Exact("k", {0}, {})}).ok());
  ASSERT_TRUE(cache.Load(key, "sm_90").has_value());
  EXPECT_NE(Slurp(cache.PathOf(key)).find("\"k\""), std::string::npos);
  // No temporary file is left behind.
  EXPECT_EQ(std::system(("test $(ls '" + tmp.path() + "' | wc -l) -eq 1").c_str()), 0);
}

TEST(VerdictDiskCacheTest, UnwritableFolderIsAnError) {
  VerdictDiskCache cache("/proc/pooch-cannot-write-here");
  EXPECT_FALSE(cache.Store("0123456789abcdef0123456789abcdef", "sm_90", {}).ok());
}

TEST(MergeVerdictsTest, UnionOfSetsUnknownIfAnyIs) {
  const KernelVerdict a = Exact("k", {0}, {8});
  const KernelVerdict b = Exact("k", {16}, {8, 24});
  KernelVerdict merged = MergeVerdicts({&a, &b});
  EXPECT_TRUE(merged.Exact());
  EXPECT_EQ(merged.writes, (std::set<int>{0, 16}));
  EXPECT_EQ(merged.reads, (std::set<int>{8, 24}));
  KernelVerdict c = Exact("k", {0}, {8});
  c.AddUnknown(false, "reads through memory");
  merged = MergeVerdicts({&a, &c});
  EXPECT_TRUE(merged.writes_known);
  EXPECT_FALSE(merged.reads_known);
  EXPECT_FALSE(merged.Replayable());
}

TEST(ModuleImageTest, FatBinaryWrapperAndElfExtents) {
  // A fat binary: magic, version, header size 16, payload 32 bytes.
  alignas(8) uint8_t fat[48] = {};
  const uint32_t magic = 0xba55ed50;
  std::memcpy(fat, &magic, 4);
  fat[4] = 1;
  fat[6] = 16;
  fat[8] = 32;
  ModuleImage image = FindModuleImage(fat);
  EXPECT_EQ(image.kind, ModuleImage::Kind::kFatBinary);
  EXPECT_EQ(image.data, fat);
  EXPECT_EQ(image.size, 48u);
  // The wrapper nvcc gives __cudaRegisterFatBinary points at it.
  struct {
    uint32_t magic = 0x466243b1, version = 1;
    const void* data;
    void* extra = nullptr;
  } wrapper{0x466243b1, 1, fat, nullptr};
  image = FindModuleImage(&wrapper);
  EXPECT_EQ(image.kind, ModuleImage::Kind::kFatBinary);
  EXPECT_EQ(image.data, fat);
  EXPECT_EQ(image.size, 48u);
  // An absurd payload is refused rather than read past.
  fat[15] = 0x7f;
  EXPECT_EQ(FindModuleImage(fat).kind, ModuleImage::Kind::kOther);
  // A 64-bit ELF file: 64-byte header, one section of 100 bytes at 0x40, the section table (one
  // 64-byte entry) at 0xa4.
  alignas(8) uint8_t elf[0xa4 + 0x40 * 2] = {0x7f, 'E', 'L', 'F', 2, 1};
  const uint64_t shoff = 0xa4, offset = 0x40, size = 100;
  const uint16_t shentsize = 0x40, shnum = 2;
  std::memcpy(elf + 0x28, &shoff, 8);
  std::memcpy(elf + 0x3a, &shentsize, 2);
  std::memcpy(elf + 0x3c, &shnum, 2);
  uint8_t* sh = elf + shoff + 0x40;  // entry 1 (entry 0 is the null section)
  const uint32_t progbits = 1;
  std::memcpy(sh + 4, &progbits, 4);
  std::memcpy(sh + 0x18, &offset, 8);
  std::memcpy(sh + 0x20, &size, 8);
  image = FindModuleImage(elf);
  EXPECT_EQ(image.kind, ModuleImage::Kind::kCubin);
  EXPECT_EQ(image.size, sizeof(elf));
  // PTX text is not a module pooch can analyse.
  EXPECT_EQ(FindModuleImage(".version 8.0\n.target sm_80\n").kind, ModuleImage::Kind::kOther);
  EXPECT_EQ(FindModuleImage(nullptr).kind, ModuleImage::Kind::kOther);
}

}  // namespace
}  // namespace pooch::kernels
