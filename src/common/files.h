#pragma once

// Directories muster keeps private data in (the store, credentials, logs): created owner-only.

#include <string>

#include "absl/status/status.h"

namespace muster::common {

// Creates `path` and any missing parent, each with mode 0700 whatever the umask. Directories that
// already exist are left as they are, their mode included. Unavailable, naming the directory, when
// one cannot be made or a path component is not a directory.
absl::Status CreatePrivateDirectories(const std::string& path);

}  // namespace muster::common
