// The fat binary and cubin readers (fatbin.h, cubin.h) over what nvcc 13 produces at build time
// from kernels_test.cu (uncompressed, zstd and LZ4 fat binaries and a bare cubin), checked
// against the kernels' C++ signatures; and over one real module of torch's libtorch_cuda.so
// when the torch venv exists (skipped, saying so, otherwise).
#include "tests/simgpu/driver/modules/fatbin.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/simgpu/driver/kernels_test.h"
#include "tests/simgpu/driver/modules/cubin.h"
#include "tests/simgpu/driver/modules/ptx.h"

namespace {

using simgpu::cubin::Cubin;
using simgpu::cubin::KernelInfo;
using simgpu::cubin::Param;
using simgpu::fatbin::Compression;
using simgpu::fatbin::Entry;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string Kernels(const char* file) { return std::string(SIMGPU_TEST_KERNELS_DIR) + "/" + file; }

constexpr uint32_t AlignUp(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

// The parameter layout the C++ signature implies: each parameter at its alignment, in order.
template <typename... Ts>
std::vector<Param> LayoutOf() {
  std::vector<Param> out;
  uint32_t off = 0;
  ((off = AlignUp(off, alignof(Ts)), out.push_back(Param{off, sizeof(Ts)}), off += sizeof(Ts)),
   ...);
  return out;
}

void ExpectParams(const Cubin& c, const std::string& kernel, const std::vector<Param>& want) {
  SCOPED_TRACE(kernel);
  auto it = c.kernels.find(kernel);
  ASSERT_NE(it, c.kernels.end());
  const KernelInfo& k = it->second;
  ASSERT_EQ(k.params.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(k.params[i].offset, want[i].offset) << "parameter " << i;
    EXPECT_EQ(k.params[i].bytes, want[i].bytes) << "parameter " << i;
  }
  uint32_t end = want.empty() ? 0 : want.back().offset + want.back().bytes;
  EXPECT_EQ(k.param_bytes, end);
}

// Every check on kernels_test.cu's cubin, whatever container it came in.
void ExpectKernelsTestCubin(const uint8_t* data, size_t bytes) {
  Cubin c;
  std::string why;
  ASSERT_TRUE(simgpu::cubin::ParseCubin(data, bytes, &c, &why)) << why;
  EXPECT_EQ(c.arch, 80);
  EXPECT_EQ(c.kernels.size(), 7u);
  ExpectParams(c, "_Z6k_copyPfPKfi", LayoutOf<float*, const float*, int>());
  ExpectParams(c, "_Z8k_struct8SmallArgdcPf", LayoutOf<SmallArg, double, char, float*>());
  ExpectParams(c, "_Z5k_big6BigArgPfs", LayoutOf<BigArg, float*, short>());
  ExpectParams(c, "_Z8k_sharedPf", LayoutOf<float*>());
  ExpectParams(c, "_Z6k_nonev", {});
  ExpectParams(c, "_Z11k_ptr_array8PtrArrayi", LayoutOf<PtrArray, int>());
  ExpectParams(c, "_Z6k_huge7HugeArgcPf", LayoutOf<HugeArg, char, float*>());
  const KernelInfo& shared = c.kernels.at("_Z8k_sharedPf");
  EXPECT_EQ(shared.shared_bytes, kSharedFloats * sizeof(float));
  EXPECT_EQ(shared.max_threads_per_block, kSharedMaxThreads);
  EXPECT_GT(shared.registers, 0);
  EXPECT_EQ(c.kernels.at("_Z6k_copyPfPKfi").shared_bytes, 0u);
  EXPECT_EQ(c.kernels.at("_Z6k_copyPfPKfi").max_threads_per_block, 0);
  ASSERT_EQ(c.globals.count("g_table"), 1u);
  EXPECT_EQ(c.globals.at("g_table").bytes, kTableFloats * sizeof(float));
  ASSERT_EQ(c.globals.count("c_small"), 1u);
  ASSERT_EQ(c.globals.at("c_small").bytes, kConstInts * sizeof(int));
  ASSERT_NE(c.globals.at("c_small").init, nullptr);
  int init[kConstInts];
  std::memcpy(init, c.globals.at("c_small").init, sizeof init);
  EXPECT_EQ(init[0], 1);
  EXPECT_EQ(init[3], 4);
}

// The one ELF entry of a kernels_test fat binary, decompressed.
std::vector<uint8_t> OnlyCubin(const std::vector<uint8_t>& fb, Compression want) {
  std::vector<Entry> entries;
  std::string why;
  EXPECT_EQ(simgpu::fatbin::FatbinBytes(fb.data()), fb.size());
  EXPECT_TRUE(simgpu::fatbin::ParseFatbin(fb.data(), fb.size(), &entries, &why)) << why;
  EXPECT_EQ(entries.size(), 1u);
  if (entries.size() != 1) return {};
  const Entry& e = entries[0];
  EXPECT_EQ(e.kind, simgpu::fatbin::Kind::kElf);
  EXPECT_EQ(e.arch, 80);
  EXPECT_EQ(e.compression, want);
  std::vector<uint8_t> out;
  EXPECT_TRUE(simgpu::fatbin::Decompress(e, &out, &why)) << why;
  EXPECT_EQ(out.size(), e.uncompressed_bytes);
  return out;
}

TEST(Cubin, ParsesNvccCubin) {
  std::vector<uint8_t> c = ReadAll(Kernels("kernels_test.cubin"));
  ExpectKernelsTestCubin(c.data(), c.size());
}

TEST(Ptx, EntriesGiveTheCubinsLayout) {
  std::vector<uint8_t> c = ReadAll(Kernels("kernels_test.cubin"));
  std::vector<uint8_t> text = ReadAll(Kernels("kernels_test.ptx"));
  std::string ptx(text.begin(), text.end());
  Cubin cubin;
  std::string why;
  ASSERT_TRUE(simgpu::cubin::ParseCubin(c.data(), c.size(), &cubin, &why)) << why;
  ASSERT_EQ(cubin.kernels.size(), 7u);
  for (const auto& [name, want] : cubin.kernels) {
    SCOPED_TRACE(name);
    KernelInfo got;
    ASSERT_EQ(simgpu::ptx::ParseEntry(ptx, name, &got, &why), simgpu::ptx::Found::kYes) << why;
    ASSERT_EQ(got.params.size(), want.params.size());
    for (size_t i = 0; i < want.params.size(); ++i) {
      EXPECT_EQ(got.params[i].offset, want.params[i].offset) << i;
      EXPECT_EQ(got.params[i].bytes, want.params[i].bytes) << i;
    }
    EXPECT_EQ(got.param_bytes, want.param_bytes);
    EXPECT_EQ(got.shared_bytes, want.shared_bytes);
    EXPECT_EQ(got.max_threads_per_block, want.max_threads_per_block);
  }
  KernelInfo k;
  EXPECT_EQ(simgpu::ptx::ParseEntry(ptx, "_Z6k_copy", &k, &why), simgpu::ptx::Found::kNo);
  const std::string odd = ".visible .entry odd(\n .param .weird odd_param_0\n)\n{\n ret;\n}\n";
  EXPECT_EQ(simgpu::ptx::ParseEntry(odd, "odd", &k, &why), simgpu::ptx::Found::kMalformed);
  EXPECT_NE(why.find("parameter 0"), std::string::npos) << why;
}

TEST(Fatbin, UncompressedZstdAndLz4HoldTheSameCubin) {
  std::vector<uint8_t> bare = ReadAll(Kernels("kernels_test.cubin"));
  std::vector<uint8_t> none =
      OnlyCubin(ReadAll(Kernels("kernels_none.fatbin")), Compression::kNone);
  std::vector<uint8_t> zstd =
      OnlyCubin(ReadAll(Kernels("kernels_zstd.fatbin")), Compression::kZstd);
  std::vector<uint8_t> lz4 = OnlyCubin(ReadAll(Kernels("kernels_lz4.fatbin")), Compression::kLz4);
  ASSERT_FALSE(none.empty());
  EXPECT_EQ(zstd, none);
  EXPECT_EQ(lz4, none);
  ExpectKernelsTestCubin(none.data(), none.size());
  ExpectKernelsTestCubin(zstd.data(), zstd.size());
  ExpectKernelsTestCubin(lz4.data(), lz4.size());
  // The bare cubin is the same ELF up to its size rounding in the container.
  ASSERT_GE(none.size(), bare.size());
  EXPECT_EQ(std::memcmp(none.data(), bare.data(), bare.size()), 0);
}

TEST(Fatbin, RejectsDamage) {
  std::vector<uint8_t> fb = ReadAll(Kernels("kernels_zstd.fatbin"));
  std::vector<Entry> entries;
  std::string why;
  // Truncated: the header promises more bytes than there are.
  EXPECT_FALSE(simgpu::fatbin::ParseFatbin(fb.data(), fb.size() - 8, &entries, &why));
  EXPECT_NE(why.find("exceed"), std::string::npos) << why;
  // A corrupt compressed payload.
  ASSERT_TRUE(simgpu::fatbin::ParseFatbin(fb.data(), fb.size(), &entries, &why)) << why;
  std::vector<uint8_t> copy = fb;
  ASSERT_TRUE(simgpu::fatbin::ParseFatbin(copy.data(), copy.size(), &entries, &why));
  std::memset(const_cast<uint8_t*>(entries[0].payload) + 8, 0xff, 16);
  std::vector<uint8_t> out;
  EXPECT_FALSE(simgpu::fatbin::Decompress(entries[0], &out, &why));
  EXPECT_NE(why.find("zstd"), std::string::npos) << why;
  // Not a fat binary at all.
  EXPECT_EQ(simgpu::fatbin::FatbinBytes(ReadAll(Kernels("kernels_test.cubin")).data()), 0u);
  // An LZ4 match reaching before the output's start.
  const uint8_t bad_lz4[] = {0x10, 'a', 0x05, 0x00};
  uint8_t lz4_out[8];
  EXPECT_FALSE(simgpu::fatbin::Lz4BlockDecompress(bad_lz4, sizeof bad_lz4, lz4_out, 5));
}

TEST(Fatbin, Lz4OverlappingMatch) {
  // "ab" then a match of 6 at offset 2: "abababab".
  const uint8_t in[] = {0x22, 'a', 'b', 0x02, 0x00};
  uint8_t out[8];
  ASSERT_TRUE(simgpu::fatbin::Lz4BlockDecompress(in, sizeof in, out, 8));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(out), 8), "abababab");
}

