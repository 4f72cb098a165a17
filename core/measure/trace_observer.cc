#include "core/measure/trace_observer.h"

#include <unistd.h>

#include <utility>

namespace pooch {
namespace {

constexpr int kPid = 1;
constexpr int kSwapOutTid = 1;
constexpr int kSwapInTid = 2;
constexpr int kRuntimeTid = 3;

}  // namespace

TraceObserver::TraceObserver(std::unique_ptr<pooch::TraceWriter> writer)
    : writer_(std::move(writer)), start_(absl::Now()) {
  writer_->ProcessName(kPid, "pooch " + std::to_string(getpid()));
  writer_->ThreadName(kPid, kSwapOutTid, "swap out (device to host)");
  writer_->ThreadName(kPid, kSwapInTid, "swap in (host to device)");
  writer_->ThreadName(kPid, kRuntimeTid, "pooch runtime (iterations, plan)");
}

void TraceObserver::OnRuntime(absl::string_view name, absl::Span<const pooch::TraceArg> args) {
  writer_->Instant(kPid, kRuntimeTid, name, "runtime", Us(absl::Now()), args);
}

void TraceObserver::OnSwap(const pooch::SwapRecord& r) {
  using Kind = pooch::SwapRecord::Kind;
  const bool in = r.kind == Kind::kInStart || r.kind == Kind::kInEnd;
  const auto key = std::make_pair(r.allocation, in);
  switch (r.kind) {
    case Kind::kOutStart:
    case Kind::kInStart:
      started_[key] = r.at;
      return;
    case Kind::kOutEnd:
    case Kind::kInEnd: {
      auto it = started_.find(key);
      const absl::Time begin = it != started_.end() ? it->second : r.at;
      if (it != started_.end()) started_.erase(it);
      // Note [Current host copies] (core/residency/residency_swap.cc): `copied` 0 for a
      // swap-out that copied nothing.
      const pooch::TraceArg args[] = {{"allocation", static_cast<int64_t>(r.allocation)},
                                      {"bytes", r.bytes},
                                      {"address", static_cast<int64_t>(r.address)},
                                      {"copied", int64_t{r.copied ? 1 : 0}}};
      writer_->Complete(kPid, in ? kSwapInTid : kSwapOutTid, in ? "swap in" : "swap out", "swap",
                        Us(begin), Us(r.at) - Us(begin), args);
      return;
    }
    case Kind::kOutCancelled: {
      started_.erase(std::make_pair(r.allocation, false));
      const pooch::TraceArg args[] = {{"allocation", static_cast<int64_t>(r.allocation)},
                                      {"bytes", r.bytes},
                                      {"copied", int64_t{r.copied ? 1 : 0}}};
      writer_->Instant(kPid, kSwapOutTid, "swap out cancelled", "swap", Us(r.at), args);
      return;
    }
  }
}

void TraceObserver::OnMemory(int64_t device_bytes, int64_t host_bytes, absl::Time at) {
  const pooch::TraceArg series[] = {{"device", device_bytes}, {"host", host_bytes}};
  writer_->Counter(kPid, "memory", Us(at), series);
}

}  // namespace pooch
