// nvtx_injection.cc: POOCH_ITERATION_MARKER=nvtx. libpooch.so is an NVTX injection library.
//
// NVTX (the header-only nvtx3 a program or its framework is built with) loads the library that
// NVTX_INJECTION64_PATH names at the program's first NVTX call and calls its
// InitializeInjectionNvtx2, which fills in the functions NVTX calls from then on. Start-up
// (Process::Start, interpose/process/process.cc) points that variable at libpooch.so itself when
// the marker is nvtx and the variable is unset; when another tool (Nsight Systems) already holds
// it, pooch says so at start-up and makes no profile, since no iteration is ever marked.
//
// Each range pushed or started with the message "pooch:iteration" marks the start of an
// iteration (the explicit-marker path of core/profile/iteration_tracker.h, as a device
// synchronisation does with POOCH_ITERATION_MARKER=sync). Other ranges are ignored. Push and pop
// keep the per-thread nesting depth NVTX's API returns.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cstring>

#include "core/config/config.h"
#include "interpose/process/managed.h"

namespace pooch::interpose {
namespace {

constexpr char kIterationRange[] = "pooch:iteration";

thread_local int g_depth = 0;

void Mark(const char* message) {
  if (message == nullptr || std::strcmp(message, kIterationRange) != 0) return;
  Process::Get().MarkIteration();
}

const char* AsciiMessage(const nvtxEventAttributes_t* a) {
  return a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : nullptr;
}

int PushA(const char* message) {
  Mark(message);
  return g_depth++;
}

int PushEx(const nvtxEventAttributes_t* attributes) {
  Mark(AsciiMessage(attributes));
  return g_depth++;
}

int Pop() { return g_depth > 0 ? --g_depth : -1; }

nvtxRangeId_t StartA(const char* message) {
  Mark(message);
  return 0;
}

nvtxRangeId_t StartEx(const nvtxEventAttributes_t* attributes) {
  Mark(AsciiMessage(attributes));
  return 0;
}

template <typename F>
void Install(NvtxFunctionTable table, unsigned int size, int id, F* function) {
  if (static_cast<unsigned int>(id) < size && table[id] != nullptr) {
    *table[id] = reinterpret_cast<NvtxFunctionPointer>(function);
  }
}

}  // namespace
}  // namespace pooch::interpose

// NVTX's entry point into an injection library. Returns 1 when the functions are installed.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  namespace pi = pooch::interpose;
  if (get_export_table == nullptr ||
      pi::Process::Get().config().iteration_marker != pooch::IterationMarker::kNvtx) {
    return 0;
  }
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) == 0 ||
      table == nullptr) {
    return 0;
  }
  pi::Install(table, size, NVTX_CBID_CORE_RangePushA, &pi::PushA);
  pi::Install(table, size, NVTX_CBID_CORE_RangePushEx, &pi::PushEx);
  pi::Install(table, size, NVTX_CBID_CORE_RangePop, &pi::Pop);
  pi::Install(table, size, NVTX_CBID_CORE_RangeStartA, &pi::StartA);
  pi::Install(table, size, NVTX_CBID_CORE_RangeStartEx, &pi::StartEx);
  return 1;
}
