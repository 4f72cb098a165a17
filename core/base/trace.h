// TraceWriter: Chrome trace event JSON, which Perfetto (ui.perfetto.dev) and chrome://tracing
// open. `pooch plan --trace` writes a simulated timeline with it; the interposer writes the real
// one at run time.
//
//   absl::StatusOr<std::unique_ptr<pooch::TraceWriter>> w = pooch::TraceWriter::Open("t.json");
//   (*w)->ProcessName(1, "pooch");
//   (*w)->ThreadName(1, 1, "compute");
//   (*w)->Complete(1, 1, "conv1", "forward", /*ts_us=*/0, /*dur_us=*/12.5, {{"op", 3}});
//   (*w)->Counter(1, "device memory", 12.5, {{"bytes", 1 << 20}});
//   absl::Status s = (*w)->Close();
//
// The document is {"traceEvents":[...],"displayTimeUnit":"ms"}; times are microseconds, as the
// format requires. Events are appended in call order (viewers sort by time). A file writer keeps
// a buffer and writes it out whenever it passes 1 MiB, on Flush() and on Close(); until Close()
// the file is an unterminated document (Perfetto still opens it; chrome://tracing needs it
// closed). Names and string arguments are escaped; invalid UTF-8 becomes U+FFFD, so the output
// is always valid JSON.
//
// Thread safety: every method may be called from any thread; events are formatted outside the
// lock and appended under it, so the cost per event is one short critical section.
#ifndef POOCH_CORE_BASE_TRACE_H_
#define POOCH_CORE_BASE_TRACE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"

namespace pooch {

// One entry of an event's "args" (or a counter's series): a key and a number or a string. The
// key and string value are views, copied when the event is written: a temporary may back them
// only within the call's own expression, not in an array declared before the call.
struct TraceArg {
  TraceArg(absl::string_view k, int v) : key(k), kind(Kind::kInt), int_value(v) {}
  TraceArg(absl::string_view k, int64_t v) : key(k), kind(Kind::kInt), int_value(v) {}
  TraceArg(absl::string_view k, double v) : key(k), kind(Kind::kDouble), double_value(v) {}
  TraceArg(absl::string_view k, absl::string_view v)
      : key(k), kind(Kind::kString), string_value(v) {}
  TraceArg(absl::string_view k, const char* v) : key(k), kind(Kind::kString), string_value(v) {}

  enum class Kind { kInt, kDouble, kString };
  absl::string_view key;
  Kind kind;
  int64_t int_value = 0;
  double double_value = 0;
  absl::string_view string_value;
};

class TraceWriter {
 public:
  // An in-memory writer: Contents() returns the document. For tests and small traces.
  TraceWriter();
  // A writer that streams to `path`, created (truncated) now. Errors: the OS error as a Status
  // naming the path.
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Open(const std::string& path);
  // Closes a file writer that was not closed; errors are lost (call Close() to see them).
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Metadata: the names viewers show for a process and for a thread (a track), and the order of
  // tracks within a process (lower first).
  void ProcessName(int pid, absl::string_view name);
  void ThreadName(int pid, int tid, absl::string_view name);
  void ThreadSortIndex(int pid, int tid, int index);

  // A complete event ("ph":"X"): an interval on track (pid, tid).
  void Complete(int pid, int tid, absl::string_view name, absl::string_view category, double ts_us,
                double dur_us, absl::Span<const TraceArg> args = {});
  // An instant event ("ph":"i", thread scope).
  void Instant(int pid, int tid, absl::string_view name, absl::string_view category, double ts_us,
               absl::Span<const TraceArg> args = {});
  // A counter ("ph":"C"): each numeric entry of `series` is one line of the counter track
  // `name`; string entries are ignored.
  void Counter(int pid, absl::string_view name, double ts_us, absl::Span<const TraceArg> series);

  // Writes buffered events to the file (no-op for an in-memory writer).
  absl::Status Flush();
  // Terminates the document and closes the file. Later events are dropped; a second Close() is
  // a no-op returning the first one's result.
  absl::Status Close();

  // The whole document as it would be after Close(). In-memory writers only; a file writer
  // returns the events still buffered.
  std::string Contents() const;

  int64_t event_count() const;

 private:
  explicit TraceWriter(std::FILE* file, std::string path);
  void Append(std::string event);
  absl::Status WriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const std::string path_;

  mutable Mutex mu_;  // core/base/mutex.h: std::mutex underneath, so TSan sees it
  std::FILE* file_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::string buffer_ ABSL_GUARDED_BY(mu_);
  int64_t events_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);  // first write error
};

// Appends `text` to `out` as a JSON string literal (with quotes); invalid UTF-8 becomes U+FFFD.
void AppendJsonString(absl::string_view text, std::string& out);

}  // namespace pooch

#endif  // POOCH_CORE_BASE_TRACE_H_
