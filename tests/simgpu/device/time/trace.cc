#include "tests/simgpu/device/time/trace.h"

#include <cinttypes>

namespace simgpu {
namespace {

// Tracks (Chrome "tid"s): the three engines by their Engine value, then the host.
constexpr int kHostTrack = 3;
const char* const kTrackNames[] = {"compute", "host to device", "device to host", "host blocked"};

// Op names are API names and kernel names: no character JSON would need escaped, except in a
// kernel name a program chose; those are replaced rather than escaped.
std::string JsonSafe(const char* s) {
  std::string out;
  for (; *s != '\0'; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    out += (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f) ? '_' : static_cast<char>(c);
  }
  return out;
}

}  // namespace

TimelineTrace::~TimelineTrace() {
  if (file_ != nullptr) std::fclose(file_);
}

bool TimelineTrace::Open(const std::string& path) {
  if (path.empty()) return true;
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    std::fprintf(stderr, "simgpu: SIMGPU_TRACE='%s': cannot create the file; no trace\n",
                 path.c_str());
    return false;
  }
  std::fputs("[\n", file_);
  std::fprintf(file_,
               "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
               "\"args\":{\"name\":\"simgpu (virtual time)\"}},\n");
  for (int t = 0; t <= kHostTrack; ++t) {
    std::fprintf(file_,
                 "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
                 "\"args\":{\"name\":\"%s\"}},\n",
                 t, kTrackNames[t]);
  }
  return true;
}

void TimelineTrace::Event(const char* name, int track, double start_ns, double end_ns,
                          const std::string& args) {
  std::fprintf(file_,
               "{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
               "\"args\":{%s}},\n",
               JsonSafe(name).c_str(), track, start_ns / 1e3, (end_ns - start_ns) / 1e3,
               args.c_str());
}

void TimelineTrace::Op(const char* name, uint64_t stream, Engine engine, const Span& span,
                       uint64_t bytes) {
  if (file_ == nullptr) return;
  char args[160];
  std::snprintf(args, sizeof args, "\"stream\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"ready_us\":%.3f",
                stream, bytes, span.ready_ns / 1e3);
  Event(name, static_cast<int>(engine), span.start_ns, span.end_ns, args);
}

void TimelineTrace::HostWait(const char* why, double from_ns, double to_ns) {
  if (file_ == nullptr || to_ns <= from_ns) return;
  Event(why, kHostTrack, from_ns, to_ns, "");
}

}  // namespace simgpu
