#include "apiserver/admission/kinds.h"

// Nodes: muster's own check of the one annotation the scheduler reads from a Node,
// muster.dev/gpu-topology (api/gpu_topology.h), so that a malformed value written with kubectl
// is refused with the field named rather than ignored by the scheduler's nvlink plugin.
// kube-apiserver has no such rule; on a real cluster the plugin ignores a value it cannot read.

#include <optional>
#include <string>

#include "api/gpu_topology.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"

namespace muster::apiserver::admission {

std::optional<ApiError> AdmitNode(Context& c) {
  const json::value* meta = c.obj.if_contains("metadata");
  if (meta == nullptr || !meta->is_object()) return std::nullopt;
  const json::value* annotations = meta->get_object().if_contains("annotations");
  if (annotations == nullptr || !annotations->is_object()) return std::nullopt;
  const json::value* topology = annotations->get_object().if_contains(api::kGpuTopologyAnnotation);
  if (topology == nullptr || !topology->is_string()) return std::nullopt;
  const std::string text(topology->get_string());
  absl::StatusOr<api::GpuTopology> parsed = api::ParseGpuTopology(text);
  if (!parsed.ok()) {
    c.errs.InvalidString(std::string("metadata.annotations[") + api::kGpuTopologyAnnotation + "]",
                         text, std::string(parsed.status().message()));
  }
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
