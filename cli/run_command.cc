// `pooch run`: runs a program with libpooch.so preloaded.
//
//   pooch run [--memory-limit 12GiB|40%] [--policy P] [--trace f.json] [--plot f.png]
//             [--min-swap-bytes N] [--log LEVEL] [--no-summary] -- CMD ARGS...
//
// Each flag sets its POOCH_* variable (core/config/config.h), validated here with the same parser
// the library uses at start-up, so a bad value fails before the program starts. The command also
// gets PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync unless the user set PyTorch's allocator
// or the policy is off (Note [PyTorch's allocator] in torch_allocator.h: every tensor is one
// allocation pooch sees), and LD_PRELOAD with libpooch.so first, found beside the pooch binary (../lib/libpooch.so). Then
// pooch replaces itself with the command (execvp), so the command's exit status is pooch run's.
//
// Exit status: the command's; 2 for bad flags or a missing command (one line, or the usage);
// 127 when the command cannot be executed or libpooch.so is missing.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "cli/flags.h"
#include "cli/subcommand.h"
#include "cli/torch_allocator.h"
#include "core/config/config.h"

namespace pooch::cli {
namespace {

constexpr int kExitCannotRun = 127;

// Flag -> variable. Switches are handled below.
struct FlagVariable {
  const char* flag;
  const char* variable;
};
constexpr FlagVariable kValueFlags[] = {
    {"memory-limit", "POOCH_MEMORY_LIMIT"},
    {"policy", "POOCH_POLICY"},
    {"trace", "POOCH_TRACE"},
    {"plot", "POOCH_PLOT"},
    {"min-swap-bytes", "POOCH_MIN_SWAP_BYTES"},
    {"log", "POOCH_LOG"},
};

void PrintUsage(std::ostream& out) {
  out << "usage: pooch run [--memory-limit SIZE] [--policy P] [--trace FILE.json]\n"
         "                 [--plot FILE.png] [--min-swap-bytes SIZE] [--log LEVEL] [--no-summary]\n"
         "                 -- CMD ARGS...\n"
         "\n"
         "Runs CMD with libpooch.so preloaded. Each flag sets a variable (README, \"Variables\"):\n"
         "  --memory-limit SIZE    POOCH_MEMORY_LIMIT   device bytes pooch may use (12GiB, 500MB,\n"
         "                                              or 40% of the device's memory)\n"
         "  --policy P             POOCH_POLICY         off, demand, dtr, ... (default pooch)\n"
         "  --trace FILE.json      POOCH_TRACE          Chrome trace of swaps and ops\n"
         "  --plot FILE.png        POOCH_PLOT           picture of each plan made (gnuplot)\n"
         "  --min-swap-bytes SIZE  POOCH_MIN_SWAP_BYTES smaller allocations stay resident\n"
         "  --log LEVEL            POOCH_LOG            error, warn, info, debug\n"
         "  --no-summary           POOCH_SUMMARY=0      no summary on stderr at exit\n"
         "and PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (unless PYTORCH_CUDA_ALLOC_CONF or\n"
         "PYTORCH_NO_CUDA_MEMORY_CACHING is set, or the policy is off). Exit status: CMD's; 2 bad\n"
         "flags; 127 CMD cannot run.\n";
}

// The directory of the running pooch binary.
std::string SelfDirectory() {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return ".";
  std::string path(buf.data(), static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Validates `value` for `variable` with core's parser. The error drops the parser's
// "NAME='value': " prefix and names the flag instead.
absl::Status Validate(absl::string_view flag, const char* variable, const std::string& value) {
  absl::StatusOr<Config> config = LoadConfig([&](const char* name) -> const char* {
    return std::strcmp(name, variable) == 0 ? value.c_str() : nullptr;
  });
  if (config.ok()) return absl::OkStatus();
  absl::string_view why = config.status().message();
  if (const size_t at = why.find("': "); at != absl::string_view::npos) why.remove_prefix(at + 3);
  return absl::InvalidArgumentError(absl::StrCat("--", flag, " '", value, "': ", why));
}

int RunMain(int argc, char** argv) {
  // Flags end at "--" or at the first argument that is not a flag; the rest is the command.
  int command_at = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      command_at = i + 1;
      break;
    }
    if (std::strncmp(argv[i], "--", 2) != 0) {
      // A flag's value ("--policy off") is not the command.
      const bool is_value = i > 1 && std::strncmp(argv[i - 1], "--", 2) == 0 &&
                            std::strchr(argv[i - 1], '=') == nullptr &&
                            std::strcmp(argv[i - 1], "--no-summary") != 0 &&
                            std::strcmp(argv[i - 1], "--help") != 0;
      if (!is_value) {
        command_at = i;
        break;
      }
    }
  }
  const int flag_end = command_at < argc && std::strcmp(argv[command_at - 1], "--") == 0
                           ? command_at - 1
                           : command_at;
  FlagSpec spec;
  for (const FlagVariable& f : kValueFlags) spec.values.insert(f.flag);
  spec.switches = {"no-summary", "help"};
  absl::StatusOr<Flags> flags = ParseFlags(std::min(flag_end, argc), argv, spec);
  if (!flags.ok()) {
    ReportError(absl::StrCat("run: ", flags.status().message(), " (see pooch run --help)"));
    return kExitUsage;
  }
  if (flags->Has("help")) {
    PrintUsage(std::cout);
    return kExitOk;
  }
  if (command_at >= argc) {
    ReportError("run: missing command");
    PrintUsage(std::cerr);
    return kExitUsage;
  }

  std::vector<std::pair<std::string, std::string>> settings;
  for (const FlagVariable& f : kValueFlags) {
    std::optional<std::string> value = flags->Get(f.flag);
    if (!value) continue;
    if (absl::Status s = Validate(f.flag, f.variable, *value); !s.ok()) {
      ReportError(absl::StrCat("run: ", s.message()));
      return kExitUsage;
    }
    settings.emplace_back(f.variable, *value);
  }
  if (flags->Has("no-summary")) settings.emplace_back("POOCH_SUMMARY", "0");
  // Note [PyTorch's allocator] (torch_allocator.h): one allocation per tensor, unless the user
  // chose otherwise or pooch manages nothing.
  std::optional<std::string> policy = flags->Get("policy");
  if (!policy.has_value()) {
    if (const char* env = std::getenv("POOCH_POLICY")) policy = env;
  }
  auto env_value = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
  };
  AllocatorChoice allocator =
      ChooseAllocator(env_value("PYTORCH_CUDA_ALLOC_CONF"),
                      env_value("PYTORCH_NO_CUDA_MEMORY_CACHING"), policy.value_or("") == "off");
  if (allocator.warning.has_value()) ReportError(*allocator.warning);
  settings.insert(settings.end(), allocator.settings.begin(), allocator.settings.end());

