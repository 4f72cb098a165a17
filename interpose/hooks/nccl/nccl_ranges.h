// nccl_ranges.h: the device memory an NCCL collective or point-to-point call reads and writes,
// from its arguments (NCCL's nccl.h documents each call's buffers).
//
// Note [Collectives as accesses]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// NCCL's library (libnccl.so.2 as PyTorch ships it) links the CUDA runtime statically and reaches
// the driver through its own handle, so its copies and kernels never pass through pooch's hooks:
// without more, a buffer a collective works on (a DDP gradient bucket) could be swapped out or
// dropped before the call, or while its kernels still run on the stream. So the calls the program
// makes into NCCL are hooked (libtorch_cuda.so calls them through dynamic symbols) and each is an
// op on its stream, as a cuDNN or cuBLAS call is (RunOp, interpose/process/managed.h):
//   - its send buffer is read, count x the datatype's size bytes (a gather's whole receive
//     buffer is nranks times the count, a scatter's send buffer too);
//   - its receive buffer is written; when it overlaps the send buffer (in place) it is read and
//     written. So before the call every buffer is made resident (swapped in, a dropped map
//     rebuilt), and the write makes the lineage forget any recipe of the receive buffer's old
//     contents (no stale replay can rebuild what the collective wrote); the call has no recipe
//     itself (its result depends on the other ranks);
//   - the buffers stay pinned through the call and are released in stream order: AfterOp
//     records the call's completion on its stream and an eviction waits for it, so nothing is
//     unmapped while NCCL's kernels still use it.
// A datatype pooch does not know (one added after nccl.h 2.30) or a communicator whose size
// NCCL does not tell gives the buffer's first byte as its range: the allocation holding it is
// made resident whole, which is all a buffer inside one allocation needs.
// Calls inside ncclGroupStart/ncclGroupEnd are Note [Collectives in a group] (nccl_group.h).
//
// Thread safety: the functions are pure.
#ifndef POOCH_INTERPOSE_HOOKS_NCCL_NCCL_RANGES_H_
#define POOCH_INTERPOSE_HOOKS_NCCL_NCCL_RANGES_H_

#include <cstddef>
#include <optional>

#include "interpose/process/managed.h"

namespace pooch::interpose {

// Bytes of one element of `datatype` (nccl.h's ncclDataType_t); 0 for a value pooch does not
// know.
size_t NcclTypeBytes(ncclDataType_t datatype);

// Note [Collectives as accesses]: adds a call's send buffer of `send_count` elements (read) and
// receive buffer of `recv_count` elements (written; read and written when the two overlap).
// Either may be null (a non-root rank's receive buffer of ncclReduce), and is then left out. A
// count of nullopt (it needed the communicator's size, which NCCL did not tell) gives its buffer
// one byte.
void AddNcclBuffers(Ranges& ranges, const void* send, std::optional<size_t> send_count,
                    const void* recv, std::optional<size_t> recv_count, ncclDataType_t datatype);

// count x nranks, or nullopt when the communicator's size is unknown.
std::optional<size_t> TimesRanks(size_t count, std::optional<int> nranks);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_NCCL_NCCL_RANGES_H_
