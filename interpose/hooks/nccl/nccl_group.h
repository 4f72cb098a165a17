// nccl_group.h: the calls a thread makes between ncclGroupStart and ncclGroupEnd.
//
// Note [Collectives in a group]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Between ncclGroupStart and the ncclGroupEnd that closes the outermost group (groups nest and
// belong to the calling thread, as in NCCL), a collective or point-to-point call only queues
// its work: NCCL launches the group's kernels in ncclGroupEnd. So each call is still an op when
// it is made (Note [Collectives as accesses]: NCCL may look at its buffers then), and its ranges
// are kept; the outermost ncclGroupEnd is one op over all of them, so that every buffer of the
// group is resident when the kernels are launched, and stays mapped until they complete. When
// the group's calls ran on one stream, that is the op's stream; when on several, the op runs on
// the legacy default stream and the context is synchronised after ncclGroupEnd (as for an
// opaque call on an unknown stream, Note [Opaque calls]), so that no buffer is released before
// every stream's work is done.
//
// Thread safety: a GroupCalls belongs to one thread (ThisThreadGroup).
#ifndef POOCH_INTERPOSE_HOOKS_NCCL_NCCL_GROUP_H_
#define POOCH_INTERPOSE_HOOKS_NCCL_NCCL_GROUP_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "interpose/process/managed.h"

namespace pooch::interpose {

class GroupCalls {
 public:
  // ncclGroupStart succeeded.
  void Start() { ++depth_; }
  bool open() const { return depth_ > 0; }
  // Keeps a call's ranges until the outermost group ends (only while open()).
  void Add(uintptr_t stream, const Ranges& ranges);

  // What the outermost group's ncclGroupEnd must hold resident: its calls' ranges and their one
  // stream, or no stream when they ran on several.
  struct Closing {
    Ranges ranges;
    std::optional<uintptr_t> stream;
  };
  // ncclGroupEnd: closes one level; returns the group's calls when it closed the outermost one,
  // nullopt otherwise (an inner group, or an ncclGroupEnd with no group open, which NCCL
  // answers itself).
  std::optional<Closing> End();

 private:
  int depth_ = 0;
  Ranges ranges_;
  std::vector<uintptr_t> streams_;
};

// The calling thread's group.
GroupCalls& ThisThreadGroup();

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_NCCL_NCCL_GROUP_H_
