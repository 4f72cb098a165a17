// kernel_replay.cc: a kernel launch's recipe from its verdict and its copied parameter buffer
// (Note [Kernel recipes] in kernel_replay.h).
#include "interpose/hooks/launch/kernel_replay.h"

#include <cstring>
#include <memory>
#include <set>
#include <utility>

namespace pooch::interpose {
namespace {

// The non-null 8-byte words at `offsets` of the buffer; nullopt when one lies past its end (a
// verdict for another layout: no recipe).
std::optional<std::set<uint64_t>> WordsAt(const std::vector<uint8_t>& buffer,
                                          const std::set<int>& offsets) {
  std::set<uint64_t> words;
  for (int off : offsets) {
    if (off < 0 || static_cast<size_t>(off) + sizeof(uint64_t) > buffer.size()) {
      return std::nullopt;
    }
    uint64_t word = 0;
    std::memcpy(&word, buffer.data() + off, sizeof(word));
    if (word != 0) words.insert(word);
  }
  return words;
}

// Whether relaunching the kernel from the same memory gives the same writes: Replayable, except
// that reading what it writes is allowed (Note [Kernel links]).
bool ReplayableAsLink(const pooch::kernels::KernelVerdict& v) {
  return v.Exact() && !v.uses_atomics && !v.reads_clock;
}

}  // namespace

bool MayReplayKernel(const pooch::kernels::KernelVerdict* verdict, bool dtr) {
  return !dtr && verdict != nullptr && ReplayableAsLink(*verdict) && !verdict->writes.empty();
}

KernelRecipeWhy KernelRecipeOutputs(const pooch::kernels::KernelVerdict* verdict,
                                    const ParamBuffer& params, AllocationLookup lookup,
                                    KernelOutputs* outputs) {
  if (verdict == nullptr) return KernelRecipeWhy::kNoVerdict;
  if (!verdict->Exact()) return KernelRecipeWhy::kUnknown;
  if (!ReplayableAsLink(*verdict)) return KernelRecipeWhy::kNotReplayable;
  const std::optional<std::set<uint64_t>> written = WordsAt(params.bytes, verdict->writes);
  const std::optional<std::set<uint64_t>> read = WordsAt(params.bytes, verdict->reads);
  if (!written || !read) return KernelRecipeWhy::kLayout;
  if (written->empty()) return KernelRecipeWhy::kNoWrites;
  KernelOutputs found;
  for (uint64_t word : *written) {
    const std::optional<pooch::AllocationInfo> a = lookup(word);
    if (!a.has_value()) return KernelRecipeWhy::kNotBase;
    for (const pooch::AccessRange& other : found.written) {
      // Two words into one allocation: one of them is not its base, or both are (one output).
      if (other.address == a->address) return KernelRecipeWhy::kShared;
    }
    if (a->address != word) return KernelRecipeWhy::kNotBase;
    found.written.push_back({word, a->bytes, pooch::AccessRange::Mode::kWrite});
  }
  bool reads_output = false;
  for (uint64_t word : *read) {
    for (const pooch::AccessRange& out : found.written) {
      if (word >= out.address && word < out.address + static_cast<uint64_t>(out.bytes)) {
        // Its one output, read: the next link of the output's chain (Note [Kernel recipes]).
        if (found.written.size() > 1) return KernelRecipeWhy::kReadWritten;
        reads_output = true;
      }
    }
    found.read.push_back(word);
  }
  if (outputs != nullptr) *outputs = std::move(found);
  return reads_output ? KernelRecipeWhy::kLink : KernelRecipeWhy::kRecipe;
}

std::optional<ReplayRecipe> KernelRecipe(const char* name,
                                         const pooch::kernels::KernelVerdict& verdict,
                                         ParamBuffer params, AllocationLookup lookup,
                                         Relaunch relaunch) {
  KernelOutputs outputs;
  if (relaunch == nullptr) return std::nullopt;
  const KernelRecipeWhy why = KernelRecipeOutputs(&verdict, params, lookup, &outputs);
  if (why != KernelRecipeWhy::kRecipe && why != KernelRecipeWhy::kLink) return std::nullopt;
  ReplayRecipe recipe;
  recipe.name = name != nullptr ? name : "kernel launch";
  recipe.kernel = true;
  recipe.output = outputs.written.front().address;
  recipe.output_bytes = outputs.written.front().bytes;
  // Note [Kernel links]: the chain's previous state, as an in-place cuDNN call's recipe reads it.
  if (why == KernelRecipeWhy::kLink) {
    recipe.inputs.push_back({recipe.output, recipe.output_bytes, pooch::AccessRange::Mode::kRead});
  }
  for (uint64_t word : outputs.read) {
    const bool in_output =
        word >= recipe.output && word < recipe.output + static_cast<uint64_t>(recipe.output_bytes);
    if (!in_output) recipe.inputs.push_back({word, 1, pooch::AccessRange::Mode::kRead});
  }
  // Note [Side outputs] (core/lineage/replay_recipe.h): watched as inputs, made resident before
  // a replay rewrites them with the bytes they hold.
  for (size_t i = 1; i < outputs.written.size(); ++i) {
    const pooch::AccessRange& side = outputs.written[i];
    recipe.side_outputs.push_back(side);
    recipe.inputs.push_back({side.address, side.bytes, pooch::AccessRange::Mode::kRead});
  }
  auto buffer = std::make_shared<const ParamBuffer>(std::move(params));
  recipe.issue = [buffer, relaunch = std::move(relaunch)](uintptr_t stream, void*) {
    // A fresh copy per replay: a kernel's parameters are read-only, but the entry point takes
    // them as non-const pointers.
    std::vector<uint8_t> bytes = buffer->bytes;
    std::vector<void*> args;
    args.reserve(buffer->offsets.size());
    for (size_t off : buffer->offsets) args.push_back(bytes.data() + off);
    return relaunch(stream, args.data());
  };
  return recipe;
}

}  // namespace pooch::interpose
