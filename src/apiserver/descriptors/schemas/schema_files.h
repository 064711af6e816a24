#pragma once

// The OpenAPI schema files of this folder (README.md: what they hold and where it comes from),
// compiled into the binary by src/apiserver/embed_files.cmake. openapi.cc parses them once; tests
// read them to check that every schema is well-formed and used.

#include <span>

#include "apiserver/embedded_file.h"

namespace muster::apiserver {

// Every schemas/*.json file, in the order CMakeLists.txt lists them.
std::span<const EmbeddedFile> OpenApiSchemaFiles();

}  // namespace muster::apiserver
