// What core/kernels' analysis concludes about one kernel (Note [Kernel write sets] in
// analysis.h), and its JSON and one-line forms for `pooch kernels`.
#ifndef POOCH_CORE_KERNELS_VERDICT_H_
#define POOCH_CORE_KERNELS_VERDICT_H_

#include <set>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace pooch::kernels {

struct KernelVerdict {
  std::string name;  // mangled
  std::string arch;  // "sm_90"
  // Byte offsets (in the parameter buffer) of the 8-byte words whose targets the kernel may
  // write / read. Meaningful only when the matching *_known is true; when false the kernel may
  // write (read) anything its words point into, and more.
  bool writes_known = true;
  std::set<int> writes;
  bool reads_known = true;
  std::set<int> reads;
  std::set<int> atomic_writes;  // words written by atomics or reductions
  bool uses_atomics = false;    // any atomic, shared memory's too: the order is not fixed
  bool reads_clock = false;
  // Words whose value the kernel may store to memory: the verdict holds only for a launch where
  // none of them points into memory pooch knows (Note [Conditional escapes] in analysis.h).
  std::set<int> escapes;
  // Why writes (reads) are unknown: one line each, deduplicated, in the order found.
  std::vector<std::string> write_reasons;
  std::vector<std::string> read_reasons;

  bool Exact() const { return writes_known && reads_known; }
  // Whether replaying the kernel with the same parameters and inputs gives its outputs bit for
  // bit, on its own: everything known, no atomics, no clock, and no word both read and written.
  bool Replayable() const;
  // The reason in a few words: "exact", "writes unknown: ...", "not replayable: ...", with
  // "; escapes 0x..: exact unless a pointer" after it when `escapes` is not empty.
  std::string Why() const;
  // The first unknown reason with its location stripped, for counting reasons over kernels.
  std::string ReasonClass() const;

  void AddUnknown(bool writes, std::string reason);

 private:
  std::string WhyAlone() const;  // Why() without the escapes
};

// One verdict that covers every one of `verdicts` (the same name in several modules, when a
// launch does not say which): the union of their sets, a half unknown if it is in any, atomics
// or a clock if any has them, the union of their escapes. The name and arch are the first's.
KernelVerdict MergeVerdicts(const std::vector<const KernelVerdict*>& verdicts);

// One line over many kernels: "N kernels: E exact (writes and reads known), C exact unless an
// escaping word holds a pointer, U writes unknown, R replayable; not replayable: <reason> K, ..."
// with the reasons (ReasonClass) most frequent first; C counts the exact ones with escapes.
std::string Summarize(const std::vector<KernelVerdict>& verdicts);

// {"name": ..., "arch": ..., "writes": [...] | "unknown", "reads": ..., "replayable": ..., "why"}
nlohmann::ordered_json ToJson(const KernelVerdict& v);

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_VERDICT_H_
