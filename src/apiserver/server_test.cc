// apiserver::Server over loopback, driven by raw blocking sockets (OpenSSL for TLS) so that what
// is checked is what a client sees on the wire: kube-apiserver's header limit and 431, the
// header, idle and body timeouts (a slowloris client is cut off, a stream is not), the in-flight
// limits and 429, the connection cap, the open-file limit and the accept back-off when
// descriptors run out, 401 closing the connection, and Stop() refusing connections at once.
// Every wait is bounded by a deadline; none assumes a fast machine.

#include "apiserver/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "apiserver/kubeconfig.h"
#include "apiserver/status.h"
#include "boost/json/parse.hpp"
#include "fmt/format.h"

namespace muster::apiserver {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

struct Unconnected {};

// One client connection: plain TCP, or TLS over it without checking the certificate.
class Conn {
 public:
  explicit Conn(uint16_t port, SSL_CTX* tls = nullptr) : Conn(Unconnected{}) {
    sockaddr_in addr = Loopback(port);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      Close();
      return;
    }
    if (tls != nullptr) {
      ssl_ = SSL_new(tls);
      SSL_set_fd(ssl_, fd_);
      if (SSL_connect(ssl_) != 1) Close();
    }
  }
  // A socket for the caller to connect.
  explicit Conn(Unconnected) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    timeval tv{20, 0};  // a backstop for the blocking TLS calls
    if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Conn() { Close(); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  [[nodiscard]] bool connected() const { return fd_ >= 0; }
  [[nodiscard]] int fd() const { return fd_; }

  bool Send(std::string_view data) {
    while (!data.empty() && fd_ >= 0) {
      ssize_t n = ssl_ != nullptr ? SSL_write(ssl_, data.data(), static_cast<int>(data.size()))
                                  : ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return data.empty();
  }

  // The next response (a Content-Length or chunked body); nullopt when the connection ends
  // first or it is not complete within `timeout`.
  std::optional<Response> Read(std::chrono::milliseconds timeout = 20s) {
    const auto deadline = Clock::now() + timeout;
    size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (Fill(deadline) <= 0) return std::nullopt;
    }
    Response r;
    std::string_view head(buf_.data(), head_end);
    size_t eol = head.find("\r\n");
    std::string_view status_line = head.substr(0, eol);
    if (status_line.size() < 12) return std::nullopt;
    std::from_chars(status_line.data() + 9, status_line.data() + 12, r.status);
    while (eol != std::string_view::npos) {
      head.remove_prefix(eol + 2);
      eol = head.find("\r\n");
      std::string_view line = head.substr(0, eol);
      size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      r.headers[Lower(std::string(line.substr(0, colon)))] = std::string(value);
    }
    buf_.erase(0, head_end + 4);
    if (r.headers["transfer-encoding"] == "chunked") {
      for (;;) {
        size_t line_end;
        while ((line_end = buf_.find("\r\n")) == std::string::npos) {
          if (Fill(deadline) <= 0) return std::nullopt;
        }
        size_t size = 0;
        std::from_chars(buf_.data(), buf_.data() + line_end, size, 16);
        while (buf_.size() < line_end + 2 + size + 2) {
          if (Fill(deadline) <= 0) return std::nullopt;
        }
        r.body.append(buf_, line_end + 2, size);
        buf_.erase(0, line_end + 2 + size + 2);
        if (size == 0) return r;
      }
    }
    size_t length = 0;
    const std::string& cl = r.headers["content-length"];
    std::from_chars(cl.data(), cl.data() + cl.size(), length);
    while (buf_.size() < length) {
      if (Fill(deadline) <= 0) return std::nullopt;
    }
    r.body = buf_.substr(0, length);
    buf_.erase(0, length);
    return r;
  }

  // True when the server ends the connection (EOF or reset) within `timeout`; what it sent
  // meanwhile is appended to `*received`.
  bool ClosedWithin(std::chrono::milliseconds timeout, std::string* received = nullptr) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      int n = Fill(deadline);
      if (received != nullptr) received->append(buf_);
      buf_.clear();
      if (n == 0) return true;
      if (n < 0) return false;
    }
  }

  void Close() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    ssl_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  // Appends what arrives to buf_: > 0 for some bytes, 0 at the end of the connection (EOF or
  // reset), -1 when nothing came before `deadline`.
  int Fill(Clock::time_point deadline) {
    if (fd_ < 0) return 0;
    if (ssl_ == nullptr || SSL_pending(ssl_) == 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) return -1;
    }
    char chunk[16384];
    ssize_t n =
        ssl_ != nullptr ? SSL_read(ssl_, chunk, sizeof chunk) : ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return 0;
    buf_.append(chunk, static_cast<size_t>(n));
    return 1;
  }

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string buf_;
};

