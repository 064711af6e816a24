#pragma once

// Files and the directories muster keeps private data in (the store, credentials, logs): the
// directories created owner-only.

#include <optional>
#include <string>

#include "absl/status/status.h"

namespace muster::common {

// Creates `path` and any missing parent, each with mode 0700 whatever the umask. Directories that
// already exist are left as they are, their mode included. Unavailable, naming the directory, when
// one cannot be made or a path component is not a directory.
absl::Status CreatePrivateDirectories(const std::string& path);

// The file's bytes; nullopt when it cannot be read (a kubeconfig, a certificate, a token).
std::optional<std::string> ReadFile(const std::string& path);

}  // namespace muster::common
