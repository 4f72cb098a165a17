// BuildProfile (profile_builder.h): one recorded iteration -> the planner's Profile.
//
// Note [Recorded lifetimes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Profile lifetimes are op positions: a tensor is allocated just before ops[alloc_before] and
// freed just after ops[free_after]. The recording places allocations and frees *between* ops, so
// an event in the gap after op k-1 and before op k maps as
//   kAlloc -> alloc_before = k   (the memory is needed from op k on; the simulator charges it when
//                                 op k starts, which is when the program has it)
//   kFree  -> free_after = k - 1 (the memory is free from the end of op k-1 on)
// The ends need care, because Profile has no "gap" position:
//   - an allocation after the last op gets alloc_before = n - 1: charged one op early rather than
//     not at all (it still holds memory when the iteration ends, and an allocation that fails
//     there fails the program);
//   - a free before the first op gets free_after = 0, and an allocation freed in the same gap it
//     was made in (never touched) gets free_after = alloc_before: it is charged during one
//     neighbouring op rather than vanishing, so peak memory is never under-estimated. An untouched
//     allocation that spans ops holds memory for all of them, as on the device.
// A persistent allocation (alive when the iteration starts) has alloc_before = kBeforeIteration;
// anything not freed in the iteration has free_after = kAfterIteration. resident_other_bytes is
// one persistent tensor "other" that no op touches, so it has no idle interval to plan.
// An allocation id may be reused after a free: each kAlloc starts a new tensor.
//
// A read of an allocated-in-iteration tensor before any op wrote it (uninitialised memory) is
// dropped from the op's reads: no op of the iteration produced that data, so there is no
// dependency to schedule, and Profile::Validate rejects such reads. The op is then marked
// non-replayable: a replay would read whatever the buffer holds at replay time, which need not be
// what it read the first time. A read and write of such a tensor is a write (Note [First
// writers]).
//
// Note [First writers]
// ~~~~~~~~~~~~~~~~~~~~
// A kReadWrite access to an allocated-in-iteration tensor that no op has written since its
// allocation counts as a write only: it starts the tensor's value as a kWrite does, reads
// nothing and leaves the op replayable. Residency must keep read and write for such an access (a
// kernel whose verdict says it may write a word is read and written, Note [Kernel words] in
// interpose/hooks/launch/kernel_args.h, since it may write part of a map that held data), and a
// cuBLAS call with a non-zero beta reports one for the output it blends into. But the bytes it
// could read here were never defined by the program: a fresh allocation's contents are
// indeterminate. The
// rule assumes that a program does not read the bytes of a fresh allocation that its first
// writer left unwritten, nor lets that writer's result depend on them; the recipes of cuDNN and
// cuBLAS calls already assume the same of an output's padding. Under it, replaying the first
// writer into a fresh map rebuilds every byte anyone reads, whatever the map held, so when it is
// also the tensor's only writer (Note [Sound replays] in core/model/candidates.cc) the planner
// may recompute the tensor through it; without the rule no kernel would ever be a map's only
// writer, since every word a kernel writes is read and written. A kReadWrite of a tensor already
// written stays a read (an in-place update), and a kRead of a fresh tensor an uninitialised read.
// The rule takes the recorded writes as all the writes, as the only-writer rule does.
//
// Note [Mapped bytes]
// ~~~~~~~~~~~~~~~~~~~
// A tensor has two sizes. A swap copies what the program asked for (Tensor::bytes); the device
// holds that rounded up to the residency manager's mapping granularity (Tensor::device_bytes,
// 2 MiB under the CUDA VMM API), because every swappable allocation is its own mapping. The
// planner must charge the second: 1 MiB tensors charged at 1 MiB make plans that fit on paper
// and hold twice that on the device, and the safety net pages. Every tensor of a measured
// profile is such a mapping: allocations below POOCH_MIN_SWAP_BYTES live in slabs, which are the
// constant "other", charged whole. The runtime's copy times (core/measure/copy_times.h) stay
// per requested byte.
//
// Note [Static replay check]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Op::replayable = replay_capable AND the op read no uninitialised memory (Note [Recorded
// lifetimes]). Whether a replay reads unchanged inputs depends on where it happens, so the
// planner checks it per idle interval, up to the op that needs the rebuilt value (Note [Sound
// replays] in core/model/candidates.cc), not here for the whole iteration.
//
// No decision here depends on an API's name. Phases are labelled from the access pattern for
// traces and summaries only (LabelPhasesByPeak, core/model/candidates.h); op kinds come from the
// API name (OpKindFromApiName) and serve the SuperNeurons baseline, which is defined by them.
#include "core/profile/profile_builder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/units.h"
#include "core/model/candidates.h"