std::string Request(std::string_view method, std::string_view target,
                    std::string_view headers = "") {
  return fmt::format("{} {} HTTP/1.1\r\nHost: 127.0.0.1\r\n{}Content-Length: 0\r\n\r\n", method,
                     target, headers);
}

bool Refused(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = Loopback(port);
  const bool refused =
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return refused;
}

HttpResponse Text(std::string body) {
  HttpResponse r;
  r.content_type = "text/plain";
  r.body = std::move(body);
  return r;
}

ServerOptions Local() {
  ServerOptions options;
  options.port = 0;
  return options;
}

std::unique_ptr<Server> StartServer(const ServerOptions& options, RequestHandler handler = {}) {
  if (!handler) handler = [](const HttpRequest&) { return Text("ok"); };
  auto server = Server::Start(options, std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// The Status object a refusal carries.
void ExpectStatus(const Response& r, int code, std::string_view reason, std::string_view message) {
  EXPECT_EQ(r.status, code);
  EXPECT_EQ(r.headers.at("content-type"), "application/json");
  json::value v = json::parse(r.body);
  auto text = [&v](std::string_view key) { return std::string(v.at(key).as_string()); };
  EXPECT_EQ(text("kind"), "Status");
  EXPECT_EQ(text("apiVersion"), "v1");
  EXPECT_EQ(text("status"), "Failure");
  EXPECT_EQ(v.at("code").as_int64(), code);
  EXPECT_EQ(text("reason"), reason);
  EXPECT_EQ(text("message"), message);
}

// --- header size --------------------------------------------------------------------------------

TEST(ServerTest, AcceptsRequestHeadersUpToOneMebibyte) {
  auto server = StartServer(Local(), [](const HttpRequest& req) {
    return Text(std::to_string(req.Param("labelSelector").size()));
  });
  ASSERT_NE(server, nullptr);
  Conn c(server->port());
  ASSERT_TRUE(c.connected());
  // A long label selector, twice Beast's default 8 KiB limit: kubectl saw "EOF" for it.
  const std::string selector = "app=" + std::string(16 << 10, 'x');
  ASSERT_TRUE(c.Send(Request("GET", "/api/v1/pods?labelSelector=" + selector)));
  auto r = c.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, std::to_string(selector.size()));

  // Just under 1 MiB in all: a 512 KiB URL and a 500 KiB header, on the same connection.
  const std::string big = std::string(512 << 10, 'y');
  ASSERT_TRUE(c.Send(Request("GET", "/api/v1/pods?labelSelector=" + big,
                             fmt::format("X-Big: {}\r\n", std::string(500 << 10, 'z')))));
  r = c.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, std::to_string(big.size()));
}

TEST(ServerTest, AnswersHeadersOverOneMebibyteWith431AndCloses) {
  auto server = StartServer(Local());
  ASSERT_NE(server, nullptr);
  Conn c(server->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send(Request("GET", "/", fmt::format("X-Big: {}\r\n", std::string(1 << 20, 'z')))));
  auto r = c.Read();
  ASSERT_TRUE(r.has_value());
  ExpectStatus(*r, 431, "RequestHeaderFieldsTooLarge",
               "Request header fields too large: limit is 1048576");
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_TRUE(c.ClosedWithin(20s));
}

// --- timeouts -----------------------------------------------------------------------------------

