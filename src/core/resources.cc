#include "core/resources.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "fmt/format.h"

namespace muster::core {
namespace {

struct NameTable {
  std::mutex mu;
  std::vector<std::string> names{"cpu", "memory", api::kGpuResource};
  std::unordered_map<std::string, ResourceId> ids{{"cpu", kCpu}, {"memory", kMemory},
                                                  {api::kGpuResource, kGpu}};
};

NameTable& Table() {
  static NameTable* table = new NameTable();
  return *table;
}

}  // namespace

ResourceId ResourceNames::Id(std::string_view name) {
  NameTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.ids.find(std::string(name));
  if (it != t.ids.end()) return it->second;
  ResourceId id = static_cast<ResourceId>(t.names.size());
  t.names.emplace_back(name);
  t.ids.emplace(std::string(name), id);
  return id;
}

std::string ResourceNames::Name(ResourceId id) {
  NameTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  return id >= 0 && id < static_cast<int>(t.names.size()) ? t.names[id] : "?";
}

int ResourceNames::Count() {
  NameTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  return static_cast<int>(t.names.size());
}

Resources Resources::FromList(const api::ResourceList& list) {
  Resources r;
  for (const auto& [name, q] : list) {
    if (name == "pods") continue;
    r.Set(ResourceNames::Id(name), q.MilliValue());
  }
  return r;
}

void Resources::Set(ResourceId id, int64_t milli) {
  if (id >= static_cast<int>(v_.size())) v_.resize(id + 1, 0);
  v_[id] = milli;
}

Resources& Resources::Add(const Resources& o) {
  if (o.v_.size() > v_.size()) v_.resize(o.v_.size(), 0);
  for (size_t i = 0; i < o.v_.size(); ++i) v_[i] += o.v_[i];
  return *this;
}

Resources& Resources::Sub(const Resources& o) {
  if (o.v_.size() > v_.size()) v_.resize(o.v_.size(), 0);
  for (size_t i = 0; i < o.v_.size(); ++i) v_[i] -= o.v_[i];
  return *this;
}

bool Resources::LessEqual(const Resources& o) const {
  for (size_t i = 0; i < v_.size(); ++i) {
    int64_t other = i < o.v_.size() ? o.v_[i] : 0;
    if (v_[i] > other) return false;
  }
  return true;
}

bool Resources::LessEqualIn(const Resources& o, const Resources& dims) const {
  for (size_t i = 0; i < dims.v_.size(); ++i) {
    if (dims.v_[i] <= 0) continue;
    if (Get(static_cast<ResourceId>(i)) > o.Get(static_cast<ResourceId>(i))) return false;
  }
  return true;
}

bool Resources::LessPartly(const Resources& o) const {
  size_t n = std::max(v_.size(), o.v_.size());
  for (size_t i = 0; i < n; ++i) {
    if (Get(static_cast<ResourceId>(i)) < o.Get(static_cast<ResourceId>(i))) return true;
  }
  return false;
}

ResourceId Resources::FirstExceeding(const Resources& o) const {
  for (size_t i = 0; i < v_.size(); ++i) {
    if (v_[i] > o.Get(static_cast<ResourceId>(i))) return static_cast<ResourceId>(i);
  }
  return -1;
}

bool Resources::IsEmpty() const {
  return std::all_of(v_.begin(), v_.end(), [](int64_t x) { return x <= 0; });
}

Resources& Resources::Min(const Resources& o) {
  size_t n = std::max(v_.size(), o.v_.size());
  v_.resize(n, 0);
  for (size_t i = 0; i < n; ++i) v_[i] = std::min(v_[i], o.Get(static_cast<ResourceId>(i)));
  return *this;
}

Resources& Resources::Max(const Resources& o) {
  size_t n = std::max(v_.size(), o.v_.size());
  v_.resize(n, 0);
  for (size_t i = 0; i < n; ++i) v_[i] = std::max(v_[i], o.Get(static_cast<ResourceId>(i)));
  return *this;
}

std::string Resources::ToString() const {
  std::string out;
  for (size_t i = 0; i < v_.size(); ++i) {
    if (v_[i] == 0) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", ResourceNames::Name(static_cast<ResourceId>(i)),
                       common::Quantity::FromMilli(v_[i]).ToString());
  }
  return out.empty() ? "<empty>" : out;
}

bool Resources::operator==(const Resources& o) const {
  size_t n = std::max(v_.size(), o.v_.size());
  for (size_t i = 0; i < n; ++i) {
    if (Get(static_cast<ResourceId>(i)) != o.Get(static_cast<ResourceId>(i))) return false;
  }
  return true;
}

}  // namespace muster::core
