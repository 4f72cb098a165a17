// managed.h: the helpers every managed hook uses (POOCH_POLICY other than "off"): an op's
// ranges made resident around the real call, allocations and frees routed to pooch's memory.
// They drive the parts the Process owns (process.h).
//
// Small allocations (Note [Small allocations] in core/residency/residency.h): allocations below
// POOCH_MIN_SWAP_BYTES come from a sub-allocator (core/small_alloc/small_allocator.h) over slabs
// of device memory mapped through the VMM API; they stay resident, and each slab is charged to
// the manager's budget (ChargeExternal) so that the limit covers everything the program holds. A
// freed small block is reused only after the work queued before its free completed
// (Note [Reuse after free] in core/small_alloc/small_allocator.h). Larger ones are the manager's:
// a reserved address range, backed by a physical chunk while resident (DESIGN.md, decision 1).
//
// Thread safety: all functions may be called from any thread.
#ifndef POOCH_INTERPOSE_PROCESS_MANAGED_H_
#define POOCH_INTERPOSE_PROCESS_MANAGED_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/base/log.h"
#include "core/exec/plan_executor.h"
#include "core/recompute/recomputer.h"
#include "core/lineage/replay_recipe.h"
#include "core/residency/residency.h"
#include "core/small_alloc/small_allocator.h"
#include "interpose/process/host_time.h"
#include "interpose/process/process.h"
#include "interpose/symbols/errors.h"
#include "interpose/symbols/hook_table.h"

namespace pooch::interpose {

// The ranges an op touches; entries with a null address are dropped.
class Ranges {
 public:
  using Mode = pooch::AccessRange::Mode;
  // A range the call may touch (a library call's operands, a kernel's guessed arguments).
  void Add(const void* address, size_t bytes, Mode mode) {
    Add(reinterpret_cast<uintptr_t>(address), bytes, mode);
  }
  void Add(uintptr_t address, size_t bytes, Mode mode) {
    if (address == 0) return;
    ranges_.push_back({address, static_cast<int64_t>(bytes == 0 ? 1 : bytes), mode});
    exact_.push_back(false);
  }
  // A range a copy or a memset touches byte for byte: RunOp fails the call with its API's
  // invalid-value error when the range starts in pooch's memory but runs past the end of the
  // allocation it starts in, or starts in freed memory (Note [Range checks] in
  // core/residency/residency.cc). Empty ranges touch nothing and are not checked.
  void AddExact(const void* address, size_t bytes, Mode mode) {
    AddExact(reinterpret_cast<uintptr_t>(address), bytes, mode);
  }
  void AddExact(uintptr_t address, size_t bytes, Mode mode) {
    Add(address, bytes, mode);
    if (address != 0 && bytes > 0) exact_.back() = true;
  }
  // A range the call writes byte for byte and does not read: a 1D copy's destination, a 1D
  // memset (Note [Overwritten allocations] in core/residency/residency.cc). Exact, as AddExact.
  void AddOverwritten(const void* address, size_t bytes) {
    AddOverwritten(reinterpret_cast<uintptr_t>(address), bytes);
  }
  void AddOverwritten(uintptr_t address, size_t bytes) {
    AddExact(address, bytes, Mode::kWrite);
    if (address != 0 && bytes > 0) ranges_.back().overwritten = true;
  }
  // Marks the last range added as written whole (a dense GEMM output with beta zero).
  void MarkLastOverwritten() {
    if (!ranges_.empty() && ranges_.back().mode == Mode::kWrite) ranges_.back().overwritten = true;
  }
  // A copy's source (an exact read). When it lies in an allocation that is swapped out and there
  // is no room to bring it back, RunOp points the hook's `*source` at the allocation's pinned
  // host copy instead (Note [Reading the host copy] in core/residency/residency.cc) and sets
  // `*kind` to cudaMemcpyDefault (the runtime's copies), or `*from_host` to true (the driver's
  // typed copies take device pointers only, so the hook then calls cuMemcpy or cuMemcpyAsync;
  // null for those two, which take any address).
  void AddSource(const void** source, size_t bytes, cudaMemcpyKind* kind) {
    AddSource(reinterpret_cast<uintptr_t>(*source), bytes);
    if (source_ < 0) return;
    pointer_ = source;
    kind_ = kind;
  }
  void AddSource(CUdeviceptr* source, size_t bytes, bool* from_host) {
    AddSource(static_cast<uintptr_t>(*source), bytes);
    if (source_ < 0) return;
    device_pointer_ = source;
    from_host_ = from_host;
  }
  // A small block's word that a kernel may write (`mode` not kRead): seen by the lineage only,
  // not by the manager nor the profile (Note [Small blocks in the lineage] in
  // interpose/hooks/launch/kernel_args.h).
  void AddSmallWrite(uintptr_t address, Mode mode) {
    if (address != 0) small_writes_.push_back({address, 1, mode});
  }
  const std::vector<pooch::AccessRange>& get() const { return ranges_; }
  const std::vector<pooch::AccessRange>& small_writes() const { return small_writes_; }
  bool exact(size_t i) const { return exact_[i]; }
  // The index of the source in get(), or -1.
  int source() const { return source_; }
  // Points the source at `host` (RunOp, after BeforeOp said so). Writes the hook's variables.
  void ReadSourceFrom(const void* host) const {
    if (pointer_ != nullptr) *pointer_ = host;
    if (device_pointer_ != nullptr) {
      *device_pointer_ = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(host));
    }
    if (kind_ != nullptr) *kind_ = cudaMemcpyDefault;
    if (from_host_ != nullptr) *from_host_ = true;
  }

