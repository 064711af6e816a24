// A connection after it switched protocols (upgrade.h): pods/exec and pods/attach as WebSocket
// channels (remote_command.h) between the client and the session's descriptors, pods/portforward
// as SPDY streams (spdy.h), tunnelled in WebSocket or over the connection itself, between the
// client and TCP connections to the pod's address. Everything of one connection runs on its
// strand, asynchronously: the client's socket, the process's pipes or terminal, the pod's
// sockets. Each side is read only once what was read from it before has been written to the
// other, so a slow reader slows the writer down instead of filling memory. No Beast HTTP here;
// the WebSocket and SPDY framing are the Beast-free websocket.h and spdy.h.

#include <sys/socket.h>

#include <array>
#include <cctype>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "apiserver/remote_command.h"
#include "apiserver/server_impl.h"
#include "apiserver/spdy.h"
#include "apiserver/websocket.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/posix/stream_descriptor.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/ssl.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

// At namespace scope, as pod_streams.cc has it: the sanitizer trees compile both as one unit.
namespace rc = remote_command;

namespace {

namespace posix = net::posix;

constexpr size_t kMaxClientMessage = size_t{16} << 20;
constexpr size_t kChunk = 32 * 1024;

// One port forwarded over a SPDY connection: kubectl's error and data streams of one request
// id, and the TCP connection to the pod.
struct Forward {
  uint32_t error_stream = 0;
  uint32_t data_stream = 0;
  uint16_t port = 0;
  std::optional<tcp::socket> socket;
  bool connected = false;
  bool client_done = false;  // the client's FIN on the data stream
  bool pod_done = false;     // the pod closed its side
  std::deque<std::string> to_pod;  // data that came before the connection was made
  std::array<char, kChunk> buffer{};
};

template <class Stream>
class Upgraded : public std::enable_shared_from_this<Upgraded<Stream>>, public StreamControl {
 public:
  Upgraded(Server::Impl* server, Stream stream, std::string early, std::shared_ptr<Upgrade> up)
      : server_(server),
        stream_(std::move(stream)),
        upgrade_(std::move(up)),
        decoder_(kMaxClientMessage),
        early_(std::move(early)) {
    server_->connections.fetch_add(1);
  }
  ~Upgraded() override { server_->connections.fetch_sub(1); }

