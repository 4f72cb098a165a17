#include "core/lineage.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pooch {
namespace {

nlohmann::json RangesJson(const std::vector<LineageRange>& ranges) {
  nlohmann::json out = nlohmann::json::array();
  for (const LineageRange& r : ranges) {
    out.push_back({{"allocation", r.allocation},
                   {"address", absl::StrFormat("0x%x", r.address)},
                   {"bytes", r.bytes}});
  }
  return out;
}

}  // namespace

uint64_t LineageLog::Append(LineageRecord record) {
  MutexLock lock(&mu_);
  record.seq = next_seq_++;
  record.iteration = iteration_;
  arg_bytes_ += static_cast<int64_t>(record.args.size());
  const uint64_t seq = record.seq;
  records_.push_back(std::move(record));
  while (!records_.empty() &&
         (records_.size() > options_.max_records || arg_bytes_ > options_.max_arg_bytes)) {
    DropOldestLocked();
  }
  return seq;
}

void LineageLog::MarkIteration() {
  MutexLock lock(&mu_);
  ++iteration_;
  const uint64_t keep = static_cast<uint64_t>(std::max(1, options_.keep_iterations));
  while (!records_.empty() && records_.front().iteration + keep <= iteration_) DropOldestLocked();
}

void LineageLog::DropOldestLocked() {
  arg_bytes_ -= static_cast<int64_t>(records_.front().args.size());
  records_.pop_front();
  ++dropped_;
}

std::vector<LineageRecord> LineageLog::Snapshot() const {
  MutexLock lock(&mu_);
  return {records_.begin(), records_.end()};
}

std::optional<LineageRecord> LineageLog::Find(uint64_t seq) const {
  MutexLock lock(&mu_);
  if (records_.empty() || seq < records_.front().seq || seq > records_.back().seq) {
    return std::nullopt;
  }
  return records_[seq - records_.front().seq];  // seqs are consecutive
}

std::optional<LineageRecord> LineageLog::LastWriter(uint64_t id, uint64_t before_seq) const {
  MutexLock lock(&mu_);
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (it->seq >= before_seq) continue;
    for (const LineageRange& w : it->writes) {
      if (w.allocation == id) return *it;
    }
  }
  return std::nullopt;
}

LineageLog::Counters LineageLog::counters() const {
  MutexLock lock(&mu_);
  return Counters{next_seq_ - 1, dropped_, records_.size(), arg_bytes_, iteration_};
}

nlohmann::json LineageLog::ToJson() const {
  MutexLock lock(&mu_);
  nlohmann::json ops = nlohmann::json::array();
  for (const LineageRecord& r : records_) {
    ops.push_back({{"seq", r.seq},
                   {"iteration", r.iteration},
                   {"name", r.name},
                   {"stream", r.stream},
                   {"effects", r.effects == Effects::kKnown ? "known" : "unknown"},
                   {"reads", RangesJson(r.reads)},
                   {"writes", RangesJson(r.writes)},
                   {"args", absl::BytesToHexString(r.args)}});
  }
  return {{"format", "pooch-lineage"}, {"version", 1},        {"iteration", iteration_},
          {"appended", next_seq_ - 1}, {"dropped", dropped_}, {"ops", std::move(ops)}};
}

absl::Status LineageLog::WriteJson(const std::string& path) const {
  const std::string text = ToJson().dump(1);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  out << text << "\n";
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("error writing ", path));
  return absl::OkStatus();
}

}  // namespace pooch
