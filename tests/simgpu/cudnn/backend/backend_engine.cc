// The backend API's execution descriptors: operation graph, engine, engine config, engine
// heuristics, knob choices, execution plan and variant pack (Note [Backend API] in backend.h),
// plus the kernel cache and device properties, which simgpu accepts and ignores: it compiles no
// kernels and its one engine does not depend on the device.
#include <set>

#include "backend.h"
#include "backend_attr.h"

namespace simgpu::cudnn::backend {
namespace {

// Engine 1's note, and empty lists (one element each only so that no pointer is null).
constexpr cudnnBackendNumericalNote_t kTensorCoreNote[1] = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE};
constexpr cudnnBackendBehaviorNote_t kNoBehaviorNotes[1] = {};
constexpr int64_t kNoUids[1] = {};

template <typename Obj, typename Info>
std::shared_ptr<const Info> InfoOf(const std::shared_ptr<Object>& o) {
  const Obj* p = dynamic_cast<const Obj*>(o.get());
  return p != nullptr ? p->info() : nullptr;
}

// The deprecated handle attributes: stored and reported, not needed (Execute takes the handle).
cudnnStatus_t SetHandle(const SetArgs& a, cudnnHandle_t* out) {
  SIMGPU_RETURN_IF_ERROR(SetOne(a, CUDNN_TYPE_HANDLE, out));
  return *out != nullptr ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

// Device properties for heuristics or engines: accepted, finalized, ignored.
cudnnStatus_t AcceptDeviceProp(const SetArgs& a) {
  std::shared_ptr<Object> o;
  return SetDesc(a, CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, &o);
}

// ---- Operation graph ----

class GraphObject : public InfoObject<GraphInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    switch (name) {
      case CUDNN_ATTR_OPERATIONGRAPH_OPS: {
        std::vector<Desc*> descs;
        SIMGPU_RETURN_IF_ERROR(SetDescs(a, 1, 1 << 20, &descs));
        std::vector<std::shared_ptr<const OpInfo>> ops;
        for (Desc* d : descs) {
          ops.push_back(OpOf(d->object));
          if (ops.back() == nullptr) return CUDNN_STATUS_BAD_PARAM;
        }
        draft().ops = std::move(ops);
        return CUDNN_STATUS_SUCCESS;
      }
      case CUDNN_ATTR_OPERATIONGRAPH_HANDLE:
        return SetHandle(a, &draft().handle);
      case CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED: {
        bool dynamic = false;
        SIMGPU_RETURN_IF_ERROR(SetOne(a, CUDNN_TYPE_BOOLEAN, &dynamic));
        if (!dynamic) return CUDNN_STATUS_SUCCESS;
        return NotSupported("cudnnBackendSetAttribute", "operation graphs with dynamic shapes");
      }
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    switch (name) {
      case CUDNN_ATTR_OPERATIONGRAPH_OPS: {
        return GetOpDescs(a, current().ops);
      }
      case CUDNN_ATTR_OPERATIONGRAPH_HANDLE:
        return GetOne(a, CUDNN_TYPE_HANDLE, current().handle);
      case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
        if (!finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
        return GetOne(a, CUDNN_TYPE_INT64, kEngineCount);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Finalize() override {
    SIMGPU_RETURN_IF_ERROR(FinalizeGraph(&draft()));
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }
};

// ---- Engine ----

class EngineObject : public InfoObject<EngineInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    switch (name) {
      case CUDNN_ATTR_ENGINE_OPERATION_GRAPH: {
        std::shared_ptr<Object> o;
        SIMGPU_RETURN_IF_ERROR(SetDesc(a, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &o));
        draft().graph = InfoOf<GraphObject, GraphInfo>(o);
        return CUDNN_STATUS_SUCCESS;
      }
      case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
        return Mark(SetOne(a, CUDNN_TYPE_INT64, &draft().index), &index_set_);
      case CUDNN_ATTR_ENGINE_SM_COUNT_TARGET: {
        int32_t sms;  // one engine for every SM count
        return SetOne(a, CUDNN_TYPE_INT32, &sms);
      }
      case CUDNN_ATTR_ENGINE_DEVICEPROP:
        return AcceptDeviceProp(a);
      case CUDNN_ATTR_ENGINE_DISABLE_CLUSTER_COOPERATIVE: {
        bool disable;  // the engine launches no clusters
        return SetOne(a, CUDNN_TYPE_BOOLEAN, &disable);
      }
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    switch (name) {
      case CUDNN_ATTR_ENGINE_OPERATION_GRAPH:
        if (current().graph == nullptr) {
          return GetDescs(a, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, {});
        }
        return GetDescs(a, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                        {std::make_shared<GraphObject>(current().graph)});
      case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
        return GetOne(a, CUDNN_TYPE_INT64, current().index);
      // No knobs, no preferred layout, no behaviour notes (no runtime compilation); engine 1
      // uses tensor cores (Note [Backend API]).
      case CUDNN_ATTR_ENGINE_KNOB_INFO:
        return GetDescs(a, CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR, {});
      case CUDNN_ATTR_ENGINE_LAYOUT_INFO:
        return GetDescs(a, CUDNN_BACKEND_LAYOUT_INFO_DESCRIPTOR, {});
      case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE:
        return GetValues(a, CUDNN_TYPE_NUMERICAL_NOTE, kTensorCoreNote,
                         current().index == kTensorCoreEngine ? 1 : 0);
      case CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE:
        return GetValues(a, CUDNN_TYPE_BEHAVIOR_NOTE, kNoBehaviorNotes, 0);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Finalize() override {
    if (draft().graph == nullptr || !index_set_) return CUDNN_STATUS_BAD_PARAM;
    if (draft().index < 0 || draft().index >= kEngineCount) return CUDNN_STATUS_BAD_PARAM;
    if (draft().index == kTensorCoreEngine && draft().graph->tensor_core_speedup <= 1.0) {
      return NotSupported("cudnnBackendFinalize",
                          "engine %d (tensor cores) for a graph whose data the preset's GPU does "
                          "not run on tensor cores",
                          static_cast<int>(kTensorCoreEngine));
    }
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  bool index_set_ = false;
};

// ---- Knobs: the engine has none, so a choice can be described but never applied. ----

struct KnobChoiceInfo {
  cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
  int64_t value = 0;
};

class KnobChoiceObject : public InfoObject<KnobChoiceInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    switch (name) {
      case CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE:
        return Mark(SetOne(a, CUDNN_TYPE_KNOB_TYPE, &draft().type), &type_set_);
      case CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE:
        return Mark(SetOne(a, CUDNN_TYPE_INT64, &draft().value), &value_set_);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }
  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    switch (name) {
      case CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE:
        return GetOne(a, CUDNN_TYPE_KNOB_TYPE, current().type);
      case CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE:
        return GetOne(a, CUDNN_TYPE_INT64, current().value);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }
  cudnnStatus_t Finalize() override {
    if (!type_set_ || !value_set_) return CUDNN_STATUS_BAD_PARAM;
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  bool type_set_ = false, value_set_ = false;
};

// Knob information is only ever filled by an engine's CUDNN_ATTR_ENGINE_KNOB_INFO, which has
// none, so these descriptors stay empty.
class KnobInfoObject : public Object {
 public:
  cudnnStatus_t Set(cudnnBackendAttributeName_t, const SetArgs&) override {
    return CUDNN_STATUS_BAD_PARAM;  // read-only
  }
  cudnnStatus_t Get(cudnnBackendAttributeName_t, const GetArgs&) const override {
    return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  }
  cudnnStatus_t Finalize() override { return CUDNN_STATUS_BAD_PARAM; }
};

// ---- Engine config ----

class EngineConfigObject : public InfoObject<EngineConfigInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    switch (name) {
      case CUDNN_ATTR_ENGINECFG_ENGINE: {
        std::shared_ptr<Object> o;
        SIMGPU_RETURN_IF_ERROR(SetDesc(a, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &o));
        draft().engine = InfoOf<EngineObject, EngineInfo>(o);
        return CUDNN_STATUS_SUCCESS;
      }
      case CUDNN_ATTR_ENGINECFG_KNOB_CHOICES: {
        std::vector<Desc*> choices;
        SIMGPU_RETURN_IF_ERROR(SetDescs(a, 0, CUDNN_KNOB_TYPE_COUNTS, &choices));
        for (Desc* d : choices) {
          if (d->type != CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM;
        }
        if (choices.empty()) return CUDNN_STATUS_SUCCESS;
        return NotSupported("cudnnBackendSetAttribute",
                            "knob choices (simgpu's one engine has no knobs)");
      }
      case CUDNN_ATTR_ENGINECFG_INTERMEDIATE_INFO:
        return NotSupported("cudnnBackendSetAttribute", "engine config intermediate info");
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    switch (name) {
      case CUDNN_ATTR_ENGINECFG_ENGINE:
        if (current().engine == nullptr) return GetDescs(a, CUDNN_BACKEND_ENGINE_DESCRIPTOR, {});
        return GetDescs(a, CUDNN_BACKEND_ENGINE_DESCRIPTOR,
                        {std::make_shared<EngineObject>(current().engine)});
      case CUDNN_ATTR_ENGINECFG_KNOB_CHOICES:
        return GetDescs(a, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, {});
      case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
      case CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED:
        if (!finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
        return GetOne(a, CUDNN_TYPE_INT64, int64_t{0});
      case CUDNN_ATTR_ENGINECFG_INTERMEDIATE_INFO:
        return NotSupported("cudnnBackendGetAttribute", "engine config intermediate info");
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Finalize() override {
    if (draft().engine == nullptr) return CUDNN_STATUS_BAD_PARAM;
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }
};

// ---- Engine heuristics ----

struct HeuristicsInfo {
  std::shared_ptr<const GraphInfo> graph;
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_INSTANT;
  std::vector<std::shared_ptr<const EngineConfigInfo>> results;  // set by Finalize, best first
};

class HeuristicsObject : public InfoObject<HeuristicsInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    switch (name) {
      case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH: {
        std::shared_ptr<Object> o;
        SIMGPU_RETURN_IF_ERROR(SetDesc(a, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &o));
        draft().graph = InfoOf<GraphObject, GraphInfo>(o);
        return CUDNN_STATUS_SUCCESS;
      }
      case CUDNN_ATTR_ENGINEHEUR_MODE: {
        cudnnBackendHeurMode_t mode;
        SIMGPU_RETURN_IF_ERROR(SetOne(a, CUDNN_TYPE_HEUR_MODE, &mode));
        if (mode < CUDNN_HEUR_MODE_INSTANT || mode >= CUDNN_HEUR_MODES_COUNT) {
          return CUDNN_STATUS_BAD_PARAM;
        }
        draft().mode = mode;
        mode_set_ = true;
        return CUDNN_STATUS_SUCCESS;
      }
      case CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET: {
        int32_t sms;  // every mode and SM count ranks the one engine first
        return SetOne(a, CUDNN_TYPE_INT32, &sms);
      }
      case CUDNN_ATTR_ENGINEHEUR_DEVICEPROP:
        return AcceptDeviceProp(a);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    switch (name) {
      case CUDNN_ATTR_ENGINEHEUR_RESULTS:
        if (!finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
        {
          std::vector<std::shared_ptr<Object>> configs;
          for (const auto& c : current().results) {
            configs.push_back(std::make_shared<EngineConfigObject>(c));
          }
          return GetDescs(a, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, configs);
        }
      case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH:
        if (current().graph == nullptr) {
          return GetDescs(a, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, {});
        }
        return GetDescs(a, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                        {std::make_shared<GraphObject>(current().graph)});
      case CUDNN_ATTR_ENGINEHEUR_MODE:
        return GetOne(a, CUDNN_TYPE_HEUR_MODE, current().mode);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  // Every mode ranks the engines the same: tensor cores first where the graph has them, then the
  // fp32 units; no knob choices.
  cudnnStatus_t Finalize() override {
    HeuristicsInfo& h = draft();
    if (h.graph == nullptr || !mode_set_) return CUDNN_STATUS_BAD_PARAM;
    h.results.clear();
    for (int64_t index : {kTensorCoreEngine, kFp32Engine}) {
      if (index == kTensorCoreEngine && h.graph->tensor_core_speedup <= 1.0) continue;
      auto engine = std::make_shared<EngineInfo>();
      engine->graph = h.graph;
      engine->index = index;
      auto config = std::make_shared<EngineConfigInfo>();
      config->engine = engine;
      h.results.push_back(config);
    }
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }

 private:
  bool mode_set_ = false;
};

// ---- Execution plan ----

class PlanObject : public InfoObject<PlanInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    switch (name) {
      case CUDNN_ATTR_EXECUTION_PLAN_HANDLE:
        return SetHandle(a, &draft().handle);
      case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG: {
        std::shared_ptr<Object> o;
        SIMGPU_RETURN_IF_ERROR(SetDesc(a, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &o));
        draft().config = InfoOf<EngineConfigObject, EngineConfigInfo>(o);
        return CUDNN_STATUS_SUCCESS;
      }
      case CUDNN_ATTR_EXECUTION_PLAN_KERNEL_CACHE: {
        std::shared_ptr<Object> o;  // nothing is compiled, so nothing is cached
        return SetDesc(a, CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR, &o);
      }
      case CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP:
        return AcceptDeviceProp(a);
      case CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION:
        return NotSupported("cudnnBackendSetAttribute", "execution plans from JSON");
      case CUDNN_ATTR_EXECUTION_PLAN_RUN_ONLY_INTERMEDIATE_UIDS:
        return NotSupported("cudnnBackendSetAttribute", "run-only intermediate uids");
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    switch (name) {
      case CUDNN_ATTR_EXECUTION_PLAN_HANDLE:
        return GetOne(a, CUDNN_TYPE_HANDLE, current().handle);
      case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
        if (current().config == nullptr) {
          return GetDescs(a, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, {});
        }
        return GetDescs(a, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                        {std::make_shared<EngineConfigObject>(current().config)});
      case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
        if (!finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
        return GetOne(a, CUDNN_TYPE_INT64, current().workspace);
      case CUDNN_ATTR_EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS:
        if (!finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
        return GetValues(a, CUDNN_TYPE_INT64, kNoUids, 0);
      case CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION:
        return NotSupported("cudnnBackendGetAttribute",
                            "JSON representation of an execution plan (simgpu's plans are not "
                            "serializable)");
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Finalize() override {
    if (draft().config == nullptr) return CUDNN_STATUS_BAD_PARAM;
    draft().workspace = 0;  // Note [Backend API]
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }
};

// ---- Variant pack ----

class VariantPackObject : public InfoObject<VariantPackInfo> {
 public:
  using InfoObject::InfoObject;

  cudnnStatus_t Set(cudnnBackendAttributeName_t name, const SetArgs& a) override {
    VariantPackInfo& v = draft();
    switch (name) {
      case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS:
        if (a.count < 0) return CUDNN_STATUS_BAD_PARAM;
        v.uids.resize(static_cast<size_t>(a.count));
        return SetValues(a, CUDNN_TYPE_INT64, 0, a.count, v.uids.data());
      case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
        if (a.count < 0) return CUDNN_STATUS_BAD_PARAM;
        v.pointers.resize(static_cast<size_t>(a.count));
        return SetValues(a, CUDNN_TYPE_VOID_PTR, 0, a.count, v.pointers.data());
      case CUDNN_ATTR_VARIANT_PACK_WORKSPACE:
        return SetOne(a, CUDNN_TYPE_VOID_PTR, &v.workspace);
      case CUDNN_ATTR_VARIANT_PACK_INTERMEDIATES:
        return NotSupported("cudnnBackendSetAttribute", "variant pack intermediates");
      case CUDNN_ATTR_VARIANT_PACK_OVERRIDE_UNIQUE_IDS:
      case CUDNN_ATTR_VARIANT_PACK_OVERRIDE_SHAPES:
      case CUDNN_ATTR_VARIANT_PACK_OVERRIDE_STRIDES:
        return NotSupported("cudnnBackendSetAttribute", "variant pack shape overrides");
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  cudnnStatus_t Get(cudnnBackendAttributeName_t name, const GetArgs& a) const override {
    const VariantPackInfo& v = current();
    switch (name) {
      case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS:
        return GetValues(a, CUDNN_TYPE_INT64, v.uids.data(), static_cast<int64_t>(v.uids.size()));
      case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
        return GetValues(a, CUDNN_TYPE_VOID_PTR, v.pointers.data(),
                         static_cast<int64_t>(v.pointers.size()));
      case CUDNN_ATTR_VARIANT_PACK_WORKSPACE:
        return GetOne(a, CUDNN_TYPE_VOID_PTR, v.workspace);
      default:
        return CUDNN_STATUS_BAD_PARAM;
    }
  }

  // One pointer per uid, uids distinct.
  cudnnStatus_t Finalize() override {
    const VariantPackInfo& v = draft();
    if (v.uids.size() != v.pointers.size()) return CUDNN_STATUS_BAD_PARAM;
    if (std::set<int64_t>(v.uids.begin(), v.uids.end()).size() != v.uids.size()) {
      return CUDNN_STATUS_BAD_PARAM;
    }
    Freeze();
    return CUDNN_STATUS_SUCCESS;
  }
};

// Kernel caches and device properties: any attribute is accepted and has no effect.
class InertObject : public Object {
 public:
  cudnnStatus_t Set(cudnnBackendAttributeName_t, const SetArgs&) override {
    return CUDNN_STATUS_SUCCESS;
  }
  cudnnStatus_t Get(cudnnBackendAttributeName_t, const GetArgs&) const override {
    return CUDNN_STATUS_BAD_PARAM;
  }
  cudnnStatus_t Finalize() override {
    finalized = true;
    return CUDNN_STATUS_SUCCESS;
  }
};

// The name of a descriptor type simgpu does not implement, for its not-supported line.
const char* UnsupportedTypeName(cudnnBackendDescriptorType_t type) {
  switch (type) {
#define SIMGPU_NAME(t)    \
  case CUDNN_BACKEND_##t: \
    return "CUDNN_BACKEND_" #t;
    SIMGPU_NAME(INTERMEDIATE_INFO_DESCRIPTOR)
    SIMGPU_NAME(LAYOUT_INFO_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_GEN_STATS_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR)
    SIMGPU_NAME(RESAMPLE_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_RESAMPLE_FWD_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_RESAMPLE_BWD_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_CONCAT_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_SIGNAL_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_NORM_FORWARD_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_NORM_BACKWARD_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_RESHAPE_DESCRIPTOR)
    SIMGPU_NAME(RNG_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_RNG_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_BLOCK_SCALE_QUANTIZE_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_BLOCK_SCALE_DEQUANTIZE_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_EXPAND_BAND_MATRIX_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_CONTRACT_BAND_MATRIX_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_SDPA_FWD_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_MOE_GROUPED_MATMUL_DESCRIPTOR)
    SIMGPU_NAME(OPERATION_SDPA_BWD_DESCRIPTOR)
#undef SIMGPU_NAME
    default:
      return "an unknown descriptor type";
  }
}

}  // namespace

std::shared_ptr<Object> NewObject(cudnnBackendDescriptorType_t type) {
  if (std::shared_ptr<Object> o = NewDataObject(type)) return o;
  switch (type) {
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      return std::make_shared<GraphObject>();
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
      return std::make_shared<EngineObject>();
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      return std::make_shared<EngineConfigObject>();
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      return std::make_shared<HeuristicsObject>();
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      return std::make_shared<PlanObject>();
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      return std::make_shared<VariantPackObject>();
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
      return std::make_shared<KnobChoiceObject>();
    case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR:
      return std::make_shared<KnobInfoObject>();
    case CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR:
    case CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR:
      return std::make_shared<InertObject>();
    default:
      NotSupported("cudnnBackendCreateDescriptor", "%s (%d)", UnsupportedTypeName(type),
                   static_cast<int>(type));
      return nullptr;
  }
}

std::shared_ptr<const GraphInfo> GraphOf(const std::shared_ptr<Object>& o) {
  return InfoOf<GraphObject, GraphInfo>(o);
}
std::shared_ptr<const EngineInfo> EngineOf(const std::shared_ptr<Object>& o) {
  return InfoOf<EngineObject, EngineInfo>(o);
}
std::shared_ptr<const EngineConfigInfo> EngineConfigOf(const std::shared_ptr<Object>& o) {
  return InfoOf<EngineConfigObject, EngineConfigInfo>(o);
}
std::shared_ptr<const PlanInfo> PlanOf(const std::shared_ptr<Object>& o) {
  return InfoOf<PlanObject, PlanInfo>(o);
}
std::shared_ptr<const VariantPackInfo> VariantPackOf(const std::shared_ptr<Object>& o) {
  return InfoOf<VariantPackObject, VariantPackInfo>(o);
}

}  // namespace simgpu::cudnn::backend