TEST(Fatbin, SearchOrderPrefersTheDevicesArchitecture) {
  std::vector<Entry> entries;
  for (int arch : {75, 80, 86, 90, 120}) {
    entries.push_back(
        Entry{simgpu::fatbin::Kind::kElf, arch, Compression::kNone, nullptr, 0, 0, 0});
  }
  entries.push_back(Entry{simgpu::fatbin::Kind::kPtx, 90, Compression::kNone, nullptr, 0, 0, 0});
  auto archs = [&](int device) {
    std::vector<int> out;
    for (const Entry* e : simgpu::fatbin::CubinSearchOrder(entries, device)) out.push_back(e->arch);
    return out;
  };
  EXPECT_EQ(archs(86), (std::vector<int>{86, 80, 90, 75, 120}));
  EXPECT_EQ(archs(89), (std::vector<int>{86, 80, 90, 75, 120}));
  EXPECT_EQ(archs(70), (std::vector<int>{75, 80, 86, 90, 120}));
}

// --- torch's libtorch_cuda.so ---

std::string TorchLib() {
  namespace fs = std::filesystem;
  std::vector<fs::path> venvs;
  if (const char* v = std::getenv("POOCH_TORCH_VENV")) venvs.emplace_back(v);
  venvs.emplace_back(std::string(SIMGPU_TEST_SOURCE_DIR) + "/build/torch-venv");
  for (const fs::path& venv : venvs) {
    std::error_code ec;
    for (const auto& d : fs::directory_iterator(venv / "lib", ec)) {
      fs::path lib = d.path() / "site-packages/torch/lib/libtorch_cuda.so";
      if (fs::exists(lib)) return lib.string();
    }
  }
  return "";
}

