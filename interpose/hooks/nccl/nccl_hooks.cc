// nccl_hooks.cc: the NCCL hooks under a residency policy (intercept.h): each collective and
// point-to-point call is an op on its stream over its buffers (Note [Collectives as accesses]
// in nccl_ranges.h); a group's calls are one more op at its ncclGroupEnd (Note [Collectives in a
// group] in nccl_group.h).
#include <optional>

#include "interpose/hooks/nccl/nccl_group.h"
#include "interpose/hooks/nccl/nccl_ranges.h"
#include "interpose/process/managed.h"
#include "interpose/process/opaque.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

uintptr_t StreamOf(cudaStream_t stream) { return reinterpret_cast<uintptr_t>(stream); }

// The communicator's size, nullopt when NCCL does not tell it.
std::optional<int> Ranks(ncclComm_t comm) {
  int count = 0;
  const auto get = real::ncclCommCount();
  if (get == nullptr || get(comm, &count) != ncclSuccess || count <= 0) return std::nullopt;
  return count;
}

// Runs a call over `ranges` on `stream` (known effects, no recipe: its result depends on the
// other ranks); inside a group, also keeps its ranges for the group's end.
template <typename Forward>
ncclResult_t RunCollective(cudaStream_t stream, const Ranges& ranges, Forward&& forward) {
  ThisThreadGroup().Add(StreamOf(stream), ranges);
  return RunOp<ncclResult_t>(StreamOf(stream), ranges, forward);
}

}  // namespace

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  Ranges r;
  AddNcclBuffers(r, sendbuff, count, recvbuff, count, datatype);
  return RunCollective(stream, r, [&] {
    return real::ncclAllReduce()(sendbuff, recvbuff, count, datatype, op, comm, stream);
  });
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  Ranges r;
  AddNcclBuffers(r, sendbuff, count, recvbuff, count, datatype);
  return RunCollective(stream, r, [&] {
    return real::ncclBroadcast()(sendbuff, recvbuff, count, datatype, root, comm, stream);
  });
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  Ranges r;
  AddNcclBuffers(r, buff, count, buff, count, datatype);  // in place
  return RunCollective(
      stream, r, [&] { return real::ncclBcast()(buff, count, datatype, root, comm, stream); });
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  Ranges r;
  AddNcclBuffers(r, sendbuff, count, recvbuff, count, datatype);
  return RunCollective(stream, r, [&] {
    return real::ncclReduce()(sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  });
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  Ranges r;
  AddNcclBuffers(r, sendbuff, sendcount, recvbuff, TimesRanks(sendcount, Ranks(comm)), datatype);
  return RunCollective(stream, r, [&] {
    return real::ncclAllGather()(sendbuff, recvbuff, sendcount, datatype, comm, stream);
  });
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  Ranges r;
  AddNcclBuffers(r, sendbuff, TimesRanks(recvcount, Ranks(comm)), recvbuff, recvcount, datatype);
  return RunCollective(stream, r, [&] {
    return real::ncclReduceScatter()(sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
  });
}

ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  Ranges r;
  const std::optional<size_t> all = TimesRanks(count, Ranks(comm));
  AddNcclBuffers(r, sendbuff, all, recvbuff, all, datatype);
  return RunCollective(stream, r, [&] {
    return real::ncclAlltoAll()(sendbuff, recvbuff, count, datatype, comm, stream);
  });
}

// Gather and Scatter: the root's gathered (or scattered) buffer is nranks x count; the other
// ranks do not use it, and pooch cannot tell them apart without asking for the rank, so it is
// counted on every rank (a buffer made resident that the call does not touch costs only room).
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  Ranges r;
  AddNcclBuffers(r, sendbuff, count, recvbuff, TimesRanks(count, Ranks(comm)), datatype);
  return RunCollective(stream, r, [&] {
    return real::ncclGather()(sendbuff, recvbuff, count, datatype, root, comm, stream);
  });
}

ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  Ranges r;
  AddNcclBuffers(r, sendbuff, TimesRanks(count, Ranks(comm)), recvbuff, count, datatype);
  return RunCollective(stream, r, [&] {
    return real::ncclScatter()(sendbuff, recvbuff, count, datatype, root, comm, stream);
  });
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  Ranges r;
  AddNcclBuffers(r, sendbuff, count, nullptr, std::nullopt, datatype);
  return RunCollective(
      stream, r, [&] { return real::ncclSend()(sendbuff, count, datatype, peer, comm, stream); });
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  Ranges r;
  AddNcclBuffers(r, nullptr, std::nullopt, recvbuff, count, datatype);
  return RunCollective(
      stream, r, [&] { return real::ncclRecv()(recvbuff, count, datatype, peer, comm, stream); });
}

ncclResult_t ncclGroupStart() {
  const ncclResult_t result = real::ncclGroupStart()();
  if (result == ncclSuccess) ThisThreadGroup().Start();
  return result;
}

ncclResult_t ncclGroupEnd() {
  std::optional<GroupCalls::Closing> closing = ThisThreadGroup().End();
  if (!closing.has_value()) return real::ncclGroupEnd()();
  // Note [Collectives in a group]: the group's kernels are launched now.
  if (closing->stream.has_value()) {
    return RunOp<ncclResult_t>(*closing->stream, closing->ranges,
                               [] { return real::ncclGroupEnd()(); });
  }
  return RunOp<ncclResult_t>(0, closing->ranges, [] {
    const ncclResult_t result = real::ncclGroupEnd()();
    SynchronizeAfterOpaque();
    return result;
  });
}

}  // namespace pooch::interpose::intercept
