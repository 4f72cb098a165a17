#include "interpose/kernels/module_registry.h"

#include <algorithm>
#include <cstring>

namespace pooch::interpose {

using pooch::kernels::ModuleImage;

ModuleRegistry& ModuleRegistry::Get() {
  static ModuleRegistry* registry = new ModuleRegistry;
  return *registry;
}

int ModuleRegistry::AddImage(const void* image, bool preserved) {
  ModuleImage found = pooch::kernels::FindModuleImage(image);
  if (found.kind == ModuleImage::Kind::kOther) return kNone;
  MutexLock lock(&mu_);
  if (auto it = by_data_.find(found.data); it != by_data_.end()) return it->second;
  const void* key = found.data;
  Module m;
  if (!preserved) {
    m.copy = std::make_unique<uint8_t[]>(found.size);
    std::memcpy(m.copy.get(), found.data, found.size);
    found.data = m.copy.get();
  }
  m.image = found;
  modules_.push_back(std::move(m));
  const int id = static_cast<int>(modules_.size()) - 1;
  // A copied image's caller may reuse its buffer for another module: only preserved images are
  // found again by address.
  if (preserved) by_data_[key] = id;
  return id;
}

void ModuleRegistry::Bind(Handle kind, const void* key, int module, const char* name) {
  if (key == nullptr) return;
  MutexLock lock(&mu_);
  Origin& o = handles_[{static_cast<int>(kind), reinterpret_cast<uintptr_t>(key)}];
  o.module = module;
  o.name = name != nullptr ? name : "";
  if (name != nullptr && module != kNone) {
    std::vector<int>& mods = by_name_[o.name];
    if (std::find(mods.begin(), mods.end(), module) == mods.end()) mods.push_back(module);
  }
}

void ModuleRegistry::Forget(int module) {
  MutexLock lock(&mu_);
  if (module < 0 || module >= static_cast<int>(modules_.size())) return;
  Module& m = modules_[module];
  by_data_.erase(m.image.data);
  m.image = {};
  m.copy.reset();
}

bool ModuleRegistry::Find(Handle kind, const void* key, Origin* out) const {
  MutexLock lock(&mu_);
  auto it = handles_.find({static_cast<int>(kind), reinterpret_cast<uintptr_t>(key)});
  if (it == handles_.end()) return false;
  *out = it->second;
  return true;
}

std::vector<int> ModuleRegistry::ModulesNaming(const std::string& name) const {
  MutexLock lock(&mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? std::vector<int>{} : it->second;
}

ModuleImage ModuleRegistry::Image(int module) const {
  MutexLock lock(&mu_);
  if (module < 0 || module >= static_cast<int>(modules_.size())) return {};
  return modules_[module].image;
}

}  // namespace pooch::interpose