  const std::string expected = SelfDirectory() + "/../lib/libpooch.so";
  char* resolved = realpath(expected.c_str(), nullptr);
  if (resolved == nullptr || access(resolved, R_OK) != 0) {
    ReportError(
        absl::StrCat("run: cannot find libpooch.so at ", expected, ": ", std::strerror(errno)));
    std::free(resolved);
    return kExitCannotRun;
  }
  const std::string library = resolved;
  std::free(resolved);
  std::string preload = library;
  if (const char* old = std::getenv("LD_PRELOAD"); old != nullptr && *old != '\0') {
    for (absl::string_view entry : absl::StrSplit(old, absl::ByAnyChar(": "), absl::SkipEmpty())) {
      if (entry != library) absl::StrAppend(&preload, ":", entry);
    }
  }
  settings.emplace_back("LD_PRELOAD", preload);
  for (const auto& [name, value] : settings) {
    if (setenv(name.c_str(), value.c_str(), 1) != 0) {
      ReportError(absl::StrCat("run: cannot set ", name, ": ", std::strerror(errno)));
      return kExitCannotRun;
    }
  }

  execvp(argv[command_at], argv + command_at);
  ReportError(absl::StrCat("run: cannot run '", argv[command_at], "': ", std::strerror(errno)));
  return kExitCannotRun;
}

}  // namespace

POOCH_SUBCOMMAND(run, "run", "run a program with pooch preloaded (pooch run -- CMD ARGS)", RunMain);

}  // namespace pooch::cli
