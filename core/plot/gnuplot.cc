// Running gnuplot (gnuplot.h).
#include "core/plot/gnuplot.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace pooch {
namespace {

// Removes the script folder and what gnuplot left in it when the call ends.
class TempFolder {
 public:
  TempFolder() {
    const char* tmp = getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/pooch-plot.XXXXXX");
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempFolder() {
    if (path_.empty()) return;
    for (const std::string& file : files_) unlink(PathOf(file).c_str());
    rmdir(path_.c_str());
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // The path of `name` in the folder, which the destructor removes.
  std::string AddFile(const std::string& name) {
    files_.push_back(name);
    return PathOf(name);
  }

 private:
  std::string PathOf(const std::string& name) const { return absl::StrCat(path_, "/", name); }

  std::string path_;
  std::vector<std::string> files_;
};

// The first non-empty line of `path` (gnuplot's stderr), trimmed; empty if none.
std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view trimmed = absl::StripAsciiWhitespace(line);
    if (!trimmed.empty()) return std::string(trimmed);
  }
  return "";
}

std::string NotInstalled(const std::string& program, int error) {
  return absl::StrCat("gnuplot is not installed (cannot run '", program, "': ", strerror(error),
                      "); install it, on Debian: apt-get install ", kGnuplotPackage);
}

}  // namespace

std::vector<std::string> ChildEnvironment(const char* const* environment) {
  std::vector<std::string> kept;
  if (environment == nullptr) return kept;
  for (const char* const* e = environment; *e != nullptr; ++e) {
    const absl::string_view entry(*e);
    const absl::string_view name = entry.substr(0, entry.find('='));
    if (name == "LD_PRELOAD" || absl::StartsWith(name, "POOCH_") ||
        absl::StartsWith(name, "SIMGPU_") ||
        (absl::StartsWith(name, "NVTX_INJECTION") && absl::EndsWith(name, "_PATH"))) {
      continue;
    }
    kept.emplace_back(entry);
  }
  return kept;
}

absl::Status RunGnuplot(absl::string_view script, const GnuplotOptions& options) {
  TempFolder folder;
  if (!folder.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot make a temporary folder for gnuplot: ", strerror(errno)));
  }
  const std::string script_path = folder.AddFile("plot.gp");
  const std::string log_path = folder.AddFile("gnuplot.log");
  {
    std::ofstream out(script_path, std::ios::binary | std::ios::trunc);
    out << script;
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", script_path));
  }

  std::vector<std::string> env = ChildEnvironment(environ);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string program = options.program;
  std::string script_arg = script_path;
  char* argv[] = {program.data(), script_arg.data(), nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
  // gnuplot needs none of the program's descriptors (its files, the device's).
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
#endif
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    if (spawned == ENOENT || spawned == EACCES || spawned == ENOTDIR) {
      return absl::FailedPreconditionError(NotInstalled(program, spawned));
    }
    return absl::InternalError(absl::StrCat("cannot run ", program, ": ", strerror(spawned)));
  }

  int status = 0;
  pid_t waited = 0;
  do {
    waited = waitpid(pid, &status, 0);
  } while (waited < 0 && errno == EINTR);
  if (waited < 0) {
    // A program that ignores SIGCHLD has its children reaped for it: gnuplot has finished, how
    // is unknown; the caller checks what it wrote.
    if (errno == ECHILD) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("cannot wait for ", program, ": ", strerror(errno)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  const std::string said = FirstLine(log_path);
  const std::string how = WIFEXITED(status)
                              ? absl::StrCat("exited with status ", WEXITSTATUS(status))
                              : absl::StrCat("was killed by signal ", WTERMSIG(status));
  return absl::InternalError(
      absl::StrCat(program, " ", how, said.empty() ? "" : absl::StrCat(": ", said)));
}

}  // namespace pooch
