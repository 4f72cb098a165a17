#include "core/base/log.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "core/base/log_rank.h"

namespace pooch {
namespace {

constexpr size_t kLineBytes = 1024;

std::atomic<int> g_log_rank{-1};

// The words after "pooch: ".
const char* SeverityWords(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "error: ";
    case Severity::kWarn:
      return "warning: ";
    case Severity::kInfo:
      return "";
    case Severity::kDebug:
      return "debug: ";
  }
  return "";
}

void WriteLine(const char* words, const char* format, va_list args) {
  char line[kLineBytes];
  const int saved_errno = errno;  // a hook must not change errno as a side effect of logging
  const int rank = g_log_rank.load(std::memory_order_relaxed);
  const int prefix = rank >= 0 ? std::snprintf(line, 64, "pooch[rank %d]: %s", rank, words)
                               : std::snprintf(line, 64, "pooch: %s", words);
  size_t n = static_cast<size_t>(std::max(prefix, 0));
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

void SetLogRank(int rank) { g_log_rank.store(rank, std::memory_order_relaxed); }

void Log(Severity severity, const char* format, ...) {
  if (!LogEnabled(severity)) return;
  va_list args;
  va_start(args, format);
  WriteLine(SeverityWords(severity), format, args);
  va_end(args);
}

void LogLine(const char* format, ...) {
  va_list args;
  va_start(args, format);
  WriteLine("", format, args);
  va_end(args);
}

}  // namespace pooch
