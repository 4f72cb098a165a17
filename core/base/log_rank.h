// log_rank.h: the rank in every line log.h writes, for one rank of several.
//
// The ranks of a torchrun job share one stderr; from SetLogRank(R) on, every line of this
// process starts "pooch[rank R]: " instead of "pooch: " (Note [One pooch per process] in
// interpose/process/process.cc says who calls it).
//
// Thread safety: may be called at any time; a line being written concurrently may carry either
// prefix.
#ifndef POOCH_CORE_BASE_LOG_RANK_H_
#define POOCH_CORE_BASE_LOG_RANK_H_

namespace pooch {

// The rank named in every line's prefix from now on; negative: none (the default).
void SetLogRank(int rank);

}  // namespace pooch

#endif  // POOCH_CORE_BASE_LOG_RANK_H_
