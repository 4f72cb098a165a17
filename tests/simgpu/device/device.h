// device.h: the simulated GPU: memory and VMM, streams, events, virtual time, hazards.
//
// One Device per process (Device::Get()), living in libsimgpu_device.so so that libcuda.so.1,
// libcudnn.so.9 and libcublas.so.13 share it. libcuda.so.1 is its main client; the API
// libraries translate Err into their own codes. Design notes:
//
//   Memory. At first use the device reserves a large PROT_NONE range (max(1 TiB, 4 x capacity),
//   MAP_NORESERVE). Device addresses are host addresses inside it. MemAlloc cuts page-aligned
//   blocks from slabs, runs of the range mapped read-write (MAP_FIXED|MAP_NORESERVE) once for
//   many blocks (Note [Malloc slabs] in device_memory.cc); freeing drops a block's pages and a
//   slab goes back to PROT_NONE when its last block goes. A stream-ordered free keeps the block
//   in the pool until the free is known to have happened (Note [Stream-ordered reuse]). VMM
//   physical handles are ranges of one memfd (MAP_SHARED), mapped with MAP_FIXED by Map and
//   returned to PROT_NONE by Unmap; a handle's pages are punched out when it is both released
//   and unmapped. Capacity counts physical bytes: MemAlloc sizes rounded up to 512 bytes, VMM
//   handles at their size (2 MiB granules). Pinned host memory is anonymous NORESERVE memory
//   remembered so copies know their direction. What is mapped where, for ops, is mapped_, exact
//   to the byte: a touch outside a live block is an illegal address whatever the kernel maps.
//
//   Time. See timeline.h. Kernel ops (Launch) and memsets and device-to-device copies run on
//   the compute engine, for max(flops / (tflops * efficiency), bytes / memory bandwidth) plus
//   the launch latency (device-to-device copies move 2 x bytes: read and write). Copies between
//   host and device run on the copy engine of their direction for bytes / link bandwidth plus
//   the latency. A copy to or from pageable host memory, and every synchronous call, makes the
//   host wait until the op ends. Queries advance the host clock by kPollNs when not ready, so
//   that polling loops terminate. Each public method is one API call: it charges the calling
//   thread's host clock the call's cost (config/host_costs.h) before it acts, so what it enqueues
//   starts no earlier than the call's end (Note [Host clocks] in time/host_clocks.h).
//
//   Errors. An op touching memory that is not mapped, not accessible or freed sets the sticky
//   kIllegalAddress; a race (hazards.h) under SIMGPU_HAZARDS=error sets the sticky kHazard.
//   Every later op returns the sticky error, as a GPU does after a fault.
//
// Thread safety: all public methods may be called from any thread; state is guarded by mu_.
// Op bodies (the CPU work of copies, memsets and launches) run after mu_ is released, on the
// calling thread, before the call returns.
#ifndef SIMGPU_DEVICE_DEVICE_H_
#define SIMGPU_DEVICE_DEVICE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "tests/simgpu/device/config/config.h"
#include "tests/simgpu/device/memory/interval_map.h"
#include "tests/simgpu/device/memory/range_allocator.h"
#include "tests/simgpu/device/simgpu.h"
#include "tests/simgpu/device/time/hazards.h"
#include "tests/simgpu/device/time/timeline.h"
#include "tests/simgpu/device/time/trace.h"

namespace simgpu {

enum class CopyDir { kHostToDevice, kDeviceToHost, kDeviceToDevice, kHostToHost, kDefault };
enum class PtrKind { kUnregistered, kDevice, kPinnedHost };

struct PtrInfo {
  PtrKind kind = PtrKind::kUnregistered;
  uint64_t base = 0;  // start of the allocation or mapping containing the pointer
  uint64_t bytes = 0;
};

class Device {
 public:
  static constexpr uint64_t kGranularity = uint64_t{2} << 20;  // VMM granule, 2 MiB
  static constexpr double kPollNs = 1000;                      // host time a not-ready query costs

