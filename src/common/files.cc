#include "common/files.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fmt/format.h"

namespace muster::common {

absl::Status CreatePrivateDirectories(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path made;
  for (const fs::path& part : fs::path(path)) {
    made /= part;
    const std::string dir = made.string();
    if (::mkdir(dir.c_str(), 0700) == 0) {
      ::chmod(dir.c_str(), 0700);  // mkdir applies the umask
      continue;
    }
    const int err = errno;
    struct stat st {};
    if (err == EEXIST && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    return absl::UnavailableError(
        fmt::format("cannot create directory {}: {}", dir,
                    err == EEXIST ? "it exists and is not a directory" : std::strerror(err)));
  }
  return absl::OkStatus();
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace muster::common
