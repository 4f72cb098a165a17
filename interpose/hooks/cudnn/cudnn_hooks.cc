// cudnn_hooks.cc: the cuDNN hooks under a residency policy (intercept.h). Each names the memory
// its call reads and writes, from the descriptors (sizes from the real cudnnGet*SizeInBytes),
// and runs on the handle's stream (the real cudnnGetStream).
#include <utility>

#include "interpose/hooks/cudnn/cudnn_replay.h"
#include "interpose/process/managed.h"
#include "interpose/symbols/hook_table.h"
#include "interpose/symbols/intercept.h"

namespace pooch::interpose::intercept {
namespace {

using Mode = pooch::AccessRange::Mode;
constexpr Mode kR = Mode::kRead;
constexpr Mode kW = Mode::kWrite;
constexpr Mode kRW = Mode::kReadWrite;

uintptr_t HandleStream(cudnnHandle_t handle) {
  cudaStream_t stream = nullptr;
  if (const auto get = real::cudnnGetStream()) get(handle, &stream);
  return reinterpret_cast<uintptr_t>(stream);
}

// A tensor's bytes; 1 (the allocation it points into) when cuDNN cannot say.
void AddTensor(Ranges& r, cudnnTensorDescriptor_t desc, const void* p, Mode mode) {
  if (p == nullptr) return;
  size_t bytes = 0;
  const auto size = real::cudnnGetTensorSizeInBytes();
  if (size == nullptr || size(desc, &bytes) != CUDNN_STATUS_SUCCESS) bytes = 1;
  r.Add(p, bytes, mode);
}

void AddFilter(Ranges& r, cudnnFilterDescriptor_t desc, const void* p, Mode mode) {
  if (p == nullptr) return;
  size_t bytes = 0;
  const auto size = real::cudnnGetFilterSizeInBytes();
  if (size == nullptr || size(desc, &bytes) != CUDNN_STATUS_SUCCESS) bytes = 1;
  r.Add(p, bytes, mode);
}

// A call that produces a feature map (its output `y`, overwritten when `fresh`): run as any op,
// with its replay recipe offered when it can be replayed (Note [Replay],
// core/recompute/recomputer.h).
// `link`: its recipe replays it on top of y's previous state too, when it reads y.
template <typename Forward, typename MakeRecipe>
cudnnStatus_t RunProducer(cudnnHandle_t handle, const Ranges& r, const void* y, bool fresh,
                          Forward&& forward, const MakeRecipe& make_recipe, bool link = false) {
  const ReplaySource replay(make_recipe);
  // Note [Chained recipes] (core/lineage/lineage.cc): a call that does not overwrite y alone (it
  // reads y, or adds to it) is replayable as a link of y's chain.
  const bool replayable = ReplayableOutput(r, y, fresh) || (link && ReplayableLink(r, y));
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, std::forward<Forward>(forward),
                              {.replay = replayable ? &replay : nullptr});
}

}  // namespace

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                      const cudnnTensorDescriptor_t xDesc, const void* x,
                                      const cudnnFilterDescriptor_t wDesc, const void* w,
                                      const cudnnConvolutionDescriptor_t convDesc,
                                      cudnnConvolutionFwdAlgo_t algo, void* workSpace,
                                      size_t workSpaceSizeInBytes, const void* beta,
                                      const cudnnTensorDescriptor_t yDesc, void* y) {
  Ranges r;
  AddTensor(r, xDesc, x, kR);
  AddFilter(r, wDesc, w, kR);
  r.Add(workSpace, workSpaceSizeInBytes, kW);  // Note [Scratch workspaces]
  const bool fresh = BetaIsZero(yDesc, beta);
  AddTensor(r, yDesc, y, fresh ? kW : kRW);
  return RunProducer(
      handle, r, y, fresh,
      [&] {
        return real::cudnnConvolutionForward()(handle, alpha, xDesc, x, wDesc, w, convDesc, algo,
                                               workSpace, workSpaceSizeInBytes, beta, yDesc, y);
      },
      [&] {
        return ConvolutionForwardRecipe(r, alpha, xDesc, x, wDesc, w, convDesc, algo,
                                        workSpaceSizeInBytes, beta, yDesc, y);
      });
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                           const cudnnFilterDescriptor_t wDesc, const void* w,
                                           const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                           const cudnnConvolutionDescriptor_t convDesc,
                                           cudnnConvolutionBwdDataAlgo_t algo, void* workSpace,
                                           size_t workSpaceSizeInBytes, const void* beta,
                                           const cudnnTensorDescriptor_t dxDesc, void* dx) {
  Ranges r;
  AddFilter(r, wDesc, w, kR);
  AddTensor(r, dyDesc, dy, kR);
  r.Add(workSpace, workSpaceSizeInBytes, kW);  // Note [Scratch workspaces]
  AddTensor(r, dxDesc, dx, kRW);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, [&] {
    return real::cudnnConvolutionBackwardData()(handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo,
                                                workSpace, workSpaceSizeInBytes, beta, dxDesc, dx);
  });
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                             const cudnnTensorDescriptor_t xDesc, const void* x,
                                             const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                             const cudnnConvolutionDescriptor_t convDesc,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void* workSpace,
                                             size_t workSpaceSizeInBytes, const void* beta,
                                             const cudnnFilterDescriptor_t dwDesc, void* dw) {
  Ranges r;
  AddTensor(r, xDesc, x, kR);
  AddTensor(r, dyDesc, dy, kR);
  r.Add(workSpace, workSpaceSizeInBytes, kW);  // Note [Scratch workspaces]
  AddFilter(r, dwDesc, dw, kRW);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, [&] {
    return real::cudnnConvolutionBackwardFilter()(handle, alpha, xDesc, x, dyDesc, dy, convDesc,
                                                  algo, workSpace, workSpaceSizeInBytes, beta,
                                                  dwDesc, dw);
  });
}

cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void* alpha,
                                           const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                           const void* beta, const cudnnTensorDescriptor_t dbDesc,
                                           void* db) {
  Ranges r;
  AddTensor(r, dyDesc, dy, kR);
  AddTensor(r, dbDesc, db, kRW);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, [&] {
    return real::cudnnConvolutionBackwardBias()(handle, alpha, dyDesc, dy, beta, dbDesc, db);
  });
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void* alpha,
                             const cudnnTensorDescriptor_t aDesc, const void* A, const void* beta,
                             const cudnnTensorDescriptor_t cDesc, void* C) {
  Ranges r;
  AddTensor(r, aDesc, A, kR);
  AddTensor(r, cDesc, C, kRW);
  return RunProducer(
      handle, r, C, /*fresh=*/false,
      [&] { return real::cudnnAddTensor()(handle, alpha, aDesc, A, beta, cDesc, C); },
      [&] { return AddTensorRecipe(r, alpha, aDesc, A, beta, cDesc, C); }, /*link=*/true);
}

cudnnStatus_t cudnnOpTensor(cudnnHandle_t handle, const cudnnOpTensorDescriptor_t opTensorDesc,
                            const void* alpha1, const cudnnTensorDescriptor_t aDesc, const void* A,
                            const void* alpha2, const cudnnTensorDescriptor_t bDesc, const void* B,
                            const void* beta, const cudnnTensorDescriptor_t cDesc, void* C) {
  Ranges r;
  AddTensor(r, aDesc, A, kR);
  AddTensor(r, bDesc, B, kR);
  const bool fresh = BetaIsZero(cDesc, beta);
  AddTensor(r, cDesc, C, fresh ? kW : kRW);
  return RunProducer(
      handle, r, C, fresh,
      [&] {
        return real::cudnnOpTensor()(handle, opTensorDesc, alpha1, aDesc, A, alpha2, bDesc, B, beta,
                                     cDesc, C);
      },
      [&] {
        return OpTensorRecipe(r, opTensorDesc, alpha1, aDesc, A, alpha2, bDesc, B, beta, cDesc, C);
      },
      /*link=*/true);
}

cudnnStatus_t cudnnScaleTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc, void* y,
                               const void* alpha) {
  Ranges r;
  AddTensor(r, yDesc, y, kRW);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r,
                              [&] { return real::cudnnScaleTensor()(handle, yDesc, y, alpha); });
}

cudnnStatus_t cudnnSetTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc, void* y,
                             const void* valuePtr) {
  Ranges r;
  AddTensor(r, yDesc, y, kW);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r,
                              [&] { return real::cudnnSetTensor()(handle, yDesc, y, valuePtr); });
}

cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle,
                                     cudnnActivationDescriptor_t activationDesc, const void* alpha,
                                     const cudnnTensorDescriptor_t xDesc, const void* x,
                                     const void* beta, const cudnnTensorDescriptor_t yDesc,
                                     void* y) {
  Ranges r;
  AddTensor(r, xDesc, x, kR);
  const bool fresh = BetaIsZero(yDesc, beta);
  AddTensor(r, yDesc, y, fresh ? kW : kRW);
  return RunProducer(
      handle, r, y, fresh,
      [&] {
        return real::cudnnActivationForward()(handle, activationDesc, alpha, xDesc, x, beta, yDesc,
                                              y);
      },
      [&] { return ActivationForwardRecipe(r, activationDesc, alpha, xDesc, x, beta, yDesc, y); },
      /*link=*/true);
}