// The bytes of section `name` of the ELF file at `path`, first `limit` bytes at most.
std::vector<uint8_t> ReadSection(const std::string& path, const char* name, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr eh;
  in.read(reinterpret_cast<char*>(&eh), sizeof eh);
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  in.seekg(static_cast<std::streamoff>(eh.e_shoff));
  in.read(reinterpret_cast<char*>(sh.data()),
          static_cast<std::streamsize>(sh.size() * sizeof sh[0]));
  std::string names(sh[eh.e_shstrndx].sh_size, '\0');
  in.seekg(static_cast<std::streamoff>(sh[eh.e_shstrndx].sh_offset));
  in.read(names.data(), static_cast<std::streamsize>(names.size()));
  for (const Elf64_Shdr& s : sh) {
    if (std::strcmp(names.c_str() + s.sh_name, name) != 0) continue;
    std::vector<uint8_t> out(std::min<size_t>(s.sh_size, limit));
    in.seekg(static_cast<std::streamoff>(s.sh_offset));
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
    return out;
  }
  return {};
}

TEST(Fatbin, ParsesAModuleOfTorch) {
  std::string lib = TorchLib();
  if (lib.empty()) {
    GTEST_SKIP() << "no torch venv (build/torch-venv or $POOCH_TORCH_VENV): scripts/setup-torch.sh "
                    "installs it";
  }
  // The first fat binary of .nv_fatbin: its header says how long it is.
  std::vector<uint8_t> head = ReadSection(lib, ".nv_fatbin", 16);
  ASSERT_EQ(head.size(), 16u);
  uint64_t bytes = simgpu::fatbin::FatbinBytes(head.data());
  ASSERT_GT(bytes, 16u);
  std::vector<uint8_t> fb = ReadSection(lib, ".nv_fatbin", bytes);
  std::vector<Entry> entries;
  std::string why;
  ASSERT_TRUE(simgpu::fatbin::ParseFatbin(fb.data(), fb.size(), &entries, &why)) << why;
  ASSERT_FALSE(entries.empty());
  std::printf("torch module 0: %zu bytes, %zu entries\n", fb.size(), entries.size());
  // Each architecture's cubin lists the same kernels with the same parameter layout
  // (Note [Any cubin will do]).
  std::vector<Cubin> cubins;
  for (const Entry& e : entries) {
    if (e.kind != simgpu::fatbin::Kind::kElf) continue;
    EXPECT_EQ(e.compression, Compression::kZstd) << "sm_" << e.arch;
    std::vector<uint8_t> elf;
    ASSERT_TRUE(simgpu::fatbin::Decompress(e, &elf, &why)) << "sm_" << e.arch << ": " << why;
    Cubin c;
    ASSERT_TRUE(simgpu::cubin::ParseCubin(elf.data(), elf.size(), &c, &why))
        << "sm_" << e.arch << ": " << why;
    ASSERT_FALSE(c.kernels.empty()) << "sm_" << e.arch;
    EXPECT_EQ(c.arch, e.arch);
    std::printf("  sm_%d: %zu -> %zu bytes, %zu kernels\n", e.arch,
                static_cast<size_t>(e.compressed_bytes), elf.size(), c.kernels.size());
    cubins.push_back(std::move(c));
  }
  ASSERT_FALSE(cubins.empty());
  size_t with_params = 0;
  for (const auto& [name, k] : cubins[0].kernels) {
    with_params += !k.params.empty();
    for (size_t i = 1; i < cubins.size(); ++i) {
      auto other = cubins[i].kernels.find(name);
      if (other == cubins[i].kernels.end()) continue;
      EXPECT_EQ(other->second.param_bytes, k.param_bytes) << name;
      ASSERT_EQ(other->second.params.size(), k.params.size()) << name;
      for (size_t p = 0; p < k.params.size(); ++p) {
        EXPECT_EQ(other->second.params[p].offset, k.params[p].offset) << name;
        EXPECT_EQ(other->second.params[p].bytes, k.params[p].bytes) << name;
      }
    }
  }
  EXPECT_GT(with_params, 0u);
}

}  // namespace
