// missing_real_probe LIBPOOCH: loads libpooch.so where libcuda.so.1 cannot be found (it
// is never in the linker cache without a driver) and calls two driver hooks twice each. Each call
// must return the API's "not initialized" code (no call through a null pointer), and libpooch must
// say so once per function. Prints the codes.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "probe: %s\n", dlerror());
    return 1;
  }
  using AllocFn = int (*)(unsigned long long*, size_t);
  using FreeFn = int (*)(unsigned long long);
  auto alloc = reinterpret_cast<AllocFn>(dlsym(lib, "cuMemAlloc_v2"));
  auto free_fn = reinterpret_cast<FreeFn>(dlsym(lib, "cuMemFree_v2"));
  if (alloc == nullptr || free_fn == nullptr) return 1;
  for (int i = 0; i < 2; ++i) {
    unsigned long long p = 0;
    std::printf("cuMemAlloc_v2 %d\n", alloc(&p, 64));
    std::printf("cuMemFree_v2 %d\n", free_fn(p));
  }
  return 0;
}
