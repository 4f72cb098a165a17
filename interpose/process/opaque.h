// opaque.h: calls pooch cannot model, made safe by making all of pooch's memory resident around
// them (Note [Opaque calls]).
//
//   return RunOpaque<cublasStatus_t>("cublasSnrm2_v2", stream, /*stream_known=*/true,
//                                    [&] { return real::cublasSnrm2_v2()(handle, n, x, incx, r);
//                                    });
//
// Note [Opaque calls]
// ~~~~~~~~~~~~~~~~~~~
// Every function the CUDA libraries export has one class in interpose/symbols/classes.tsv:
// `none` (touches no device memory), `modelled` (a hook of hooked_symbols.def knows what it reads
// and writes) or `opaque` (it may touch device memory, and pooch cannot say which). An opaque
// call may read or write any allocation the program holds, so before it runs every one of the
// manager's live allocations is made resident and pinned, as an op that touches all of them:
// RunOp with every allocation as a read-write range and effects unknown, which
//   - rebuilds every dropped feature map first, by replay, as for any call of unknown effects
//     (Note [Replay] in core/recompute/recomputer.h), and fails the call if one cannot be rebuilt;
//   - swaps every swapped-out allocation back in, evicting nothing the call needs (all are
//     pinned), and keeps them mapped until the call's work completes in stream order: AfterOp
//     records the completion on the call's stream, and an unmap waits for it, as for any op.
// When the stream of the call cannot be named (a function with no stream argument and no
// handle that carries one), the stream is the legacy default stream and the context is
// synchronised after the call, so its work is done before the pins are released whatever
// stream it ran on. (That synchronisation would break a stream capture in progress; such
// calls are rare and are counted in the summary.)
// When all allocations together cannot be resident under the limit the call is refused: the
// API's out-of-memory code, and one `pooch: <function>: ...` line that says what to do. Small
// allocations (Note [Small allocations]) are always resident and need nothing.
//
// Every opaque call is counted by name for the summary's `opaque:` line (process.cc).
//
// Thread safety: may be called from any thread.
#ifndef POOCH_INTERPOSE_PROCESS_OPAQUE_H_
#define POOCH_INTERPOSE_PROCESS_OPAQUE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "interpose/process/managed.h"

namespace pooch::interpose {

// Counts one opaque call of `function` (a string literal or otherwise permanent name).
void CountOpaque(const char* function);
// The counts so far, by name, sorted by name, and their sum.
std::vector<std::pair<std::string, uint64_t>> OpaqueCounts();
uint64_t OpaqueTotal();
// Opaque calls refused because everything could not be made resident (LogOpaqueRefused).
uint64_t OpaqueRefused();
// A call of a function that classes.tsv does not list (a driver look-up of an unknown name):
// counted for the summary, which should always say `unclassified 0`.
void CountUnclassified(const char* function);
uint64_t UnclassifiedCalls();

// Logs why an opaque call is refused (internal to RunOpaque).
void LogOpaqueRefused(const char* function, int64_t needed_bytes, int64_t limit_bytes,
                      const absl::Status& status);
// Synchronises the current context after an opaque call on an unknown stream.
void SynchronizeAfterOpaque();

// Note [Opaque calls]: makes every allocation of pooch's resident on `stream` and pinned, runs
// `forward` (the real call), then releases them in stream order. `stream_known` false: the call's
// stream cannot be named; the context is synchronised after it. Returns what `forward` returned,
// or the API's out-of-memory code (with a `pooch: <function>: ...` line) when everything cannot
// be resident, or the API's error for a dropped map that cannot be rebuilt.
template <typename Ret, typename Forward>
Ret RunOpaque(const char* function, uintptr_t stream, bool stream_known, Forward&& forward) {
  CountOpaque(function);
  Process& process = Process::Get();
  // existing_manager, not manager: an opaque call must not create the parts (that is the first
  // allocation's or op's job); before them nothing is pooch's, so nothing needs making resident.
  pooch::ResidencyManager* manager = process.existing_manager();
  if (manager == nullptr) return forward();
  if (const Ret sticky = StickyError<Ret>(); sticky != Ret{}) return HookFailure(sticky);
  int64_t needed = 0;
  const std::vector<pooch::AccessRange> all = manager->LiveRanges(&needed);
  if (needed > manager->memory_limit()) {
    const absl::Status s =
        absl::ResourceExhaustedError("every allocation resident exceeds the limit");
    LogOpaqueRefused(function, needed, manager->memory_limit(), s);
    return HookFailure<Ret>(s);
  }
  Ranges ranges;
  for (const pooch::AccessRange& r : all) {
    ranges.Add(r.address, static_cast<size_t>(r.bytes), r.mode);
  }
  bool called = false;
  const Ret result = RunOp<Ret>(
      stream, ranges,
      [&] {
        called = true;
        const Ret r = forward();
        if (!stream_known) SynchronizeAfterOpaque();
        return r;
      },
      OpEffects{.known = false});
  if (!called) {
    // BeforeOp or a rebuild failed (RunOp logged the cause): say what it means for this call.
    LogOpaqueRefused(function, needed, manager->memory_limit(),
                     result == StatusTo<Ret>(absl::ResourceExhaustedError(""))
                         ? absl::ResourceExhaustedError("no room to make everything resident")
                         : absl::InternalError("a dropped or swapped allocation could not be "
                                               "made resident"));
  }
  return result;
}

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROCESS_OPAQUE_H_
