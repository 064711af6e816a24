#include "deviceplugin/testing/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace muster::deviceplugin::testing {

Subprocess::Subprocess(std::vector<std::string> argv, std::vector<std::string> env,
                       std::string log_path)
    : log_path_(std::move(log_path)) {
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& extra : env) {
      replaced = replaced || extra.substr(0, extra.find('=')) == name;
    }
    if (!replaced) environment.push_back(entry);
  }
  for (const std::string& extra : env) environment.push_back(extra);
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_ = fork();
  if (pid_ == 0) {
    // The child: unblock every signal (the test may have blocked some), log, exec.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  if (fd >= 0) close(fd);
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGKILL);
    Wait(std::chrono::seconds(10));
  }
}

void Subprocess::Signal(int signal) const {
  if (pid_ > 0 && !status_) kill(pid_, signal);
}

std::optional<int> Subprocess::Wait(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int raw = 0;
    pid_t done = waitpid(pid_, &raw, WNOHANG);
    if (done == pid_) {
      status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
      return status_;
    }
    if (done < 0) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool Subprocess::Running() { return !Wait(std::chrono::milliseconds(0)).has_value(); }

std::string Subprocess::Output() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Subprocess::WaitForOutput(const std::string& text, std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Output().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Output().find(text) != std::string::npos;
}

CommandResult RunCommand(std::vector<std::string> argv, std::vector<std::string> env,
                         const std::string& log_path, std::chrono::milliseconds timeout) {
  Subprocess process(std::move(argv), std::move(env), log_path);
  CommandResult result;
  auto status = process.Wait(timeout);
  if (!status) {
    process.Signal(SIGKILL);
    status = process.Wait(std::chrono::seconds(10));
  }
  result.exit_status = status.value_or(-1);
  result.output = process.Output();
  return result;
}

}  // namespace muster::deviceplugin::testing