  void RequestEnd() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      self->Finish(/*clean=*/true, rc::FailureStatus("the API server is stopping"));
    });
  }
  void Silence() override {}
  int Fd() override { return Socket().native_handle(); }

  void Start() {
    beast::error_code ec;
    auto endpoint = Socket().remote_endpoint(ec);
    client_ = ec ? std::string() : endpoint.address().to_string();
    if (server_->SourceStarted(this, this->weak_from_this(), client_) !=
        Server::Impl::Admit::kYes) {
      // Past the stream limits or stopping: the upgrade is not answered.
      (void)Socket().shutdown(tcp::socket::shutdown_both, ec);
      (void)Socket().close(ec);
      upgrade_.reset();
      return;
    }
    registered_ = true;
    websocket_ = upgrade_->kind != Upgrade::Kind::kPortForwardSpdy;
    SendRaw(upgrade_->head, nullptr);
    if (upgrade_->kind == Upgrade::Kind::kRemoteCommand) StartSession();
    Consume(early_);
    early_.clear();
    ProcessClient();
  }

 private:
  tcp::socket& Socket() { return beast::get_lowest_layer(stream_).socket(); }
  bool RemoteCommand() const { return upgrade_ && upgrade_->kind == Upgrade::Kind::kRemoteCommand; }

  // --- writing to the client ---------------------------------------------------------------------
  void SendRaw(std::string bytes, std::function<void()> after) {
    if (closed_) return;
    out_.emplace_back(std::move(bytes), std::move(after));
    if (!writing_) WriteNext();
  }
  // A protocol message: a WebSocket binary message, or the bytes themselves on a raw connection.
  void Send(std::string payload, std::function<void()> after = nullptr) {
    SendRaw(websocket_ ? websocket::EncodeFrame(websocket::Opcode::kBinary, payload)
                       : std::move(payload),
            std::move(after));
  }
  void WriteNext() {
    if (out_.empty() || closed_) return;
    writing_ = true;
    net::async_write(stream_, net::buffer(out_.front().first),
                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                       self->writing_ = false;
                       // The callbacks queued hold the connection: dropped once it is closed.
                       if (self->closed_) return self->out_.clear();
                       if (ec) return self->Close();
                       std::function<void()> after = std::move(self->out_.front().second);
                       self->out_.pop_front();
                       if (after) after();
                       self->WriteNext();
                     });
  }

  // --- reading from the client -------------------------------------------------------------------
  void ReadClient() {
    if (closed_ || reading_) return;
    reading_ = true;
    stream_.async_read_some(net::buffer(in_buffer_),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              self->reading_ = false;
                              if (self->closed_) return;
                              if (ec) return self->Close();  // the client went away
                              self->Consume(std::string_view(self->in_buffer_.data(), n));
                              self->ProcessClient();
                            });
  }
  void Consume(std::string_view bytes) {
    if (bytes.empty()) return;
    if (websocket_) {
      decoder_.Feed(bytes);
    } else {
      spdy_.Feed(bytes);
    }
  }
  // Handles what has come in until a handler must wait (a write to the process or the pod), then
  // reads more. SPDY frames already in (from a tunnel's earlier messages) go first.
  void ProcessClient() {
    while (!closed_ && !paused_) {
      if (!RemoteCommand() && ProcessSpdy()) continue;
      if (closed_) return;
      if (!websocket_) return ReadClient();
      auto message = decoder_.Next();
      if (!message.ok()) {
        finished_ = paused_ = true;
        SendRaw(websocket::EncodeClose(1002, std::string(message.status().message())),
                [this] { Close(); });
        return;
      }
      if (!*message) return ReadClient();
      OnMessage(**message);
    }
  }
  void OnMessage(websocket::Message& m) {
    switch (m.opcode) {
      case websocket::Opcode::kPing:
        SendRaw(websocket::EncodeFrame(websocket::Opcode::kPong, m.payload), nullptr);
        return;
      case websocket::Opcode::kClose:
        SendRaw(websocket::EncodeClose(1000, ""), [this] { Close(); });
        finished_ = true;
        paused_ = true;
        return;
      case websocket::Opcode::kPong:
      case websocket::Opcode::kContinuation:
        return;
      case websocket::Opcode::kText:
      case websocket::Opcode::kBinary:
        break;
    }
    if (RemoteCommand()) return OnChannel(m.payload);
    spdy_.Feed(m.payload);  // taken by ProcessClient's next turn
  }

  // --- exec and attach ---------------------------------------------------------------------------
  void StartSession() {
    if (!upgrade_->session) return Finish(true, rc::FailureStatus(upgrade_->failure));
    common::PodStreamSession& s = *upgrade_->session;
    auto executor = stream_.get_executor();
    auto take = [&](int& fd, std::optional<posix::stream_descriptor>& into) {
      if (fd < 0) return;
      into.emplace(executor, fd);
      fd = -1;
    };
    take(s.stdin_fd, stdin_);
    take(s.stdout_fd, stdout_);
    take(s.stderr_fd, stderr_);
    stdout_done_ = !stdout_;
    stderr_done_ = !stderr_;
    if (stdout_) ReadOutput(*stdout_, rc::kStdout, stdout_done_);
    if (stderr_) ReadOutput(*stderr_, rc::kStderr, stderr_done_);
    std::weak_ptr<Upgraded> weak = this->shared_from_this();
    s.OnExit([weak, executor](int code) {
      auto self = weak.lock();
      if (!self) return;
      net::post(executor, [self, code] {
        self->exit_code_ = code;
        self->MaybeEnd();
      });
    });
  }
  void ReadOutput(posix::stream_descriptor& from, uint8_t channel, bool& done) {
    std::shared_ptr<std::array<char, kChunk>> buffer = std::make_shared<std::array<char, kChunk>>();
    from.async_read_some(
        net::buffer(*buffer),
        [self = this->shared_from_this(), &from, channel, &done, buffer](beast::error_code ec,
                                                                         size_t n) {
          if (self->closed_) return;
          if (ec) {  // the end (a terminal says EIO once its last user has gone)
            done = true;
            return self->MaybeEnd();
          }
          self->Send(rc::ChannelMessage(channel, std::string_view(buffer->data(), n)),
                     [self, &from, channel, &done] { self->ReadOutput(from, channel, done); });
        });
  }
  void OnChannel(std::string_view payload) {
    if (payload.empty()) return;
    const auto channel = static_cast<uint8_t>(payload[0]);
    payload.remove_prefix(1);
    common::PodStreamSession& s = *upgrade_->session;
    if (channel == rc::kStdin) {
      if (!stdin_ || payload.empty()) return;
      paused_ = true;
      auto data = std::make_shared<std::string>(payload);
      net::async_write(*stdin_, net::buffer(*data),
                       [self = this->shared_from_this(), data](beast::error_code ec, size_t) {
                         if (self->closed_) return;
                         if (ec) self->CloseStdin();  // the command no longer reads
                         self->paused_ = false;
                         self->ProcessClient();
                       });
    } else if (channel == rc::kResize) {
      if (auto size = rc::ParseResize(payload)) s.Resize(size->width, size->height);
    } else if (channel == rc::kClose && upgrade_->v5 && !payload.empty() &&
               static_cast<uint8_t>(payload[0]) == rc::kStdin) {
      CloseStdin();
    }
  }
  void CloseStdin() {
    if (!stdin_) return;
    beast::error_code ignored;
    (void)stdin_->close(ignored);
    stdin_.reset();
    if (upgrade_ && upgrade_->session) upgrade_->session->StdinClosed();
  }
  // Once the command has ended and its output is all sent: the Status on the error channel,
  // then a normal close.
  void MaybeEnd() {
    if (closed_ || finished_ || !exit_code_ || !stdout_done_ || !stderr_done_) return;
    Finish(true, upgrade_->exec ? rc::ExitStatus(*exit_code_, upgrade_->command)
                                : rc::ExitStatus(0, {}));
  }

  // --- port forwarding ---------------------------------------------------------------------------
  // One SPDY frame from the client; false when more bytes are needed.
  bool ProcessSpdy() {
    auto frame = spdy_.Next();
    if (!frame.ok()) {
      Close();  // not SPDY/3: nothing sensible can be said
      return false;
    }
    if (!*frame) return false;
    spdy::Frame& f = **frame;
    using Type = spdy::Frame::Type;
    switch (f.type) {
      case Type::kSynStream:
        OnSynStream(f);
        break;
      case Type::kData:
        OnData(f);
        break;
      case Type::kRstStream:
        if (auto it = stream_to_forward_.find(f.stream_id); it != stream_to_forward_.end()) {
          EndForward(it->second);
        }
        break;
      case Type::kPing:
        Send(spdy_.Ping(f.id));
        break;
      case Type::kGoAway:
        Finish(true, "");
        break;
      default:
        break;
    }
    return true;
  }
  void OnSynStream(const spdy::Frame& f) {
    Send(spdy_.SynReply(f.stream_id, {}, false));
    const std::string type = f.Header("streamtype");
    const std::string request = f.Header("requestid");
    uint32_t port = 0;
    if (!absl::SimpleAtoi(f.Header("port"), &port) || port == 0 || port > 65535 ||
        (type != "error" && type != "data")) {
      Send(spdy_.RstStream(f.stream_id, spdy::kProtocolError));
      return;
    }
    std::shared_ptr<Forward>& fw = forwards_[request];
    if (!fw) fw = std::make_shared<Forward>();
    fw->port = static_cast<uint16_t>(port);
    stream_to_forward_[f.stream_id] = request;
    if (type == "error") {
      fw->error_stream = f.stream_id;
      return;
    }
    fw->data_stream = f.stream_id;
    fw->socket.emplace(stream_.get_executor());
    beast::error_code ec;
    auto address = net::ip::make_address(upgrade_->pod_ip, ec);
    if (ec) return ForwardFailed(request, fw, "the pod has no address: " + ec.message());
    fw->socket->async_connect(
        tcp::endpoint(address, fw->port),
        [self = this->shared_from_this(), request, fw](beast::error_code ec) {
          if (self->closed_ || !fw->socket) return;
          if (ec) {
            std::string why = ec.message();  // in Go's words: "connection refused"
            if (!why.empty()) why[0] = static_cast<char>(std::tolower(why[0]));
            return self->ForwardFailed(
                request, fw,
                fmt::format("dial tcp {}:{}: connect: {}", self->upgrade_->pod_ip, fw->port, why));
          }
          fw->connected = true;
          self->ReadPod(request, fw);
          self->WritePod(request, fw);
        });
  }
  // The kubelet's words on the error stream, then both streams end.
  void ForwardFailed(const std::string& request, const std::shared_ptr<Forward>& fw,
                     const std::string& why) {
    const std::string message =
        fmt::format("error forwarding port {} to pod {}, uid {}: {}", fw->port,
                    upgrade_->pod_name, upgrade_->pod_uid, why);
    if (fw->error_stream != 0) Send(spdy_.Data(fw->error_stream, message, false));
    fw->client_done = true;
    EndForward(request);  // the data stream's end too: kubectl waits for it before the error
  }
  void OnData(const spdy::Frame& f) {
    auto it = stream_to_forward_.find(f.stream_id);
    if (it == stream_to_forward_.end()) return;
    const std::string request = it->second;
    auto fit = forwards_.find(request);
    if (fit == forwards_.end()) return;
    std::shared_ptr<Forward> fw = fit->second;
    if (f.stream_id != fw->data_stream) return;  // the error stream carries nothing inbound
    if (!f.data.empty()) fw->to_pod.push_back(f.data);
    if (f.fin()) fw->client_done = true;
    WritePod(request, fw);
  }
  void WritePod(const std::string& request, const std::shared_ptr<Forward>& fw) {
    if (!fw->connected || !fw->socket) return;
    if (fw->to_pod.empty()) {
      if (fw->client_done) {
        beast::error_code ignored;
        (void)fw->socket->shutdown(tcp::socket::shutdown_send, ignored);
        if (fw->pod_done) EndForward(request);
      }
      return;
    }
    paused_ = true;
    net::async_write(*fw->socket, net::buffer(fw->to_pod.front()),
                     [self = this->shared_from_this(), request, fw](beast::error_code ec, size_t) {
                       if (self->closed_) return;
                       self->paused_ = false;
                       if (!fw->to_pod.empty()) fw->to_pod.pop_front();
                       if (ec) {
                         fw->to_pod.clear();
                         fw->client_done = true;
                       }
                       self->WritePod(request, fw);
                       self->ProcessClient();
                     });
  }
  void ReadPod(const std::string& request, const std::shared_ptr<Forward>& fw) {
    if (!fw->socket) return;
    fw->socket->async_read_some(
        net::buffer(fw->buffer), [self = this->shared_from_this(), request, fw](
                                     beast::error_code ec, size_t n) {
          if (self->closed_ || !fw->socket) return;
          if (ec) {
            fw->pod_done = true;
            self->Send(self->spdy_.Data(fw->data_stream, "", true));
            if (fw->client_done && fw->to_pod.empty()) self->EndForward(request);
            return;
          }
          self->Send(self->spdy_.Data(fw->data_stream, std::string_view(fw->buffer.data(), n),
                                      false),
                     [self, request, fw] { self->ReadPod(request, fw); });
        });
  }
  void EndForward(const std::string& request) {
    auto it = forwards_.find(request);
    if (it == forwards_.end()) return;
    std::shared_ptr<Forward> fw = it->second;
    forwards_.erase(it);
    if (fw->socket) {
      beast::error_code ignored;
      (void)fw->socket->close(ignored);
      fw->socket.reset();
    }
    if (!fw->pod_done && fw->data_stream != 0) Send(spdy_.Data(fw->data_stream, "", true));
    if (fw->error_stream != 0) Send(spdy_.Data(fw->error_stream, "", true));
    stream_to_forward_.erase(fw->error_stream);
    stream_to_forward_.erase(fw->data_stream);
  }

  // --- the end -----------------------------------------------------------------------------------
  // Ends the session as the protocol says: an exec's Status on the error channel (`status`, when
  // not empty), a close frame (or GOAWAY), then the connection.
  void Finish(bool clean, const std::string& status) {
    if (closed_ || finished_) return;
    finished_ = true;
    paused_ = true;
    if (!clean) return Close();
    if (RemoteCommand() && !status.empty()) Send(rc::ChannelMessage(rc::kError, status));
    if (!websocket_) {
      SendRaw(spdy_.GoAway(0), [this] { Close(); });
    } else {
      SendRaw(websocket::EncodeClose(1000, ""), [this] { Close(); });
    }
  }
  void Close() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ignored;
    for (auto* d : {&stdin_, &stdout_, &stderr_}) {
      if (*d) (void)(*d)->close(ignored);
    }
    for (auto& [request, fw] : forwards_) {
      if (fw->socket) (void)fw->socket->close(ignored);
      fw->socket.reset();
    }
    (void)Socket().shutdown(tcp::socket::shutdown_both, ignored);
    (void)Socket().close(ignored);
    // What is queued holds the connection (its callbacks); the write in flight keeps its buffer
    // until its handler runs.
    if (writing_) {
      out_.erase(out_.begin() + 1, out_.end());
    } else {
      out_.clear();
    }
    if (registered_) {
      registered_ = false;
      server_->SourceEnded(this, client_);
    }
    // A command still running is killed; an attach detaches.
    if (upgrade_) upgrade_->session.reset();
  }

  Server::Impl* server_;
  Stream stream_;
  std::shared_ptr<Upgrade> upgrade_;
  websocket::Decoder decoder_;
  spdy::Codec spdy_;
  std::string early_;
  std::string client_;
  bool websocket_ = true;
  bool registered_ = false;
  bool reading_ = false;
  bool writing_ = false;
  bool paused_ = false;    // a write to the process or the pod is pending: the client waits
  bool finished_ = false;  // the end is under way: nothing new is taken from the client
  bool closed_ = false;
  std::array<char, kChunk> in_buffer_{};
  std::deque<std::pair<std::string, std::function<void()>>> out_;

  std::optional<posix::stream_descriptor> stdin_, stdout_, stderr_;
  bool stdout_done_ = false, stderr_done_ = false;
  std::optional<int> exit_code_;

  std::map<std::string, std::shared_ptr<Forward>> forwards_;  // by request id
  std::map<uint32_t, std::string> stream_to_forward_;
};

}  // namespace

void StartUpgraded(Server::Impl* server, beast::tcp_stream stream, std::string early,
                   std::shared_ptr<Upgrade> upgrade) {
  std::make_shared<Upgraded<beast::tcp_stream>>(server, std::move(stream), std::move(early),
                                                std::move(upgrade))
      ->Start();
}

void StartUpgraded(Server::Impl* server, beast::ssl_stream<beast::tcp_stream> stream,
                   std::string early, std::shared_ptr<Upgrade> upgrade) {
  using TlsStream = beast::ssl_stream<beast::tcp_stream>;
  std::make_shared<Upgraded<TlsStream>>(server, std::move(stream), std::move(early),
                                        std::move(upgrade))
      ->Start();
}

}  // namespace muster::apiserver
