// Profile::Validate and the name tables of model.h.
//
// Validate's messages name the offending value by the path it has in the JSON form
// (model_json.h), e.g. "ops[12].reads[1]: tensor 400 does not exist", so that a bad profile file
// and a bad in-memory profile read the same.
#include "core/model/model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"

namespace pooch {
namespace {

template <typename... Args>
absl::Status InvalidProfile(const absl::FormatSpec<Args...>& format, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrFormat(format, args...));
}

}  // namespace

absl::Status Profile::Validate() const {
  const int64_t num_ops = static_cast<int64_t>(ops.size());
  const int64_t num_tensors = static_cast<int64_t>(tensors.size());
  for (int64_t i = 0; i < num_tensors; ++i) {
    const Tensor& t = tensors[i];
    if (t.id != i)
      return InvalidProfile("tensors[%d].id: is %d, must equal its position %d", i, t.id, i);
    if (t.bytes < 0) return InvalidProfile("tensors[%d].bytes: %d is negative", i, t.bytes);
    if (t.device_bytes != 0 && t.device_bytes < t.bytes) {
      return InvalidProfile("tensors[%d].device_bytes: %d is below its bytes %d", i, t.device_bytes,
                            t.bytes);
    }
    if (t.alloc_before < kBeforeIteration || t.alloc_before >= num_ops) {
      return InvalidProfile("tensors[%d].alloc_before: op %d does not exist (%d ops)", i,
                            t.alloc_before, num_ops);
    }
    if (t.free_after < kAfterIteration || t.free_after >= num_ops) {
      return InvalidProfile("tensors[%d].free_after: op %d does not exist (%d ops)", i,
                            t.free_after, num_ops);
    }
    if (t.alloc_before != kBeforeIteration && t.free_after != kAfterIteration &&
        t.free_after < t.alloc_before) {
      return InvalidProfile(
          "tensors[%d].free_after: freed after op %d, before it is allocated at op %d", i,
          t.free_after, t.alloc_before);
    }
    if (!std::isfinite(t.swap_out_us) || !std::isfinite(t.swap_in_us)) {
      return InvalidProfile("tensors[%d]: swap times must be finite", i);
    }
  }
  // written[t]: some op before the current one wrote tensor t (or it exists from the start).
  std::vector<bool> written(tensors.size());
  for (int64_t i = 0; i < num_tensors; ++i) {
    written[i] = tensors[i].alloc_before == kBeforeIteration;
  }
  for (int64_t i = 0; i < num_ops; ++i) {
    const Op& op = ops[i];
    if (!std::isfinite(op.duration_us) || op.duration_us < 0) {
      return InvalidProfile("ops[%d].duration_us: %g is not a non-negative number", i,
                            op.duration_us);
    }
    if (op.workspace_bytes < 0) {
      return InvalidProfile("ops[%d].workspace_bytes: %d is negative", i, op.workspace_bytes);
    }
    if (op.unprofiled_inputs_until != -1 &&
        (op.unprofiled_inputs_until < i || op.unprofiled_inputs_until >= num_ops)) {
      return InvalidProfile(
          "ops[%d].unprofiled_inputs_until: op %d is not -1 or an op from this one on", i,
          op.unprofiled_inputs_until);
    }
    for (TensorId t : op.overwrites) {
      if (std::find(op.writes.begin(), op.writes.end(), t) == op.writes.end() ||
          std::find(op.reads.begin(), op.reads.end(), t) != op.reads.end()) {
        return InvalidProfile("ops[%d].overwrites: tensor %d is not written without being read", i,
                              t);
      }
    }
    if (op.to_host_bytes < 0 || op.to_device_bytes < 0) {
      return InvalidProfile("ops[%d]: copied bytes must not be negative", i);
    }
    if (op.to_host_bytes > 0 && op.to_device_bytes > 0) {
      return InvalidProfile("ops[%d]: copies both to the host and to the device", i);
    }
    for (int pass = 0; pass < 2; ++pass) {
      const bool reading = pass == 0;
      const std::vector<TensorId>& ids = reading ? op.reads : op.writes;
      const char* field = reading ? "reads" : "writes";
      for (size_t k = 0; k < ids.size(); ++k) {
        const TensorId id = ids[k];
        if (id < 0 || id >= num_tensors) {
          return InvalidProfile("ops[%d].%s[%d]: tensor %d does not exist", i, field, k, id);
        }
        const Tensor& t = tensors[id];
        if (t.alloc_before != kBeforeIteration && i < t.alloc_before) {
          return InvalidProfile(
              "ops[%d].%s[%d]: tensor %d (%s) is allocated later, before op %d (depends on an op "
              "that comes later)",
              i, field, k, id, t.name, t.alloc_before);
        }
        if (t.free_after != kAfterIteration && i > t.free_after) {
          return InvalidProfile("ops[%d].%s[%d]: tensor %d (%s) was freed after op %d", i, field, k,
                                id, t.name, t.free_after);
        }
        if (reading && !written[id]) {
          return InvalidProfile(
              "ops[%d].reads[%d]: tensor %d (%s) is read before any op writes it (depends on an "
              "op that comes later)",
              i, k, id, t.name);
        }
      }
    }
    for (TensorId id : op.writes) written[id] = true;
  }
  return absl::OkStatus();
}

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kOther:
      return "other";
  }
  return "?";
}

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kConv:
      return "conv";
    case OpKind::kBatchNorm:
      return "batchnorm";
    case OpKind::kActivation:
      return "activation";
    case OpKind::kPool:
      return "pool";
    case OpKind::kFullyConnected:
      return "fc";
    case OpKind::kAdd:
      return "add";
    case OpKind::kSoftmax:
      return "softmax";
    case OpKind::kLoss:
      return "loss";
    case OpKind::kCopy:
      return "copy";
    case OpKind::kOptimizer:
      return "optimizer";
    case OpKind::kOther:
      return "other";
  }
  return "?";
}

const char* DecisionName(Decision decision) {
  switch (decision) {
    case Decision::kKeep:
      return "keep";
    case Decision::kSwap:
      return "swap";
    case Decision::kRecompute:
      return "recompute";
  }
  return "?";
}

}  // namespace pooch
