// SplitMix64 (Steele, Lea and Flood 2014): a tiny PRNG whose output is fixed by its definition,
// unlike std:: distributions, which differ between standard libraries. Everything random in
// cnn_train (weights, images, labels) comes from here, so a seed gives the same bits anywhere.
#ifndef POOCH_SAMPLES_CNN_TRAIN_RNG_H_
#define POOCH_SAMPLES_CNN_TRAIN_RNG_H_

#include <cstdint>

namespace cnn_train {

// The SplitMix64 finaliser: a good 64-bit mixing function on its own.
constexpr uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return Mix64(state_);
  }

  // Uniform in [0, 1) with 24 random bits: exactly representable as a float.
  float NextUnit() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }

  // Uniform in [-limit, limit).
  float NextSymmetric(float limit) { return (2.0f * NextUnit() - 1.0f) * limit; }

 private:
  uint64_t state_;
};

}  // namespace cnn_train

#endif  // POOCH_SAMPLES_CNN_TRAIN_RNG_H_
