#pragma once

// A child process for end-to-end tests: started with extra environment variables, its stdout
// and stderr going to a log file; killed (SIGKILL) and reaped on destruction if still running.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace muster::deviceplugin::testing {

class Subprocess {
 public:
  // `env`: "NAME=value" entries added to (or replacing in) this process's environment.
  Subprocess(std::vector<std::string> argv, std::vector<std::string> env, std::string log_path);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signal) const;
  // The exit status (128 + signal when killed by one), or nullopt if still running after
  // `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  bool Running();
  std::string Output() const;
  // Waits until the output contains `text`.
  bool WaitForOutput(const std::string& text, std::chrono::milliseconds timeout) const;

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string log_path_;
};

struct CommandResult {
  int exit_status = -1;
  std::string output;  // stdout and stderr
};

// Runs a command to completion (killed after `timeout`).
CommandResult RunCommand(std::vector<std::string> argv, std::vector<std::string> env,
                         const std::string& log_path,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace muster::deviceplugin::testing