TEST(ServerTest, CutsOffAClientSendingItsHeadersOneByteAtATime) {
  ServerOptions options = Local();
  options.header_timeout = 1s;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  const auto start = Clock::now();  // the deadline runs from the connection's start
  Conn c(server->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
  // A slowloris client: a byte every 200 ms, a header that never ends.
  std::string received;
  bool closed = false;
  while (!closed && Clock::now() - start < 20s) {
    closed = c.ClosedWithin(200ms, &received) || !c.Send("x");
  }
  EXPECT_TRUE(closed) << "still connected after 20 s";
  EXPECT_GE(Clock::now() - start, 900ms);
  EXPECT_EQ(received, "");  // cut off without an answer, as Go's http.Server does
}

TEST(ServerTest, ClosesAKeepAliveConnectionIdleForTheIdleTimeout) {
  ServerOptions options = Local();
  options.idle_timeout = 1s;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  Conn c(server->port());
  ASSERT_TRUE(c.connected());
  // The idle timeout is for the wait between requests: the first has the header timeout.
  std::this_thread::sleep_for(1500ms);
  const auto sent = Clock::now();  // the idle time starts after the answer, so after this
  ASSERT_TRUE(c.Send(Request("GET", "/")));
  auto r = c.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(c.ClosedWithin(20s)) << "still connected after 20 s";
  EXPECT_GE(Clock::now() - sent, 900ms);
}

TEST(ServerTest, CutsOffAClientSendingItsBodyTooSlowly) {
  ServerOptions options = Local();
  options.body_timeout = 1s;
  int calls = 0;
  auto server = StartServer(options, [&calls](const HttpRequest&) {
    ++calls;
    return Text("ok");
  });
  ASSERT_NE(server, nullptr);
  Conn c(server->port());
  ASSERT_TRUE(c.connected());
  const auto start = Clock::now();
  ASSERT_TRUE(c.Send("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n"));
  bool closed = false;
  while (!closed && Clock::now() - start < 20s) {
    closed = c.ClosedWithin(200ms) || !c.Send("x");
  }
  EXPECT_TRUE(closed) << "still connected after 20 s";
  EXPECT_GE(Clock::now() - start, 900ms);
  server->Stop();
  EXPECT_EQ(calls, 0);
}

TEST(ServerTest, AStreamingResponseOutlivesEveryTimeout) {
  ServerOptions options = Local();
  options.header_timeout = 300ms;
  options.idle_timeout = 300ms;
  options.body_timeout = 300ms;
  auto server = StartServer(options, [](const HttpRequest&) {
    HttpResponse r;
    r.stream = [](StreamSink& sink) {
      for (int i = 0; i < 6; ++i) {
        if (i > 0) std::this_thread::sleep_for(250ms);
        if (!sink.Write(fmt::format("{}\n", i))) return;
      }
    };
    return r;
  });
  ASSERT_NE(server, nullptr);
  Conn c(server->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send(Request("GET", "/api/v1/pods?watch=true")));
  auto r = c.Read(60s);
  ASSERT_TRUE(r.has_value()) << "the stream was cut";
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "0\n1\n2\n3\n4\n5\n");
}

// --- in-flight limits and the connection cap ----------------------------------------------------

// Holds handlers until opened.
class Gate {
 public:
  void Enter() {
    std::unique_lock lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
  }
  bool WaitEntered(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 20s, [&] { return entered_ >= n; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;
  bool open_ = false;
};

TEST(ServerTest, RefusesRequestsPastTheInFlightLimitsWith429CountingMutatingOnesApart) {
  ServerOptions options = Local();
  options.threads = 4;
  options.max_requests_inflight = 1;
  options.max_mutating_requests_inflight = 1;
  options.long_running = [](const HttpRequest& req) { return req.HasParam("watch"); };
  Gate gate;
  auto server = StartServer(options, [&gate](const HttpRequest& req) {
    if (req.path == "/block") gate.Enter();
    return Text("ok");
  });
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  struct OpenAtExit {  // before the server stops, which waits for its handlers
    Gate& gate;
    ~OpenAtExit() { gate.Open(); }
  } open_at_exit{gate};

  Conn blocked_write(port);
  ASSERT_TRUE(blocked_write.Send(Request("POST", "/block")));
  ASSERT_TRUE(gate.WaitEntered(1));
  Conn write(port);
  ASSERT_TRUE(write.Send(Request("POST", "/x")));
  auto r = write.Read();
  ASSERT_TRUE(r.has_value());
  ExpectStatus(*r, 429, "TooManyRequests", "Too many requests, please try again later.");
  EXPECT_EQ(r->headers["retry-after"], "1");
  EXPECT_EQ(json::parse(r->body).at("details").at("retryAfterSeconds").as_int64(), 1);

  Conn read(port);  // read-only requests have a limit of their own
  ASSERT_TRUE(read.Send(Request("GET", "/x")));
  r = read.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);

  Conn blocked_read(port);
  ASSERT_TRUE(blocked_read.Send(Request("GET", "/block")));
  ASSERT_TRUE(gate.WaitEntered(2));
  ASSERT_TRUE(read.Send(Request("GET", "/x")));
  r = read.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 429);
  ASSERT_TRUE(read.Send(Request("GET", "/x?watch=true")));  // long-running: not counted
  r = read.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);

  gate.Open();
  for (Conn* c : {&blocked_write, &blocked_read}) {
    r = c->Read();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
  }
  // Once answered, a request no longer counts; the refused client's connection stayed usable.
  ASSERT_TRUE(write.Send(Request("POST", "/x")));
  r = write.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
}

