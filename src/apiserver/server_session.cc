// One connection of the API server: reading requests with a parser that keeps what the
// handlers read (RequestParser), answering them on the pool or, for streams, on a thread of their
// own or as a StreamSource the pool polls (ChunkSink), over plain TCP or TLS; a connection that
// switches protocols (pods/exec) is handed to server_upgrade.cc. Boost.Beast's HTTP
// code lives here only (and the accept loop beside it, server.cc).

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "apiserver/request_target.h"
#include "apiserver/server_impl.h"
#include "apiserver/status.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/defer.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/ssl.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace {

namespace http = beast::http;

// A client refused before its request was read in full gets this long to take the answer.
constexpr auto kDrainTimeout = std::chrono::seconds(5);

// A request parser that keeps only what this file and the handler read. Beast's
// http::request_parser stores every field in basic_fields, whose 16-bit offsets make a field over
// 64 KiB throw out of the read (Boost 1.81), where kube-apiserver takes any field within its
// 1 MiB header limit. The first of repeated fields counts, as Go's Header.Get.
class RequestParser : public http::basic_parser<true> {
 public:
  std::string method;
  std::string target;
  unsigned version = 11;
  std::string authorization;
  std::string content_type;
  std::string accept;
  std::string user_agent;
  std::string expect;
  std::string transfer_encoding;
  std::string upgrade;
  std::string websocket_key;
  std::string websocket_protocols;  // every Sec-WebSocket-Protocol field, joined with commas
  std::string stream_protocols;     // every X-Stream-Protocol-Version field, likewise
  int transfer_encodings = 0;  // Transfer-Encoding fields
  int hosts = 0;               // Host fields
  std::string body;

 private:
  void on_request_impl(http::verb, beast::string_view method_str, beast::string_view target_str,
                       int http_version, beast::error_code&) override {
    method = std::string(method_str);
    target = std::string(target_str);
    version = static_cast<unsigned>(http_version);
  }
  void on_response_impl(int, beast::string_view, int, beast::error_code&) override {}
  void on_field_impl(http::field name, beast::string_view name_str, beast::string_view value,
                     beast::error_code&) override {
    if (name == http::field::host) ++hosts;
    auto join = [value](std::string& list) {
      if (!list.empty()) list += ",";
      list.append(value.data(), value.size());
    };
    if (name == http::field::sec_websocket_protocol) join(websocket_protocols);
    if (name == http::field::unknown && beast::iequals(name_str, "X-Stream-Protocol-Version")) {
      join(stream_protocols);
    }
    if (name == http::field::transfer_encoding) {
      ++transfer_encodings;
      transfer_encoding = std::string(value);
    }
    for (auto [field, keep] :
         {std::pair{http::field::authorization, &authorization},
          std::pair{http::field::content_type, &content_type},
          std::pair{http::field::accept, &accept}, std::pair{http::field::expect, &expect},
          std::pair{http::field::user_agent, &user_agent},
          std::pair{http::field::upgrade, &upgrade},
          std::pair{http::field::sec_websocket_key, &websocket_key}}) {
      if (name == field && keep->empty()) *keep = std::string(value);
    }
  }
  void on_header_impl(beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         beast::error_code&) override {
    if (content_length) body.reserve(static_cast<size_t>(*content_length));  // within body_limit
  }
  size_t on_body_impl(beast::string_view data, beast::error_code&) override {
    body.append(data.data(), data.size());
    return data.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, beast::string_view data, beast::error_code&) override {
    body.append(data.data(), data.size());
    return data.size();
  }
  void on_finish_impl(beast::error_code&) override {}
};

// Chunks written synchronously from a stream's own thread; the session's async machinery is idle
// meanwhile, so the socket has one user at a time.
template <class Stream>
class ChunkSink : public StreamSink {
 public:
  ChunkSink(Stream& stream, const std::atomic<bool>& stopping, int fd)
      : stream_(stream), stopping_(stopping), fd_(fd) {}

