// graph_hooks.cc: CUDA graphs under a residency policy (intercept.h).
//
// Note [Graphs]
// ~~~~~~~~~~~~~
// A graph replays kernels and copies that pooch saw (if at all) while they were captured, not
// when they run: a captured launch queues nothing, so pooch's swaps around it would order
// nothing, and the waits pooch adds on a capturing stream would be captured too (or fail the
// capture). So stream capture is refused: cudaStreamBeginCapture(ToGraph) and
// cuStreamBeginCapture return "stream capture unsupported" after one `pooch:` line telling the
// user to disable CUDA graphs (torch.cuda.graph / CUDAGraph, torch.compile's
// mode="reduce-overhead") or to run with POOCH_POLICY=off. PyTorch raises that error at the
// capture, before any graph exists. A graph built node by node through the graph API can still
// be launched: cudaGraphLaunch / cuGraphLaunch are opaque calls (Note [Opaque calls] in
// interpose/process/opaque.h): every allocation is made resident before the launch, and the
// launch is the op's end on its stream, so nothing it may touch is swapped out or freed before
// its work is done. Alternative considered: allowing capture and pinning everything resident
// while any captured graph may run; it would need every capture-time hook to recognise a
// capturing stream and skip its own waits, and would leave pooch nothing to manage in a program
// that captures its training step.
#include "interpose/process/managed.h"
#include "interpose/process/opaque.h"
#include "interpose/process/streams.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

template <typename Ret>
Ret RefuseCapture(Ret unsupported) {
  LogLine(
      "%s: CUDA graph capture is not supported under pooch (a captured graph runs work "
      "pooch cannot see); disable CUDA graphs (torch.cuda.graph, torch.compile "
      "mode=\"reduce-overhead\") or run with POOCH_POLICY=off",
      kFunctions[Index(HookScope::Current())].name);
  return HookFailure(unsupported);
}

}  // namespace

cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  return RefuseCapture(cudaErrorStreamCaptureUnsupported);
}

cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t, cudaStreamCaptureMode) {
  return RefuseCapture(cudaErrorStreamCaptureUnsupported);
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t, cudaGraph_t, const cudaGraphNode_t*,
                                          const cudaGraphEdgeData*, size_t, cudaStreamCaptureMode) {
  return RefuseCapture(cudaErrorStreamCaptureUnsupported);
}

cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t, cudaGraph_t, const cudaGraphNode_t*,
                                               const cudaGraphEdgeData*, size_t,
                                               cudaStreamCaptureMode) {
  return RefuseCapture(cudaErrorStreamCaptureUnsupported);
}

CUresult cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode) {
  return RefuseCapture(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream, CUstreamCaptureMode) {
  return RefuseCapture(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return RunOpaque<cudaError_t>("cudaGraphLaunch", StreamAsInteger(stream), /*stream_known=*/true,
                                [&] { return real::cudaGraphLaunch()(graphExec, stream); });
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream) {
  return RunOpaque<cudaError_t>("cudaGraphLaunch_ptsz", StreamAsInteger(PerThread(stream)),
                                /*stream_known=*/true,
                                [&] { return real::cudaGraphLaunch_ptsz()(graphExec, stream); });
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  return RunOpaque<CUresult>("cuGraphLaunch", StreamAsInteger(hStream), /*stream_known=*/true,
                             [&] { return real::cuGraphLaunch()(hGraphExec, hStream); });
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return RunOpaque<CUresult>("cuGraphLaunch_ptsz", StreamAsInteger(PerThread(hStream)),
                             /*stream_known=*/true,
                             [&] { return real::cuGraphLaunch_ptsz()(hGraphExec, hStream); });
}

}  // namespace pooch::interpose::intercept