  // The process's device (config checked first: an invalid variable exits 2).
  static Device& Get();

  explicit Device(const Config& config);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const Config& config() const { return config_; }

  // SIMGPU_FAIL: true when this call of `api` (a base name such as "cudaMalloc") must fail.
  bool FailNow(const char* api);
  // The sticky error, or kOk.
  Err Sticky();

  // --- Memory (cudaMalloc / cuMemAlloc). ---
  // Never takes a block whose stream-ordered free has not yet happened in host time.
  Err MemAlloc(uint64_t bytes, void** out);
  // Host-synchronous, as cudaFree is: waits for all device work, then frees.
  Err MemFree(void* ptr);
  // Reuses a pending free only when `stream` is ordered after it; with no memory left, makes
  // `stream` wait for the earliest such free (Note [Stream-ordered reuse]).
  Err MemAllocAsync(uint64_t bytes, void* stream, void** out);
  // Stream-ordered: the memory is released when `stream` reaches this point.
  Err MemFreeAsync(void* ptr, void* stream);
  // Memory held by frees that have not happened in host time counts as used.
  void MemInfo(uint64_t* free_bytes, uint64_t* total_bytes);

  // --- Pinned host memory. ---
  Err HostAlloc(uint64_t bytes, void** out);
  Err HostFree(void* ptr);

  // --- Virtual memory management (cuMem*). Sizes and offsets in multiples of kGranularity. ---
  Err PhysCreate(uint64_t bytes, uint64_t* handle);
  Err PhysRelease(uint64_t handle);
  // `alignment` 0 means kGranularity; `hint` 0 means anywhere.
  Err AddressReserve(uint64_t bytes, uint64_t alignment, uint64_t hint, void** out);
  Err AddressFree(void* ptr, uint64_t bytes);
  Err Map(void* ptr, uint64_t bytes, uint64_t offset, uint64_t handle);
  // Checks for unfinished uses (a race), then returns the range to PROT_NONE.
  Err Unmap(void* ptr, uint64_t bytes);
  Err SetAccess(void* ptr, uint64_t bytes, bool read, bool write);

  // --- Ops. `op` names the API in messages and must outlive the process (a literal). ---
  Err Memcpy(const char* op, void* dst, const void* src, uint64_t bytes, CopyDir dir, void* stream,
             bool sync);
  Err Memset(const char* op, void* dst, uint8_t value, uint64_t bytes, void* stream, bool sync);
  Err Launch(const char* op, void* stream, const Access* accesses, size_t n, double flops,
             double bytes, const std::function<void()>& body);
  // An opaque kernel (device code simgpu cannot run), given the 8-byte words of its parameter
  // buffer, each with the index of the parameter it lies in: a word that points into live device
  // memory makes the kernel read and write that whole allocation, each allocation counted once in
  // the roofline's bytes; a word of a parameter made only of device addresses that points at
  // freed or unmapped memory is an illegal address (Note [Kernel ops] in device_kernel.cc). The
  // kernel itself never runs; in math mode `twin`, the CPU function the program brings in its
  // place (Note [CPU twins] in driver/libcuda/cuda_twins.h), runs once the op is issued, as a
  // Launch body does; in timing mode it does not.
  struct KernelWord {
    static constexpr uint32_t kNoParam = ~uint32_t{0};  // spans parameters, or layout unknown
    uint64_t value;
    uint32_t param;
  };
  Err LaunchKernel(const char* op, void* stream, const KernelWord* words, size_t n,
                   const std::function<void()>& twin = {});

  // --- Streams and events. Handles are opaque pointers; nullptr/0x1 = legacy, 0x2 = per-thread.
  Err StreamCreate(bool non_blocking, void** out);
  Err StreamDestroy(void* stream);
  Err StreamSynchronize(void* stream);
  Err StreamQuery(void* stream);
  Err StreamWaitEvent(void* stream, void* event);
  Err EventCreate(bool timing, void** out);
  Err EventDestroy(void* event);
  Err EventRecord(void* event, void* stream);
  Err EventSynchronize(void* event);
  Err EventQuery(void* event);
  // kInvalidHandle if an event was never recorded or has timing disabled; kNotReady if one has
  // not completed by the host's virtual time.
  Err EventElapsed(void* start, void* end, float* ms);
  Err Synchronize();

