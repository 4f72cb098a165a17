#include "core/kernels/tools.h"

#include <fcntl.h>
#include <glob.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace pooch::kernels {
namespace {

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The folder of the running program (build/bin for the build tree's pooch and tests).
std::string ProgramDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, n);
  return path.substr(0, path.rfind('/'));
}

std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  return out;
}

std::vector<std::string>& ProcessPrefixes() {
  static auto* prefixes = new std::vector<std::string>;
  return *prefixes;
}

}  // namespace

void AddToolPrefix(const std::string& prefix) { ProcessPrefixes().push_back(prefix); }

absl::StatusOr<std::string> FindTool(const std::string& name,
                                     const std::vector<std::string>& extra_prefixes) {
  std::vector<std::string> dirs;
  for (absl::string_view d : absl::StrSplit(Env("PATH"), ':', absl::SkipEmpty())) {
    dirs.emplace_back(d);
  }
  if (!Env("CUDA_HOME").empty()) dirs.push_back(Env("CUDA_HOME") + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  std::vector<std::string> prefixes;
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    if (!Env(var).empty()) prefixes.push_back(Env(var));
  }
  const std::string here = ProgramDir();
  if (!here.empty()) {
    // build/bin/pooch, build/tests/x_test: build/cuda-tools is one folder up.
    prefixes.push_back(here + "/../cuda-tools");
  }
  prefixes.insert(prefixes.end(), extra_prefixes.begin(), extra_prefixes.end());
  prefixes.insert(prefixes.end(), ProcessPrefixes().begin(), ProcessPrefixes().end());
  for (const std::string& prefix : prefixes) {
    for (const std::string& d : Glob(prefix + "/lib/python3*/site-packages/nvidia/cu*/bin")) {
      dirs.push_back(d);
    }
  }
  for (const std::string& d : dirs) {
    const std::string path = d + "/" + name;
    if (Executable(path)) return path;
  }
  return absl::NotFoundError(
      absl::StrCat("no ", name,
                   " on PATH, under CUDA_HOME or in a pip package's nvidia/cu*/bin "
                   "(scripts/setup-cuda-tools.sh installs it into build/cuda-tools)"));
}

absl::StatusOr<std::string> RunTool(const std::vector<std::string>& argv, const std::string& cwd) {
  char err_path[] = "/tmp/pooch-tool-XXXXXX";
  int err_fd = mkstemp(err_path);
  if (err_fd < 0) return absl::InternalError("cannot create a temporary file");
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(err_fd);
    unlink(err_path);
    return absl::InternalError("cannot create a pipe");
  }
  // Note [Tools without pooch]: the tool runs without LD_PRELOAD, through posix_spawn.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env.push_back(*e);
  }
  env.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  std::string out;
  char buf[1 << 16];
  if (spawned == 0) {
    for (ssize_t n; (n = read(out_pipe[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  }
  close(out_pipe[0]);
  int status = 0;
  if (spawned == 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  close(err_fd);
  std::ifstream err_file(err_path);
  std::string first_line;
  std::getline(err_file, first_line);
  unlink(err_path);
  if (spawned != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(
        absl::StrCat(argv[0], " failed", first_line.empty() ? "" : ": " + first_line));
  }
  return out;
}

}  // namespace pooch::kernels
