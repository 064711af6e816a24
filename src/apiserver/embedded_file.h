#pragma once

// A file of the source or build tree compiled into the binary by embed_files.cmake: the OpenAPI
// schemas (schemas/schema_files.h) and Kubernetes' protobuf descriptors (kube_schemas.h).
//
// Thread-safety: the contents are constants, safe to read from any thread.

#include <string_view>

namespace muster::apiserver {

struct EmbeddedFile {
  std::string_view name;     // the file's base name: "core.v1.json"
  std::string_view content;  // its bytes, as they were at build time
};

}  // namespace muster::apiserver
