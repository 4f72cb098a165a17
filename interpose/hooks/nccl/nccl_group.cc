// nccl_group.cc: Note [Collectives in a group].
#include "interpose/hooks/nccl/nccl_group.h"

#include <algorithm>
#include <utility>

namespace pooch::interpose {

void GroupCalls::Add(uintptr_t stream, const Ranges& ranges) {
  if (!open()) return;
  for (const pooch::AccessRange& r : ranges.get()) {
    ranges_.Add(r.address, static_cast<size_t>(r.bytes), r.mode);
  }
  if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) {
    streams_.push_back(stream);
  }
}

std::optional<GroupCalls::Closing> GroupCalls::End() {
  if (depth_ == 0) return std::nullopt;
  if (--depth_ > 0) return std::nullopt;
  Closing closing{.ranges = std::move(ranges_), .stream = std::nullopt};
  if (streams_.size() <= 1) {
    closing.stream = streams_.empty() ? uintptr_t{0} : streams_.front();
  }
  ranges_ = Ranges();
  streams_.clear();
  return closing;
}

GroupCalls& ThisThreadGroup() {
  static thread_local GroupCalls group;
  return group;
}

}  // namespace pooch::interpose
