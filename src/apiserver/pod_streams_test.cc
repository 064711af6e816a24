// pods/exec over a loopback API server (plain HTTP) with a fake node side whose session is a
// pair of pipes: the WebSocket handshake and subprotocol, stdout to channel 1, channel 0 to the
// command's stdin, v5's CLOSE of stdin, the exit Status on channel 3 and the close that follows;
// and the refusals a client sees before any upgrade.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "apiserver/apiserver.h"
#include "apiserver/handlers.h"
#include "apiserver/testing/test_server.h"
#include "apiserver/websocket.h"
#include "boost/json/parse.hpp"
#include "common/pod_streams.h"

namespace muster::apiserver {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// The fake command: the test plays it through the other ends of its pipes.
class PipeSession : public common::PodStreamSession {
 public:
  PipeSession() {
    int in[2], out[2];
    EXPECT_EQ(::pipe(in), 0);
    EXPECT_EQ(::pipe(out), 0);
    stdin_fd = in[1];
    command_stdin = in[0];
    stdout_fd = out[0];
    command_stdout = out[1];
  }
  ~PipeSession() override {
    for (int fd : {stdin_fd, stdout_fd, stderr_fd}) {
      if (fd >= 0) ::close(fd);
    }
  }
  void Resize(uint16_t, uint16_t) override {}
  void OnExit(std::function<void(int)> done) override {
    std::lock_guard<std::mutex> lock(*mu);
    *on_exit = std::move(done);
  }
  int command_stdin = -1;   // the test's: what the client sent
  int command_stdout = -1;  // the test's: what the command prints
  std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();
  std::shared_ptr<std::function<void(int)>> on_exit = std::make_shared<std::function<void(int)>>();
};

class FakeStreams : public common::PodStreams {
 public:
  absl::StatusOr<std::unique_ptr<common::PodStreamSession>> Exec(
      const common::PodStreamRequest& request) override {
    last = request;
    if (!refusal.ok()) return refusal;
    auto s = std::make_unique<PipeSession>();
    command_stdin = s->command_stdin;
    command_stdout = s->command_stdout;
    mu = s->mu;
    on_exit = s->on_exit;
    return s;
  }
  absl::StatusOr<std::unique_ptr<common::PodStreamSession>> Attach(
      const common::PodStreamRequest& request) override {
    return Exec(request);
  }
  absl::Status Check(const common::PodStreamRequest&) override { return refusal; }

  absl::Status refusal;
  common::PodStreamRequest last;
  int command_stdin = -1, command_stdout = -1;
  std::shared_ptr<std::mutex> mu;
  std::shared_ptr<std::function<void(int)>> on_exit;
};

// Bytes from `fd` until `done(bytes)` holds or 10 s pass.
std::string ReadUntil(int fd, const std::function<bool(const std::string&)>& done) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done(got) && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buffer[4096];
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    got.append(buffer, static_cast<size_t>(n));
  }
  return got;
}

// A client frame: masked binary (or `opcode`).
std::string Masked(std::string_view payload, uint8_t opcode = 0x2) {
  std::string out;
  out.push_back(static_cast<char>(0x80 | opcode));
  out.push_back(static_cast<char>(0x80 | payload.size()));  // < 126 here
  const char mask[4] = {0x11, 0x22, 0x33, 0x44};
  out.append(mask, 4);
  for (size_t i = 0; i < payload.size(); ++i) out.push_back(payload[i] ^ mask[i % 4]);
  return out;
}

class PodStreamsHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    dir_ = testing::MakeTempDir("podstreams");
    ApiServerOptions options;
    options.insecure_http = true;
    auto server = testing::StartTestServer(dir_, options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    Call("POST", "/api/v1/namespaces/default/pods",
         R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"main","image":"x"}]}})");
    Call("POST", "/api/v1/namespaces/default/pods/p/binding",
         R"({"metadata":{"name":"p"},"target":{"kind":"Node","name":"n"}})");
  }
  void TearDown() override {
    server_->handlers().SetPodStreams(nullptr);
    // The exit callback a session left holds the server's strand: it goes before the server does.
    if (streams_.on_exit) {
      std::lock_guard<std::mutex> lock(*streams_.mu);
      *streams_.on_exit = nullptr;
    }
    testing::StopTestServer(server_, dir_);
  }
  HttpResponse Call(const std::string& method, const std::string& path, std::string body = "") {
    HttpRequest req;
    req.method = method;
    req.path = path;
    req.content_type = "application/json";
    req.body = std::move(body);
    return server_->handlers().Handle(req);
  }
  // Connects and sends an exec request; returns the socket.
  int Request(const std::string& target, const std::string& headers) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server_->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    const std::string request =
        "GET " + target + " HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n";
    EXPECT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    return fd;
  }
  static std::string WebSocketHeaders(const std::string& protocols) {
    return "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: " +
           protocols + "\r\n";
  }

  std::string dir_;
  std::unique_ptr<ApiServer> server_;
  FakeStreams streams_;
};