 private:
  void AddSource(uintptr_t address, size_t bytes) {
    if (address == 0) return;
    AddExact(address, bytes, Mode::kRead);
    ranges_.back().host_copy_ok = true;
    source_ = static_cast<int>(ranges_.size()) - 1;
  }

  std::vector<pooch::AccessRange> ranges_;
  std::vector<pooch::AccessRange> small_writes_;
  std::vector<bool> exact_;  // per range: AddExact
  int source_ = -1;
  const void** pointer_ = nullptr;
  CUdeviceptr* device_pointer_ = nullptr;
  cudaMemcpyKind* kind_ = nullptr;
  bool* from_host_ = nullptr;
};

// Note [Range checks] (core/residency/residency.cc): the first exact range of `ranges` that
// starts in the manager's or the sub-allocator's memory and runs past its allocation or block, or
// starts in freed memory, as InvalidArgument; Ok when there is none.
inline absl::Status CheckExactRanges(const pooch::ResidencyManager& manager,
                                     const pooch::SmallAllocator* small, const Ranges& ranges) {
  for (size_t i = 0; i < ranges.get().size(); ++i) {
    if (!ranges.exact(i)) continue;
    const pooch::AccessRange& r = ranges.get()[i];
    absl::Status s = manager.CheckRange(r.address, r.bytes);
    if (s.ok() && small != nullptr) s = small->CheckRange(r.address, r.bytes);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// Whether `ranges` write the start of a swappable allocation of the manager's: only such an
// output can be dropped, so only then is a recipe worth making under dtr.
inline bool WritesSwappable(const pooch::ResidencyManager& manager, const Ranges& ranges) {
  for (const pooch::AccessRange& r : ranges.get()) {
    if (r.mode == pooch::AccessRange::Mode::kRead) continue;
    if (std::optional<pooch::AllocationInfo> info = manager.Lookup(r.address);
        info.has_value() && info->address == r.address && info->swappable) {
      return true;
    }
  }
  return false;
}

// Note [Small blocks in the lineage] (interpose/hooks/launch/kernel_args.h): the ranges the
// lineage sees, the small blocks' writes after the op's ranges.
inline std::vector<pooch::AccessRange> WithSmallWrites(const Ranges& ranges) {
  std::vector<pooch::AccessRange> all = ranges.get();
  all.insert(all.end(), ranges.small_writes().begin(), ranges.small_writes().end());
  return all;
}

// RunOp for an op that touches no memory of the manager's: it is no op of the profile and makes
// nothing resident, but the recipes its writes into small blocks make wrong go first (rebuilt
// first when dropped), as RunOp does (Note [Small blocks in the lineage]).
template <typename Ret, typename Forward>
Ret RunSmallWritesOnly(uintptr_t stream, const Ranges& ranges, Forward&& forward) {
  Process& process = Process::Get();
  Recomputer* recomputer = process.recomputer();
  if (recomputer == nullptr || ranges.small_writes().empty()) return forward();
  // No HookTimer: the summary's ops are those made resident and recorded (HookWork::kOp).
  std::vector<pooch::AllocationId> held;
  if (absl::Status s =
          recomputer->BeforeProgramOp(stream, ranges.small_writes(), /*effects_known=*/true, &held);
      !s.ok()) {
    POOCH_LOG_AT(kError, "cannot rebuild a dropped feature map: %.*s",
                 static_cast<int>(s.message().size()), s.message().data());
    return HookFailure<Ret>(s);
  }
  process.manager()->Release(held);
  return forward();
}

// What a hook knows about its call beyond the ranges: whether they are all it may touch (an
// opaque call's are not), whether they were found by scanning its parameter words (a kernel
// launch's: they may differ between iterations of the same op, Note [Kernel op names]), and how
// to replay it (null when it cannot be replayed; Note [Replay] in core/recompute/recomputer.h).
struct OpEffects {
  bool known = true;
  bool scanned = false;
  const ReplaySource* replay = nullptr;
  pooch::HostCopyBytes copy = {};  // a copy between host and device memory (CopyToHost, ...)
};

// Makes the ranges resident on `stream` (or points a copy's source at its host copy:
// Ranges::AddSource), runs `forward` (the real call), records the op's use. Returns what
// `forward` returned, or the API's error for an exact range that fails its check, a failed
// swap-in or rebuild.
template <typename Ret, typename Forward>
Ret RunOp(uintptr_t stream, const Ranges& ranges, Forward&& forward, OpEffects effects = {}) {
  Process& process = Process::Get();
  pooch::ResidencyManager* manager = process.manager();
  if (manager == nullptr) return forward();
  if (ranges.get().empty()) return RunSmallWritesOnly<Ret>(stream, ranges, forward);
  HookTimer timer(HookWork::kOp);  // Note [Host time]: pooch's own time, not the call's
  // Note [Range checks]: before anything is made resident, rebuilt or written.
  if (absl::Status s = CheckExactRanges(*manager, process.small(), ranges); !s.ok()) {
    POOCH_LOG_AT(kError, "%s: %.*s: returning the invalid-value error", HookScope::CurrentName(),
                 static_cast<int>(s.message().size()), s.message().data());
    return HookFailure<Ret>(s);  // the program's last error too (Note [Last error])
  }
  Recomputer* recomputer = process.recomputer();
  // Under dtr: the op's operands, held while some were rebuilt, until BeforeOp pins them.
  std::vector<pooch::AllocationId> held;
  if (recomputer != nullptr) {
    // Dropped maps this op touches, or whose recipes' inputs it overwrites, are rebuilt first.
    std::vector<pooch::AccessRange> with_small;
    if (!ranges.small_writes().empty()) with_small = WithSmallWrites(ranges);
    if (absl::Status s = recomputer->BeforeProgramOp(
            stream, with_small.empty() ? ranges.get() : with_small, effects.known, &held);
        !s.ok()) {
      POOCH_LOG_AT(kError, "cannot rebuild a dropped feature map: %.*s",
                   static_cast<int>(s.message().size()), s.message().data());
      return HookFailure<Ret>(s);
    }
  }
  absl::StatusOr<pooch::OpTicket> ticket = manager->BeforeOp(stream, ranges.get());
  manager->Release(held);
  if (!ticket.ok()) {
    POOCH_LOG_AT(kError, "cannot make an op's memory resident: %.*s",
                 static_cast<int>(ticket.status().message().size()),
                 ticket.status().message().data());
    return HookFailure<Ret>(ticket.status());
  }
  // Note [Reading the host copy]: no room for the source, which stays on the host.
  if (ranges.source() >= 0) {
    if (const void* host = ticket->HostSource(static_cast<size_t>(ranges.source()))) {
      ranges.ReadSourceFrom(host);
    }
  }
  PlanExecutor* profiler = process.profiler();
  ProfiledOp profiled = profiler == nullptr
                            ? ProfiledOp{}
                            : profiler->OpBegin(HookScope::CurrentName(), stream, ranges.get(),
                                                effects.replay != nullptr,
                                                effects.known && !effects.scanned, effects.copy,
                                                ticket->demand_swapped_in());
  // Note [DTR recipes] (core/recompute/recomputer.h): under dtr every call that can be replayed and
  // writes one of the manager's allocations is timed and keeps its recipe.
  const bool produces = recomputer != nullptr && recomputer->dtr() && effects.replay != nullptr &&
                        WritesSwappable(*manager, ranges);
  const pooch::EventHandle produced_start = produces ? recomputer->BeginProduced(stream) : 0;
  timer.Pause();
  const Ret result = forward();
  timer.Resume();
  // Note [Op brackets] (core/exec/plan_executor.h): before anything else is done on the host.
  if (profiled.start != 0) profiler->OpRan(&profiled, stream);
  NoteResult(result);  // Note [Sticky errors] in interpose/symbols/errors.h
  // Note [Overwritten allocations]: a call that failed wrote nothing.
  if (absl::Status s = manager->AfterOp(*std::move(ticket), result == Ret{}); !s.ok()) {
    POOCH_LOG_AT(kError, "after an op: %.*s", static_cast<int>(s.message().size()),
                 s.message().data());
  }
  if (produces && result == Ret{}) {
    recomputer->OfferProduced((*effects.replay)(), stream, produced_start);
  } else if (produces) {
    recomputer->AbandonProduced(produced_start);
  }
  // The plan recomputes this op's output: keep how to replay it (after the call, which must
  // have succeeded; the profiler's drop at the last forward use needs the recipe).
  if (profiled.record_output != 0 && effects.replay != nullptr && result == Ret{}) {
    profiler->OfferRecipe(profiled, (*effects.replay)());
  }
  // After AfterOp: the op's last use is recorded and its pins released, so a planned swap-out
  // of what it touched can start.
  if (profiler != nullptr) profiler->OpEnd(profiled, stream);
  return result;
}

// A synchronous copy to the host finished: the program may now decide from its bytes what runs
// next, a block boundary of the pilot model (Note [Pilot model], core/pilot/pilot.h).
inline void NoteReadBack(const void* host, size_t bytes) {
  if (pooch::PlanExecutor* p = Process::Get().profiler()) p->ReadBack(host, bytes);
}

// cudaMalloc-like: the manager's for large sizes, the sub-allocator's for small ones (Note [Small
// allocations]). `real_alloc()` performs the real allocation into *out and returns the API's
// code; it is used only when pooch does not manage memory. When the parts could not be made
// under a policy, the allocation fails rather than escape the limit (process.h). `ordered_on`:
// the stream of a stream-ordered allocation (cudaMallocAsync; Note [Reuse on the allocating
// stream] in core/residency/parts/reuse_cache.h).
template <typename Ret, typename RealAlloc>
Ret ManagedAlloc(uintptr_t* out, size_t bytes, Ret success, RealAlloc&& real_alloc,
                 std::optional<pooch::StreamHandle> ordered_on = std::nullopt) {
  Process& process = Process::Get();
  pooch::ResidencyManager* manager = process.manager();
  if (out == nullptr || bytes == 0) return real_alloc();
  if (manager == nullptr) {
    return process.parts_failed() ? HookFailure(NotInitialized<Ret>()) : real_alloc();
  }
  if (const Ret sticky = StickyError<Ret>(); sticky != Ret{}) return HookFailure(sticky);
  HookTimer timer(HookWork::kAlloc);
  // A size beyond int64 (SIZE_MAX, 1 << 63) is beyond any limit too: the manager answers
  // out-of-memory, as the real allocator does, instead of seeing a negative size.
  const int64_t size = bytes > static_cast<size_t>(std::numeric_limits<int64_t>::max())
                           ? std::numeric_limits<int64_t>::max()
                           : static_cast<int64_t>(bytes);
  const bool swappable = size >= process.config().min_swap_bytes;
  absl::StatusOr<pooch::DeviceAddress> address =
      swappable ? manager->Allocate(size, ordered_on) : process.small()->Allocate(size);
  if (!address.ok()) {
    POOCH_LOG_AT(kInfo, "allocation of %zu bytes failed: %.*s", bytes,
                 static_cast<int>(address.status().message().size()),
                 address.status().message().data());
    return HookFailure<Ret>(address.status());
  }
  *out = *address;
  if (PlanExecutor* profiler = process.profiler()) profiler->Alloc(*out, size, swappable);
  return success;
}

// cudaFree-like: `real_free()` frees through the real allocator what pooch did not allocate.
template <typename Ret, typename RealFree>
Ret ManagedFree(uintptr_t address, Ret success, RealFree&& real_free) {
  Process& process = Process::Get();
  pooch::ResidencyManager* manager = process.manager();
  if (manager == nullptr || address == 0) return real_free();
  if (const Ret sticky = StickyError<Ret>(); sticky != Ret{}) return HookFailure(sticky);
  HookTimer timer(HookWork::kFree);
  PlanExecutor* profiler = process.profiler();
  if (Recomputer* recomputer = process.recomputer()) {
    // Recipes that read this memory rebuild their dropped maps now, or are forgotten; or the
    // recomputer keeps it for them (Note [Kept inputs], core/recompute/recomputer.h).
    absl::StatusOr<bool> kept = recomputer->BeforeFree(address);
    if (!kept.ok()) return HookFailure<Ret>(kept.status());
    if (*kept) {
      if (profiler != nullptr) profiler->Free(address);
      return success;
    }
  }
  if (profiler != nullptr) profiler->Free(address);
  if (absl::Status s = process.small()->Free(address); !absl::IsNotFound(s)) {
    return HookFailure<Ret>(s);  // OK, or InvalidArgument for a double free / interior pointer
  }
  if (std::optional<pooch::AllocationInfo> info = manager->Lookup(address);
      info.has_value() && info->address == address) {
    return HookFailure<Ret>(manager->Free(address));
  }
  return real_free();
}

// Note [Pointer queries]
// ~~~~~~~~~~~~~~~~~~~~~~
// cudaPointerGetAttributes, cuPointerGetAttribute(s) and
// cuMemGetAddressRange must answer about the allocation the program asked for, as they would
// for memory cudaMalloc returned. Asked of the driver, pooch's memory would answer about pooch's
// mappings instead: a swapped-out or dropped allocation is a reserved range with nothing mapped
// ("not CUDA memory"), a resident one is its chunk rounded up to the granularity (4 MiB for
// 3 MiB + 5 bytes), a small block is its whole slab. So the query hooks
// (interpose/hooks/runtime/query_hooks.cc) ask OwnerOf first: an address inside the requested
// bytes of one of pooch's allocations is that allocation (whatever its state); one in pooch's
// memory past them (the rounding, a slab's free space) is memory the program was never given,
// answered as the API answers for an address that is no allocation; anything else goes to the
// real function.
struct PointerOwner {
  enum class Kind { kNone, kAllocation, kUnallocated };
  Kind kind = Kind::kNone;
  uintptr_t base = 0;  // kAllocation: the allocation's address and requested bytes
  size_t bytes = 0;
  bool mapped = false;  // kAllocation: resident, so the driver can answer about its memory
};

inline PointerOwner OwnerOf(uintptr_t address) {
  Process& process = Process::Get();
  const pooch::ResidencyManager* manager = process.existing_manager();
  if (manager == nullptr || address == 0) return {};
  if (std::optional<pooch::AllocationInfo> info = manager->Lookup(address)) {
    if (address - info->address < static_cast<uintptr_t>(info->bytes)) {
      return {PointerOwner::Kind::kAllocation, info->address, static_cast<size_t>(info->bytes),
              info->state == pooch::ResidencyState::kResident};
    }
    return {PointerOwner::Kind::kUnallocated};
  }
  if (std::optional<SmallAllocator::Requested> block = process.small()->BlockContaining(address)) {
    return {PointerOwner::Kind::kAllocation, block->address, static_cast<size_t>(block->bytes),
            true};
  }
  if (process.small()->InSlab(address)) return {PointerOwner::Kind::kUnallocated};
  return {};
}

// Note [Program copies] (core/sim/sim.cc): the effects of a copy of `bytes` from device to host
// memory, or from host to device memory.
inline OpEffects CopyToHost(size_t bytes) {
  OpEffects effects;
  effects.copy.to_host = static_cast<int64_t>(bytes);
  return effects;
}
inline OpEffects CopyToDevice(size_t bytes) {
  OpEffects effects;
  effects.copy.to_device = static_cast<int64_t>(bytes);
  return effects;
}

// The effects of a runtime copy of `kind`: cudaMemcpyDefault and the driver's unified copies
// take the direction from whose memory each side is (pooch's memory is the device's; under a
// policy every device allocation is pooch's). Device to device, or host to host: no copy
// between the two. Only the profiler reads it, so without one the look-ups are not made.
inline OpEffects RuntimeCopyEffects(cudaMemcpyKind kind, uintptr_t dst, uintptr_t src,
                                    size_t bytes) {
  if (kind == cudaMemcpyDefault) {
    if (Process::Get().profiler() == nullptr) return {};
    const bool dst_device = OwnerOf(dst).kind != PointerOwner::Kind::kNone;
    const bool src_device = OwnerOf(src).kind != PointerOwner::Kind::kNone;
    if (src_device && !dst_device) return CopyToHost(bytes);
    if (dst_device && !src_device) return CopyToDevice(bytes);
    return {};
  }
  if (kind == cudaMemcpyDeviceToHost) return CopyToHost(bytes);
  if (kind == cudaMemcpyHostToDevice) return CopyToDevice(bytes);
  return {};
}
inline OpEffects RuntimeCopyEffects(cudaMemcpyKind kind, const void* dst, const void* src,
                                    size_t bytes) {
  return RuntimeCopyEffects(kind, reinterpret_cast<uintptr_t>(dst),
                            reinterpret_cast<uintptr_t>(src), bytes);
}

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROCESS_MANAGED_H_
