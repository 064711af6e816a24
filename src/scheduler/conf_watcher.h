#pragma once

// The scheduler's volcano-scheduler.conf: read at start, re-read whenever the file's
// modification time or size changes (polled once per cycle, a stat call), as Volcano hot-reloads
// its configuration. With no path, or while the file does not exist, the configuration is
// Volcano's built-in default. A file that does not parse on reload leaves the configuration in
// force unchanged; the error is reported once per version of the file.
//
// Thread-safety: none (the scheduler's loop owns it).

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/framework/conf.h"

namespace muster::scheduler {

class ConfWatcher {
 public:
  explicit ConfWatcher(std::string path) : path_(std::move(path)) {}

  // Reads the file (or takes the default). An unreadable or invalid file is an error naming the
  // file; nothing is in force then.
  absl::Status Load();

  struct Change {
    bool reloaded = false;  // a new configuration is in force
    std::string error;      // the file changed but was refused; the old one stays
    std::string message;    // what happened, for the log
  };
  // Checks the file; reloads when it changed.
  Change Poll();

  const core::SchedulerConf& conf() const { return conf_; }
  const std::string& path() const { return path_; }
  // Where the configuration in force comes from: the file, or "the built-in default".
  std::string Source() const;

 private:
  struct Stamp {
    bool exists = false;
    int64_t mtime_ns = 0;
    int64_t size = 0;
    bool operator==(const Stamp&) const = default;
  };
  Stamp StatFile() const;
  absl::StatusOr<core::SchedulerConf> ReadFile() const;

  std::string path_;
  core::SchedulerConf conf_ = core::DefaultSchedulerConf();
  bool from_file_ = false;
  Stamp seen_;
};

}  // namespace muster::scheduler