TEST_F(PodStreamsHttpTest, ExecCarriesTheChannelsAndEndsWithTheExitStatus) {
  server_->handlers().SetPodStreams(&streams_);
  int fd = Request(
      "/api/v1/namespaces/default/pods/p/exec?command=sh&command=-c&command=exit+3"
      "&stdin=true&stdout=true&container=main",
      WebSocketHeaders("v5.channel.k8s.io, v4.channel.k8s.io"));
  std::string wire = ReadUntil(fd, [](const std::string& s) {
    return s.find("\r\n\r\n") != std::string::npos;
  });
  const size_t body = wire.find("\r\n\r\n") + 4;
  const std::string head = wire.substr(0, body);
  EXPECT_EQ(head.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
            std::string::npos);
  EXPECT_NE(head.find("Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n"), std::string::npos);
  EXPECT_EQ(streams_.last.command, (std::vector<std::string>{"sh", "-c", "exit 3"}));
  EXPECT_TRUE(streams_.last.use_stdin);
  EXPECT_FALSE(streams_.last.use_stderr);
  EXPECT_EQ(streams_.last.container, "main");

  // The command's output arrives on channel 1 (server frames are unmasked).
  ASSERT_EQ(::write(streams_.command_stdout, "out!", 4), 4);
  wire += ReadUntil(fd, [&](const std::string& s) { return wire.size() + s.size() >= body + 7; });
  EXPECT_EQ(wire.substr(body), std::string("\x82\x05\x01out!", 7));

  // Channel 0 reaches its stdin; v5's CLOSE of channel 0 ends it.
  std::string client = Masked(std::string("\x00in!", 4)) + Masked(std::string("\xff\x00", 2));
  ASSERT_EQ(::write(fd, client.data(), client.size()), static_cast<ssize_t>(client.size()));
  EXPECT_EQ(ReadUntil(streams_.command_stdin, [](const std::string&) { return false; }), "in!");

  // Exit 3 and the end of output: the Status on channel 3, then a normal close.
  {
    std::lock_guard<std::mutex> lock(*streams_.mu);
    ASSERT_TRUE(*streams_.on_exit);
    (*streams_.on_exit)(3);
  }
  ::close(streams_.command_stdout);
  std::string rest = ReadUntil(fd, [](const std::string& s) {
    return s.find(std::string("\x88\x02\x03\xe8", 4)) != std::string::npos;
  });
  const size_t at = rest.find('\x82');
  ASSERT_NE(at, std::string::npos) << rest;
  size_t length = static_cast<uint8_t>(rest[at + 1]);
  size_t data = at + 2;
  if (length == 126) {  // a longer frame: 16 bits of length follow
    length = (size_t{static_cast<uint8_t>(rest[at + 2])} << 8) | static_cast<uint8_t>(rest[at + 3]);
    data = at + 4;
  }
  ASSERT_GE(rest.size(), data + length);
  ASSERT_EQ(rest[data], '\x03');  // the error channel
  json::value status = json::parse(rest.substr(data + 1, length - 1));
  EXPECT_EQ(status.at("reason"), "NonZeroExitCode");
  EXPECT_EQ(status.at("details").at("causes").at(0).at("message"), "3");
  ::close(streams_.command_stdin);
  ::close(fd);
}

TEST_F(PodStreamsHttpTest, RefusalsComeBeforeTheUpgradeAsStatuses) {
  auto answer = [&](const std::string& target, const std::string& headers) {
    int fd = Request(target, headers);
    std::string got = ReadUntil(fd, [](const std::string& s) {
      return s.find("}") != std::string::npos;
    });
    ::close(fd);
    return got;
  };
  const std::string exec = "/api/v1/namespaces/default/pods/p/exec?command=true&stdout=true";
  // No node agents in this process.
  std::string apart = answer(exec, WebSocketHeaders("v5.channel.k8s.io"));
  EXPECT_NE(apart.find("400 Bad Request"), std::string::npos) << apart;
  EXPECT_NE(apart.find("needs the node agents in the API server's process"), std::string::npos);
  server_->handlers().SetPodStreams(&streams_);
  streams_.refusal = absl::FailedPreconditionError("container not found (\"main\")");
  std::string refused = answer(exec, WebSocketHeaders("v5.channel.k8s.io"));
  EXPECT_NE(refused.find("container not found"), std::string::npos) << refused;
  // kubectl's SPDY fallback hears the same reason.
  std::string spdy = answer(exec, "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                                  "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n");
  EXPECT_NE(spdy.find("container not found"), std::string::npos) << spdy;
  streams_.refusal = absl::OkStatus();
  EXPECT_NE(answer(exec, "").find("Upgrade request required"), std::string::npos);
  EXPECT_NE(answer(exec, WebSocketHeaders("base64.channel.k8s.io")).find("is served"),
            std::string::npos);
  EXPECT_NE(answer("/api/v1/namespaces/default/pods/nobody/exec?command=true&stdout=true",
                   WebSocketHeaders("v5.channel.k8s.io"))
                .find(R"(pods \"nobody\" not found)"),
            std::string::npos);
  EXPECT_NE(answer("/api/v1/namespaces/default/pods/p/exec?command=true&stdout=true&container=x",
                   WebSocketHeaders("v5.channel.k8s.io"))
                .find("container x is not valid for pod p"),
            std::string::npos);
}

}  // namespace
}  // namespace muster::apiserver
