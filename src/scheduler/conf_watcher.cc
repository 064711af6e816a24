#include "scheduler/conf_watcher.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "fmt/format.h"

namespace muster::scheduler {

ConfWatcher::Stamp ConfWatcher::StatFile() const {
  Stamp s;
  if (path_.empty()) return s;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return s;
  s.exists = true;
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  s.size = static_cast<int64_t>(st.st_size);
  return s;
}

absl::StatusOr<core::SchedulerConf> ConfWatcher::ReadFile() const {
  std::ifstream in(path_);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot open file", path_));
  std::stringstream text;
  text << in.rdbuf();
  auto conf = core::ParseSchedulerConf(text.str());
  if (!conf.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", path_, std::string(conf.status().message())));
  }
  return conf;
}

absl::Status ConfWatcher::Load() {
  seen_ = StatFile();
  if (!seen_.exists) {
    conf_ = core::DefaultSchedulerConf();
    from_file_ = false;
    return absl::OkStatus();
  }
  auto conf = ReadFile();
  if (!conf.ok()) return conf.status();
  conf_ = *std::move(conf);
  from_file_ = true;
  return absl::OkStatus();
}

ConfWatcher::Change ConfWatcher::Poll() {
  Change change;
  Stamp now = StatFile();
  if (now == seen_) return change;
  seen_ = now;
  if (!now.exists) {
    if (from_file_) {
      conf_ = core::DefaultSchedulerConf();
      from_file_ = false;
      change.reloaded = true;
      change.message = fmt::format("{} is gone; using the built-in default configuration", path_);
    }
    return change;
  }
  auto conf = ReadFile();
  if (!conf.ok()) {
    change.error = std::string(conf.status().message());
    change.message = fmt::format("keeping the configuration from {}: {}", Source(), change.error);
    return change;
  }
  if (*conf == conf_ && from_file_) return change;
  conf_ = *std::move(conf);
  from_file_ = true;
  change.reloaded = true;
  change.message = fmt::format("configuration reloaded from {}", path_);
  return change;
}

std::string ConfWatcher::Source() const {
  return from_file_ ? path_ : std::string("the built-in default");
}

}  // namespace muster::scheduler
