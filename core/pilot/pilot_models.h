// pilot_models.h: the two pilot models (Note [Pilot model] in pilot.h). Each says, at a block
// boundary, how likely every candidate allocation is to be touched by the block that follows,
// and learns from what that block touched.
//
//   FrequencyModel  an n-gram over block signatures: the context is the boundary's ordinal in
//                   the iteration and the signatures of the two blocks before it; the score is
//                   how often the candidate was touched after that context.
//   StumpModel      decision stumps per (context, candidate) over the bytes the program read
//                   back at the boundary, taken as float words (Pilot::Features: each word
//                   centred by its running mean, and its rank among the words, raw and
//                   against running means at a few rates). A stump says "touched when feature
//                   f is above (or below) a threshold"; the model keeps every stump that no
//                   block so far contradicts (the version space of one-feature rules) and
//                   scores a candidate by the share of them that vote for it. Its context is
//                   the ordinal and the read-back's length only, so that what varies is left to
//                   the bytes.
//
// A score is in [0, 1]; a candidate is predicted when its score is above 1/2. Neither model
// knows what the program is: the keys are allocation base addresses, the contexts hashes.
//
// Thread safety: none; the pilot's owner serialises.
#ifndef POOCH_CORE_PILOT_PILOT_MODELS_H_
#define POOCH_CORE_PILOT_PILOT_MODELS_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pooch {

// An allocation, by its base address.
using PilotKey = uint64_t;

// What a model sees at a boundary. `values` is the same for both models; each picks its context.
struct PilotBoundary {
  uint64_t history_context = 0;  // the ordinal and the two block signatures before
  uint64_t bytes_context = 0;    // the ordinal and the read-back's length
  std::vector<float> values;     // features of the read-back words (Pilot::Features)
};

class PilotModel {
 public:
  virtual ~PilotModel() = default;
  virtual absl::string_view name() const = 0;
  // One score per key, in order.
  virtual std::vector<float> Score(const PilotBoundary& b, absl::Span<const PilotKey> keys) = 0;
  // `touched[i]`: whether keys[i] was touched by the block after `b`.
  virtual void Learn(const PilotBoundary& b, absl::Span<const PilotKey> keys,
                     const std::vector<bool>& touched) = 0;
  // The allocation was freed (its address may come back as another): forget what was learnt of
  // it after a boundary of `b`'s contexts.
  virtual void Forget(const PilotBoundary& b, PilotKey key) = 0;
};

class FrequencyModel final : public PilotModel {
 public:
  absl::string_view name() const override { return "ngram"; }
  std::vector<float> Score(const PilotBoundary& b, absl::Span<const PilotKey> keys) override;
  void Learn(const PilotBoundary& b, absl::Span<const PilotKey> keys,
             const std::vector<bool>& touched) override;
  void Forget(const PilotBoundary& b, PilotKey key) override;

 private:
  struct Count {
    int seen = 0;     // blocks after the context since the key became a candidate
    int touched = 0;  // of those, the ones that touched it
  };
  absl::flat_hash_map<std::pair<uint64_t, PilotKey>, Count> counts_;
};

class StumpModel final : public PilotModel {
 public:
  // Words of a read-back beyond this are ignored (a read-back of many words is data, not a
  // decision; the first ones still carry it when it is a header).
  static constexpr int kMaxWords = 32;

  absl::string_view name() const override { return "stump"; }
  std::vector<float> Score(const PilotBoundary& b, absl::Span<const PilotKey> keys) override;
  void Learn(const PilotBoundary& b, absl::Span<const PilotKey> keys,
             const std::vector<bool>& touched) override;
  void Forget(const PilotBoundary& b, PilotKey key) override;

 private:
  // A stump no block contradicts: "touched when feature `feature` is above (or below) a
  // threshold", the threshold halfway between the classes. Stored signed, `sign` +1 (above) or
  // -1 (below) and `bound` = sign x threshold, so that a vote is sign x value > bound with no
  // branch (negation is exact: -x > -t exactly when x < t).
  struct Rule {
    uint32_t feature;
    float sign;
    float bound;
  };
  struct Counts {
    int seen = 0;
    int touched = 0;
    uint32_t rules = 0;  // consistent rules, at the start of the key's slots in Table::rules
  };
  // Note [Stump tables]: one context's keys, flat. Per key (at its index i, given by `index`):
  // its class counts; over the blocks that touched it and over those that did not, each
  // feature's range (`ranges`, 4 x n floats from 4 n i: touched min, touched max, untouched min,
  // untouched max); and the rules those ranges leave (`rules`, 2 x n slots from 2 n i, the first
  // counts[i].rules used). n, the features per boundary, is fixed by the context (its
  // read-back's length). A forgotten key's slots take the last key's.
  struct Table {
    size_t n = 0;
    absl::flat_hash_map<PilotKey, uint32_t> index;
    std::vector<PilotKey> keys;
    std::vector<Counts> counts;
    std::vector<float> ranges;
    std::vector<Rule> rules;
  };
  // The index of `key` in `t`, inserted (with nothing learnt) when absent.
  static size_t Slot(Table& t, PilotKey key);
  static void Reset(Table& t, size_t i);
  static void Add(Table& t, size_t i, const std::vector<float>& values, bool touched);
  absl::flat_hash_map<uint64_t, Table> tables_;  // by bytes context
};

}  // namespace pooch

#endif  // POOCH_CORE_PILOT_PILOT_MODELS_H_