namespace pooch {
namespace {

template <typename... Args>
absl::Status Bad(const absl::FormatSpec<Args...>& format, const Args&... args) {
  return absl::InvalidArgumentError(
      absl::StrCat("BuildProfile: ", absl::StrFormat(format, args...)));
}

void AddOnce(std::vector<TensorId>& ids, TensorId id) {
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

}  // namespace

OpKind OpKindFromApiName(const std::string& name) {
  // Order matters only where names overlap; none of these prefixes do.
  if (absl::StartsWith(name, "cudnnConvolution")) return OpKind::kConv;
  if (absl::StartsWith(name, "cudnnBatchNormalization") ||
      absl::StartsWith(name, "cudnnNormalization")) {
    return OpKind::kBatchNorm;
  }
  if (absl::StartsWith(name, "cudnnActivation")) return OpKind::kActivation;
  if (absl::StartsWith(name, "cudnnPooling")) return OpKind::kPool;
  if (absl::StartsWith(name, "cudnnAddTensor") || absl::StartsWith(name, "cudnnOpTensor")) {
    return OpKind::kAdd;
  }
  if (absl::StartsWith(name, "cudnnSoftmax")) return OpKind::kSoftmax;
  if (absl::StartsWith(name, "cublas")) {
    // Sgemm, SgemmStridedBatched, GemmEx, GemmBatchedEx, cublasLtMatmul: a fully connected layer
    // as far as the planner cares. Level-1/2 calls (axpy, scal, gemv) are not.
    if (absl::StrContains(absl::AsciiStrToLower(name), "gemm") ||
        absl::StartsWith(name, "cublasLtMatmul")) {
      return OpKind::kFullyConnected;
    }
    return OpKind::kOther;
  }
  if (absl::StrContains(name, "Memcpy") || absl::StrContains(name, "Memset")) return OpKind::kCopy;
  return OpKind::kOther;
}

namespace {

// BuildProfile's steps over one recorded iteration: the persistent tensors, then each event in
// order (Note [Recorded lifetimes]), then the names and flags read from the whole iteration.
class ProfileAssembly {
 public:
  ProfileAssembly(const RecordedIteration& it, const ProfileBuildOptions& options)
      : it_(it), options_(options), n_(static_cast<OpIndex>(it.ops.size())) {
    out_.profile.name = options.name;
  }

  absl::Status AddPersistent() {
    for (size_t k = 0; k < it_.persistent.size(); ++k) {
      const RecordedIteration::Persistent& a = it_.persistent[k];
      if (a.bytes < 0) {
        return Bad("persistent[%d]: allocation %d has negative size", k, a.allocation);
      }
      if (a.allocation == kOtherAllocation) return Bad("persistent[%d]: allocation id 0", k);
      if (live_.contains(a.allocation)) {
        return Bad("persistent[%d]: allocation %d listed twice", k, a.allocation);
      }
      live_[a.allocation] = AddTensor(absl::StrCat("p", a.allocation), a.bytes, a.allocation, -1);
    }
    if (it_.resident_other_bytes > 0) {
      AddTensor("other", it_.resident_other_bytes, kOtherAllocation, -1);
    }
    out_.profile.ops.resize(n_);
    written_.assign(out_.profile.tensors.size(), true);
    uninitialised_read_.assign(n_, false);
    return absl::OkStatus();
  }