TEST(ServerTest, ClosesConnectionsPastTheCapAtOnce) {
  ServerOptions options = Local();
  options.max_connections = 2;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  auto first = std::make_unique<Conn>(port);
  Conn second(port);
  for (Conn* c : {first.get(), &second}) {
    ASSERT_TRUE(c->Send(Request("GET", "/")));
    auto r = c->Read();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
  }
  Conn third(port);
  ASSERT_TRUE(third.connected());  // the kernel completes it; the server then closes it
  third.Send(Request("GET", "/"));
  std::string received;
  EXPECT_TRUE(third.ClosedWithin(20s, &received));
  EXPECT_EQ(received, "");

  first.reset();  // one place frees up once the server sees the close
  const auto deadline = Clock::now() + 20s;
  bool served = false;
  while (!served && Clock::now() < deadline) {
    Conn c(port);
    served = c.Send(Request("GET", "/")) && c.Read(2s).has_value();
  }
  EXPECT_TRUE(served);
}

// --- descriptors --------------------------------------------------------------------------------

TEST(ServerTest, RaisesTheOpenFileLimitToTheHardLimit) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max < 256) GTEST_SKIP() << "hard open-file limit " << saved.rlim_max;
  rlimit lowered = saved;
  lowered.rlim_cur = std::min<rlim_t>(saved.rlim_max - 1, 1024);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  auto server = StartServer(Local());
  rlimit now{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
  ::setrlimit(RLIMIT_NOFILE, &saved);
  EXPECT_EQ(now.rlim_cur, saved.rlim_max);
}

int HighestOpenFd() {
  int highest = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    highest = std::max(highest, std::atoi(entry.path().filename().c_str()));
  }
  return highest;
}

std::chrono::microseconds CpuTime() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto us = [](const timeval& t) {
    return std::chrono::microseconds(t.tv_sec * 1000000 + t.tv_usec);
  };
  return us(u.ru_utime) + us(u.ru_stime);
}

// Fills the descriptor table under a lowered soft limit; the limit and the table are restored
// when it ends.
class DescriptorsExhausted {
 public:
  explicit DescriptorsExhausted(int like) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(HighestOpenFd() + 16);
    ::setrlimit(RLIMIT_NOFILE, &low);
    for (int fd; (fd = ::dup(like)) >= 0;) fds_.push_back(fd);
    exhausted_ = errno == EMFILE;
  }
  ~DescriptorsExhausted() { Free(); }
  [[nodiscard]] bool exhausted() const { return exhausted_; }
  void Free() {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }

 private:
  rlimit saved_{};
  std::vector<int> fds_;
  bool exhausted_ = false;
};

TEST(ServerTest, BacksOffAcceptingWhileOutOfDescriptorsAndServesOnceSomeAreFree) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  // The sanitizers' runtimes need descriptors of their own (UBSan checks that memory is readable
  // through a pipe, and with none left reports every virtual call as on an invalid vptr).
  GTEST_SKIP() << "needs descriptors the sanitizer runtime cannot do without";
