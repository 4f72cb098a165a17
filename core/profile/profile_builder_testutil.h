// Test helpers for profile_builder_test.cc and execution_schedule_test.cc: a recorder that writes
// a RecordedIteration the way the interposer would, and a synthetic conv net training iteration
// (forward, backward, SGD update) recorded with it. Header-only so that it stays out of
// pooch_core.
//
// Thread safety: plain values; no internal synchronisation.
#ifndef POOCH_CORE_PROFILE_PROFILE_BUILDER_TESTUTIL_H_
#define POOCH_CORE_PROFILE_PROFILE_BUILDER_TESTUTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/profile/profile_builder.h"

namespace pooch::testing {

class Recorder {
 public:
  uint64_t Persistent(int64_t bytes) {
    const uint64_t id = next_++;
    it_.persistent.push_back({id, bytes});
    return id;
  }
  uint64_t Alloc(int64_t bytes) {
    const uint64_t id = next_++;
    RecordedIteration::Event e;
    e.kind = RecordedIteration::Event::kAlloc;
    e.allocation = id;
    e.bytes = bytes;
    it_.events.push_back(e);
    return id;
  }
  void Free(uint64_t id) {
    RecordedIteration::Event e;
    e.kind = RecordedIteration::Event::kFree;
    e.allocation = id;
    it_.events.push_back(e);
  }
  // Returns the op's index.
  int Op(std::string name, double us, std::vector<uint64_t> reads, std::vector<uint64_t> writes,
         std::vector<uint64_t> read_writes = {}, bool replay_capable = true) {
    RecordedOp op;
    op.name = std::move(name);
    op.duration_us = us;
    op.replay_capable = replay_capable;
    for (uint64_t a : reads) op.accesses.push_back({a, RecordedAccess::kRead});
    for (uint64_t a : writes) op.accesses.push_back({a, RecordedAccess::kWrite});
    for (uint64_t a : read_writes) op.accesses.push_back({a, RecordedAccess::kReadWrite});
    const int index = static_cast<int>(it_.ops.size());
    it_.ops.push_back(std::move(op));
    RecordedIteration::Event e;
    e.kind = RecordedIteration::Event::kOp;
    e.op_index = index;
    it_.events.push_back(e);
    return index;
  }
  RecordedIteration& iteration() { return it_; }

 private:
  RecordedIteration it_;
  uint64_t next_ = 1;
};

// The allocations and op indices of ConvNet(), for tests to name what they check.
struct ConvNetIds {
  uint64_t x = 0;                     // the input batch (allocated and copied in)
  std::vector<uint64_t> w, dw, y, a;  // per layer: weight, its gradient, conv out, relu out
  uint64_t wfc = 0, dwfc = 0, labels = 0;
  uint64_t logits = 0, prob = 0, dlogits = 0;
  std::vector<uint64_t> da;  // per layer: gradient of a[i]
  std::vector<uint64_t> dy;  // per layer: gradient of y[i]
  uint64_t scratch = 0;      // allocated and freed in forward, never touched
  int copy_op = -1, softmax_op = -1, turn_op = -1, first_update_op = -1;
  std::vector<int> conv_op, relu_op, relu_back_op, filter_op;  // filter_op: BackwardFilter
};

// `layers` x (conv -> relu), a fully connected layer, softmax; backward; one cublasSaxpy SGD
// update per parameter (in place). Feature maps are freed as soon as backward no longer needs
// them, as cnn_train does. The logits are freed in forward (softmax backward needs only its
// output). A 512 KiB scratch buffer is allocated and freed in forward without any op touching it.
inline RecordedIteration ConvNet(int layers, int64_t map_bytes, ConvNetIds* ids,
                                 int64_t other_bytes = 0) {
  Recorder r;
  ConvNetIds& k = *ids;
  const int64_t w_bytes = 64 << 10;
  for (int i = 0; i < layers; ++i) {
    k.w.push_back(r.Persistent(w_bytes));
    k.dw.push_back(r.Persistent(w_bytes));
  }
  k.wfc = r.Persistent(w_bytes);
  k.dwfc = r.Persistent(w_bytes);
  k.labels = r.Persistent(4096);
  r.iteration().resident_other_bytes = other_bytes;

  k.x = r.Alloc(map_bytes);
  k.copy_op = r.Op("cudaMemcpyAsync", 60, {}, {k.x}, {}, /*replay_capable=*/false);
  uint64_t in = k.x;
  for (int i = 0; i < layers; ++i) {
    k.y.push_back(r.Alloc(map_bytes));
    k.conv_op.push_back(r.Op("cudnnConvolutionForward", 200, {in, k.w[i]}, {k.y[i]}));
    k.a.push_back(r.Alloc(map_bytes));
    k.relu_op.push_back(r.Op("cudnnActivationForward", 20, {k.y[i]}, {k.a[i]}));
    if (i == 0) {
      k.scratch = r.Alloc(512 << 10);
      r.Free(k.scratch);
    }
    in = k.a[i];
  }
  k.logits = r.Alloc(4096);
  r.Op("cublasSgemm_v2", 30, {in, k.wfc}, {k.logits});
  k.prob = r.Alloc(4096);
  k.softmax_op = r.Op("cudnnSoftmaxForward", 5, {k.logits}, {k.prob});
  r.Free(k.logits);

  k.dlogits = r.Alloc(4096);
  k.turn_op = r.Op("cudnnSoftmaxBackward", 5, {k.prob, k.labels}, {k.dlogits});
  r.Free(k.prob);
  k.da.assign(layers, 0);
  k.dy.assign(layers, 0);
  k.relu_back_op.assign(layers, -1);
  k.filter_op.assign(layers, -1);
  k.da[layers - 1] = r.Alloc(map_bytes);
  r.Op("cublasSgemm_v2", 30, {k.dlogits, k.wfc}, {k.da[layers - 1]});
  r.Op("cublasSgemm_v2", 30, {k.dlogits, in}, {k.dwfc});
  r.Free(k.dlogits);
  for (int i = layers - 1; i >= 0; --i) {
    k.dy[i] = r.Alloc(map_bytes);
    k.relu_back_op[i] = r.Op("cudnnActivationBackward", 20, {k.a[i], k.da[i], k.y[i]}, {k.dy[i]});
    r.Free(k.a[i]);
    r.Free(k.da[i]);
    r.Free(k.y[i]);
    const uint64_t input = i == 0 ? k.x : k.a[i - 1];
    k.filter_op[i] = r.Op("cudnnConvolutionBackwardFilter", 250, {input, k.dy[i]}, {k.dw[i]});
    if (i > 0) {
      k.da[i - 1] = r.Alloc(map_bytes);
      r.Op("cudnnConvolutionBackwardData", 250, {k.dy[i], k.w[i]}, {k.da[i - 1]});
    } else {
      r.Free(k.x);
    }
    r.Free(k.dy[i]);
  }
  for (int i = 0; i < layers; ++i) {
    const int op = r.Op("cublasSaxpy_v2", 3, {k.dw[i]}, {}, {k.w[i]});
    if (i == 0) k.first_update_op = op;
  }
  r.Op("cublasSaxpy_v2", 3, {k.dwfc}, {}, {k.wfc});
  return r.iteration();
}

}  // namespace pooch::testing

#endif  // POOCH_CORE_PROFILE_PROFILE_BUILDER_TESTUTIL_H_