  absl::Status AddEvents() {
    for (size_t e = 0; e < it_.events.size(); ++e) {
      const RecordedIteration::Event& ev = it_.events[e];
      absl::Status s;
      switch (ev.kind) {
        case RecordedIteration::Event::kOp:
          s = AddOp(e, ev);
          break;
        case RecordedIteration::Event::kAlloc:
          s = AddAlloc(e, ev);
          break;
        case RecordedIteration::Event::kFree:
          s = AddFree(e, ev);
          break;
        default:
          return Bad("events[%d]: unknown kind %d", e, static_cast<int>(ev.kind));
      }
      if (!s.ok()) return s;
    }
    if (next_op_ != n_) return Bad("events: only %d of %d ops appear", next_op_, n_);
    return absl::OkStatus();
  }

  absl::StatusOr<BuiltProfile> Finish() && {
    Profile& p = out_.profile;
    NameByFirstWriter();
    LabelPhasesByPeak(p);
    for (OpIndex i = 0; i < n_; ++i) {  // Note [Static replay check]
      p.ops[i].replayable = it_.ops[i].replay_capable && !uninitialised_read_[i];
    }
    if (absl::Status valid = p.Validate(); !valid.ok()) {
      return Bad("the built profile is inconsistent: %s", valid.message());
    }
    return std::move(out_);
  }

 private:
  TensorId AddTensor(std::string name, int64_t bytes, uint64_t allocation, int ordinal) {
    Profile& p = out_.profile;
    Tensor t;
    t.id = static_cast<TensorId>(p.tensors.size());
    t.name = std::move(name);
    t.bytes = bytes;
    // Note [Mapped bytes]; "other" is whole slabs already.
    const int64_t g = options_.granularity;
    const int64_t mapped =
        allocation == kOtherAllocation || bytes > std::numeric_limits<int64_t>::max() - g
            ? bytes
            : RoundUp(bytes, g);
    if (mapped != bytes) t.device_bytes = mapped;
    p.tensors.push_back(std::move(t));
    out_.tensor_allocation.push_back(allocation);
    out_.tensor_alloc_ordinal.push_back(ordinal);
    return p.tensors.back().id;
  }

  // The op's fields other than its accesses, checked.
  absl::Status CopyOpFields(const RecordedOp& rec, Op& op) const {
    op.name = rec.name;
    op.kind = OpKindFromApiName(rec.name);
    op.duration_us = rec.duration_us;
    if (rec.copy.to_host < 0 || rec.copy.to_device < 0 ||
        (rec.copy.to_host > 0 && rec.copy.to_device > 0)) {
      return Bad("ops[%d]: copies %d bytes to the host and %d to the device", next_op_,
                 rec.copy.to_host, rec.copy.to_device);
    }
    op.to_host_bytes = rec.copy.to_host;
    op.to_device_bytes = rec.copy.to_device;
    op.workspace_bytes = rec.workspace_bytes;
    if (rec.unprofiled_inputs_until < -1 || rec.unprofiled_inputs_until >= n_) {
      return Bad("ops[%d].unprofiled_inputs_until: op %d does not exist (%d ops)", next_op_,
                 rec.unprofiled_inputs_until, n_);
    }
    op.unprofiled_inputs_until = rec.unprofiled_inputs_until;
    return absl::OkStatus();
  }

  absl::Status AddOp(size_t e, const RecordedIteration::Event& ev) {
    if (ev.op_index != next_op_) {
      return Bad("events[%d]: op %d, expected op %d (each op once, in order)", e, ev.op_index,
                 next_op_);
    }
    if (next_op_ >= n_) return Bad("events[%d]: op %d does not exist (%d ops)", e, next_op_, n_);
    const RecordedOp& rec = it_.ops[next_op_];
    Op& op = out_.profile.ops[next_op_];
    if (absl::Status s = CopyOpFields(rec, op); !s.ok()) return s;
    std::vector<TensorId> reads, writes, whole;
    for (size_t a = 0; a < rec.accesses.size(); ++a) {
      const RecordedAccess& acc = rec.accesses[a];
      const auto found = live_.find(acc.allocation);
      if (found == live_.end()) {
        return Bad(
            "ops[%d].accesses[%d]: allocation %d is neither persistent nor allocated "
            "in the iteration (or was freed)",
            next_op_, a, acc.allocation);
      }
      const TensorId t = found->second;
      // Note [First writers]: a read and write of a fresh tensor starts its value.
      const bool starts = acc.mode == RecordedAccess::kReadWrite && !written_[t];
      if (acc.mode != RecordedAccess::kWrite && !starts) AddOnce(reads, t);
      if (acc.mode != RecordedAccess::kRead) AddOnce(writes, t);
      if (acc.mode == RecordedAccess::kWrite && acc.whole) AddOnce(whole, t);
    }
    for (TensorId t : reads) {
      if (written_[t]) {
        op.reads.push_back(t);
      } else {
        uninitialised_read_[next_op_] = true;  // Note [Recorded lifetimes]
      }
    }
    for (TensorId t : writes) {
      op.writes.push_back(t);
      written_[t] = true;
      // Overwritten whole and not read (no other access of the op read it).
      if (std::find(whole.begin(), whole.end(), t) != whole.end() &&
          std::find(reads.begin(), reads.end(), t) == reads.end()) {
        op.overwrites.push_back(t);
      }
    }
    ++next_op_;
    return absl::OkStatus();
  }

