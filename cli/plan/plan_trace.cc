#include "cli/plan/plan_trace.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/base/trace.h"

namespace pooch::cli {
namespace {

constexpr int kPid = 1;
enum Track { kCompute = 1, kRecompute = 2, kSwapOut = 3, kSwapIn = 4 };

}  // namespace

absl::Status WritePlanTrace(const std::string& path, const std::string& title,
                            const Profile& profile, const SimResult& sim) {
  absl::StatusOr<std::unique_ptr<TraceWriter>> opened = TraceWriter::Open(path);
  if (!opened.ok()) return opened.status();
  TraceWriter& w = **opened;
  w.ProcessName(kPid, title);
  const struct {
    Track track;
    const char* name;
  } tracks[] = {{kCompute, "compute"},
                {kRecompute, "recompute"},
                {kSwapOut, "swap-out (device to host)"},
                {kSwapIn, "swap-in (host to device)"}};
  for (const auto& t : tracks) {
    w.ThreadName(kPid, t.track, t.name);
    w.ThreadSortIndex(kPid, t.track, t.track);
  }

  // Out-of-range indices would be a simulator bug; print "?" rather than crash on one.
  auto op_name = [&](OpIndex i) -> std::string {
    return i >= 0 && i < static_cast<OpIndex>(profile.ops.size()) ? profile.ops[i].name : "?";
  };
  auto tensor_name = [&](TensorId t) -> std::string {
    return t >= 0 && t < static_cast<TensorId>(profile.tensors.size()) ? profile.tensors[t].name
                                                                       : "?";
  };
  auto tensor_bytes = [&](TensorId t) -> int64_t {
    return t >= 0 && t < static_cast<TensorId>(profile.tensors.size()) ? profile.tensors[t].bytes
                                                                       : 0;
  };

  for (const SimEvent& e : sim.events) {
    double dur = e.end_us - e.start_us;
    switch (e.kind) {
      case SimEvent::Kind::kCompute: {
        const char* phase = "?";
        const char* kind = "?";
        if (e.op >= 0 && e.op < static_cast<OpIndex>(profile.ops.size())) {
          phase = PhaseName(profile.ops[e.op].phase);
          kind = OpKindName(profile.ops[e.op].kind);
        }
        w.Complete(kPid, kCompute, op_name(e.op), phase, e.start_us, dur,
                   {{"op", e.op}, {"kind", kind}});
        break;
      }
      case SimEvent::Kind::kRecompute:
        w.Complete(kPid, kRecompute, absl::StrCat("recompute ", tensor_name(e.tensor)), "recompute",
                   e.start_us, dur,
                   {{"replays", op_name(e.op)},
                    {"for", op_name(e.before_op)},
                    {"bytes", tensor_bytes(e.tensor)}});
        break;
      case SimEvent::Kind::kSwapOut:
        w.Complete(kPid, kSwapOut, tensor_name(e.tensor), "swap-out", e.start_us, dur,
                   {{"bytes", tensor_bytes(e.tensor)}, {"after", op_name(e.op)}});
        break;
      case SimEvent::Kind::kSwapIn:
        w.Complete(kPid, kSwapIn, tensor_name(e.tensor), "swap-in", e.start_us, dur,
                   {{"bytes", tensor_bytes(e.tensor)}, {"issued at", op_name(e.op)}});
        break;
    }
  }
  for (const MemorySample& m : sim.memory) {
    w.Counter(kPid, "device memory", m.t_us, {{"bytes", m.bytes}});
  }
  return w.Close();
}

}  // namespace pooch::cli
