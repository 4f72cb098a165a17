// FakeDevice: an in-process Device over host memory, strict enough to catch a misordering
// residency manager.
//
// It behaves like the CUDA VMM API: addresses are reserved (they are plain numbers, not host
// pointers, so nothing can touch them by accident), physical chunks are host buffers, Map binds a
// chunk to a reserved range and every access goes through the mapping table. Streams are FIFO
// queues of commands (copies, event records, event waits, "kernels" that the test launches), run
// immediately, on demand, or by a worker thread that picks among the runnable streams at random,
// so that a missing StreamWaitEvent shows up as wrong data or a violation.
//
// Misuse is recorded as a violation (violations()) and, where the call itself is wrong, returned
// as an error. Violations caught:
//   - access (copy or kernel) to memory that is not mapped, or that was remapped to another
//     physical chunk between the time the command was queued and the time it ran;
//   - Unmap of a range that a queued, not yet executed command still uses (PyTorch #196258);
//   - ReleasePhysical of a chunk that is still mapped or that a queued command still uses;
//   - Map over a range that is already mapped, or outside any reservation;
//   - FreeHost of a buffer that a queued copy still uses; a copy from or to non-pinned memory;
//   - FreeAddress of a range that still has mappings.
//
// Time: a virtual clock, serial like the device's one worker: each copy advances it by its bytes
// at Options::copy_bytes_per_us, and a timing event (CreateTimingEvent) records the clock when
// its record executes, so ElapsedMicroseconds around one copy in kImmediate mode is exactly the
// copy's modelled duration (with other streams' copies in between in the other modes).
//
// Thread safety: every method may be called from any thread. Kernel functions run with the
// device's lock held and must touch memory only through the Memory they are given.
#ifndef POOCH_CORE_TESTING_FAKE_DEVICE_H_
#define POOCH_CORE_TESTING_FAKE_DEVICE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "core/device/device.h"

namespace pooch {

class FakeDevice final : public Device {
 public:
  enum class Mode {
    kImmediate,  // queued work runs in the calling thread as soon as it can
    kManual,     // nothing runs until RunPending(), or a synchronisation that needs it; then
                 // only what the synchronisation depends on runs (the strictest mode: work that
                 // nothing waited for stays queued)
    kWorker,     // a worker thread runs queued work, streams in random order
  };
  struct Options {
    int64_t granularity = int64_t{64} << 10;
    int64_t capacity = int64_t{1} << 30;                          // physical bytes
    int64_t host_capacity = std::numeric_limits<int64_t>::max();  // pinned host bytes
    Mode mode = Mode::kImmediate;
    uint64_t seed = 1;                                    // worker's choice among runnable streams
    absl::Duration command_delay = absl::ZeroDuration();  // worker sleeps this per command
    double copy_bytes_per_us = 16000;  // the virtual clock's copy rate: 16 GB/s, PCIe gen3
  };

  struct Range {
    DeviceAddress address = 0;
    int64_t bytes = 0;
  };

  // What a kernel sees: device memory through the mapping table.
  class Memory {
   public:
    virtual ~Memory() = default;
    virtual absl::Status Read(DeviceAddress address, void* out, int64_t bytes) = 0;
    virtual absl::Status Write(DeviceAddress address, const void* data, int64_t bytes) = 0;
  };
  using Kernel = std::function<void(Memory&)>;

  explicit FakeDevice(Options options);
  FakeDevice() : FakeDevice(Options{}) {}
  ~FakeDevice() override;

  // Device.
  int64_t Granularity() const override { return options_.granularity; }
  absl::StatusOr<DeviceMemoryInfo> MemoryInfo() override;
  absl::StatusOr<DeviceAddress> ReserveAddress(int64_t bytes) override;
  absl::Status FreeAddress(DeviceAddress address, int64_t bytes) override;
  absl::StatusOr<PhysicalHandle> CreatePhysical(int64_t bytes) override;
  absl::Status ReleasePhysical(PhysicalHandle handle) override;
  absl::Status Map(DeviceAddress address, int64_t bytes, PhysicalHandle handle) override;
  absl::Status Unmap(DeviceAddress address, int64_t bytes) override;
  absl::StatusOr<void*> AllocHost(int64_t bytes) override;
  absl::Status FreeHost(void* host) override;
  absl::StatusOr<StreamHandle> CreateStream() override;
  absl::Status DestroyStream(StreamHandle stream) override;
  absl::Status CopyToHostAsync(void* host, DeviceAddress device, int64_t bytes,
                               StreamHandle stream) override;
  absl::Status CopyToDeviceAsync(DeviceAddress device, const void* host, int64_t bytes,
                                 StreamHandle stream) override;
  absl::StatusOr<EventHandle> CreateEvent() override;
  absl::Status DestroyEvent(EventHandle event) override;
  absl::Status RecordEvent(EventHandle event, StreamHandle stream) override;
  absl::StatusOr<bool> QueryEvent(EventHandle event) override;
  absl::Status SynchronizeEvent(EventHandle event) override;
  absl::Status StreamWaitEvent(StreamHandle stream, EventHandle event) override;
  absl::StatusOr<EventHandle> CreateTimingEvent() override;
  absl::StatusOr<double> ElapsedMicroseconds(EventHandle start, EventHandle end) override;

