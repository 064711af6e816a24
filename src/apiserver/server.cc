#include "apiserver/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "apiserver/status.h"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/ssl.hpp"
#include "boost/asio/strand.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

// Idle keep-alive connections are dropped after this long without a request.
constexpr auto kIdleTimeout = std::chrono::minutes(10);
// Stop() lets streams end by themselves (a clean last chunk) for this long, then cuts them.
constexpr auto kStreamGrace = std::chrono::seconds(2);

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Go's url.PathUnescape / QueryUnescape: %XX escapes, and in queries '+' is a space.
std::optional<std::string> Unescape(std::string_view in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      int hi = HexValue(in[i + 1]);
      int lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Splits an origin-form target into a decoded path and decoded query parameters.
bool ParseTarget(std::string_view target, HttpRequest& req) {
  auto q = target.find('?');
  auto path = Unescape(target.substr(0, q), /*plus_is_space=*/false);
  if (!path || path->empty() || (*path)[0] != '/') return false;
  req.path = std::move(*path);
  if (q == std::string_view::npos) return true;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    auto key = Unescape(pair.substr(0, eq), true);
    auto value =
        Unescape(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
    if (!key || !value) return false;
    req.query.emplace_back(std::move(*key), std::move(*value));
  }
  return true;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  RequestHandler handler;
  net::io_context ioc;
  std::optional<ssl::context> tls;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> pool;
  std::atomic<bool> stopping{false};

  std::mutex stop_mu;
  bool stopped = false;

  // Streaming responses in flight, by socket descriptor, so Stop() can cut stuck ones.
  std::mutex streams_mu;
  std::condition_variable streams_cv;
  std::multiset<int> stream_fds;

  void DoAccept();
  void StreamStarted(int fd) {
    std::lock_guard lock(streams_mu);
    stream_fds.insert(fd);
  }
  void StreamEnded(int fd) {
    std::lock_guard lock(streams_mu);
    auto it = stream_fds.find(fd);
    if (it != stream_fds.end()) stream_fds.erase(it);
    streams_cv.notify_all();
  }
  HttpResponse Call(const HttpRequest& req) {
    try {
      return handler(req);
    } catch (const std::exception& e) {
      return ErrorResponse(Internal(e.what()));
    } catch (...) {
      return ErrorResponse(Internal("unknown error"));
    }
  }
};

namespace {

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
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Server::Impl* server, Stream stream) : server_(server), stream_(std::move(stream)) {}

  void Start() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      DoRead();
    } else {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->Close();
                                self->DoRead();
                              });
    }
  }

 private:
  tcp::socket& Socket() { return beast::get_lowest_layer(stream_).socket(); }

  void DoRead() {
    if (server_->stopping) return Close();
    parser_.emplace();
    parser_->body_limit(server_->options.max_body_bytes);
    beast::get_lowest_layer(stream_).expires_after(kIdleTimeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  // A Content-Length over the limit is refused before the body is read; a client waiting for
  // "100 Continue" (curl does for large bodies) gets it.
  void OnHeader(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      return ReplyAndDrain(ErrorResponse(TooLarge(server_->options.max_body_bytes)));
    }
    if (ec) return Close();
    const auto& msg = parser_->get();
    if (beast::iequals(msg[http::field::expect], "100-continue")) {
      auto go_on = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                      msg.version());
      return http::async_write(
          stream_, *go_on, [self = this->shared_from_this(), go_on](beast::error_code ec, size_t) {
            if (ec) return self->Close();
            self->ReadBody();
          });
    }
    ReadBody();
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
    auto& msg = parser_->get();
    bool keep_alive = msg.keep_alive();
    unsigned version = msg.version();

    HttpRequest req;
    req.method = std::string(msg.method_string());
    if (!ParseTarget(msg.target(), req)) {
      return Reply(ErrorResponse(BadRequest("malformed request URL")), version, false);
    }
    if (!server_->options.bearer_token.empty()) {
      std::string_view auth = msg[http::field::authorization];
      std::string want = "Bearer " + server_->options.bearer_token;
      if (!ConstantTimeEquals(auth, want)) {
        return Reply(ErrorResponse(Unauthorized()), version, keep_alive);
      }
    }
    req.content_type = std::string(msg[http::field::content_type]);
    req.accept = std::string(msg[http::field::accept]);
    req.body = std::move(msg.body());
    HttpResponse res = server_->Call(req);
    if (res.stream) return StartStream(std::move(res), version, keep_alive);
    Reply(std::move(res), version, keep_alive);
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
    http::async_write(
        stream_, *out,
        [self = this->shared_from_this(), out, keep_alive](beast::error_code ec, size_t) {
          if (ec || !keep_alive) return self->Close();
          self->DoRead();
        });
  }

  // For 413: the rest of the body was not read, so answer, stop sending and read what the
  // client still sends until it closes, so that it sees the answer rather than a reset.
  void ReplyAndDrain(HttpResponse res) {
    auto out = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(res.status), 11);
    SetHeaders(out->base(), res);
    out->body() = std::move(res.body);
    out->keep_alive(false);
    out->prepare_payload();
    http::async_write(
        stream_, *out, [self = this->shared_from_this(), out](beast::error_code ec, size_t) {
          if (ec) return self->Close();
          beast::error_code ignored;
          self->Socket().shutdown(tcp::socket::shutdown_send, ignored);
          beast::get_lowest_layer(self->stream_).expires_after(std::chrono::seconds(5));
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

  void StartStream(HttpResponse res, unsigned version, bool keep_alive) {
    beast::get_lowest_layer(stream_).expires_never();
    int fd = Socket().native_handle();
    server_->StreamStarted(fd);
    std::thread([self = this->shared_from_this(), res = std::move(res), version, keep_alive,
                 fd]() mutable {
      Server::Impl* server = self->server_;
      bool ok = self->RunStream(res, version);
      if (ok && keep_alive && !server->stopping) {
        auto executor = self->stream_.get_executor();
        net::post(executor, [self]() { self->DoRead(); });
      } else {
        self->Close();
      }
      self.reset();  // before StreamEnded: the session must not outlive the io_context
      server->StreamEnded(fd);
    }).detach();
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
  std::optional<http::request_parser<http::string_body>> parser_;
};

}  // namespace

void Server::Impl::DoAccept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (stopping || !acceptor.is_open()) return;
      return DoAccept();  // e.g. EMFILE: keep serving the connections we have
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    if (tls) {
      std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
          this, beast::ssl_stream<beast::tcp_stream>(beast::tcp_stream(std::move(socket)), *tls))
          ->Start();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(this, beast::tcp_stream(std::move(socket)))
          ->Start();
    }
    DoAccept();
  });
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

