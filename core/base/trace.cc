#include "core/base/trace.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pooch {
namespace {

constexpr absl::string_view kHeader = "{\"traceEvents\":[\n";
constexpr absl::string_view kTrailer = "\n],\"displayTimeUnit\":\"ms\"}\n";
constexpr size_t kFlushBytes = size_t{1} << 20;

// Length of the valid UTF-8 sequence at the start of `s`, or 0 when it is not one.
size_t Utf8Length(absl::string_view s) {
  auto cont = [&](size_t i) {
    return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
  };
  unsigned char c = static_cast<unsigned char>(s[0]);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    unsigned char c1 = static_cast<unsigned char>(s[1]);
    if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
    if (c == 0xED && c1 > 0x9F) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    unsigned char c1 = static_cast<unsigned char>(s[1]);
    if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
    if (c == 0xF4 && c1 > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// Microseconds with nanosecond resolution; JSON has no NaN or infinity.
void AppendTime(double us, std::string& out) {
  if (!std::isfinite(us)) us = 0;
  absl::StrAppendFormat(&out, "%.3f", us);
}

void AppendNumber(double v, std::string& out) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  absl::StrAppendFormat(&out, "%.15g", v);
}

void AppendArgs(absl::Span<const TraceArg> args, bool numbers_only, std::string& out) {
  out += "\"args\":{";
  bool first = true;
  for (const TraceArg& a : args) {
    if (numbers_only && a.kind == TraceArg::Kind::kString) continue;
    if (!first) out += ',';
    first = false;
    AppendJsonString(a.key, out);
    out += ':';
    switch (a.kind) {
      case TraceArg::Kind::kInt:
        absl::StrAppend(&out, a.int_value);
        break;
      case TraceArg::Kind::kDouble:
        AppendNumber(a.double_value, out);
        break;
      case TraceArg::Kind::kString:
        AppendJsonString(a.string_value, out);
        break;
    }
  }
  out += '}';
}

// {"name":...,"ph":...,"pid":...,"tid":... — the part every event shares (no closing brace).
std::string Begin(absl::string_view name, absl::string_view phase, int pid, int tid) {
  std::string e = "{\"name\":";
  AppendJsonString(name, e);
  absl::StrAppend(&e, ",\"ph\":\"", phase, "\",\"pid\":", pid, ",\"tid\":", tid);
  return e;
}

}  // namespace

void AppendJsonString(absl::string_view text, std::string& out) {
  out += '"';
  while (!text.empty()) {
    unsigned char c = static_cast<unsigned char>(text[0]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      text.remove_prefix(1);
    } else if (c < 0x20) {
      switch (c) {
        case '\n':
          out += "\\n";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\r':
          out += "\\r";
          break;
        default:
          absl::StrAppendFormat(&out, "\\u%04x", c);
      }
      text.remove_prefix(1);
    } else {
      size_t n = Utf8Length(text);
      if (n == 0) {
        out += "\\ufffd";
        text.remove_prefix(1);
      } else {
        out.append(text.data(), n);
        text.remove_prefix(n);
      }
    }
  }
  out += '"';
}

TraceWriter::TraceWriter() = default;

TraceWriter::TraceWriter(std::FILE* file, std::string path) : path_(std::move(path)) {
  MutexLock lock(&mu_);
  file_ = file;
  // The header goes out with the first write, so a writer that never saw an event still
  // produces a valid (empty) document.
  buffer_ = std::string(kHeader);
}

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Open(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    int err = errno;
    return absl::ErrnoToStatus(err, absl::StrCat("cannot write trace '", path, "'"));
  }
  auto writer = std::unique_ptr<TraceWriter>(new TraceWriter(f, path));
  return writer;
}

TraceWriter::~TraceWriter() { Close().IgnoreError(); }

void TraceWriter::Append(std::string event) {
  MutexLock lock(&mu_);
  if (closed_) return;
  if (events_ > 0) buffer_ += ",\n";
  buffer_ += event;
  ++events_;
  if (file_ != nullptr && buffer_.size() >= kFlushBytes) WriteLocked().IgnoreError();
}

