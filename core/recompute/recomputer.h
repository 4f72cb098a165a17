// recomputer.h: recomputation by replay (PoocH §4.1): a feature map the plan recomputes is
// dropped after its last forward use and rebuilt, into the same address, by re-issuing the
// call that produced it just before anything touches it again.
//
// Note [Replay]
// ~~~~~~~~~~~~~
// The plan executor (core/exec/plan_executor.cc) asks each planned producer's hook for a
// ReplayRecipe right after the call (Offer), and at the map's last forward use asks Drop; a map
// without a valid recipe is swapped out instead, so a recipe that cannot be made costs time,
// never data. Dropped data exists nowhere but in its recipe, so every path that could make a
// recipe wrong rebuilds the map first or, before the drop, forgets the recipe. The recipes, and
// which of them each access concerns, are the Lineage's (core/lineage/lineage.h, Note
// [Lineage]): it decides what an access requires by the rules below; the Recomputer carries that
// out (replays, waits, frees):
//   - an op that touches a dropped map (any mode) rebuilds it first: the safety net, and the
//     way every planned recomputation happens (right before the map's first backward use);
//   - an op that writes an input of a recipe, or the recipe's own output: a dropped output is
//     rebuilt before the write (and finished, the host waiting, before the write is issued);
//     then the recipe is forgotten, used or not (its inputs or its map changed: kept, it could
//     drop the map again and rebuild another; Note [Rebuilt then written] in
//     core/lineage/lineage.cc), except a kept input's, which is marked stale: its data
//     is right, and it is never dropped again, and except when the write to its map may be
//     the next link of its chain (Note [Chained recipes] in core/lineage/lineage.cc);
//   - a free of an output: its recipe goes. A free of an input: the same as a write, except
//     when the freed memory has a recipe of its own (a transient the planner rebuilds through,
//     like a batch-norm output that only a ReLU read): then the Recomputer keeps it (Note
//     [Kept inputs]) instead of rebuilding or forgetting its readers;
//   - an op whose effects are unknown (an opaque call, Note [Opaque calls]) rebuilds every
//     dropped map and forgets every other recipe but the kept inputs' first, since it may write
//     anything. A kernel launch is not one: it writes what its parameter words point into
//     (Note [Kernel writes] in interpose/hooks/launch/launch_hooks.cc).
// Inputs of a rebuilt map that are themselves dropped are rebuilt first (recursively, the
// planner's chains). A replay runs on the stream of the op that needs it, after the manager
// made its inputs resident and restored the output's memory (BeforeOp with the output as
// write-only), with a scratch workspace of its own; it writes nothing else (replay_recipe.h).
// If a replay cannot be issued the op that needed it fails with the error: never a silently
// wrong result.
//
// Note [Kept inputs]
// ~~~~~~~~~~~~~~~~~~
// The planner recomputes a map through intermediates the program frees in forward (PoocH's
// chains: ReLU(BN(conv)) rebuilt from the conv output when the BN output is gone). The program's
// free of such an intermediate, while a recipe reads it and it has a recipe itself, does not
// free it: it is dropped (no device memory) and kept at its address, owned by the Recomputer,
// until no recipe reads it any more; a replay that needs it rebuilds it first, like any dropped
// input, and a write to its own inputs rebuilds it first when dropped, else leaves it (resident,
// it is still right). The Lineage marks it kept and, when the last recipe reading it goes,
// erases it and reports it (Lineage::Erase); then the Recomputer frees it for real. The plan
// executor takes the recipes of those intermediates' producers too (plan_actions.cc).
//
// Note [DTR recipes]
// ~~~~~~~~~~~~~~~~~~
// Under POOCH_POLICY=dtr (Note [DTR eviction] in core/residency/residency_evict.cc) there is no
// plan: every successful call that can be replayed (the hooks' ReplaySource, the same recipes
// and the same rules as planned recomputation, so a replay never repeats a side effect) and
// that writes a whole swappable allocation offers its recipe (OfferProduced), timed by an
// OpTimer; the manager is told the allocation can be dropped at that cost (SetRecomputeCost),
// and eviction decides when. A recipe stays valid exactly as long as Note [Replay]'s rules
// keep it (a write to an input or to the output forgets it, a free erases it, a kernel of
// unknown effects forgets everything), and it outlives a replay: the map may be dropped and
// rebuilt again and again. Memory stays bounded: one recipe per live allocation (and per kept
// input), at most OpTimer::kMaxPending timings. What changes against planned drops:
//   - drops happen inside the manager, under its lock, from any thread's allocation or op; the
//     lineage learns of them (TakeEvictionDrops) before every decision it makes
//     (SyncDropsLocked);
//   - a recipe is withdrawn from the manager before it is forgotten (SetRecomputeCost(nullopt),
//     InvalidateLocked). If the manager had dropped the map meanwhile, it is rebuilt first,
//     while the inputs are still the ones the recipe read (the write has not been issued);
//   - a kept input whose own input is overwritten stays (its data is right) but is marked
//     stale and withdrawn: it is only ever swapped from then on;
//   - while it rebuilds an op's operands, or a recipe's inputs, it holds all of them
//     (ResidencyManager::Hold: they may be swapped, not dropped) so that the eviction a later
//     replay needs never drops one that is already there; RunOp releases the op's hold once
//     the manager's BeforeOp pinned them.
//
// Thread safety: thread-safe; one lock serialises recipes and replays. Lock order: the
// executor's lock, then this one, then the manager's.
#ifndef POOCH_CORE_RECOMPUTE_RECOMPUTER_H_
#define POOCH_CORE_RECOMPUTE_RECOMPUTER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/lineage/lineage.h"
#include "core/lineage/replay_recipe.h"
#include "core/measure/op_timer.h"
#include "core/recompute/replay_check.h"
#include "core/residency/residency.h"
#include "core/small_alloc/small_allocator.h"

