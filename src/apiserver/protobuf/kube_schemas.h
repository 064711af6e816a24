#pragma once

// The Kubernetes schemas the protobuf decoder (protobuf.h) reads: a serialized
// google.protobuf.FileDescriptorSet of k8s.io/api's and k8s.io/apimachinery's generated.proto files
// with all their imports, dependencies before dependants. Generated at build time, never committed
// (kube_schemas.cmake says where the .proto files come from).

#include <span>
#include <string_view>

#include "apiserver/embedded_file.h"

namespace muster::apiserver {

// The one embedded file, kube_descriptors.pb (embed_files.cmake).
std::span<const EmbeddedFile> KubeDescriptorFiles();

// The descriptor set's bytes; static storage, thread-safe.
inline std::string_view KubeDescriptorSet() { return KubeDescriptorFiles().front().content; }

}  // namespace muster::apiserver
