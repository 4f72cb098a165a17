#include "core/base/log.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace pooch {
namespace {

constexpr size_t kLineBytes = 1024;

const char* Prefix(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "pooch: error: ";
    case Severity::kWarn:
      return "pooch: warning: ";
    case Severity::kInfo:
      return "pooch: ";
    case Severity::kDebug:
      return "pooch: debug: ";
  }
  return "pooch: ";
}

void WriteLine(const char* prefix, const char* format, va_list args) {
  char line[kLineBytes];
  const int saved_errno = errno;  // a hook must not change errno as a side effect of logging
  size_t n = std::strlen(prefix);
  std::memcpy(line, prefix, n);
  const int written = std::vsnprintf(line + n, sizeof(line) - n - 1, format, args);
  if (written > 0) n += std::min<size_t>(static_cast<size_t>(written), sizeof(line) - n - 2);
  line[n++] = '\n';
  const char* p = line;
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    p += w;
    n -= static_cast<size_t>(w);
  }
  errno = saved_errno;
}

}  // namespace

void SetLogThreshold(Severity threshold) {
  g_log_threshold.store(static_cast<int>(threshold), std::memory_order_relaxed);
}

void Log(Severity severity, const char* format, ...) {
  if (!LogEnabled(severity)) return;
  va_list args;
  va_start(args, format);
  WriteLine(Prefix(severity), format, args);
  va_end(args);
}

void LogLine(const char* format, ...) {
  va_list args;
  va_start(args, format);
  WriteLine("pooch: ", format, args);
  va_end(args);
}

}  // namespace pooch