#endif
#endif
  auto server = StartServer(Local());
  ASSERT_NE(server, nullptr);
  Conn c(Unconnected{});  // made before the descriptors run out
  DescriptorsExhausted exhausted(c.fd());
  ASSERT_TRUE(exhausted.exhausted());
  sockaddr_in addr = Loopback(server->port());
  // The kernel completes the connection (the listen backlog); the server cannot accept it.
  ASSERT_EQ(::connect(c.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_TRUE(c.Send(Request("GET", "/")));

  // For a second nothing is answered, and the server does not spin meanwhile.
  const auto cpu_before = CpuTime();
  EXPECT_FALSE(c.Read(1s).has_value());
  const auto cpu = CpuTime() - cpu_before;
  EXPECT_LT(cpu, 250ms) << "CPU time over 1 s while out of descriptors: " << cpu.count() << " us";

  exhausted.Free();
  auto r = c.Read(20s);
  ASSERT_TRUE(r.has_value()) << "not served once descriptors were free";
  EXPECT_EQ(r->status, 200);
}

// --- bearer token -------------------------------------------------------------------------------

void ExpectTokenChecked(uint16_t port, SSL_CTX* tls) {
  Conn good(port, tls);
  ASSERT_TRUE(good.connected());
  for (int i = 0; i < 2; ++i) {  // keep-alive
    ASSERT_TRUE(good.Send(Request("GET", "/", "Authorization: Bearer s3cret\r\n")));
    auto r = good.Read();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
  }
  for (std::string_view auth : {"", "Authorization: Bearer wrong\r\n"}) {
    Conn bad(port, tls);
    ASSERT_TRUE(bad.connected());
    ASSERT_TRUE(bad.Send(Request("GET", "/", auth)));
    auto r = bad.Read();
    ASSERT_TRUE(r.has_value());
    ExpectStatus(*r, 401, "Unauthorized", "Unauthorized");
    EXPECT_EQ(r->headers["connection"], "close");
    EXPECT_TRUE(bad.ClosedWithin(20s)) << "a client without the token kept its connection";
  }
}

TEST(ServerTest, ClosesAConnectionWhoseRequestLacksTheToken) {
  ServerOptions options = Local();
  options.bearer_token = "s3cret";
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  ExpectTokenChecked(server->port(), nullptr);
}

// kube-apiserver serves these to system:anonymous; probes and `curl /version` need no token.
TEST(ServerTest, PublicInfoPathsNeedNoTokenButAWrongOneIsStillRefused) {
  ServerOptions options = Local();
  options.bearer_token = "s3cret";
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  for (std::string_view path : {"/version", "/healthz", "/livez", "/readyz", "/livez/ping"}) {
    Conn c(server->port());
    ASSERT_TRUE(c.Send(Request("GET", path)));
    auto r = c.Read();
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 200) << path;
    Conn wrong(server->port());
    ASSERT_TRUE(wrong.Send(Request("GET", path, "Authorization: Bearer wrong\r\n")));
    r = wrong.Read();
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 401) << path;
  }
  for (std::string_view path : {"/versionx", "/api", "/healthzz", "/api/v1/namespaces"}) {
    Conn c(server->port());
    ASSERT_TRUE(c.Send(Request("GET", path)));
    auto r = c.Read();
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 401) << path;
  }
  Conn post(server->port());
  ASSERT_TRUE(post.Send(Request("POST", "/version")));
  auto r = post.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);
}

// muster up's dashboard files (/ui/) are served to a browser, which has no token; nothing else is.
TEST(ServerTest, PathsThePublicPathOptionPicksNeedNoToken) {
  ServerOptions options = Local();
  options.bearer_token = "s3cret";
  options.public_path = [](std::string_view path) { return path.starts_with("/ui/"); };
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  Conn page(server->port());
  ASSERT_TRUE(page.Send(Request("GET", "/ui/index.html")));
  auto r = page.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  for (std::string_view path : {"/ui", "/api/v1/pods", "/uix"}) {
    Conn c(server->port());
    ASSERT_TRUE(c.Send(Request("GET", path)));
    r = c.Read();
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 401) << path;
  }
  Conn wrong(server->port());
  ASSERT_TRUE(wrong.Send(Request("GET", "/ui/index.html", "Authorization: Bearer wrong\r\n")));
  r = wrong.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);
  Conn post(server->port());
  ASSERT_TRUE(post.Send(Request("POST", "/ui/index.html")));
  r = post.Read();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);
}

