// nccl_ranges.cc: Note [Collectives as accesses].
#include "interpose/hooks/nccl/nccl_ranges.h"

#include <cstdint>

namespace pooch::interpose {

size_t NcclTypeBytes(ncclDataType_t datatype) {
  switch (datatype) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
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

std::optional<size_t> TimesRanks(size_t count, std::optional<int> nranks) {
  if (!nranks.has_value() || *nranks <= 0) return std::nullopt;
  return count * static_cast<size_t>(*nranks);
}

namespace {

// The extent of `count` elements of `element` bytes; one byte (the allocation holding the
// buffer) when either is unknown or the product overflows.
size_t Extent(std::optional<size_t> count, size_t element) {
  if (!count.has_value() || element == 0) return 1;
  if (*count > SIZE_MAX / element) return 1;
  return *count * element;
}

bool Overlap(uintptr_t a, size_t a_bytes, uintptr_t b, size_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}

}  // namespace

void AddNcclBuffers(Ranges& ranges, const void* send, std::optional<size_t> send_count,
                    const void* recv, std::optional<size_t> recv_count, ncclDataType_t datatype) {
  using Mode = pooch::AccessRange::Mode;
  const size_t element = NcclTypeBytes(datatype);
  const size_t send_bytes = Extent(send_count, element);
  const size_t recv_bytes = Extent(recv_count, element);
  const auto s = reinterpret_cast<uintptr_t>(send);
  const auto r = reinterpret_cast<uintptr_t>(recv);
  ranges.Add(s, send_bytes, Mode::kRead);
  // In place (nccl.h: recvbuff == sendbuff, or the rank's slice of the other): what the call
  // writes is also what it reads.
  const bool in_place = s != 0 && r != 0 && Overlap(s, send_bytes, r, recv_bytes);
  ranges.Add(r, recv_bytes, in_place ? Mode::kReadWrite : Mode::kWrite);
}

}  // namespace pooch::interpose
