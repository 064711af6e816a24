#pragma once

// The Kubernetes schemas the protobuf decoder (protobuf.h) reads: a serialized
// google.protobuf.FileDescriptorSet of k8s.io/api's and k8s.io/apimachinery's generated.proto files
// with all their imports, dependencies before dependants. Generated at build time, never committed
// (kube_schemas.cmake says where the .proto files come from).

#include <string_view>

namespace muster::apiserver {

// The descriptor set's bytes; static storage, thread-safe.
std::string_view KubeDescriptorSet();

}  // namespace muster::apiserver