TEST(ServerTest, ClosesATlsConnectionWhoseRequestLacksTheToken) {
  char pattern[] = "/tmp/muster-server-XXXXXX";
  const std::string dir = ::mkdtemp(pattern);
  auto material = LoadOrCreateTls(dir, {"127.0.0.1"});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(material.ok()) << material.status();
  ServerOptions options = Local();
  options.bearer_token = "s3cret";
  options.tls_cert_pem = material->server_cert_pem;
  options.tls_key_pem = material->server_key_pem;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> tls(SSL_CTX_new(TLS_client_method()),
                                                        &SSL_CTX_free);
  SSL_CTX_set_verify(tls.get(), SSL_VERIFY_NONE, nullptr);
  ExpectTokenChecked(server->port(), tls.get());
}

// --- stop ---------------------------------------------------------------------------------------

TEST(ServerTest, StopClosesTheListeningSocketBeforeReturning) {
  for (int i = 0; i < 20; ++i) {
    auto server = StartServer(Local());
    ASSERT_NE(server, nullptr);
    const uint16_t port = server->port();
    server->Stop();
    EXPECT_TRUE(Refused(port)) << "round " << i << ": a connection after Stop() was not refused";
  }
}

// --- requests the parser refuses -----------------------------------------------------------------

// Go's net/http (so kube-apiserver) answers these before any handler and closes the connection;
// a request hidden in the body of one with an unsupported Transfer-Encoding is never served.
TEST(ServerTest, UnparsableRequestsGetGosAnswerAndTheConnectionCloses) {
  int calls = 0;
  auto server = StartServer(Local(), [&calls](const HttpRequest&) {
    ++calls;
    return Text("ok");
  });
  ASSERT_NE(server, nullptr);
  struct Case {
    std::string request;
    int status;
    std::string body;
  };
  const std::vector<Case> cases = {
      {"GARBAGE\r\n\r\n", 400, "400 Bad Request"},
      {"GET / HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n", 400, "400 Bad Request"},
      {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "400 Bad Request"},
      {"GET / HTTP/9.9\r\nHost: x\r\n\r\n", 505, "505 HTTP Version Not Supported"},
      {"GET / HTTP/1.1\r\n\r\n", 400, "400 Bad Request: missing required Host header"},
      {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400,
       "400 Bad Request: too many Host headers"},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: bogus\r\n\r\n"
       "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
       501, "Unsupported transfer encoding"},
      {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
       "3\r\nabc\r\n0\r\n\r\n",
       501, "Unsupported transfer encoding"},
  };
  for (const Case& c : cases) {
    Conn conn(server->port());
    ASSERT_TRUE(conn.connected());
    ASSERT_TRUE(conn.Send(c.request));
    auto r = conn.Read();
    ASSERT_TRUE(r.has_value()) << "no answer to " << c.request;
    EXPECT_EQ(r->status, c.status) << c.request;
    EXPECT_EQ(r->body, c.body) << c.request;
    EXPECT_EQ(r->headers["connection"], "close") << c.request;
    std::string rest;
    EXPECT_TRUE(conn.ClosedWithin(10s, &rest)) << c.request;
    EXPECT_EQ(rest, "") << "a second answer to " << c.request;
  }
  EXPECT_EQ(calls, 0);
  // HTTP/1.0 needs no Host.
  Conn plain(server->port());
  ASSERT_TRUE(plain.Send("GET / HTTP/1.0\r\n\r\n"));
  auto ok = plain.Read();
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->status, 200);
  server->Stop();
}

// --- streams without a thread each (StreamSource) ----------------------------------------------

// Lines published to every FeedSource, which the server polls when woken.
struct Feed {
  std::mutex mu;
  std::condition_variable cv;
  std::string published;
  std::vector<std::function<void()>> wakes;
  int started = 0;
  int stopped = 0;

