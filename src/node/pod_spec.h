#pragma once

// Readers for the parts of a pod object the node agent acts on, shared by the pod worker's life
// cycle (pod_worker.cc), its status (pod_status.cc) and the container launches
// (container_launch.h): resource quantities as the API writes them, the devices a container asks
// for, annotations and labels, and the kubelet's name for a pod in messages. A missing or
// malformed field reads as absent, as the kubelet treats what validation let through.
//
// Thread-safety: pure functions.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "api/model.h"
#include "boost/json/object.hpp"
#include "common/quantity.h"

namespace muster::node {

// The quantity of `resource` in a container's resources.<kind> ("requests", "limits"); nullopt
// when absent or not a quantity.
std::optional<common::Quantity> ResourceOf(const boost::json::object& container,
                                           std::string_view kind, std::string_view resource);

// Every quantity of a resource list (resources.requests, spec.overhead); bad ones are left out.
api::ResourceList Quantities(const boost::json::object* list);

// A container's requests as the API server defaults them: a resource given only in limits is
// requested at its limit.
api::ResourceList ContainerRequests(const boost::json::object& container);

// The devices a container asks for: its nvidia.com/* resources (GPUs, MIG devices, shared GPUs),
// limits where given, else requests; a GPU share (muster.dev/gpu-milli) counts as the one GPU it
// is part of.
std::map<std::string, int> DeviceCounts(const boost::json::object& container);

// metadata.annotations[key] of a pod; empty when absent.
std::string Annotation(const boost::json::object& pod, std::string_view key);

// metadata.<map>[key] of a pod, `map` being "labels" or "annotations"; empty when absent.
std::string LabelOrAnnotation(const boost::json::object& pod, std::string_view map,
                              std::string_view key);

// The kubelet's name for a pod in events and messages (format.Pod): "name_ns(uid)".
std::string PodDescription(const std::string& ns, const std::string& name, const std::string& uid);

}  // namespace muster::node