  // --- Introspection. ---
  PtrInfo Classify(const void* ptr);
  double HostTimeNs();
  // When all work issued so far on `stream` ends, or nullopt for an unknown stream.
  std::optional<double> StreamTimeNs(void* stream);

 private:
  struct Alloc {
    uint64_t bytes;       // requested
    uint64_t va_bytes;    // its block in a slab: bytes rounded up to pages
    uint64_t phys_bytes;  // counted against capacity
  };
  // A block freed by MemFreeAsync whose free the host has not seen happen: still in the pool
  // (Note [Stream-ordered reuse]).
  struct PendingFree {
    uint64_t va_bytes;
    uint64_t phys_bytes;  // capacity it still holds (0 once given to an allocation)
    uint64_t stream;      // the freeing stream's id
    double free_ns;       // when that stream reaches the free
  };
  // A run of the reserved range mapped read-write once, from which MemAlloc blocks are cut
  // (Note [Malloc slabs]).
  struct Slab {
    uint64_t bytes;
    uint64_t blocks;       // live and pending blocks in it; unmapped at 0
    RangeAllocator space;  // offsets from the slab's base
  };
  struct Phys {
    uint64_t bytes;
    uint64_t file_offset;
    bool released = false;
    int maps = 0;
  };
  struct Mapping {
    enum class Kind { kMalloc, kVmm } kind;
    uint64_t owner;  // allocation base or physical handle
    bool read;
    bool write;
  };
  struct Event {
    bool timing;
    bool recorded = false;
    double time_ns = 0;
  };
  // Holds mu_ for one API call and charges the calling thread the call's host cost: the one
  // place where simgpu's API calls spend host time (Note [Host clocks]).
  class CallLock {
   public:
    CallLock(Device& d, HostCall call, uint64_t pinned_bytes = 0) : lock_(d.mu_) {
      d.ChargeLocked(call, pinned_bytes);
    }

   private:
    std::lock_guard<std::mutex> lock_;
  };

  // LaunchKernel's op, checked, timed and recorded, under mu_.
  Err IssueKernel(const char* op, void* stream, const KernelWord* words, size_t n);

