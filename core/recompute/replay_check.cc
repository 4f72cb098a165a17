// replay_check.cc: the replay check (Note [Replay check] in replay_check.h).
#include "core/recompute/replay_check.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pooch {

ReplayCheck::~ReplayCheck() {
  if (event_ != 0) device_.DestroyEvent(event_).IgnoreError();
  if (stream_ != 0) device_.DestroyStream(stream_).IgnoreError();
  if (staging_ != nullptr) device_.FreeHost(staging_).IgnoreError();
}

absl::StatusOr<uint8_t*> ReplayCheck::Staging(int64_t bytes) {
  if (bytes > staging_bytes_) {
    if (staging_ != nullptr) {
      if (absl::Status s = device_.FreeHost(staging_); !s.ok()) return s;
      staging_ = nullptr;
      staging_bytes_ = 0;
    }
    absl::StatusOr<void*> host = device_.AllocHost(bytes);
    if (!host.ok()) return host.status();
    staging_ = *host;
    staging_bytes_ = bytes;
  }
  return static_cast<uint8_t*>(staging_);
}

absl::StatusOr<StreamHandle> ReplayCheck::Stream() {
  if (stream_ == 0) {
    absl::StatusOr<StreamHandle> s = device_.CreateStream();
    if (!s.ok()) return s.status();
    stream_ = *s;
  }
  return stream_;
}

absl::Status ReplayCheck::Finish(StreamHandle stream) {
  if (event_ == 0) {
    absl::StatusOr<EventHandle> e = device_.CreateEvent();
    if (!e.ok()) return e.status();
    event_ = *e;
  }
  if (absl::Status s = device_.RecordEvent(event_, stream); !s.ok()) return s;
  return device_.SynchronizeEvent(event_);
}

absl::Status ReplayCheck::Keep(ResidencyManager& manager, DeviceAddress base) {
  Forget(base);
  // A swap-in that completed is resident: the drop that follows polls too.
  if (absl::Status s = manager.Poll(); !s.ok()) return s;
  const std::optional<AllocationInfo> info = manager.Lookup(base);
  if (!info.has_value() || info->address != base || info->state != ResidencyState::kResident) {
    return absl::OkStatus();  // nothing the drop can discard
  }
  absl::StatusOr<StreamHandle> stream = Stream();
  if (!stream.ok()) return stream.status();
  absl::StatusOr<uint8_t*> staging = Staging(info->bytes);
  if (!staging.ok()) return staging.status();
  // Pinned while the copy reads it, and the copy's use recorded: the drop's release waits for it.
  const AccessRange range{base, info->bytes, AccessRange::Mode::kRead};
  absl::StatusOr<OpTicket> ticket = manager.BeforeOp(*stream, {&range, 1});
  if (!ticket.ok()) return ticket.status();
  absl::Status s = manager.WaitForUses(base, *stream);
  if (s.ok()) s = device_.CopyToHostAsync(*staging, base, info->bytes, *stream);
  s.Update(manager.AfterOp(*std::move(ticket), s.ok()));
  if (s.ok()) s = Finish(*stream);
  if (!s.ok()) return s;
  copies_.emplace(base, std::vector<uint8_t>(*staging, *staging + info->bytes));
  held_bytes_ += info->bytes;
  stats_.peak_held_bytes = std::max(stats_.peak_held_bytes, held_bytes_);
  return absl::OkStatus();
}

void ReplayCheck::Forget(DeviceAddress base) {
  auto it = copies_.find(base);
  if (it == copies_.end()) return;
  held_bytes_ -= static_cast<int64_t>(it->second.size());
  copies_.erase(it);
}

absl::StatusOr<bool> ReplayCheck::Prime(DeviceAddress base, int64_t bytes, StreamHandle stream) {
  auto it = copies_.find(base);
  if (it == copies_.end() || static_cast<int64_t>(it->second.size()) != bytes) {
    Forget(base);
    return false;
  }
  absl::StatusOr<uint8_t*> staging = Staging(bytes);
  if (!staging.ok()) return staging.status();
  const std::vector<uint8_t>& copy = it->second;
  for (int64_t i = 0; i < bytes; ++i) (*staging)[i] = static_cast<uint8_t>(~copy[i]);
  if (absl::Status s = device_.CopyToDeviceAsync(base, *staging, bytes, stream); !s.ok()) return s;
  // Waited for: the staging buffer is written again before the replay is verified.
  if (absl::Status s = Finish(stream); !s.ok()) return s;
  return true;
}

absl::Status ReplayCheck::Verify(DeviceAddress base, StreamHandle stream, absl::string_view calls) {
  auto it = copies_.find(base);
  if (it == copies_.end()) return absl::FailedPreconditionError("replay check: no copy to verify");
  const std::vector<uint8_t> copy = std::move(it->second);
  copies_.erase(it);
  held_bytes_ -= static_cast<int64_t>(copy.size());
  const int64_t bytes = static_cast<int64_t>(copy.size());
  absl::StatusOr<uint8_t*> staging = Staging(bytes);
  if (!staging.ok()) return staging.status();
  if (absl::Status s = device_.CopyToHostAsync(*staging, base, bytes, stream); !s.ok()) return s;
  if (absl::Status s = Finish(stream); !s.ok()) return s;
  const uint8_t* rebuilt = *staging;
  int64_t unwritten = 0;
  int64_t first = -1;
  for (int64_t i = 0; i < bytes; ++i) {
    if (rebuilt[i] == copy[i]) continue;
    if (rebuilt[i] != static_cast<uint8_t>(~copy[i])) {
      first = i;
      break;
    }
    ++unwritten;
  }
  std::string line;
  if (first >= 0) {
    line = absl::StrFormat(
        "replay check: %s rebuilt the map at 0x%x (%d bytes) with other bytes than were "
        "dropped: first at offset %d (0x%02x dropped, 0x%02x rebuilt)",
        calls, base, bytes, first, copy[static_cast<size_t>(first)],
        rebuilt[static_cast<size_t>(first)]);
  } else if (bytes > 0 && unwritten == bytes) {
    line = absl::StrFormat(
        "replay check: %s wrote none of the map at 0x%x (%d bytes) it rebuilds: first at "
        "offset 0",
        calls, base, bytes);
  }
  if (!line.empty()) {
    on_mismatch_(line);
    return absl::DataLossError(absl::StrCat("pooch: ", line));
  }
  ++stats_.checked;
  stats_.checked_bytes += bytes;
  stats_.unwritten_bytes += unwritten;
  return absl::OkStatus();
}

}  // namespace pooch
