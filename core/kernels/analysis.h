// Which parameter words a kernel's stores may reach, from its SASS.
//
// Note [Kernel write sets]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// pooch counts a kernel launch as writing every allocation its parameter words point into,
// unless this analysis proves less from the kernel's machine code. The proof must be sound (an
// over-approximation), because a kernel output pooch thinks it may recompute, and does not, is
// a wrong result:
//   - each 32-bit register (general and uniform) holds a Provenance (provenance.h): an integer,
//     the low or high half of one of a few 8-byte parameter words plus integers (or such a half
//     or an integer; or either half of a few words: Mixed), or unknown; the state at a
//     control-flow merge is the join of the incoming ones, loops iterate to a fixpoint (the
//     lattice has height 5), and a predicated instruction may or may not run (its results are
//     joined with the old values; Note [Guarded values] for instructions under the same guard);
//   - a parameter half comes from constant bank 0 at the parameter base (sm_80 0x160, sm_90 0x210,
//     sm_100 0x380: EIATTR_PARAM_CBANK says, and the SASS of analysis_kernels.cu shows), in a
//     word that a parameter of 8 bytes or more overlaps (a smaller one holds no pointer);
//     additions keep it (IADD3, IMAD's addend, LEA's addend, IMAD.WIDE's pair, moves and
//     selects of the same word); any other operation makes an integer of it, and a loaded value
//     is an integer: used as an address base, an integer names no word;
//   - a global, generic or atomic access reaches the words whose halves both the address's low
//     and high register carry (Lo(W):Hi(W'): W and W' intersected, plus integer registers and
//     immediates); none makes the writes (or reads) unknown; so do bulk
//     and TMA copies, surface stores, indirect branches and calls (but a failed assert's call,
//     Note [System calls]), calls out of the cubin, and any opcode the tables (opcodes.cc) do
//     not know;
//   - a register that may carry a parameter's pointer stored anywhere (global, shared, local
//     memory) lets the pointer escape, and what later reads it back is beyond the analysis: when
//     the register carries halves of known words (Lo(W), Hi(W), Mixed(W)) the verdict records W in
//     `escapes` and stays exact on the condition of Note [Conditional escapes]; an unknown
//     register makes the writes unknown;
//   - direct calls are followed context-insensitively: the callee starts from the join of its
//     call sites' states and every return flows to every return site, but only with the
//     registers the code reachable from the callee up to its returns names (as destinations
//     DestinationWidth wide); the others keep the call site's value, since a return goes back
//     to the instruction after the call that entered the callee (nvcc passes that address in a
//     register: `MOV R20, 0x..; CALL.REL.NOINC f` ... `RET.REL.NODEC R20`). A callee that
//     reaches no return (nvcc's `@P0 CALL.REL.NOINC` to an EXIT) gives no such edge.
// Assumption: the program forms addresses by pointer arithmetic (C++'s rules): an integer made
// from a pointer by anything but addition (a product, a shift, a mask) is not added back to
// another parameter's pointer to reach a different allocation; of a sum of two words' values
// only one is a pointer (the other an 8-byte integer: an offset, a stride); the two halves of one
// address come from the same pointer value (the compiler moves, selects and merges a pointer's
// halves together). An address an integer computation assembles from the halves of different
// words is caught when those halves stay apart (k_halves in analysis_kernels.cu), not when two
// independent selects over the same words pick them.
//
// Note [Conditional escapes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A word whose value the kernel may store to memory (KernelVerdict::escapes) is not always a
// pointer: PyTorch's by-value functors hold scalars (ReLU's threshold, FillFunctor<long>'s value)
// in words that a parameter of 8 bytes or more overlaps, so ParamLayout::MayHoldPointer cannot
// rule a pointer out, and making every such kernel unknown left ReLU's outputs unrecomputable.
// The analysis cannot tell, but the launch can: interpose/hooks/launch/kernel_args.cc
// (EscapeVerdict) reads each escaping word's 64-bit value from the launch's parameters, and when
// one points into memory pooch knows (an allocation of the residency manager's, freed-but-held
// too, or a small allocator's slab) the launch runs with no verdict, unknown exactly as a kernel
// the analysis gave up on; otherwise the exact verdict applies, recipes included. Sound because:
//   - a pointer is an 8-byte object at an 8-byte-aligned offset of its parameter (a struct
//     member too: C++'s alignment), and a parameter that may hold one is 8-byte aligned in the
//     buffer, so a pointer is always one whole buffer word: it never straddles two words, and
//     reading the word at W gives it whole; a word no single parameter covers holds none;
//   - the stored value is a half of one of W plus integers, or an integer (Lo(W), Hi(W),
//     Mixed(W)); under the assumption above
//     (only one summand of a sum is a pointer; a loaded value is an integer, and re-storing a
//     pointer that was already in memory is no escape, as everywhere in this analysis) it can
//     be a pointer into pooch's memory only if W's value is one;
//   - a replay reuses the launch's parameter buffer, so it stores the same bytes again.
// Assumed, besides the above: a word whose value points into no memory pooch knows stays no
// pointer of pooch's for whatever reads the stored copy back (an address pooch allocates later
// was free at the launch: using the copy so is a dangling pointer in the program). A pointer's
// value that happens to equal a scalar's bits only makes the launch unknown, never wrong.
//
// A kernel's outputs are replayable (the same bytes again) when its writes and reads are known,
// it uses no atomics (their order is not fixed) and no clock, and no word is both read and
// written (an in-place kernel needs its input as it was: the chains of issue 36).
#ifndef POOCH_CORE_KERNELS_ANALYSIS_H_
#define POOCH_CORE_KERNELS_ANALYSIS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/kernels/sass.h"
#include "core/kernels/verdict.h"

namespace pooch::kernels {

struct ParamLayout {
  int cbank_offset = 0;  // where the parameters start in constant bank 0
  int size = 0;          // bytes of parameters
  // Each parameter's offset and size, when known. A word that only parameters of 4 bytes or
  // less overlap holds no pointer: its halves are integers (a kernel storing a float scalar
  // lets nothing escape). Empty: every word may hold one.
  std::vector<std::pair<int, int>> params;

  bool MayHoldPointer(int word) const;
};

// The parameter base for an architecture ("sm_90"), for when a cubin does not say.
int DefaultParamBase(const std::string& arch);

// Analyses kernel `name` of `program` with parameters at `layout`; `bank4_symbols` is the
// cubin's (CubinInfo), for the calls Note [System calls] follows.
KernelVerdict AnalyzeKernel(const SassProgram& program, const std::string& name,
                            const ParamLayout& layout,
                            const std::map<int, std::string>& bank4_symbols = {});

}  // namespace pooch::kernels

#endif  // POOCH_CORE_KERNELS_ANALYSIS_H_
