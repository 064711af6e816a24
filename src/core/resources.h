#pragma once

// Resource vectors in the engine's integer units (thousandths of the base unit, as
// common::Quantity). Resource names are interned once into small dense ids so that a fit check
// is a loop over a few int64s. The pod count ("pods") is not a resource here: nodes carry it as
// max_pods, as Volcano's MaxTaskNum does.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/model.h"

namespace muster::core {

using ResourceId = int;
inline constexpr ResourceId kCpu = 0;
inline constexpr ResourceId kMemory = 1;
inline constexpr ResourceId kGpu = 2;

// Process-wide, append-only name table. Thread-safe.
class ResourceNames {
 public:
  static ResourceId Id(std::string_view name);
  static std::string Name(ResourceId id);
  static int Count();
};

class Resources {
 public:
  Resources() = default;
  // Every entry of the list except "pods".
  static Resources FromList(const api::ResourceList& list);

  int64_t Get(ResourceId id) const { return id < static_cast<int>(v_.size()) ? v_[id] : 0; }
  void Set(ResourceId id, int64_t milli);
  Resources& Add(const Resources& o);
  Resources& Sub(const Resources& o);
  // Every dimension at most o's (missing dimensions are zero).
  bool LessEqual(const Resources& o) const;
  // Only the dimensions that `dims` requests (> 0) are compared (Volcano's LessEqualWithDimension).
  bool LessEqualIn(const Resources& o, const Resources& dims) const;
  // Some dimension where this is below o's (Volcano's LessPartly).
  bool LessPartly(const Resources& o) const;
  // The first dimension (cpu, memory, then by id) where this exceeds o; -1 when none.
  ResourceId FirstExceeding(const Resources& o) const;
  bool IsEmpty() const;
  // Dimension-wise min and max.
  Resources& Min(const Resources& o);
  Resources& Max(const Resources& o);
  int Size() const { return static_cast<int>(v_.size()); }
  std::string ToString() const;
  bool operator==(const Resources& o) const;

 private:
  std::vector<int64_t> v_;
};

}  // namespace muster::core