  absl::Status AddAlloc(size_t e, const RecordedIteration::Event& ev) {
    if (ev.bytes < 0) return Bad("events[%d]: allocation %d has negative size", e, ev.allocation);
    if (ev.allocation == kOtherAllocation) return Bad("events[%d]: allocation id 0", e);
    if (live_.contains(ev.allocation)) {
      return Bad("events[%d]: allocation %d allocated again before it was freed", e, ev.allocation);
    }
    const TensorId id = AddTensor(absl::StrCat("a", ordinal_), ev.bytes, ev.allocation, ordinal_);
    ++ordinal_;
    out_.profile.tensors[id].alloc_before = std::min(next_op_, n_ - 1);
    written_.push_back(false);
    live_[ev.allocation] = id;
    return absl::OkStatus();
  }

  absl::Status AddFree(size_t e, const RecordedIteration::Event& ev) {
    const auto found = live_.find(ev.allocation);
    if (found == live_.end()) {
      return Bad(
          "events[%d]: free of allocation %d, which is neither persistent nor "
          "allocated in the iteration (or was freed already)",
          e, ev.allocation);
    }
    Tensor& t = out_.profile.tensors[found->second];
    t.free_after = std::max<OpIndex>(next_op_ - 1, std::max<OpIndex>(t.alloc_before, 0));
    live_.erase(found);
    return absl::OkStatus();
  }

  // Tensor names say who wrote them first, for plan and simulator messages.
  void NameByFirstWriter() {
    Profile& p = out_.profile;
    const int32_t nt = static_cast<int32_t>(p.tensors.size());
    std::vector<std::vector<OpIndex>> writers(nt);
    for (OpIndex i = 0; i < n_; ++i) {
      for (TensorId t : p.ops[i].writes) writers[t].push_back(i);
    }
    for (TensorId t = 0; t < nt; ++t) {
      if (out_.tensor_alloc_ordinal[t] >= 0 && !writers[t].empty()) {
        absl::StrAppend(&p.tensors[t].name, ":", p.ops[writers[t][0]].name, "@", writers[t][0]);
      }
    }
  }

  const RecordedIteration& it_;
  const ProfileBuildOptions& options_;
  const OpIndex n_;
  BuiltProfile out_;
  absl::flat_hash_map<uint64_t, TensorId> live_;  // allocation id -> the tensor it now is
  std::vector<bool> written_;             // per tensor: written by an earlier op (or persistent)
  std::vector<bool> uninitialised_read_;  // per op
  OpIndex next_op_ = 0;                   // the op after the current gap
  int ordinal_ = 0;                       // of the next allocation made in the iteration
};

}  // namespace

absl::StatusOr<BuiltProfile> BuildProfile(const RecordedIteration& it,
                                          const ProfileBuildOptions& options) {
  if (it.ops.empty()) return Bad("the iteration has no ops");
  if (it.resident_other_bytes < 0) {
    return Bad("resident_other_bytes is negative (%d)", it.resident_other_bytes);
  }
  if (options.granularity < 1) return Bad("granularity %d is below 1", options.granularity);
  ProfileAssembly assembly(it, options);
  if (absl::Status s = assembly.AddPersistent(); !s.ok()) return s;
  if (absl::Status s = assembly.AddEvents(); !s.ok()) return s;
  return std::move(assembly).Finish();
}

}  // namespace pooch