namespace pooch {

class TraceObserver;

class Recomputer {
 public:
  // `min_swap_bytes`: POOCH_MIN_SWAP_BYTES (a replay's scratch below it comes from `small`).
  // `dtr`: POOCH_POLICY=dtr (Note [DTR recipes]); the manager must evict with
  // ResidencyOptions::Eviction::kDtr. `check`: POOCH_CHECK_REPLAYS (Note [Replay check] in
  // replay_check.h), or null; it must outlive the Recomputer, which alone uses it from then on.
  Recomputer(pooch::Device& device, pooch::ResidencyManager& manager, pooch::SmallAllocator& small,
             int64_t min_swap_bytes, TraceObserver* trace, bool dtr = false,
             ReplayCheck* check = nullptr)
      : device_(device),
        manager_(manager),
        small_(small),
        min_swap_bytes_(min_swap_bytes),
        trace_(trace),
        dtr_(dtr),
        check_(check),
        timer_(device) {}
  ~Recomputer();
  Recomputer(const Recomputer&) = delete;
  Recomputer& operator=(const Recomputer&) = delete;

  // Before every op of the program (RunOp), before the manager's BeforeOp. Rebuilds or forgets
  // as Note [Replay] says. An error means a dropped map could not be rebuilt: the op must fail.
  // Under dtr, `held` (when given) receives the op's operands, held (Note [DTR recipes]):
  // the caller passes it to ResidencyManager::Release after its own BeforeOp. Empty otherwise,
  // and after an error.
  absl::Status BeforeProgramOp(uintptr_t stream, const std::vector<pooch::AccessRange>& ranges,
                               bool effects_known, std::vector<pooch::AllocationId>* held = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Before the program frees `address` (a base). True: the Recomputer keeps the memory (Note
  // [Kept inputs]) and the caller must not free it.
  absl::StatusOr<bool> BeforeFree(pooch::DeviceAddress address) ABSL_LOCKS_EXCLUDED(mu_);

  // A planned producer ran and built `recipe` (replacing any older recipe of the same output;
  // a recipe that reads its output is appended to the output's open chain instead, Note
  // [Chained recipes]).
  // `profiled_us`: the producer's profiled device time, counted as recompute time per replay.
  // Returns false (and keeps nothing) when an input is not memory pooch allocated.
  bool Offer(ReplayRecipe recipe, double profiled_us) ABSL_LOCKS_EXCLUDED(mu_);
  bool dtr() const { return dtr_; }
  // Note [DTR recipes]: before a call that can be replayed is queued on `stream`, its timing
  // starts (0: not timed); after it succeeded, OfferProduced keeps its recipe (nullopt: none
  // could be made) and ends the timing. AbandonProduced ends a timing whose call failed.
  // OfferProduced returns whether the recipe was kept.
  pooch::EventHandle BeginProduced(uintptr_t stream) ABSL_LOCKS_EXCLUDED(mu_);
  bool OfferProduced(std::optional<ReplayRecipe> recipe, uintptr_t stream, pooch::EventHandle start)
      ABSL_LOCKS_EXCLUDED(mu_);
  void AbandonProduced(pooch::EventHandle start) ABSL_LOCKS_EXCLUDED(mu_);

  // The plan drops the map at `address` now. False when it cannot (no recipe, or the manager
  // kept the data: pinned, already on the host): the caller swaps it out instead.
  bool Drop(pooch::DeviceAddress address) ABSL_LOCKS_EXCLUDED(mu_);

  struct Stats {
    int64_t recipes = 0;    // offered and kept
    int64_t refused = 0;    // offered but not kept (an input outside pooch's memory)
    int64_t drops = 0;      // maps dropped (under dtr: by the manager's eviction)
    int64_t replays = 0;    // maps rebuilt
    int64_t links = 0;      // calls their replays issued (a chain's links: Note [Chained recipes])
    int64_t chained = 0;    // of which rebuilt because a dropped map needed them
    int64_t forgotten = 0;  // recipes forgotten before use (input or output written, freed)
    int64_t failures = 0;   // replays that could not be issued (the op failed)
    double replay_us = 0;   // profiled (under dtr: measured) device time of the replayed calls
    int64_t kernel_replays = 0;  // of the links replayed, kernel launches (ReplayRecipe::kernel)
  };
  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  // The replay check's figures; nullopt when it is off.
  std::optional<ReplayCheck::Stats> check_stats() const ABSL_LOCKS_EXCLUDED(mu_);

  // Writes the lineage (POOCH_LINEAGE_OUT): {"format": "pooch-lineage", "version": 1,
  // "recipes": Lineage::ToJson(), "stats": stats() with the same field names}. The recipes held
  // now: the ones not yet used or forgotten, dropped or not, and the kept inputs.
  absl::Status WriteLineage(const std::string& path) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  bool OfferLocked(ReplayRecipe recipe, double profiled_us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rebuilds the dropped map at `output` on `stream` (its dropped inputs first).
  absl::Status ReplayLocked(pooch::DeviceAddress output, uintptr_t stream, int depth)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the recipe of `output` (Lineage::Erase) and frees the kept inputs that no recipe
  // reads any more.
  void EraseLocked(pooch::DeviceAddress output) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops `address` in the manager and marks the lineage by the allocation's state afterwards,
  // whatever the status said (ResidencyManager::Drop; a failed status is logged, naming `what`).
  // Returns whether it is dropped.
  bool DropInManagerLocked(pooch::DeviceAddress address, const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees kept inputs the lineage let go of (Lineage::Erase's result).
  void FreeKeptLocked(const std::vector<pooch::DeviceAddress>& addresses)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Chained recipes] (core/lineage/lineage.cc): marks `output`'s entry open instead of
  // forgetting it when `needs` forgets it for its map's write alone (never under dtr); true
  // when it did (or it was open already).
  bool OpenLocked(pooch::DeviceAddress output, const Lineage::Needs& needs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the entries still open: the call that wrote their map offered no link.
  void ForgetOpenLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Carries out what the lineage says an access requires (Note [Replay]).
  absl::Status ApplyLocked(uintptr_t stream, const Lineage::Needs& needs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [DTR recipes]: marks the maps the manager's eviction dropped since the last call.
  void SyncDropsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [Replay]: the recipe of `output` will no longer rebuild it (an input or the output is
  // about to be written): withdrawn from the manager under dtr, the map rebuilt first if it is
  // dropped (then *rebuilt = true), and the recipe forgotten, or marked stale when kept (never
  // dropped again).
  absl::Status InvalidateLocked(uintptr_t stream, pooch::DeviceAddress output, bool* rebuilt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Note [DTR recipes]: takes the producers' completed timings: each recipe's cost.
  void TakeTimingsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A producer's cost before its timing completed: the mean measured cost per byte so far, or
  // the copy out and back at 16 GB/s (ResidencyOptions::dtr_link_bytes_per_us) before any.
  double EstimateUsLocked(int64_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies Note [Replay] to an access of [address, address + bytes).
  absl::Status TouchLocked(uintptr_t stream, pooch::DeviceAddress address, int64_t bytes,
                           bool writes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The allocation (base, bytes) holding `address`: the manager's or a small block's.
  std::optional<std::pair<pooch::DeviceAddress, int64_t>> AllocationOf(
      pooch::DeviceAddress address) const;
  // Scratch device memory for a replay's workspace, and its release.
  absl::StatusOr<pooch::DeviceAddress> AllocateScratch(int64_t bytes);
  void FreeScratch(pooch::DeviceAddress address, int64_t bytes);

  // Note [Replay check]: the links of `e` queued on `stream` after `primed` (Prime's answer);
  // verifies what they rebuilt at `output`.
  absl::Status VerifyLocked(const Lineage::Entry& e, pooch::DeviceAddress output,
                            uintptr_t stream, bool primed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Waits (host) for the work queued on `stream` so far: a map rebuilt on behalf of an op that
  // does not read it (a write to an input, a free, a kernel launch) is done before any later
  // op, on any stream, can touch it (Note [Replay]).
  absl::Status WaitForStreamLocked(uintptr_t stream) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  pooch::Device& device_;
  pooch::ResidencyManager& manager_;
  pooch::SmallAllocator& small_;
  const int64_t min_swap_bytes_;
  TraceObserver* const trace_;  // may be null
  const bool dtr_;
  mutable pooch::Mutex mu_;
  ReplayCheck* const check_ ABSL_PT_GUARDED_BY(mu_);  // may be null
  OpTimer timer_ ABSL_GUARDED_BY(mu_);              // dtr: the producers' device times
  double measured_us_ ABSL_GUARDED_BY(mu_) = 0;     // dtr: sum of the timings taken
  double measured_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // dtr: their outputs' bytes
  // lineage_.size(), kept after every change: lets BeforeProgramOp skip the lock when it is 0.
  std::atomic<int> entries_count_{0};
  Lineage lineage_ ABSL_GUARDED_BY(mu_);                         // the recipes, and what reads what
  std::vector<pooch::DeviceAddress> open_ ABSL_GUARDED_BY(mu_);  // entries marked open
  Stats stats_ ABSL_GUARDED_BY(mu_);
  pooch::EventHandle wait_event_ ABSL_GUARDED_BY(mu_) = 0;  // created on first use
};

}  // namespace pooch

#endif  // POOCH_CORE_RECOMPUTE_RECOMPUTER_H_
