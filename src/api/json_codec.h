#pragma once

// JSON codecs for the object model (model.h), in the Kubernetes wire form: camelCase field names
// (metadata.namespace, spec.nodeName, spec.minMember, ...), quantities as strings.
//
// Decoding follows encoding/json as the API server uses it:
//   - unknown fields are ignored; a field that is absent or null keeps the model's default;
//   - a null array element or map value decodes as the element type's zero value;
//   - quantities may be JSON strings or numbers (`nvidia.com/gpu: 1`, `cpu: 0.5`);
//   - integer fields take JSON numbers with an integral value (2 or 2.0) in the field's range;
//   - strings (label and annotation values included) must be JSON strings;
//   - apiVersion and kind, where present, must name the decoded type.
// Every error is absl::InvalidArgumentError whose message starts with the full field path, e.g.
//   spec.containers[0].resources.requests.cpu: quantity "2x": unknown suffix "x"
//   spec.minMember: expected an integer, got string
//
// Encoding omits fields that are empty or zero (Kubernetes' omitempty) unless the model's default
// for the field is non-zero (Queue spec.weight, Toleration operator, ...), in which case it is
// always written, so that Decode(Encode(x)) == x for every x. Map keys come out sorted; the output
// is deterministic.
//
// Thread-safety: all functions are pure.

#include <variant>

#include "absl/status/statusor.h"
#include "api/model.h"
#include "boost/json/value.hpp"

namespace muster::api {

absl::StatusOr<Pod> DecodePod(const boost::json::value& json);
absl::StatusOr<Node> DecodeNode(const boost::json::value& json);
absl::StatusOr<PodGroup> DecodePodGroup(const boost::json::value& json);
absl::StatusOr<Queue> DecodeQueue(const boost::json::value& json);
absl::StatusOr<PriorityClass> DecodePriorityClass(const boost::json::value& json);
absl::StatusOr<HyperNode> DecodeHyperNode(const boost::json::value& json);
// A metav1.LabelSelector (matchLabels, matchExpressions), as a PodDisruptionBudget's spec.selector.
absl::StatusOr<LabelSelector> DecodeLabelSelector(const boost::json::value& json);

// Every kind the codecs know, with its apiVersion:
//   v1 Pod, v1 Node, scheduling.k8s.io/v1 PriorityClass,
//   scheduling.volcano.sh/v1beta1 PodGroup, scheduling.volcano.sh/v1beta1 Queue,
//   topology.volcano.sh/v1alpha1 HyperNode.
using Object = std::variant<Pod, Node, PodGroup, Queue, PriorityClass, HyperNode>;

// Decodes by apiVersion and kind; an unknown pair is an error naming both.
absl::StatusOr<Object> DecodeObject(const boost::json::value& json);

// Encoders write apiVersion and kind first, then metadata, spec (or the kind's top-level fields)
// and status.
boost::json::value EncodePod(const Pod& pod);
boost::json::value EncodeNode(const Node& node);
boost::json::value EncodePodGroup(const PodGroup& pod_group);
boost::json::value EncodeQueue(const Queue& queue);
boost::json::value EncodePriorityClass(const PriorityClass& priority_class);
boost::json::value EncodeHyperNode(const HyperNode& hyper_node);
boost::json::value EncodeObject(const Object& any);

}  // namespace muster::api
