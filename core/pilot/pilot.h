// pilot.h: the pilot model of dynamic networks (DyNN-Offload, ../shared/seeds/002): execution
// blocks found in the op stream, a prediction of what the next block touches, and how good the
// predictions were.
//
// Note [Pilot model]
// ~~~~~~~~~~~~~~~~~~
// A network whose structure depends on its data decides on the host what runs next, from values
// it reads back from the device: SkipNet's gates, a mixture of experts' routing, an early exit.
// Each such read-back (a synchronous device-to-host copy of a few bytes) is a block boundary;
// a block is the ops between two of them, named by the hash of its ops' signatures. At a
// boundary the pilot predicts which allocations that exist now the next block will touch, so
// that the executor can prefetch them in one batch and push out those it will not touch
// (core/exec/plan_executor.cc), with demand swapping underneath as the safety net: a wrong
// prediction costs copies, never results.
//
// Two models are compared on every boundary (pilot_models.h): an n-gram over the block history
// and decision stumps over the read-back bytes (one-feature threshold rules, a depth-1 decision
// tree per candidate, kept as the set of rules no block has contradicted). Each is scored on
// what the block then touched: a hit is a predicted allocation it touched, a miss one it touched
// that was not predicted, a waste one predicted and not touched. Candidates are allocations that
// were alive at the boundary and were touched after a boundary of the same context before; one
// born inside the block is no candidate (it is resident when made). A new candidate is first
// taught the last kPastBoundaries boundaries of its context since its birth, at which it was
// alive and untouched, so that its first touch alone does not make it likely.
//
// Why stumps: a routing or a gate is a threshold on one read-back word, or on its rank among
// the words (a top-k), often against the program's own running mean of it (Features); a rule on
// one feature is what such a decision is, and the set of consistent rules learns it from a few
// blocks. A logistic regression over the same features, trained by one SGD step per block, needs
// far more blocks than a run gives (docs/measurements.md, "Pilot").
//
// POOCH_PILOT picks the model that acts:
// `on` the one with more hits than misses and wastes together so far at this boundary's
// context (the n-gram while they tie), or `ngram`, `stump`; `off` builds no pilot.
//
// Boundaries are counted from the iteration's start (IterationStart, from the iteration
// marker), so that gate 3 and gate 5 are different contexts even when their blocks have the same
// shape. Until an iteration start is seen (an auto marker that has not found a period) every
// boundary has ordinal 0, and only the block history and the bytes tell boundaries apart.
//
// Thread safety: none; the profiler serialises.
#ifndef POOCH_CORE_PILOT_PILOT_H_
#define POOCH_CORE_PILOT_PILOT_H_

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "core/pilot/pilot_models.h"

namespace pooch {

enum class PilotMode { kOff, kOn, kNgram, kStump };  // POOCH_PILOT

class Pilot {
 public:
  // Read-backs longer than this are data, not decisions, and are no boundary.
  static constexpr size_t kMaxReadBackBytes = 4096;
  static constexpr int kModels = 2;  // 0: ngram, 1: stump

  // REQUIRES: mode != kOff.
  explicit Pilot(PilotMode mode);

  void Allocated(PilotKey key);
  void Freed(PilotKey key);
  // An op whose signature (kind and shapes, as the iteration tracker compares) is `signature`
  // touched these allocations.
  void Op(uint64_t signature, absl::Span<const PilotKey> touched);
  void IterationStart();
  // Whether a read-back was seen: before the first, no block is open and ops need not be fed
  // (a static network, or PyTorch's asynchronous copies, costs the hooks nothing).
  bool active() const { return boundaries_ > 0; }

  struct Prediction {
    std::vector<PilotKey> likely;    // predicted, most likely first
    std::vector<PilotKey> unlikely;  // candidates not predicted, least likely first
    int model = 0;                   // the acting model
  };
  // The program read `bytes` back: the block so far ends and is scored, and the next one is
  // predicted.
  Prediction ReadBack(absl::Span<const uint8_t> bytes);