  // Test side. Launch queues `kernel` on `stream`; `ranges` are what it may touch (checked when
  // it is queued against later Unmap/Release, and when it runs against the mapping table).
  absl::Status Launch(StreamHandle stream, std::vector<Range> ranges, Kernel kernel);
  // Synchronous host access, like cudaMemcpy on an idle device: checks the mapping now.
  absl::Status Write(DeviceAddress address, const void* data, int64_t bytes);
  absl::Status Read(DeviceAddress address, void* out, int64_t bytes);
  // Runs everything that can run (kManual); waits for it (kWorker).
  void RunPending();
  absl::Status SynchronizeStream(StreamHandle stream);

  // Failure injection: the next CreatePhysical / AllocHost after `successes` more successful
  // ones fails with ResourceExhausted (once). Negative: never.
  void FailCreatePhysicalAfter(int successes);
  void FailAllocHostAfter(int successes);
  // The same for QueryEvent, failing with Internal (a driver error while polling).
  void FailQueryEventAfter(int successes);

  // Observations.
  std::vector<std::string> violations() const;
  int64_t physical_bytes() const;
  int64_t host_bytes() const;
  int64_t mapped_bytes() const;
  int64_t create_physical_calls() const;
  int64_t queued_commands() const;

 private:
  struct Physical {
    std::vector<uint8_t> data;
    int queued_uses = 0;  // queued commands that captured this chunk
  };
  struct Mapping {
    int64_t bytes = 0;
    PhysicalHandle handle = 0;
  };
  // Every RecordEvent gets a device-wide record id. An event is complete when its latest record
  // has executed; a StreamWaitEvent waits for the record that was latest when it was called,
  // even if the event is recorded again on another stream meanwhile (as in CUDA).
  struct Event {
    uint64_t latest = 0;         // record id of the most recent RecordEvent; 0 = never recorded
    bool timing = false;         // from CreateTimingEvent
    double completed_at_us = 0;  // the virtual clock when `latest` executed (timing events)
  };
  enum class Kind { kCopyToHost, kCopyToDevice, kRecord, kWait, kKernel };
  struct Command {
    Kind kind = Kind::kKernel;
    std::vector<Range> ranges;             // device ranges it touches
    std::vector<PhysicalHandle> captured;  // chunk behind each range when queued (0: none)
    void* host = nullptr;
    int64_t bytes = 0;
    EventHandle event = 0;
    uint64_t generation = 0;  // kRecord: its record id; kWait: the record it waits for
    Kernel kernel;
  };
  struct Stream {
    std::deque<Command> queue;
  };
  class MemoryImpl;

  // Translates a device range into host memory; nullptr (and a violation) when not mapped by a
  // single mapping. `expected`, when non-zero, is the chunk the command captured.
  uint8_t* TranslateLocked(DeviceAddress address, int64_t bytes, absl::string_view what,
                           PhysicalHandle expected = 0) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PhysicalHandle ChunkAtLocked(DeviceAddress address) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HostPinnedLocked(const void* host, int64_t bytes) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status EnqueueLocked(StreamHandle stream, Command command)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool RunnableLocked(const Command& command) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool RecordDoneLocked(uint64_t record) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return record == 0 || !pending_records_.contains(record);
  }
  void ExecuteLocked(Command& command) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs one runnable command; false when none can run.
  bool StepLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DrainLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // kManual: runs just the work that `stream` (or the record of `event` up to `generation`)
  // depends on. False when it cannot complete (a wait that no queued record satisfies).
  bool RunStreamLocked(StreamHandle stream, const std::function<bool()>& done, int depth)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool RunUntilRecordedLocked(uint64_t record, int depth) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Blocks until `done` holds; runs work itself unless a worker runs it.
  // `stream`/`event`: in kManual, what to run to get there (event 0: run `stream` to empty).
  absl::Status WaitLocked(const std::function<bool()>& done, absl::string_view what,
                          StreamHandle stream, EventHandle event, uint64_t generation)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ViolationLocked(std::string what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLoop();

  // Constant after construction.
  const Options options_;

  mutable Mutex mu_;
  CondVar changed_;  // a command ran, or work was queued
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_handle_ ABSL_GUARDED_BY(mu_) = 1;
  DeviceAddress next_address_ ABSL_GUARDED_BY(mu_) = 0x100000000000;
  std::map<DeviceAddress, int64_t> reservations_ ABSL_GUARDED_BY(mu_);
  std::map<DeviceAddress, Mapping> mappings_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<PhysicalHandle, Physical> physical_ ABSL_GUARDED_BY(mu_);
  std::map<const uint8_t*, int64_t> host_ ABSL_GUARDED_BY(mu_);  // pinned buffers
  absl::flat_hash_map<const uint8_t*, int> host_queued_uses_ ABSL_GUARDED_BY(mu_);
  std::map<StreamHandle, Stream> streams_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<EventHandle, Event> events_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> pending_records_ ABSL_GUARDED_BY(mu_);
  uint64_t next_record_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t physical_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t host_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t create_calls_ ABSL_GUARDED_BY(mu_) = 0;
  double clock_us_ ABSL_GUARDED_BY(mu_) = 0;  // virtual time (see "Time" above)
  int fail_create_after_ ABSL_GUARDED_BY(mu_) = -1;
  int fail_host_after_ ABSL_GUARDED_BY(mu_) = -1;
  int fail_query_after_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<std::string> violations_ ABSL_GUARDED_BY(mu_);
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  std::thread worker_;
};

}  // namespace pooch

#endif  // POOCH_CORE_TESTING_FAKE_DEVICE_H_