  void Publish(const std::string& line) {
    std::vector<std::function<void()>> to_call;
    {
      std::lock_guard lock(mu);
      published += line;
      to_call = wakes;
    }
    for (auto& wake : to_call) wake();  // also those of ended streams: the server ignores them
  }
  bool WaitFor(std::function<bool()> done) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 30s, done);
  }
};

class FeedSource : public StreamSource {
 public:
  explicit FeedSource(Feed& feed) : feed_(feed) {}
  void Start(std::function<void()> wake) override {
    std::lock_guard lock(feed_.mu);
    feed_.wakes.push_back(std::move(wake));
    sent_ = feed_.published.size();  // from now on
    ++feed_.started;
    feed_.cv.notify_all();
  }
  Poll Next(std::string& out) override {
    std::lock_guard lock(feed_.mu);
    out += feed_.published.substr(sent_);
    sent_ = feed_.published.size();
    return Poll::kWait;
  }
  [[nodiscard]] Clock::time_point NextPoll() const override { return Clock::time_point::max(); }
  void Stop() override {
    std::lock_guard lock(feed_.mu);
    ++feed_.stopped;
    feed_.cv.notify_all();
  }

 private:
  Feed& feed_;
  size_t sent_ = 0;
};

RequestHandler FeedHandler(Feed& feed) {
  return [&feed](const HttpRequest&) {
    HttpResponse r;
    r.source = std::make_shared<FeedSource>(feed);
    return r;
  };
}

int ThreadsOfThisProcess() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// Reads from `c` until `text` has arrived (true) or the connection ends or 30 s pass.
bool Receives(Conn& c, std::string_view text, std::string& got) {
  const auto deadline = Clock::now() + 30s;
  while (got.find(text) == std::string::npos) {
    if (Clock::now() > deadline || c.ClosedWithin(5ms, &got)) {
      return got.find(text) != std::string::npos;
    }
  }
  return true;
}

