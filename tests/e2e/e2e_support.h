#pragma once

// Support for the end-to-end tests that drive a real `muster apiserver` process over HTTP: a
// minimal blocking HTTP/1.1 client (keep-alive, Content-Length and chunked bodies, line-by-line
// reading of streamed watch bodies) and a handle on a spawned server process. The API server
// benchmark (bench/apiserver_benchmark.cc) drives its server with the same client.
//
// Thread-safety: one TestHttpClient per thread; ServerProcess is not shared.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace muster::e2e {

struct HttpResult {
  int status = 0;
  std::string body;
};

// A TCP connection to 127.0.0.1:port with TCP_NODELAY: its descriptor (close-on-exec), or -1
// with errno set.
int ConnectLoopback(uint16_t port);

class TestHttpClient {
 public:
  explicit TestHttpClient(uint16_t port);
  ~TestHttpClient();
  TestHttpClient(const TestHttpClient&) = delete;
  TestHttpClient& operator=(const TestHttpClient&) = delete;

  bool connected() const { return fd_ >= 0; }

  // Sends a request on the kept-alive connection and reads the whole response (within 30 s).
  // nullopt when the connection fails (the server died) or the response does not parse.
  std::optional<HttpResult> Send(std::string_view method, std::string_view path,
                                 std::string_view body = "",
                                 std::string_view content_type = "application/json",
                                 std::string_view accept = "application/json");

  // Sends a GET whose response body is streamed (a watch) and reads the status line and headers.
  // Returns the status code; the body is then read with ReadLine.
  std::optional<int> OpenStream(std::string_view path);
  // The next line of the streamed body, without its '\n'. nullopt at the end of the body, on a
  // connection error, or when nothing arrives before `timeout`.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout);
  // True once the streamed body ended cleanly (the last chunk arrived).
  bool stream_ended() const { return ended_; }

 private:
  bool Fill(std::chrono::steady_clock::time_point deadline);
  bool ReadHeaders(int& status, bool& chunked, int64_t& length,
                   std::chrono::steady_clock::time_point deadline);
  // Moves complete chunks from raw_ to body_; false on a malformed chunk.
  bool DecodeChunks();

  int fd_ = -1;
  std::string raw_;   // received, not yet parsed
  std::string body_;  // decoded body bytes not yet returned
  bool ended_ = false;
};

class ServerProcess {
 public:
  // Both serve plain HTTP (--insecure-http), which TestHttpClient speaks.
  // Spawns `binary apiserver --listen 127.0.0.1:0 --data-dir dir extra...` and waits (up to 20 s)
  // for its "listening on" line. nullopt when it does not start.
  static std::optional<ServerProcess> Start(const std::string& binary, const std::string& dir,
                                            const std::vector<std::string>& extra = {});
  // Spawns `binary up --config config --data-dir dir --listen 127.0.0.1:0 --no-summary extra...`
  // (the whole cluster in one process), waits (up to 60 s) for its `export KUBECONFIG=FILE` line
  // and takes the port from the server URL in FILE, as a user's kubectl would. Its stderr is
  // appended to `log` when that is not empty. nullopt when it does not start.
  static std::optional<ServerProcess> StartUp(const std::string& binary, const std::string& dir,
                                              const std::string& config,
                                              const std::string& log = "",
                                              const std::vector<std::string>& extra = {});
  ServerProcess(ServerProcess&& other) noexcept;
  ServerProcess& operator=(ServerProcess&& other) noexcept;
  ~ServerProcess();  // SIGKILL if still running

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Sends `signal` and waits for the process to exit; returns its wait status.
  int Kill(int signal);

 private:
  ServerProcess() = default;
  struct Spawned;
  // Forks and execs `args` with stdout on a pipe (stderr appended to `log` when not empty) and
  // reads stdout until a line starting with `ready` arrives, the pipe closes or `wait` passes.
  // The child (killed when the result is dropped) and the text read; nullopt when it could not
  // be spawned.
  static std::optional<Spawned> Spawn(std::vector<std::string> args, const std::string& log,
                                      std::string_view ready, std::chrono::seconds wait);
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

struct ServerProcess::Spawned {
  ServerProcess process;
  std::string text;  // its stdout up to the ready line
};

// A fresh temporary directory (mkdtemp under $TMPDIR or /tmp), removed with its contents when
// this goes out of scope.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};
// The muster binary under test: $MUSTER_BINARY, else the path compiled in.
std::string MusterBinary();

}  // namespace muster::e2e
