// Abseil functions that clash_probe defines itself and exports (ENABLE_EXPORTS), as a host
// executable with a static Abseil linked -rdynamic does: absl::Now() and absl::AsciiStrToLower,
// under the names libpooch.so's own copy of Abseil carries, and which pooch calls while it runs
// (timing, parsing its configuration). They work, but each call that comes from libpooch.so
// prints a "clash:" line and is counted.
//
// Why they would be reached if pooch's Abseil were visible: the executable comes first in the
// dynamic linker's search order, so a call that libpooch.so leaves to the dynamic linker (an
// undefined or a preemptible default-visibility symbol, as when it linked Debian's shared
// Abseil) binds here. Hidden symbols, bound inside libpooch.so when it is linked, cannot.
#include "clash_host_absl.h"

#include <dlfcn.h>
#include <time.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace {

std::atomic<int> g_calls_from_pooch{0};

// Counts and reports a call of `function` whose return address lies in libpooch.so.
void NoteCaller(const void* return_address, const char* function) {
  Dl_info info{};
  if (dladdr(return_address, &info) == 0 || info.dli_fname == nullptr) return;
  const char* slash = std::strrchr(info.dli_fname, '/');
  const char* base = slash != nullptr ? slash + 1 : info.dli_fname;
  if (std::strncmp(base, "libpooch", 8) != 0) return;
  g_calls_from_pooch.fetch_add(1);
  std::fprintf(stderr, "clash: %s called the program's %s\n", info.dli_fname, function);
}

}  // namespace

int ClashCallsFromPooch() { return g_calls_from_pooch.load(); }

absl::Time absl::Now() {
  NoteCaller(__builtin_return_address(0), "absl::Now");
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return absl::FromUnixSeconds(ts.tv_sec) + absl::Nanoseconds(ts.tv_nsec);
}

void absl::AsciiStrToLower(std::string* s) {
  NoteCaller(__builtin_return_address(0), "absl::AsciiStrToLower");
  for (char& c : *s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}
