#pragma once

// The dashboard's static files (index.html, dashboard.css, dashboard.js), compiled into the
// binary by embed_files.cmake (src/apiserver/CMakeLists.txt).

#include <span>

#include "apiserver/embedded_file.h"

namespace muster::apiserver {

std::span<const EmbeddedFile> DashboardFiles();

}  // namespace muster::apiserver
