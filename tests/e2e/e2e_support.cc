#include "e2e_support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace muster::e2e {

using Clock = std::chrono::steady_clock;

int ConnectLoopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

TestHttpClient::TestHttpClient(uint16_t port) : fd_(ConnectLoopback(port)) {}

TestHttpClient::~TestHttpClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool TestHttpClient::Fill(Clock::time_point deadline) {
  if (fd_ < 0) return false;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  int r = ::poll(&p, 1, static_cast<int>(left.count()));
  if (r <= 0) return false;
  char buf[65536];
  ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
  if (n <= 0) {
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  raw_.append(buf, static_cast<size_t>(n));
  return true;
}

bool TestHttpClient::ReadHeaders(int& status, bool& chunked, int64_t& length,
                                 Clock::time_point deadline) {
  size_t end;
  while ((end = raw_.find("\r\n\r\n")) == std::string::npos) {
    if (!Fill(deadline)) return false;
  }
  std::string head = raw_.substr(0, end);
  raw_.erase(0, end + 4);
  if (head.size() < 12 || head.compare(0, 5, "HTTP/") != 0) return false;
  status = std::atoi(head.c_str() + 9);
  chunked = false;
  length = -1;
  std::transform(head.begin(), head.end(), head.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (head.find("\r\ntransfer-encoding: chunked") != std::string::npos) chunked = true;
  if (auto pos = head.find("\r\ncontent-length:"); pos != std::string::npos) {
    length = std::atoll(head.c_str() + pos + 17);
  }
  return true;
}

bool TestHttpClient::DecodeChunks() {
  while (!ended_) {
    size_t eol = raw_.find("\r\n");
    if (eol == std::string::npos) return true;
    size_t size = std::strtoul(raw_.substr(0, eol).c_str(), nullptr, 16);
    if (size == 0) {
      if (raw_.size() < eol + 4) return true;  // the final CRLF
      raw_.erase(0, eol + 4);
      ended_ = true;
      return true;
    }
    if (raw_.size() < eol + 2 + size + 2) return true;
    body_.append(raw_, eol + 2, size);
    raw_.erase(0, eol + 2 + size + 2);
  }
  return true;
}

std::optional<HttpResult> TestHttpClient::Send(std::string_view method, std::string_view path,
                                               std::string_view body, std::string_view content_type,
                                               std::string_view accept) {
  if (fd_ < 0) return std::nullopt;
  std::string req;
  req.append(method).append(" ").append(path).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  req.append("Accept: ").append(accept).append("\r\n");
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    req.append("Content-Type: ").append(content_type).append("\r\n");
    req.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  req.append("\r\n").append(body);
  size_t sent = 0;
  while (sent < req.size()) {
    ssize_t n = ::send(fd_, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return std::nullopt;
    sent += static_cast<size_t>(n);
  }
  auto deadline = Clock::now() + std::chrono::seconds(30);
  HttpResult result;
  bool chunked;
  int64_t length;
  if (!ReadHeaders(result.status, chunked, length, deadline)) return std::nullopt;
  if (chunked) {
    ended_ = false;
    body_.clear();
    while (true) {
      if (!DecodeChunks()) return std::nullopt;
      if (ended_) break;
      if (!Fill(deadline)) return std::nullopt;
    }
    result.body = std::move(body_);
    body_.clear();
  } else {
    size_t want = length < 0 ? 0 : static_cast<size_t>(length);
    while (raw_.size() < want) {
      if (!Fill(deadline)) return std::nullopt;
    }
    result.body = raw_.substr(0, want);
    raw_.erase(0, want);
  }
  return result;
}

std::optional<int> TestHttpClient::OpenStream(std::string_view path) {
  if (fd_ < 0) return std::nullopt;
  std::string req;
  req.append("GET ").append(path).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  req.append("Accept: application/json\r\n\r\n");
  if (::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return std::nullopt;
  }
  int status;
  bool chunked;
  int64_t length;
  if (!ReadHeaders(status, chunked, length, Clock::now() + std::chrono::seconds(30))) {
    return std::nullopt;
  }
  ended_ = false;
  body_.clear();
  return status;
}

std::optional<std::string> TestHttpClient::ReadLine(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    if (auto nl = body_.find('\n'); nl != std::string::npos) {
      std::string line = body_.substr(0, nl);
      body_.erase(0, nl + 1);
      return line;
    }
    if (ended_) return std::nullopt;
    if (!DecodeChunks()) return std::nullopt;
    if (body_.find('\n') != std::string::npos || ended_) continue;
    if (!Fill(deadline)) return std::nullopt;
  }
}

// --- ServerProcess ----------------------------------------------------------------------------

std::optional<ServerProcess::Spawned> ServerProcess::Spawn(std::vector<std::string> args,
                                                           const std::string& log,
                                                           std::string_view ready,
                                                           std::chrono::seconds wait) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
  int err = -1;
  if (!log.empty()) {
    err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (err < 0) {
      ::close(out[0]);
      ::close(out[1]);
      return std::nullopt;
    }
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    if (err >= 0) ::close(err);
    return std::nullopt;
  }
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    if (err >= 0) ::dup2(err, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  if (err >= 0) ::close(err);
  Spawned spawned;
  spawned.process.pid_ = pid;
  std::string& text = spawned.text;
  auto has_ready_line = [&] {
    for (size_t begin = 0; begin < text.size();) {
      size_t nl = text.find('\n', begin);
      if (nl == std::string::npos) return false;
      if (std::string_view(text).substr(begin, nl - begin).starts_with(ready)) return true;
      begin = nl + 1;
    }
    return false;
  };
  auto deadline = Clock::now() + wait;
  while (!has_ready_line() && Clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    char buf[256];
    ssize_t n = ::read(out[0], buf, sizeof(buf));
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);  // nothing more it prints matters; SIGPIPE is ignored there
  return spawned;
}

std::optional<ServerProcess> ServerProcess::Start(const std::string& binary, const std::string& dir,
                                                  const std::vector<std::string>& extra) {
  // Plain HTTP: TestHttpClient speaks it, and these tests are about what survives a crash.
  std::vector<std::string> args = {binary,       "apiserver",  "--listen",       "127.0.0.1:0",
                                   "--data-dir", dir,          "--insecure-http"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto spawned = Spawn(std::move(args), "", "listening on", std::chrono::seconds(20));
  if (!spawned) return std::nullopt;
  const std::string prefix = "listening on 127.0.0.1:";
  auto pos = spawned->text.find(prefix);
  if (pos == std::string::npos) return std::nullopt;  // the destructor kills it
  spawned->process.port_ =
      static_cast<uint16_t>(std::atoi(spawned->text.c_str() + pos + prefix.size()));
  return std::move(spawned->process);
}

std::optional<ServerProcess> ServerProcess::StartUp(const std::string& binary,
                                                    const std::string& dir,
                                                    const std::string& config,
                                                    const std::string& log,
                                                    const std::vector<std::string>& extra) {
  std::vector<std::string> args = {binary,       "up",       "--config",
                                   config,       "--listen", "127.0.0.1:0",
                                   "--data-dir", dir,        "--no-summary",
                                   "--insecure-http"};
  args.insert(args.end(), extra.begin(), extra.end());
  const std::string prefix = "export KUBECONFIG=";
  auto spawned = Spawn(std::move(args), log, prefix, std::chrono::seconds(60));
  if (!spawned) return std::nullopt;
  std::string path;
  std::istringstream lines(spawned->text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(prefix)) path = line.substr(prefix.size());
  }
  if (path.empty()) return std::nullopt;  // the destructor kills it
  // The server URL, from the kubeconfig the user is told to export.
  std::ifstream in(path);
  std::string line;
  const std::string server = "server: http://127.0.0.1:";
  while (std::getline(in, line)) {
    if (auto at = line.find(server); at != std::string::npos) {
      spawned->process.port_ = static_cast<uint16_t>(std::atoi(line.c_str() + at + server.size()));
      break;
    }
  }
  if (spawned->process.port_ == 0) return std::nullopt;
  return std::move(spawned->process);
}

ServerProcess::ServerProcess(ServerProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), port_(other.port_) {}

ServerProcess& ServerProcess::operator=(ServerProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) Kill(SIGKILL);
    pid_ = std::exchange(other.pid_, -1);
    port_ = other.port_;
  }
  return *this;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Kill(SIGKILL);
}

int ServerProcess::Kill(int signal) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, signal);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return status;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && *base ? base : "/tmp") + "/muster-e2e-XXXXXX";
  if (char* made = ::mkdtemp(pattern.data()); made != nullptr) path_ = made;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::string MusterBinary() {
  if (const char* env = std::getenv("MUSTER_BINARY"); env != nullptr && *env) return env;
#ifdef MUSTER_BINARY_PATH
  return MUSTER_BINARY_PATH;
#else
  return "muster";
#endif
}

}  // namespace muster::e2e