  bool Write(std::string_view data) override {
    if (failed_ || stopping_) return false;
    if (data.empty()) return true;
    beast::error_code ec;
    net::write(stream_, http::make_chunk(net::const_buffer(data.data(), data.size())), ec);
    if (ec) failed_ = true;
    return !failed_;
  }

  bool Cancelled() override {
    if (failed_ || stopping_) return true;
    char c;
    ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      failed_ = true;
    }
    return failed_;
  }

  bool failed() const { return failed_; }

 private:
  Stream& stream_;
  const std::atomic<bool>& stopping_;
  int fd_;
  bool failed_ = false;
};

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>>, public StreamControl {
 public:
  Session(Server::Impl* server, Stream stream) : server_(server), stream_(std::move(stream)) {
    server_->connections.fetch_add(1);
  }
  // May run in the io_context's destructor (a pending handler held the last reference), where
  // only what Impl declares before the io_context is still there.
  ~Session() override {
    if (waker_) waker_->Silence();
    ReleaseInflight();
    server_->connections.fetch_sub(1);
  }

  void RequestEnd() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      self->end_requested_ = true;
      self->Pump();
    });
  }
  void Silence() override {
    if (waker_) waker_->Silence();
  }
  int Fd() override { return Socket().native_handle(); }

  void Start() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      DoRead(/*first=*/true);
    } else {
      // Go bounds the TLS handshake by ReadHeaderTimeout too.
      beast::get_lowest_layer(stream_).expires_after(server_->options.header_timeout);
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->Close();
                                self->DoRead(/*first=*/true);
                              });
    }
  }

 private:
  tcp::socket& Socket() { return beast::get_lowest_layer(stream_).socket(); }

  // The next request, with the timeouts of Go's http.Server: a keep-alive connection waits
  // idle_timeout for the request's first byte; from then on (from the start for a connection's
  // first request) the headers must be in within header_timeout.
  void DoRead(bool first) {
    if (server_->stopping) return Close();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(
        std::min<size_t>(server_->options.max_header_bytes, std::numeric_limits<uint32_t>::max())));
    parser_->body_limit(server_->options.max_body_bytes);
    if (first || buffer_.size() > 0) return ReadHeader();
    beast::get_lowest_layer(stream_).expires_after(server_->options.idle_timeout);
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) return self->Close();
                              self->buffer_.commit(n);
                              self->ReadHeader();
                            });
  }

  void ReadHeader() {
    beast::get_lowest_layer(stream_).expires_after(server_->options.header_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  // Refusals that need no body come before it is read: headers or a Content-Length over the
  // limits, a malformed URL, a missing token (the connection is then closed: a client without
  // the token gets nothing more), the in-flight limits. A client waiting for "100 Continue"
  // (curl does for large bodies) gets it only past these.
  void OnHeader(beast::error_code ec) {
    const ServerOptions& options = server_->options;
    if (ec == http::error::header_limit) {
      return ReplyAndDrain(ErrorResponse(HeaderTooLarge(options.max_header_bytes)));
    }
    if (ec == http::error::body_limit) {
      return ReplyAndDrain(ErrorResponse(TooLarge(options.max_body_bytes)));
    }
    if (ec) {
      // What Go's net/http (so kube-apiserver) answers a request it cannot parse, then closes;
      // a client that went away or was too slow gets nothing.
      if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
          ec != http::error::end_of_stream && ec != http::error::partial_message) {
        if (ec == http::error::bad_version && WellFormedVersion()) {
          return ReplyAndDrain(PlainRefusal(505, "505 HTTP Version Not Supported"));
        }
        return ReplyAndDrain(PlainRefusal(400, "400 Bad Request"));
      }
      return Close();
    }
    RequestParser& p = *parser_;
    // RFC 9112 §3.2: exactly one Host in HTTP/1.1 (Go: "missing required Host header").
    if ((p.version == 11 && p.hosts == 0) || p.hosts > 1) {
      return ReplyAndDrain(PlainRefusal(400, p.hosts == 0
                                                 ? "400 Bad Request: missing required Host header"
                                                 : "400 Bad Request: too many Host headers"));
    }
    // Only "chunked", once, as Go: any other coding would leave the body unread and what it
    // holds taken for the next request.
    if (p.transfer_encodings > 1 ||
        (p.transfer_encodings == 1 && !beast::iequals(Trim(p.transfer_encoding), "chunked"))) {
      return ReplyAndDrain(PlainRefusal(501, "Unsupported transfer encoding"));
    }
    req_ = HttpRequest();
    req_.method = p.method;
    if (!ParseTarget(p.target, req_)) {
      return ReplyAndDrain(ErrorResponse(BadRequest("malformed request URL")));
    }
    const bool anonymous_public =
        p.authorization.empty() && req_.method == "GET" &&
        (PublicInfoPath(req_.path) || (options.public_path && options.public_path(req_.path)));
    if (!options.bearer_token.empty() && !anonymous_public &&
        !ConstantTimeEquals(p.authorization, "Bearer " + options.bearer_token)) {
      return ReplyAndDrain(ErrorResponse(Unauthorized()));
    }
    if (!TakeInflightSlot()) {
      // Without a body to skip the connection stays usable, as kube-apiserver's.
      if (p.is_done()) return Reply(ErrorResponse(TooManyRequests()), p.version, p.keep_alive());
      return ReplyAndDrain(ErrorResponse(TooManyRequests()));
    }
    beast::get_lowest_layer(stream_).expires_after(options.body_timeout);
    if (beast::iequals(p.expect, "100-continue")) {
      auto go_on =
          std::make_shared<http::response<http::empty_body>>(http::status::continue_, p.version);
      return http::async_write(
          stream_, *go_on, [self = this->shared_from_this(), go_on](beast::error_code ec, size_t) {
            if (ec) return self->Close();
            self->ReadBody();
          });
    }
    ReadBody();
  }

  // Whether the request line the parser refused ends in "HTTP/<digit>.<digit>": a version
  // Beast does not speak (only 1.0 and 1.1), which Go answers with 505, not 400.
  bool WellFormedVersion() const {
    auto data = buffer_.data();
    std::string_view head(static_cast<const char*>(data.data()), data.size());
    std::string_view line = head.substr(0, head.find("\r\n"));
    std::string_view version = line.substr(line.rfind(' ') + 1);
    return version.size() == 8 && version.substr(0, 5) == "HTTP/" &&
           std::isdigit(static_cast<unsigned char>(version[5])) && version[6] == '.' &&
           std::isdigit(static_cast<unsigned char>(version[7]));
  }

  static HttpResponse PlainRefusal(int status, std::string text) {
    HttpResponse res;
    res.status = status;
    res.content_type = "text/plain; charset=utf-8";
    res.body = std::move(text);
    return res;
  }

  static std::string_view Trim(std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  }

  // Counts the request against its in-flight limit (kube-apiserver's WithMaxInFlightLimit),
  // unless it is long-running. False when the limit is reached.
  bool TakeInflightSlot() {
    const ServerOptions& options = server_->options;
    if (options.long_running && options.long_running(req_)) return true;
    const std::string& m = req_.method;
    const bool mutating = m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE";
    const int limit =
        mutating ? options.max_mutating_requests_inflight : options.max_requests_inflight;
    if (limit <= 0) return true;
    std::atomic<int>& count = mutating ? server_->mutating_inflight : server_->readonly_inflight;
    if (count.fetch_add(1) >= limit) {
      count.fetch_sub(1);
      return false;
    }
    inflight_ = &count;
    return true;
  }

  void ReleaseInflight() {
    if (inflight_ == nullptr) return;
    inflight_->fetch_sub(1);
    inflight_ = nullptr;
  }

  void ReadBody() {
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      return ReplyAndDrain(ErrorResponse(TooLarge(server_->options.max_body_bytes)));
    }
    if (ec) return Close();
    RequestParser& p = *parser_;
    req_.content_type = std::move(p.content_type);
    req_.accept = std::move(p.accept);
    req_.user_agent = std::move(p.user_agent);
    req_.body = std::move(p.body);
    req_.upgrade = absl::AsciiStrToLower(p.upgrade);
    req_.websocket_key = std::move(p.websocket_key);
    req_.websocket_protocols = std::move(p.websocket_protocols);
    req_.stream_protocols = std::move(p.stream_protocols);
    HttpResponse res = server_->Call(req_);
    if (res.upgrade) return SwitchProtocols(std::move(res.upgrade));
    if (res.source) return StartSource(std::move(res), p.version, p.keep_alive());
    if (res.stream) return StartStream(std::move(res), p.version, p.keep_alive());
    Reply(std::move(res), p.version, p.keep_alive());
  }

  static void SetHeaders(http::response_header<>& h, const HttpResponse& res) {
    h.set(http::field::content_type, res.content_type);
    for (const auto& [name, value] : res.headers) h.set(name, value);
  }

  void Reply(HttpResponse res, unsigned version, bool keep_alive) {
    auto out = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(res.status), version);
    SetHeaders(out->base(), res);
    out->body() = std::move(res.body);
    out->keep_alive(keep_alive);
    out->prepare_payload();
    // Not timed, as kube-apiserver sets no WriteTimeout: a slow reader of a large list is not cut
    // off (the connection cap bounds how many there can be).
    beast::get_lowest_layer(stream_).expires_never();
    ReleaseInflight();  // the answer is made: the client may send the next request
    http::async_write(
        stream_, *out,
        [self = this->shared_from_this(), out, keep_alive](beast::error_code ec, size_t) {
          if (ec || !keep_alive) return self->Close();
          self->DoRead(/*first=*/false);
        });
  }

  // For refusals before the request was read in full: answer, stop sending and read what the
  // client still sends until it closes, so that it sees the answer rather than a reset.
  void ReplyAndDrain(HttpResponse res) {
    ReleaseInflight();
    auto out = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(res.status), 11);
    SetHeaders(out->base(), res);
    out->body() = std::move(res.body);
    out->keep_alive(false);
    out->prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(kDrainTimeout);
    http::async_write(
        stream_, *out, [self = this->shared_from_this(), out](beast::error_code ec, size_t) {
          if (ec) return self->Close();
          beast::error_code ignored;
          self->Socket().shutdown(tcp::socket::shutdown_send, ignored);
          beast::get_lowest_layer(self->stream_).expires_after(kDrainTimeout);
          self->Drain();
        });
  }

  void Drain() {
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(64 * 1024),
                            [self = this->shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->Close();
                              self->Drain();
                            });
  }

  std::string ClientAddress() {
    beast::error_code ec;
    auto endpoint = Socket().remote_endpoint(ec);
    return ec ? std::string() : endpoint.address().to_string();
  }

  // The answer when a stream cannot start: the stream limits, or no thread to run it on.
  void RefuseStream(unsigned version, bool keep_alive) {
    Reply(ErrorResponse(TooManyRequests()), version, keep_alive);
  }

  // True when the stream may start; otherwise the connection is answered or closed.
  bool Admitted(Server::Impl::Admit admit, unsigned version, bool keep_alive) {
    switch (admit) {
      case Server::Impl::Admit::kStopping:
        Close();
        return false;
      case Server::Impl::Admit::kLimit:
        RefuseStream(version, keep_alive);
        return false;
      case Server::Impl::Admit::kYes:
        break;
    }
    return true;
  }

  // The connection leaves this session for the streaming protocol's (server_upgrade.cc), with
  // what the client may already have sent after its request.
  void SwitchProtocols(std::shared_ptr<Upgrade> upgrade) {
    ReleaseInflight();
    beast::get_lowest_layer(stream_).expires_never();
    auto data = buffer_.data();
    std::string early(static_cast<const char*>(data.data()), data.size());
    buffer_.consume(buffer_.size());
    StartUpgraded(server_, std::move(stream_), std::move(early), std::move(upgrade));
  }

  // Runs on a pool thread, so before Stop() has joined the pool; Stop() waits for every stream
  // counted here and none starts once it has begun.
  void StartStream(HttpResponse res, unsigned version, bool keep_alive) {
    ReleaseInflight();
    const int fd = Socket().native_handle();
    std::string client = ClientAddress();
    if (!Admitted(server_->StreamStarted(fd, client), version, keep_alive)) return;
    beast::get_lowest_layer(stream_).expires_never();
    try {
      std::thread([self = this->shared_from_this(), res = std::move(res), version, keep_alive,
                   fd, client]() mutable {
        Server::Impl* server = self->server_;
        bool ok = self->RunStream(res, version);
        if (ok && keep_alive && !server->stopping) {
          auto executor = self->stream_.get_executor();
          net::post(executor, [self]() { self->DoRead(/*first=*/false); });
        } else {
          self->Close();
        }
        // Before StreamEnded, after which the server may be gone: the session and whatever the
        // response's stream function holds.
        self.reset();
        res = HttpResponse();
        server->StreamEnded(fd, client);
      }).detach();
    } catch (const std::system_error& e) {  // out of threads: the client may retry
      server_->StreamEnded(fd, client);
      fmt::print(stderr, "muster: cannot start a thread for a stream: {}\n", e.what());
      RefuseStream(version, keep_alive);
    }
  }

  // A StreamSource, served on the pool: the chunks are written as the source has them (Pump),
  // and a read waits meanwhile for the client to close. The response says Connection: close, as
  // the read may have taken bytes a next request would need.
  void StartSource(HttpResponse res, unsigned version, bool keep_alive) {
    ReleaseInflight();
    stream_client_ = ClientAddress();
    if (!Admitted(server_->SourceStarted(this, this->weak_from_this(), stream_client_), version,
                  keep_alive)) {
      return;
    }
    source_ = std::move(res.source);
    beast::get_lowest_layer(stream_).expires_never();
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      beast::error_code ignored;
      Socket().non_blocking(true, ignored);  // for Pump's direct writes
    }
    timer_.emplace(stream_.get_executor());
    std::weak_ptr<Session> weak = this->shared_from_this();
    // Deferred, not posted: from a pool thread (a write through the API) the polls then queue
    // on that thread instead of waking another for each stream.
    waker_ = std::make_shared<Waker>([weak] {
      auto self = weak.lock();
      if (!self) return;
      net::defer(self->stream_.get_executor(), [weak] {
        if (auto self = weak.lock()) {
          self->waker_->Taken();
          self->woken_ = true;
          self->Pump();
        }
      });
    });
    source_->Start([waker = waker_] { waker->Wake(); });
    auto head = std::make_shared<http::response<http::empty_body>>(
        static_cast<http::status>(res.status), version);
    SetHeaders(head->base(), res);
    head->chunked(true);
    head->keep_alive(false);
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*head);
    writing_ = true;
    http::async_write_header(stream_, *serializer,
                             [self = this->shared_from_this(), head, serializer](
                                 beast::error_code ec, size_t) {
                               self->writing_ = false;
                               if (ec) return self->EndSource();
                               self->WaitForClientClose();
                               self->Pump();
                             });
  }

  // On the connection's executor: sends what the source has, or waits for its next wake or
  // deadline.
  void Pump() {
    while (!source_done_ && !writing_) {  // a write's end pumps again if woken meanwhile
      woken_ = false;
      std::string out;
      StreamSource::Poll poll =
          end_requested_ ? StreamSource::Poll::kEnded : source_->Next(out);
      const bool last = poll == StreamSource::Poll::kEnded;
      more_ = poll == StreamSource::Poll::kMore;
      if (out.empty() && !last) {
        if (more_) continue;
        return ArmTimer();
      }
      wire_.clear();
      if (!out.empty()) {
        wire_ = fmt::format("{:x}\r\n", out.size());
        wire_ += out;
        wire_ += "\r\n";
      }
      if (last) wire_ += "0\r\n\r\n";
      size_t sent = 0;
      if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
        // Most chunks fit the socket's buffer: sent here (the socket is non-blocking), without
        // an asynchronous write whose completion would be one more handler per event.
        beast::error_code ec;
        sent = Socket().write_some(net::buffer(wire_), ec);
        if (ec && ec != net::error::would_block) return EndSource();
        if (sent == wire_.size()) {
          if (last) return EndSource();
          if (more_ || end_requested_) continue;
          return ArmTimer();
        }
      }
      writing_ = true;
      net::async_write(stream_, net::buffer(wire_.data() + sent, wire_.size() - sent),
                       [self = this->shared_from_this(), last](beast::error_code ec, size_t) {
                         self->writing_ = false;
                         if (ec || last) return self->EndSource();
                         if (self->more_ || self->woken_ || self->end_requested_) {
                           return self->Pump();
                         }
                         self->ArmTimer();
                       });
      return;
    }
  }

  // Re-armed only when the source's next deadline moves (a bookmark sent): a watch's timeout
  // is armed once, not once per event.
  void ArmTimer() {
    const auto at = source_->NextPoll();
    if (at == armed_at_) return;
    armed_at_ = at;
    if (at == StreamSource::Clock::time_point::max()) {
      timer_->cancel();
      return;
    }
    timer_->expires_at(at);
    timer_->async_wait([self = this->shared_from_this()](beast::error_code ec) {
      if (ec) return;
      self->armed_at_ = StreamSource::Clock::time_point::max();
      self->Pump();
    });
  }

  // What a client sends during a stream is dropped; its close (or a reset) ends the stream.
  void WaitForClientClose() {
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              if (self->source_done_) return;
                              if (ec) return self->EndSource();
                              self->buffer_.commit(n);
                              self->buffer_.consume(self->buffer_.size());
                              self->WaitForClientClose();
                            });
  }

  void EndSource() {
    if (source_done_) return;
    source_done_ = true;
    waker_->Silence();
    timer_->cancel();
    // The place is free before the source says it stopped: a client that sees its watch end may
    // start the next one at once without a 429.
    server_->SourceEnded(this, stream_client_);
    source_->Stop();
    Close();
  }

  // Runs on the stream's thread. True when the response ended cleanly.
  bool RunStream(HttpResponse& res, unsigned version) {
    http::response<http::empty_body> head(static_cast<http::status>(res.status), version);
    SetHeaders(head.base(), res);
    head.chunked(true);
    head.keep_alive(true);
    http::response_serializer<http::empty_body> serializer(head);
    beast::error_code ec;
    http::write_header(stream_, serializer, ec);
    if (ec) return false;
    ChunkSink<Stream> sink(stream_, server_->stopping, Socket().native_handle());
    try {
      res.stream(sink);
    } catch (...) {
      return false;
    }
    if (sink.failed()) return false;
    net::write(stream_, http::make_chunk_last(), ec);
    return !ec;
  }

  void Close() {
    beast::error_code ec;
    Socket().shutdown(tcp::socket::shutdown_both, ec);
    Socket().close(ec);
  }

  Server::Impl* server_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  HttpRequest req_;  // method, path and query from the headers; the rest from the body's end
  std::atomic<int>* inflight_ = nullptr;  // the in-flight count this request holds a place in
  // A StreamSource being served (StartSource); used on the connection's executor.
  std::shared_ptr<StreamSource> source_;
  std::shared_ptr<Waker> waker_;
  std::optional<net::steady_timer> timer_;
  std::string stream_client_;
  std::string wire_;  // the chunk being written
  bool writing_ = false;
  bool woken_ = false;  // a wake came since the last poll
  bool more_ = false;   // the last poll said kMore
  StreamSource::Clock::time_point armed_at_ = StreamSource::Clock::time_point::max();
  bool end_requested_ = false;  // by Stop()
  bool source_done_ = false;
};

}  // namespace

void StartSession(Server::Impl* server, tcp::socket socket) {
  if (server->tls) {
    using TlsStream = beast::ssl_stream<beast::tcp_stream>;
    std::make_shared<Session<TlsStream>>(
        server, TlsStream(beast::tcp_stream(std::move(socket)), *server->tls))
        ->Start();
  } else {
    std::make_shared<Session<beast::tcp_stream>>(server, beast::tcp_stream(std::move(socket)))
        ->Start();
  }
}

}  // namespace muster::apiserver