  struct ModelStats {
    int64_t hits = 0;
    int64_t misses = 0;
    int64_t wasted = 0;
    int64_t queries = 0;
    double query_us = 0;  // host time of Score, summed
    // hits / (hits + misses + wasted): 1 when every touched candidate and only those were
    // predicted; 0 when nothing to predict was ever seen.
    double Accuracy() const;
  };
  struct Stats {
    int64_t blocks = 0;                    // closed blocks
    int64_t empty_queries = 0;             // boundaries whose context had no candidate
    std::array<int64_t, kModels> acted{};  // boundaries each model acted on
    std::array<ModelStats, kModels> models;
    // Host time of ReadBack, summed: everything the pilot does at a boundary (the closed
    // block's scoring and learning, the features, both models' queries, the ordering).
    double boundary_us = 0;
    int64_t boundaries = 0;
  };
  const Stats& stats() const { return stats_; }
  // The last closed block, for the trace.
  struct Block {
    uint64_t signature = 0;
    int ordinal = 0;  // of the boundary that opened it; -1 for the first
    int64_t ops = 0;
    int acting = 0;
    std::array<ModelStats, kModels> scored;  // this block's hits, misses, wastes
  };
  const Block& last_block() const { return last_; }
  static const char* ModelName(int model);
  // "pilot: mode on blocks ... ngram hits .. misses .. wasted .. accuracy .. query_us .. ...
  // boundary_us .." (query_us: a model's Score per query; boundary_us: ReadBack per boundary).
  std::string SummaryLine() const;

 private:
  struct Open {  // the boundary that opened the current block
    bool valid = false;
    uint64_t index = 0;
    int ordinal = -1;
    PilotBoundary boundary;
    std::vector<PilotKey> candidates;
    std::array<std::vector<bool>, kModels> predicted;
    int acting = 0;
  };
  struct Centring {  // per context and word: a running mean and mean absolute deviation
    std::vector<float> mean, spread;
    std::vector<float> fast;  // per rank rate and word (Features)
    bool seen = false;
  };
  Prediction Predict(absl::Span<const uint8_t> bytes);  // ReadBack, untimed
  void CloseBlock();
  std::vector<float> Features(uint64_t context, absl::Span<const uint8_t> bytes);
  int ActingModel(uint64_t context) const;

  const PilotMode mode_;
  Stats stats_;
  Block last_;
  Open open_;
  uint64_t boundaries_ = 0;  // boundary index; allocations are born between two
  int ordinal_ = 0;
  bool iterations_known_ = false;  // IterationStart was called: ordinals count from it
  uint64_t signature_ = 0;         // of the current block
  int64_t ops_ = 0;
  std::array<uint64_t, 2> history_{};  // signatures of the last two closed blocks
  absl::flat_hash_set<PilotKey> touched_;
  absl::flat_hash_map<PilotKey, uint64_t> born_;  // live allocations: boundary index at birth
  absl::flat_hash_map<uint64_t, absl::btree_set<PilotKey>> candidates_;  // by bytes context
  // Where each key was learnt, to forget it when freed.
  absl::flat_hash_map<PilotKey, std::vector<std::pair<uint64_t, uint64_t>>> learnt_in_;
  absl::flat_hash_map<uint64_t, Centring> centring_;
  struct Past {  // a closed boundary, for the candidates found after it
    uint64_t index = 0;
    PilotBoundary boundary;
  };
  absl::flat_hash_map<uint64_t, std::deque<Past>> past_;  // by bytes context, oldest first
  absl::flat_hash_map<uint64_t, std::array<ModelStats, kModels>> by_context_;
  std::array<std::unique_ptr<PilotModel>, kModels> models_;
};

}  // namespace pooch

#endif  // POOCH_CORE_PILOT_PILOT_H_