  // REQUIRES: mu_ held.
  // Advances the calling thread's clock by the cost of `call` (and of `pinned_bytes` of pinned
  // host memory).
  void ChargeLocked(HostCall call, uint64_t pinned_bytes);
  // MemFree's and MemFreeAsync's work once the host has waited as the call requires.
  Err FreeLocked(void* ptr, void* stream);
  Err EnsureReservedLocked();
  bool InDeviceRange(uint64_t addr, uint64_t bytes) const;
  StreamClock* ResolveStreamLocked(void* stream);
  Event* ResolveEventLocked(void* event);
  PtrInfo ClassifyLocked(uint64_t addr) const;
  // Whether addr is memory the program had and lost: a freed cudaMalloc block not handed out
  // again, or a VMM reservation's unmapped bytes (Note [Kernel ops]).
  bool DanglingLocked(uint64_t addr) const;
  // Checks that [addr, addr+bytes) is device memory that allows the access, or pinned host
  // memory. On failure sets the sticky kIllegalAddress and prints one line.
  Err CheckAccessLocked(const char* op, uint64_t addr, uint64_t bytes, bool write);
  // Applies SIMGPU_HAZARDS to a race: prints, and under "error" sets the sticky kHazard.
  Err ReportRaceLocked(const char* op, const char* what, uint64_t stream, double t_ns,
                       const Race& race);
  // Accesses checked, hazards checked, time advanced, uses recorded; the caller runs the body.
  Err IssueLocked(const char* op, StreamClock* s, const Access* accesses, size_t n, Engine engine,
                  double duration_ns, bool host_waits);
  // The host blocks until `t_ns` in the call `why` (traced under SIMGPU_TRACE).
  void HostWaitLocked(const char* why, double t_ns);
  double ComputeNs(double flops, double bytes) const;
  double LinkNs(Engine engine, double bytes) const;
  void DropPhysLocked(uint64_t handle);
  // MemAlloc (s == nullptr) and MemAllocAsync on `s`.
  Err AllocLocked(uint64_t bytes, StreamClock* s, void** out);
  // Gives the capacity and blocks of frees that happened by the host's time back to the device.
  void RetireFreesLocked();
  // True when `s` may take the pending block `f`: it is the freeing stream, or it is ordered
  // after the free (an event wait, the legacy stream, the host's synchronisation).
  bool ReusableLocked(const PendingFree& f, const StreamClock& s) const;
  // The base of the smallest pending block `s` may take that holds `va_bytes` at `align`.
  std::optional<uint64_t> FindReusableLocked(const StreamClock& s, uint64_t va_bytes,
                                             uint64_t align) const;
  // Frees `need` bytes of capacity from pending blocks `s` may take, first without waiting,
  // else by making `s` wait for the earliest other frees. False (nothing changed) if the pool
  // does not hold that much.
  bool MakeRoomLocked(StreamClock& s, uint64_t need);
  void AddPendingLocked(uint64_t base, const PendingFree& f);
  PendingFree TakePendingLocked(uint64_t base);
  // A block of `va_bytes` aligned to `align` from a slab (a new one if none has room).
  std::optional<uint64_t> CarveLocked(uint64_t va_bytes, uint64_t align);
  // Returns a block to its slab; an empty slab goes back to PROT_NONE.
  void ReturnBlockLocked(uint64_t base, uint64_t va_bytes);
  Slab& SlabOfLocked(uint64_t addr);

  // Constant after construction.
  const Config config_;

  std::mutex mu_;
  // State below is protected by mu_.
  Err sticky_ = Err::kOk;
  uint64_t fail_seen_ = 0;
  uint64_t va_base_ = 0;
  uint64_t va_bytes_ = 0;
  std::unique_ptr<RangeAllocator> va_;    // offsets in [0, va_bytes_)
  std::unique_ptr<RangeAllocator> phys_;  // offsets in the memfd
  int memfd_ = -1;
  uint64_t used_bytes_ = 0;
  std::map<uint64_t, Alloc> allocs_;       // by base address
  std::map<uint64_t, uint64_t> reserved_;  // VMM reservations: base -> bytes
  std::map<uint64_t, Phys> phys_handles_;  // by handle
  // MemAlloc's slabs by base address (Note [Malloc slabs]).
  std::map<uint64_t, Slab> slabs_;
  // The pool's pending frees by base address, and by time and size (Note [Stream-ordered reuse]).
  std::map<uint64_t, PendingFree> pending_;
  std::set<std::pair<double, uint64_t>> pending_by_time_;    // (free_ns, base)
  std::set<std::pair<uint64_t, uint64_t>> pending_by_size_;  // (va_bytes, base)
  uint64_t next_handle_ = 1;
  std::map<uint64_t, uint64_t> pinned_;  // pinned host allocations: base -> bytes
  IntervalMap<Mapping> mapped_;          // device bytes that are backed
  // cudaMalloc blocks freed and not handed out again since (Note [Kernel ops]): a kernel word
  // pointing there is a dangling pointer, not a number that happens to fall in the range.
  IntervalMap<bool> freed_;
  HazardTracker hazards_;
  Timeline timeline_;
  TimelineTrace trace_;
  StreamClock legacy_;
  StreamClock per_thread_;
  std::map<void*, std::unique_ptr<StreamClock>> streams_;
  uint64_t next_stream_id_ = 2;
  std::map<void*, std::unique_ptr<Event>> events_;
};

}  // namespace simgpu

#endif  // SIMGPU_DEVICE_DEVICE_H_
