#include "core/residency/parts/residency_events.h"

#include <utility>

namespace pooch {

EventPool::EventPool(Device& device) : device_(device), free_(std::make_shared<FreeList>()) {}

EventPool::~EventPool() {
  std::vector<EventHandle> handles;
  {
    MutexLock lock(&free_->mu);
    free_->closed = true;
    handles.swap(free_->handles);
  }
  for (EventHandle h : handles) device_.DestroyEvent(h).IgnoreError();
}

absl::StatusOr<EventRef> EventPool::Record(StreamHandle stream) {
  EventHandle handle = 0;
  bool have = false;
  {
    MutexLock lock(&free_->mu);
    if (!free_->handles.empty()) {
      handle = free_->handles.back();
      free_->handles.pop_back();
      have = true;
    }
  }
  if (!have) {
    absl::StatusOr<EventHandle> created = device_.CreateEvent();
    if (!created.ok()) return created.status();
    handle = *created;
  }
  if (absl::Status s = device_.RecordEvent(handle, stream); !s.ok()) {
    MutexLock lock(&free_->mu);
    free_->handles.push_back(handle);
    return s;
  }
  // The deleter recycles the handle; after the pool is gone it destroys it instead.
  std::shared_ptr<FreeList> free = free_;
  Device* device = &device_;
  const uint64_t sequence = recorded_.fetch_add(1, std::memory_order_relaxed);
  return EventRef(new RecordedEvent(handle, stream, sequence), [free, device](RecordedEvent* e) {
    const EventHandle h = e->handle();
    delete e;
    MutexLock lock(&free->mu);
    if (free->closed) {
      device->DestroyEvent(h).IgnoreError();
    } else {
      free->handles.push_back(h);
    }
  });
}

absl::StatusOr<bool> EventPool::Done(const EventRef& event) {
  if (event == nullptr || event->known_complete()) return true;
  absl::StatusOr<bool> done = device_.QueryEvent(event->handle());
  if (!done.ok()) return done.status();
  if (*done) event->set_complete();
  return *done;
}

absl::Status EventPool::Wait(const EventRef& event) {
  if (event == nullptr || event->known_complete()) return absl::OkStatus();
  absl::Status s = device_.SynchronizeEvent(event->handle());
  if (s.ok()) event->set_complete();
  return s;
}

}  // namespace pooch
