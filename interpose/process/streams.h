// streams.h: the stream a per-thread-default-stream call (_ptsz/_ptds) runs on, as a handle.
//
// Note [Per-thread default stream]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A program built with --default-stream per-thread (or a library asking cuGetProcAddress for
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) calls the _ptsz/_ptds exports, where stream 0
// means the calling thread's default stream, not the legacy one. Pooch orders its swaps against
// the op's stream, so a _ptsz call's 0 becomes the per-thread handle (cudaStreamPerThread ==
// CU_STREAM_PER_THREAD == 0x2, valid in every API and meaning the caller's per-thread stream);
// the explicit handles (cudaStreamLegacy 0x1, created streams) keep their meaning. A _ptsz
// intercept then calls the base function with that handle, which the runtime and driver define
// to be the same call; a _ptds (synchronous) call becomes the asynchronous call on the
// per-thread stream followed by a synchronisation of that stream. Pooch's own waits on that
// handle happen on the calling thread, inside the hook, so they name the same stream.
#ifndef POOCH_INTERPOSE_PROCESS_STREAMS_H_
#define POOCH_INTERPOSE_PROCESS_STREAMS_H_

#include <cstdint>

namespace pooch::interpose {

// cudaStreamPerThread and CU_STREAM_PER_THREAD.
inline constexpr uintptr_t kPerThreadStream = 0x2;

// The handle a _ptsz call's `stream` names (Note [Per-thread default stream]).
constexpr uintptr_t PerThreadStream(uintptr_t stream) {
  return stream == 0 ? kPerThreadStream : stream;
}

// As a typed handle (cudaStream_t, CUstream).
template <typename Stream>
Stream PerThread(Stream stream) {
  return reinterpret_cast<Stream>(PerThreadStream(reinterpret_cast<uintptr_t>(stream)));
}

// A typed handle as the integer RunOp and the residency manager name a stream by.
template <typename Stream>
uintptr_t StreamAsInteger(Stream stream) {
  return reinterpret_cast<uintptr_t>(stream);
}

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_PROCESS_STREAMS_H_