uint16_t Server::port() const {
  beast::error_code ec;
  auto endpoint = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                                      RequestHandler handler) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handler = std::move(handler);

  if (!options.tls_cert_pem.empty() || !options.tls_key_pem.empty()) {
    try {
      impl->tls.emplace(ssl::context::tls_server);
      impl->tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                             ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                             ssl::context::no_tlsv1_1);
      impl->tls->use_certificate_chain(
          net::buffer(options.tls_cert_pem.data(), options.tls_cert_pem.size()));
      impl->tls->use_private_key(
          net::buffer(options.tls_key_pem.data(), options.tls_key_pem.size()),
          ssl::context::file_format::pem);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(fmt::format("TLS certificate or key: {}", e.what()));
    }
  }

  beast::error_code ec;
  auto address = net::ip::make_address(options.address, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        fmt::format("listen address \"{}\": {}", options.address, ec.message()));
  }
  tcp::endpoint endpoint(address, options.port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        fmt::format("cannot listen on {}:{}: {}", options.address, options.port, ec.message()));
  }
  impl->DoAccept();
  int threads = options.threads > 0 ? options.threads : 1;
  for (int i = 0; i < threads; ++i) {
    impl->pool.emplace_back([io = &impl->ioc]() { io->run(); });
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

void Server::Stop() {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.stop_mu);
    if (s.stopped) return;
    s.stopped = true;
  }
  s.stopping = true;
  net::post(s.ioc, [&s]() {
    beast::error_code ec;
    s.acceptor.close(ec);
  });
  {
    // Streams notice `stopping` within a poll interval and end with a clean last chunk; those
    // stuck in a write to a client that does not read are cut.
    std::unique_lock lock(s.streams_mu);
    if (!s.streams_cv.wait_for(lock, kStreamGrace, [&s] { return s.stream_fds.empty(); })) {
      for (int fd : s.stream_fds) ::shutdown(fd, SHUT_RDWR);
      s.streams_cv.wait_for(lock, std::chrono::seconds(5), [&s] { return s.stream_fds.empty(); });
    }
  }
  s.ioc.stop();
  for (auto& t : s.pool) {
    if (t.joinable()) t.join();
  }
}

}  // namespace muster::apiserver
