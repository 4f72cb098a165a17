// log.h: pooch's messages on stderr, safe on hook paths.
//
// Every line starts with "pooch: ". A message is formatted into a fixed stack buffer and written
// with one write(2): no allocation, no lock, no stdio, so it may be called from any hook, from
// the constructor before main and from a signal-unsafe context that stdio would deadlock in.
// Lines longer than the buffer are cut.
//
//   POOCH_LOG_AT(kDebug, "cuGetProcAddress(%s, %d) -> hook", symbol, version);
//   LogLine("POOCH_MEMORY_LIMIT='x': ...");   // unconditional, for start-up errors
//
// Thread safety: all functions may be called concurrently; lines do not interleave (one write).
#ifndef POOCH_CORE_BASE_LOG_H_
#define POOCH_CORE_BASE_LOG_H_

#include <atomic>

namespace pooch {

// Most severe first; POOCH_LOG names the threshold (core/config: Config::log_level).
enum class Severity : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// The least severe message printed; set once from the configuration, kWarn until then.
void SetLogThreshold(Severity threshold);

inline std::atomic<int> g_log_threshold{static_cast<int>(Severity::kWarn)};

inline bool LogEnabled(Severity severity) {
  return static_cast<int>(severity) <= g_log_threshold.load(std::memory_order_relaxed);
}

// Writes "pooch: <severity>: <message>\n" ("error", "warning", "debug"; kInfo lines have no
// severity word: "pooch: <message>").
void Log(Severity severity, const char* format, ...) __attribute__((format(printf, 2, 3)));

// Writes "pooch: <message>\n" regardless of the threshold.
void LogLine(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace pooch

// Formats only when the level is enabled.
#define POOCH_LOG_AT(severity, ...)                           \
  do {                                                        \
    if (::pooch::LogEnabled(::pooch::Severity::severity)) {   \
      ::pooch::Log(::pooch::Severity::severity, __VA_ARGS__); \
    }                                                         \
  } while (0)

#endif  // POOCH_CORE_BASE_LOG_H_