cudnnStatus_t cudnnActivationBackward(cudnnHandle_t handle,
                                      cudnnActivationDescriptor_t activationDesc, const void* alpha,
                                      const cudnnTensorDescriptor_t yDesc, const void* y,
                                      const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                      const cudnnTensorDescriptor_t xDesc, const void* x,
                                      const void* beta, const cudnnTensorDescriptor_t dxDesc,
                                      void* dx) {
  Ranges r;
  AddTensor(r, yDesc, y, kR);
  AddTensor(r, dyDesc, dy, kR);
  AddTensor(r, xDesc, x, kR);
  AddTensor(r, dxDesc, dx, kRW);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, [&] {
    return real::cudnnActivationBackward()(handle, activationDesc, alpha, yDesc, y, dyDesc, dy,
                                           xDesc, x, beta, dxDesc, dx);
  });
}

cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc,
                                  const void* alpha, const cudnnTensorDescriptor_t xDesc,
                                  const void* x, const void* beta,
                                  const cudnnTensorDescriptor_t yDesc, void* y) {
  Ranges r;
  AddTensor(r, xDesc, x, kR);
  const bool fresh = BetaIsZero(yDesc, beta);
  AddTensor(r, yDesc, y, fresh ? kW : kRW);
  return RunProducer(
      handle, r, y, fresh,
      [&] {
        return real::cudnnPoolingForward()(handle, poolingDesc, alpha, xDesc, x, beta, yDesc, y);
      },
      [&] { return PoolingForwardRecipe(r, poolingDesc, alpha, xDesc, x, beta, yDesc, y); });
}

cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc,
                                   const void* alpha, const cudnnTensorDescriptor_t yDesc,
                                   const void* y, const cudnnTensorDescriptor_t dyDesc,
                                   const void* dy, const cudnnTensorDescriptor_t xDesc,
                                   const void* x, const void* beta,
                                   const cudnnTensorDescriptor_t dxDesc, void* dx) {
  Ranges r;
  AddTensor(r, yDesc, y, kR);
  AddTensor(r, dyDesc, dy, kR);
  AddTensor(r, xDesc, x, kR);
  AddTensor(r, dxDesc, dx, kRW);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, [&] {
    return real::cudnnPoolingBackward()(handle, poolingDesc, alpha, yDesc, y, dyDesc, dy, xDesc, x,
                                        beta, dxDesc, dx);
  });
}

cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t yDesc,
    void* y, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale,
    const void* bnBias, double exponentialAverageFactor, void* resultRunningMean,
    void* resultRunningVariance, double epsilon, void* resultSaveMean,
    void* resultSaveInvVariance) {
  Ranges r;
  AddTensor(r, xDesc, x, kR);
  const bool fresh = BetaIsZero(yDesc, beta);
  AddTensor(r, yDesc, y, fresh ? kW : kRW);
  AddTensor(r, bnScaleBiasMeanVarDesc, bnScale, kR);
  AddTensor(r, bnScaleBiasMeanVarDesc, bnBias, kR);
  AddTensor(r, bnScaleBiasMeanVarDesc, resultRunningMean, kRW);
  AddTensor(r, bnScaleBiasMeanVarDesc, resultRunningVariance, kRW);
  AddTensor(r, bnScaleBiasMeanVarDesc, resultSaveMean, kW);
  AddTensor(r, bnScaleBiasMeanVarDesc, resultSaveInvVariance, kW);
  return RunProducer(
      handle, r, y, fresh,
      [&] {
        return real::cudnnBatchNormalizationForwardTraining()(
            handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale, bnBias,
            exponentialAverageFactor, resultRunningMean, resultRunningVariance, epsilon,
            resultSaveMean, resultSaveInvVariance);
      },
      [&] {
        return BatchNormForwardTrainingRecipe(r, mode, alpha, beta, xDesc, x, yDesc, y,
                                              bnScaleBiasMeanVarDesc, bnScale, bnBias, epsilon);
      });
}

cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t yDesc,
    void* y, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale,
    const void* bnBias, const void* estimatedMean, const void* estimatedVariance, double epsilon) {
  Ranges r;
  AddTensor(r, xDesc, x, kR);
  AddTensor(r, yDesc, y, kRW);
  AddTensor(r, bnScaleBiasMeanVarDesc, bnScale, kR);
  AddTensor(r, bnScaleBiasMeanVarDesc, bnBias, kR);
  AddTensor(r, bnScaleBiasMeanVarDesc, estimatedMean, kR);
  AddTensor(r, bnScaleBiasMeanVarDesc, estimatedVariance, kR);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, [&] {
    return real::cudnnBatchNormalizationForwardInference()(
        handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale, bnBias,
        estimatedMean, estimatedVariance, epsilon);
  });
}

cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alphaDataDiff,
    const void* betaDataDiff, const void* alphaParamDiff, const void* betaParamDiff,
    const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t dyDesc,
    const void* dy, const cudnnTensorDescriptor_t dxDesc, void* dx,
    const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void* bnScale, void* dBnScaleResult,
    void* dBnBiasResult, double epsilon, const void* savedMean, const void* savedInvVariance) {
  Ranges r;
  AddTensor(r, xDesc, x, kR);
  AddTensor(r, dyDesc, dy, kR);
  AddTensor(r, dxDesc, dx, kRW);
  AddTensor(r, dBnScaleBiasDesc, bnScale, kR);
  AddTensor(r, dBnScaleBiasDesc, dBnScaleResult, kRW);
  AddTensor(r, dBnScaleBiasDesc, dBnBiasResult, kRW);
  AddTensor(r, dBnScaleBiasDesc, savedMean, kR);
  AddTensor(r, dBnScaleBiasDesc, savedInvVariance, kR);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, [&] {
    return real::cudnnBatchNormalizationBackward()(
        handle, mode, alphaDataDiff, betaDataDiff, alphaParamDiff, betaParamDiff, xDesc, x, dyDesc,
        dy, dxDesc, dx, dBnScaleBiasDesc, bnScale, dBnScaleResult, dBnBiasResult, epsilon,
        savedMean, savedInvVariance);
  });
}

// The Ex forms (PyTorch's batch norm, SPATIAL_PERSISTENT): as the plain ones, plus z (added
// before the activation), the workspace and the reserve space, which backward reads. Forward is
// replayed by the Ex call itself (the plain form may run another kernel) when it has no z and no
// activation (BatchNormForwardTrainingExRecipe).
cudnnStatus_t cudnnBatchNormalizationForwardTrainingEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void* alpha,
    const void* beta, const cudnnTensorDescriptor_t xDesc, const void* xData,
    const cudnnTensorDescriptor_t zDesc, const void* zData, const cudnnTensorDescriptor_t yDesc,
    void* yData, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale,
    const void* bnBias, double exponentialAverageFactor, void* resultRunningMean,
    void* resultRunningVariance, double epsilon, void* resultSaveMean, void* resultSaveInvVariance,
    cudnnActivationDescriptor_t activationDesc, void* workspace, size_t workSpaceSizeInBytes,
    void* reserveSpace, size_t reserveSpaceSizeInBytes) {
  Ranges r;
  AddTensor(r, xDesc, xData, kR);
  AddTensor(r, zDesc, zData, kR);
  const bool fresh = BetaIsZero(yDesc, beta);
  AddTensor(r, yDesc, yData, fresh ? kW : kRW);
  AddTensor(r, bnScaleBiasMeanVarDesc, bnScale, kR);
  AddTensor(r, bnScaleBiasMeanVarDesc, bnBias, kR);
  AddTensor(r, bnScaleBiasMeanVarDesc, resultRunningMean, kRW);
  AddTensor(r, bnScaleBiasMeanVarDesc, resultRunningVariance, kRW);
  AddTensor(r, bnScaleBiasMeanVarDesc, resultSaveMean, kW);
  AddTensor(r, bnScaleBiasMeanVarDesc, resultSaveInvVariance, kW);
  r.Add(workspace, workSpaceSizeInBytes, kW);  // Note [Scratch workspaces]
  r.Add(reserveSpace, reserveSpaceSizeInBytes, kW);
  const bool plain = bnOps == CUDNN_BATCHNORM_OPS_BN && zData == nullptr;
  return RunProducer(
      handle, r, yData, fresh && plain,
      [&] {
        return real::cudnnBatchNormalizationForwardTrainingEx()(
            handle, mode, bnOps, alpha, beta, xDesc, xData, zDesc, zData, yDesc, yData,
            bnScaleBiasMeanVarDesc, bnScale, bnBias, exponentialAverageFactor, resultRunningMean,
            resultRunningVariance, epsilon, resultSaveMean, resultSaveInvVariance, activationDesc,
            workspace, workSpaceSizeInBytes, reserveSpace, reserveSpaceSizeInBytes);
      },
      [&] {
        return BatchNormForwardTrainingExRecipe(
            r, mode, bnOps, alpha, beta, xDesc, xData, yDesc, yData, bnScaleBiasMeanVarDesc,
            bnScale, bnBias, epsilon, workSpaceSizeInBytes, reserveSpaceSizeInBytes);
      });
}