absl::Status TraceWriter::WriteLocked() {
  if (file_ == nullptr || !status_.ok()) return status_;
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    int err = errno;
    status_ = absl::ErrnoToStatus(err, absl::StrCat("writing trace '", path_, "'"));
  }
  buffer_.clear();
  return status_;
}

void TraceWriter::ProcessName(int pid, absl::string_view name) {
  std::string e = Begin("process_name", "M", pid, 0);
  e += ",\"args\":{\"name\":";
  AppendJsonString(name, e);
  e += "}}";
  Append(std::move(e));
}

void TraceWriter::ThreadName(int pid, int tid, absl::string_view name) {
  std::string e = Begin("thread_name", "M", pid, tid);
  e += ",\"args\":{\"name\":";
  AppendJsonString(name, e);
  e += "}}";
  Append(std::move(e));
}

void TraceWriter::ThreadSortIndex(int pid, int tid, int index) {
  std::string e = Begin("thread_sort_index", "M", pid, tid);
  absl::StrAppend(&e, ",\"args\":{\"sort_index\":", index, "}}");
  Append(std::move(e));
}

void TraceWriter::Complete(int pid, int tid, absl::string_view name, absl::string_view category,
                           double ts_us, double dur_us, absl::Span<const TraceArg> args) {
  std::string e = Begin(name, "X", pid, tid);
  e += ",\"cat\":";
  AppendJsonString(category, e);
  e += ",\"ts\":";
  AppendTime(ts_us, e);
  e += ",\"dur\":";
  AppendTime(dur_us < 0 ? 0 : dur_us, e);
  e += ',';
  AppendArgs(args, false, e);
  e += '}';
  Append(std::move(e));
}

void TraceWriter::Instant(int pid, int tid, absl::string_view name, absl::string_view category,
                          double ts_us, absl::Span<const TraceArg> args) {
  std::string e = Begin(name, "i", pid, tid);
  e += ",\"s\":\"t\",\"cat\":";
  AppendJsonString(category, e);
  e += ",\"ts\":";
  AppendTime(ts_us, e);
  e += ',';
  AppendArgs(args, false, e);
  e += '}';
  Append(std::move(e));
}

void TraceWriter::Counter(int pid, absl::string_view name, double ts_us,
                          absl::Span<const TraceArg> series) {
  std::string e = Begin(name, "C", pid, 0);
  e += ",\"ts\":";
  AppendTime(ts_us, e);
  e += ',';
  AppendArgs(series, true, e);
  e += '}';
  Append(std::move(e));
}

absl::Status TraceWriter::Flush() {
  MutexLock lock(&mu_);
  if (file_ == nullptr) return status_;
  absl::Status s = WriteLocked();
  if (s.ok() && std::fflush(file_) != 0) {
    int err = errno;
    status_ = absl::ErrnoToStatus(err, absl::StrCat("writing trace '", path_, "'"));
  }
  return status_;
}

absl::Status TraceWriter::Close() {
  MutexLock lock(&mu_);
  if (closed_ || file_ == nullptr) {
    closed_ = true;
    return status_;
  }
  closed_ = true;
  buffer_.append(kTrailer.data(), kTrailer.size());
  WriteLocked().IgnoreError();
  if (std::fclose(file_) != 0 && status_.ok()) {
    int err = errno;
    status_ = absl::ErrnoToStatus(err, absl::StrCat("closing trace '", path_, "'"));
  }
  file_ = nullptr;
  return status_;
}

std::string TraceWriter::Contents() const {
  MutexLock lock(&mu_);
  if (file_ != nullptr || !path_.empty()) return buffer_;
  return absl::StrCat(kHeader, buffer_, kTrailer);
}

int64_t TraceWriter::event_count() const {
  MutexLock lock(&mu_);
  return events_;
}

}  // namespace pooch
