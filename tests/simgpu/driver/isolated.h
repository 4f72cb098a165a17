// isolated.h: runs a test scenario in a forked child with its own SIMGPU_* environment.
//
// simgpu reads its configuration once per process and its faults are sticky, as on a GPU, so
// each scenario runs in a fresh child: the parent test process never calls CUDA itself. The
// child sets the variables, redirects stderr to a file, runs `body` and exits 0; the parent
// collects the exit status, the string `body` returned ("" = success) and stderr.
//
// Thread safety: call from the single-threaded test body only (it forks).
#ifndef SIMGPU_DRIVER_ISOLATED_H_
#define SIMGPU_DRIVER_ISOLATED_H_

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace simgpu_test {

struct Outcome {
  int exit_code = -1;  // the child's exit status (-1: killed by a signal)
  std::string result;  // what body returned: "" means every check passed
  std::string err;     // everything the child wrote to stderr
};

using Env = std::vector<std::pair<std::string, std::string>>;

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline Outcome RunIsolated(const Env& env, const std::function<std::string()>& body) {
  char err_path[] = "/tmp/simgpu_err_XXXXXX";
  char out_path[] = "/tmp/simgpu_out_XXXXXX";
  int err_fd = mkstemp(err_path);
  int out_fd = mkstemp(out_path);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    dup2(err_fd, 2);
    std::string r = body();
    if (write(out_fd, r.data(), r.size()) < 0) _exit(99);
    std::fflush(nullptr);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(err_fd);
  close(out_fd);
  Outcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.result = Slurp(out_path);
  o.err = Slurp(err_path);
  unlink(err_path);
  unlink(out_path);
  return o;
}

// Text for a checked value in a failure message.
template <typename T>
std::string ToText(const T& v) {
  if constexpr (std::is_convertible_v<T, std::string>) {
    return std::string(v);
  } else if constexpr (std::is_pointer_v<T>) {
    return std::to_string(reinterpret_cast<uintptr_t>(v));
  } else {
    return std::to_string(static_cast<long long>(v));
  }
}

inline int CountLines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace simgpu_test

// For scenario bodies (which return a string instead of using gtest in the child): returns a
// description of the first failed check.
#define CHECK_OR_RETURN(cond)                                                              \
  do {                                                                                     \
    if (!(cond)) return std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " #cond; \
  } while (0)

#define CHECK_EQ_OR_RETURN(a, b)                                                                 \
  do {                                                                                           \
    auto va_ = (a);                                                                              \
    auto vb_ = (b);                                                                              \
    if (!(va_ == vb_)) {                                                                         \
      return std::string(__FILE__ ":") + std::to_string(__LINE__) + ": " #a " == " #b " (got " + \
             ::simgpu_test::ToText(va_) + " vs " + ::simgpu_test::ToText(vb_) + ")";             \
    }                                                                                            \
  } while (0)

#endif  // SIMGPU_DRIVER_ISOLATED_H_