// A connection from `source` (a loopback address of the caller's choice) to the server.
std::unique_ptr<Conn> ConnFrom(const char* source, uint16_t port) {
  auto c = std::make_unique<Conn>(Unconnected{});
  sockaddr_in from = Loopback(0);
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to = Loopback(port);
  if (::bind(c->fd(), reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(c->fd(), reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    c->Close();
  }
  return c;
}

TEST(ServerTest, StreamSourcesNeedNoThreadEachAndEndWhenTheClientGoesOrTheServerStops) {
  constexpr int kStreams = 300;
  Feed feed;
  ServerOptions options = Local();
  options.threads = 2;
  auto server = StartServer(options, FeedHandler(feed));
  ASSERT_NE(server, nullptr);
  const int threads_before = ThreadsOfThisProcess();
  std::vector<std::unique_ptr<Conn>> conns;
  for (int i = 0; i < kStreams; ++i) {
    conns.push_back(std::make_unique<Conn>(server->port()));
    ASSERT_TRUE(conns.back()->connected());
    ASSERT_TRUE(conns.back()->Send(Request("GET", "/api/v1/pods?watch=true")));
  }
  ASSERT_TRUE(feed.WaitFor([&] { return feed.started == kStreams; })) << feed.started;
  EXPECT_LE(ThreadsOfThisProcess(), threads_before + 2) << "a thread per stream";

  feed.Publish("event-1\n");
  std::vector<std::string> got(kStreams);
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_TRUE(Receives(*conns[i], "event-1\n", got[i])) << "stream " << i << ": " << got[i];
  }
  EXPECT_NE(got[0].find("Transfer-Encoding: chunked"), std::string::npos) << got[0];
  EXPECT_NE(got[0].find("Connection: close"), std::string::npos) << got[0];

  // A third of the clients leave: their streams are stopped, the others go on.
  for (int i = 0; i < kStreams / 3; ++i) conns[i]->Close();
  ASSERT_TRUE(feed.WaitFor([&] { return feed.stopped == kStreams / 3; })) << feed.stopped;
  feed.Publish("event-2\n");
  for (int i = kStreams / 3; i < kStreams; ++i) {
    ASSERT_TRUE(Receives(*conns[i], "event-2\n", got[i])) << "stream " << i << ": " << got[i];
  }

  // Stop() ends the rest with the last chunk and closes them before it returns.
  server->Stop();
  {
    std::lock_guard lock(feed.mu);
    EXPECT_EQ(feed.stopped, kStreams);
  }
  for (int i = kStreams / 3; i < kStreams; ++i) {
    std::string rest;
    EXPECT_TRUE(conns[i]->ClosedWithin(10s, &rest)) << "stream " << i;
    EXPECT_NE((got[i] + rest).find("0\r\n\r\n"), std::string::npos)
        << "stream " << i << " did not end cleanly: " << got[i] + rest;
  }
  feed.Publish("after the stop\n");  // wakes into a stopped server are ignored
}

TEST(ServerTest, StreamsPastTheTotalOrPerClientLimitGet429WithRetryAfter) {
  Feed feed;
  ServerOptions options = Local();
  options.max_streams = 3;
  options.max_streams_per_client = 2;
  auto server = StartServer(options, FeedHandler(feed));
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  auto watch = [&](const char* from) {
    auto c = ConnFrom(from, port);
    EXPECT_TRUE(c->connected());
    EXPECT_TRUE(c->Send(Request("GET", "/api/v1/pods?watch=true")));
    return c;
  };
  auto refused = [](Conn& c) {
    auto r = c.Read();
    if (!r.has_value()) return false;
    ExpectStatus(*r, 429, "TooManyRequests", "Too many requests, please try again later.");
    EXPECT_EQ(r->headers["retry-after"], "1");
    return r->status == 429;
  };
  auto a1 = watch("127.0.0.1");
  auto a2 = watch("127.0.0.1");
  ASSERT_TRUE(feed.WaitFor([&] { return feed.started == 2; }));
  auto a3 = watch("127.0.0.1");  // past the per-client limit
  EXPECT_TRUE(refused(*a3));
  auto b1 = watch("127.0.0.2");  // another client still may
  ASSERT_TRUE(feed.WaitFor([&] { return feed.started == 3; }));
  auto b2 = watch("127.0.0.2");  // past the total
  EXPECT_TRUE(refused(*b2));
  // A place freed is taken again.
  a1->Close();
  ASSERT_TRUE(feed.WaitFor([&] { return feed.stopped == 1; }));
  auto b3 = watch("127.0.0.2");
  ASSERT_TRUE(feed.WaitFor([&] { return feed.started == 4; }));
  feed.Publish("hello\n");
  std::string got;
  EXPECT_TRUE(Receives(*b3, "hello\n", got)) << got;
  server->Stop();
}

// A watch whose handler is still running when Stop() begins (an informer re-watching as the
// server goes down) must not start its stream after Stop() has returned: the stream's thread
// would use the server after it is destroyed (found as heap corruption in a client test).
TEST(ServerTest, StopReturnsOnlyOnceNoStreamRunsOrCanStart) {
  ServerOptions options = Local();
  options.threads = 2;
  std::atomic<bool> stop_begun{false};
  std::atomic<int> handlers_entered{0};
  std::atomic<int> streams_started{0};
  std::atomic<int> streams_ended{0};
  auto server = StartServer(options, [&](const HttpRequest&) {
    handlers_entered.fetch_add(1);
    const auto deadline = Clock::now() + 20s;
    while (!stop_begun && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
    std::this_thread::sleep_for(300ms);  // Stop() is under way meanwhile
    HttpResponse r;
    r.stream = [&](StreamSink& sink) {
      streams_started.fetch_add(1);
      while (!sink.Cancelled()) std::this_thread::sleep_for(10ms);
      streams_ended.fetch_add(1);
    };
    return r;
  });
  ASSERT_NE(server, nullptr);
  Conn c(server->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send(Request("GET", "/api/v1/pods?watch=true")));
  const auto deadline = Clock::now() + 20s;
  while (handlers_entered == 0 && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(handlers_entered, 1);
  stop_begun = true;
  server->Stop();
  const int started = streams_started;
  const int ended = streams_ended;
  EXPECT_EQ(started, ended) << "a stream still ran when Stop() returned";
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(streams_started, started) << "a stream started after Stop() returned";
  EXPECT_EQ(streams_ended, started);
}

}  // namespace
}  // namespace muster::apiserver