cudnnStatus_t cudnnBatchNormalizationBackwardEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps,
    const void* alphaDataDiff, const void* betaDataDiff, const void* alphaParamDiff,
    const void* betaParamDiff, const cudnnTensorDescriptor_t xDesc, const void* xData,
    const cudnnTensorDescriptor_t yDesc, const void* yData, const cudnnTensorDescriptor_t dyDesc,
    const void* dyData, const cudnnTensorDescriptor_t dzDesc, void* dzData,
    const cudnnTensorDescriptor_t dxDesc, void* dxData,
    const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void* bnScaleData, const void* bnBiasData,
    void* dBnScaleData, void* dBnBiasData, double epsilon, const void* savedMean,
    const void* savedInvVariance, cudnnActivationDescriptor_t activationDesc, void* workSpace,
    size_t workSpaceSizeInBytes, void* reserveSpace, size_t reserveSpaceSizeInBytes) {
  Ranges r;
  AddTensor(r, xDesc, xData, kR);
  AddTensor(r, yDesc, yData, kR);
  AddTensor(r, dyDesc, dyData, kR);
  AddTensor(r, dzDesc, dzData, kRW);
  AddTensor(r, dxDesc, dxData, kRW);
  AddTensor(r, dBnScaleBiasDesc, bnScaleData, kR);
  AddTensor(r, dBnScaleBiasDesc, bnBiasData, kR);
  AddTensor(r, dBnScaleBiasDesc, dBnScaleData, kRW);
  AddTensor(r, dBnScaleBiasDesc, dBnBiasData, kRW);
  AddTensor(r, dBnScaleBiasDesc, savedMean, kR);
  AddTensor(r, dBnScaleBiasDesc, savedInvVariance, kR);
  r.Add(workSpace, workSpaceSizeInBytes, kW);  // Note [Scratch workspaces]
  r.Add(reserveSpace, reserveSpaceSizeInBytes, kRW);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, [&] {
    return real::cudnnBatchNormalizationBackwardEx()(
        handle, mode, bnOps, alphaDataDiff, betaDataDiff, alphaParamDiff, betaParamDiff, xDesc,
        xData, yDesc, yData, dyDesc, dyData, dzDesc, dzData, dxDesc, dxData, dBnScaleBiasDesc,
        bnScaleData, bnBiasData, dBnScaleData, dBnBiasData, epsilon, savedMean, savedInvVariance,
        activationDesc, workSpace, workSpaceSizeInBytes, reserveSpace, reserveSpaceSizeInBytes);
  });
}

cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                  cudnnSoftmaxMode_t mode, const void* alpha,
                                  const cudnnTensorDescriptor_t xDesc, const void* x,
                                  const void* beta, const cudnnTensorDescriptor_t yDesc, void* y) {
  Ranges r;
  AddTensor(r, xDesc, x, kR);
  AddTensor(r, yDesc, y, kRW);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, [&] {
    return real::cudnnSoftmaxForward()(handle, algo, mode, alpha, xDesc, x, beta, yDesc, y);
  });
}

cudnnStatus_t cudnnSoftmaxBackward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                   cudnnSoftmaxMode_t mode, const void* alpha,
                                   const cudnnTensorDescriptor_t yDesc, const void* y,
                                   const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                   const void* beta, const cudnnTensorDescriptor_t dxDesc,
                                   void* dx) {
  Ranges r;
  AddTensor(r, yDesc, y, kR);
  AddTensor(r, dyDesc, dy, kR);
  AddTensor(r, dxDesc, dx, kRW);
  return RunOp<cudnnStatus_t>(HandleStream(handle), r, [&] {
    return real::cudnnSoftmaxBackward()(handle, algo, mode, alpha, yDesc, y, dyDesc, dy, beta,
                                        dxDesc, dx);
  });
}

}  // namespace pooch::interpose::intercept
