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

std::optional<ReplayRecipe> KernelRecipe(const char* name,
                                         const pooch::kernels::KernelVerdict& verdict,
                                         ParamBuffer params, AllocationLookup lookup,
                                         Relaunch relaunch) {
  if (!ReplayableAsLink(verdict) || relaunch == nullptr) return std::nullopt;
  const std::optional<std::set<uint64_t>> written = WordsAt(params.bytes, verdict.writes);
  const std::optional<std::set<uint64_t>> read = WordsAt(params.bytes, verdict.reads);
  if (!written || !read || written->size() != 1) return std::nullopt;
  const pooch::DeviceAddress output = *written->begin();
  const std::optional<pooch::AllocationInfo> out = lookup(output);
  if (!out.has_value() || out->address != output) return std::nullopt;
  ReplayRecipe recipe;
  recipe.name = name != nullptr ? name : "kernel launch";
  recipe.kernel = true;
  recipe.output = output;
  recipe.output_bytes = out->bytes;
  bool reads_output = false;
  for (uint64_t word : *read) {
    if (word >= output && word < output + static_cast<uint64_t>(out->bytes)) {
      reads_output = true;
      continue;
    }
    recipe.inputs.push_back({word, 1, pooch::AccessRange::Mode::kRead});
  }
  // Note [Kernel links]: the chain's previous state, as an in-place cuDNN call's recipe reads it.
  if (reads_output) {
    recipe.inputs.push_back({output, out->bytes, pooch::AccessRange::Mode::kRead});
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
