// cudnn_replay.h: replay recipes for the cuDNN forward calls whose outputs a plan may recompute
// (replay_recipe.h): convolution, batch-norm training, activation, pooling, op-tensor.
//
// Each hook asks ReplayableOutput first (cheap, on every call: it decides the profile's
// replay_capable flag), and builds the recipe only when the profiler asks for it. A recipe owns
// copies of the call's descriptors and runs on a cuDNN handle of pooch's own, so that the
// program's handle (its stream, its use from other threads) is never touched.
//
// Thread safety: all functions may be called from any thread; recipes' issue functions are
// serialised by the caller (the Recomputer's lock).
#ifndef POOCH_INTERPOSE_HOOKS_CUDNN_CUDNN_REPLAY_H_
#define POOCH_INTERPOSE_HOOKS_CUDNN_CUDNN_REPLAY_H_

#include <optional>

#include "core/lineage/replay_recipe.h"
#include "interpose/process/managed.h"
#include "interpose/symbols/cuda_api.h"

namespace pooch::interpose {

// True when *beta, read as cuDNN reads it for a tensor described by `desc` (a double for double
// tensors, a float otherwise), is zero: the call then overwrites its output without reading
// it, and the hook reports the output as write-only.
bool BetaIsZero(cudnnTensorDescriptor_t desc, const void* beta);

// True when a call that overwrites `y` (BetaIsZero) can be replayed: no read range of `r`
// overlaps it (an in-place call has overwritten its own input).
bool ReplayableOutput(const Ranges& r, const void* y, bool beta_is_zero);
// True when the call writes `y` at all: replayed after the calls that wrote `y` before it, it is
// a link of y's chain (Note [Chained recipes] in core/lineage/lineage.cc), in place or not.
bool ReplayableLink(const Ranges& r, const void* y);

std::optional<ReplayRecipe> ConvolutionForwardRecipe(const Ranges& r, const void* alpha,
                                                     cudnnTensorDescriptor_t xDesc, const void* x,
                                                     cudnnFilterDescriptor_t wDesc, const void* w,
                                                     cudnnConvolutionDescriptor_t convDesc,
                                                     cudnnConvolutionFwdAlgo_t algo,
                                                     size_t workspace_bytes, const void* beta,
                                                     cudnnTensorDescriptor_t yDesc, void* y);

// Replayed with null running and saved statistics: only y is written again.
std::optional<ReplayRecipe> BatchNormForwardTrainingRecipe(
    const Ranges& r, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    cudnnTensorDescriptor_t xDesc, const void* x, cudnnTensorDescriptor_t yDesc, void* y,
    cudnnTensorDescriptor_t paramDesc, const void* scale, const void* bias, double epsilon);

// The Ex form with bnOps CUDNN_BATCHNORM_OPS_BN only (no z, no activation: PyTorch's): replayed
// by the same Ex call with null running and saved statistics, and the workspace and a reserve
// space of the recorded sizes taken from the Recomputer's scratch (so the program's reserve
// space, which backward reads, is not written again).
std::optional<ReplayRecipe> BatchNormForwardTrainingExRecipe(
    const Ranges& r, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops, const void* alpha,
    const void* beta, cudnnTensorDescriptor_t xDesc, const void* x, cudnnTensorDescriptor_t yDesc,
    void* y, cudnnTensorDescriptor_t paramDesc, const void* scale, const void* bias, double epsilon,
    size_t workspace_bytes, size_t reserve_bytes);

std::optional<ReplayRecipe> ActivationForwardRecipe(const Ranges& r,
                                                    cudnnActivationDescriptor_t activationDesc,
                                                    const void* alpha,
                                                    cudnnTensorDescriptor_t xDesc, const void* x,
                                                    const void* beta, cudnnTensorDescriptor_t yDesc,
                                                    void* y);

std::optional<ReplayRecipe> PoolingForwardRecipe(const Ranges& r,
                                                 cudnnPoolingDescriptor_t poolingDesc,
                                                 const void* alpha, cudnnTensorDescriptor_t xDesc,
                                                 const void* x, const void* beta,
                                                 cudnnTensorDescriptor_t yDesc, void* y);

// C = alpha * A + beta * C: a link of C's chain when beta is not zero.
std::optional<ReplayRecipe> AddTensorRecipe(const Ranges& r, const void* alpha,
                                            cudnnTensorDescriptor_t aDesc, const void* A,
                                            const void* beta, cudnnTensorDescriptor_t cDesc,
                                            void* C);

std::optional<ReplayRecipe> OpTensorRecipe(const Ranges& r, cudnnOpTensorDescriptor_t opDesc,
                                           const void* alpha1, cudnnTensorDescriptor_t aDesc,
                                           const void* A, const void* alpha2,
                                           cudnnTensorDescriptor_t bDesc, const void* B,
                                           const void* beta, cudnnTensorDescriptor_t cDesc,
                                           void* C);

}  // namespace pooch::interpose

#endif  // POOCH_INTERPOSE_HOOKS_CUDNN_CUDNN_REPLAY_H_
