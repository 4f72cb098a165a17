// fake_nccl.cc: libnccl.so.2 for nccl_probe (interpose_nccl), a one-rank NCCL that reaches the
// device as the real one does: through its own handle on the driver (dlopen of libcuda.so.1 and
// dlsym on that handle), so that pooch's hooks never see its copies (Note [Collectives as
// accesses] in interpose/hooks/nccl/nccl_ranges.h). Its collectives are stream-ordered device
// copies (on one rank every collective leaves the send buffer's values in the receive buffer);
// a send and a receive to itself pair up in ncclGroupEnd, when a group's work is issued, as in
// NCCL. Only what nccl_probe calls is here: ncclCommInitAll(1 device), ncclCommDestroy,
// ncclCommCount, ncclCommUserRank, ncclAllReduce, ncclBroadcast, ncclAllGather, ncclSend,
// ncclRecv, ncclGroupStart, ncclGroupEnd. The ABI is pooch's declaration of NCCL's
// (interpose/symbols/nccl_api.h).
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <vector>

#include "interpose/symbols/nccl_api.h"

struct ncclComm {
  int device = 0;
};

namespace {

using CopyFn = CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream);

// The driver's own cuMemcpyDtoDAsync_v2, never an interposer's.
CopyFn DriverCopy() {
  static CopyFn copy = [] {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return driver == nullptr ? nullptr
                             : reinterpret_cast<CopyFn>(dlsym(driver, "cuMemcpyDtoDAsync_v2"));
  }();
  return copy;
}

size_t TypeBytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

struct Copy {
  const void* src;  // null for a receive waiting for its send
  void* dst;        // null for a send waiting for its receive
  size_t bytes;
  cudaStream_t stream;
};

// This thread's group (NCCL's groups are per thread).
thread_local int g_depth = 0;
thread_local std::vector<Copy> g_pending;

ncclResult_t Issue(const Copy& c) {
  if (c.src == c.dst || c.bytes == 0) return ncclSuccess;
  const CopyFn copy = DriverCopy();
  if (copy == nullptr) return ncclSystemError;
  const CUresult r =
      copy(reinterpret_cast<CUdeviceptr>(c.dst), reinterpret_cast<CUdeviceptr>(c.src), c.bytes,
           reinterpret_cast<CUstream>(c.stream));
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "fake_nccl: copy of %zu bytes failed: %d\n", c.bytes, static_cast<int>(r));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

ncclResult_t Enqueue(const Copy& c) {
  if (g_depth > 0) {
    g_pending.push_back(c);
    return ncclSuccess;
  }
  if (c.src == nullptr || c.dst == nullptr) return ncclInvalidUsage;  // a lone send to itself
  return Issue(c);
}

// Pairs the group's sends with its receives in order, issues everything.
ncclResult_t IssueGroup() {
  std::vector<Copy> sends, recvs, rest;
  for (const Copy& c : g_pending) {
    (c.dst == nullptr ? sends : c.src == nullptr ? recvs : rest).push_back(c);
  }
  g_pending.clear();
  if (sends.size() != recvs.size()) return ncclInvalidUsage;
  for (size_t i = 0; i < sends.size(); ++i) {
    if (sends[i].bytes != recvs[i].bytes) return ncclInvalidUsage;
    rest.push_back({sends[i].src, recvs[i].dst, sends[i].bytes, recvs[i].stream});
  }
  for (const Copy& c : rest) {
    if (const ncclResult_t r = Issue(c); r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

}  // namespace

extern "C" {

ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  if (comm == nullptr || ndev != 1) return ncclInvalidArgument;
  *comm = new ncclComm{devlist != nullptr ? devlist[0] : 0};
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = 1;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = 0;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t, ncclComm_t, cudaStream_t stream) {
  return Enqueue({sendbuff, recvbuff, count * TypeBytes(datatype), stream});
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int, ncclComm_t, cudaStream_t stream) {
  return Enqueue({sendbuff, recvbuff, count * TypeBytes(datatype), stream});
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t, cudaStream_t stream) {
  return Enqueue({sendbuff, recvbuff, sendcount * TypeBytes(datatype), stream});
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t, cudaStream_t stream) {
  if (peer != 0) return ncclInvalidArgument;
  return Enqueue({sendbuff, nullptr, count * TypeBytes(datatype), stream});
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t,
                      cudaStream_t stream) {
  if (peer != 0) return ncclInvalidArgument;
  return Enqueue({nullptr, recvbuff, count * TypeBytes(datatype), stream});
}

ncclResult_t ncclGroupStart() {
  ++g_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (g_depth == 0) return ncclInvalidUsage;
  return --g_depth > 0 ? ncclSuccess : IssueGroup();
}

}  // extern "C"
