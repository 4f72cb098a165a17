// The training loop: synthetic data, forward, softmax cross-entropy, backward, SGD, and the
// per-iteration report on stdout.
#ifndef POOCH_SAMPLES_CNN_TRAIN_TRAINER_H_
#define POOCH_SAMPLES_CNN_TRAIN_TRAINER_H_

#include "args.h"

namespace cnn_train {

// Trains as `options` says and prints
//   iter N loss L ms T img_per_s R      (one line per iteration, N from 0; then " image S"
//                                        with --vary-image and the model's Choices())
//   peak_device_bytes B
//   params_checksum H                   (16 hex digits)
// Returns the exit status (0); fatal errors exit from inside (checks.h).
int Train(const Options& options);

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_TRAINER_H_
