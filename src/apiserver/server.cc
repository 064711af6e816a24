#include "apiserver/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
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

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

// Stop() lets streams end by themselves (a clean last chunk) for this long, then cuts them.
constexpr auto kStreamGrace = std::chrono::seconds(2);
// A client refused before its request was read in full gets this long to take the answer.
constexpr auto kDrainTimeout = std::chrono::seconds(5);
// Accepting while out of descriptors is retried after 10 ms, doubling up to 1 s.
constexpr std::chrono::milliseconds kAcceptBackoffMin(10);
constexpr std::chrono::milliseconds kAcceptBackoffMax(1000);
// TCP keep-alive probes on accepted connections, as kube-apiserver's defaultKeepAlivePeriod.
constexpr int kKeepAliveSeconds = 180;

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

// The paths kube-apiserver's system:public-info-viewer role lets anyone GET.
bool PublicInfoPath(std::string_view path) {
  for (std::string_view p : {"/version", "/healthz", "/livez", "/readyz"}) {
    if (path == p || (path.starts_with(p) && path.size() > p.size() && path[p.size()] == '/')) {
      return true;
    }
  }
  return false;
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

// Go raises the soft RLIMIT_NOFILE to the hard one when a program starts (Go 1.19), so
// kube-apiserver serves with the hard limit; so does this server.
void RaiseOpenFileLimit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= files.rlim_max) return;
  const rlim_t was = files.rlim_cur;
  files.rlim_cur = files.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &files) != 0) {
    fmt::print(stderr, "muster: cannot raise the open-file limit from {} to {}: {}\n", was,
               files.rlim_max, std::strerror(errno));
  }
}

// Accept errors that a retry at once would only repeat: out of descriptors or memory.
bool OutOfResources(const beast::error_code& ec) {
  if (ec.category() != boost::system::system_category()) return false;
  const int e = ec.value();
  return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

void SetSocketOptions(tcp::socket& socket) {
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  socket.set_option(net::socket_base::keep_alive(true), ignored);
  const int fd = socket.native_handle();
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepAliveSeconds, sizeof kKeepAliveSeconds);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepAliveSeconds, sizeof kKeepAliveSeconds);
}

}  // namespace

// What Stop() needs of a connection serving a StreamSource.
class StreamControl {
 public:
  virtual ~StreamControl() = default;
  // Thread-safe: the stream ends with a clean last chunk, on the connection's executor.
  virtual void RequestEnd() = 0;
  // Thread-safe: no more wake-ups are posted to the pool (before it is destroyed).
  virtual void Silence() = 0;
  virtual int Fd() = 0;
};

// A StreamSource's wake callback: posts one poll to the connection at a time, and nothing once
// silenced (the stream ended, or the server is going away: the store may still call it). It
// holds the connection weakly and nothing of the io_context, so it may outlive both. The post
// runs under the lock, so none starts after Silence() returns; the mutex is recursive because
// the post may drop the last reference to the connection, whose destructor silences it.
class Waker {
 public:
  explicit Waker(std::function<void()> post) : post_(std::move(post)) {}
  void Wake() {
    std::lock_guard lock(mu_);
    if (silenced_ || queued_) return;
    queued_ = true;
    post_();
  }
  void Taken() {  // the posted poll runs: a wake from now on posts another
    std::lock_guard lock(mu_);
    queued_ = false;
  }
  void Silence() {
    std::lock_guard lock(mu_);
    silenced_ = true;
  }

 private:
  std::recursive_mutex mu_;
  bool silenced_ = false;
  bool queued_ = false;
  std::function<void()> post_;
};

struct Server::Impl {
  ServerOptions options;
  RequestHandler handler;
  // Updated by sessions until they are destroyed, which may be in ioc's destructor: declared
  // before it.
  std::atomic<int> connections{0};
  std::atomic<int> readonly_inflight{0};
  std::atomic<int> mutating_inflight{0};
  net::io_context ioc;
  // Keeps the pool running while the accept loop only waits on its timer, until Stop().
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  std::optional<ssl::context> tls;
  // The acceptor and its back-off timer are used on this strand only (Stop() closes it there).
  net::strand<net::io_context::executor_type> accept_strand{ioc.get_executor()};
  tcp::acceptor acceptor{accept_strand};
  net::steady_timer accept_timer{accept_strand};
  std::chrono::milliseconds accept_backoff{0};
  uint16_t port = 0;
  std::vector<std::thread> pool;
  std::atomic<bool> stopping{false};

  std::mutex stop_mu;
  bool stopped = false;

  // Streaming responses in flight: those on threads of their own by socket descriptor (so
  // Stop() can cut stuck ones), those the pool serves (StreamSource) by their connection, and
  // both counted by client against the stream limits.
  std::mutex streams_mu;
  std::condition_variable streams_cv;
  bool streams_closed = false;  // Stop() has begun: no stream starts from now on
  std::multiset<int> stream_fds;
  std::map<StreamControl*, std::weak_ptr<StreamControl>> sources;
  std::map<std::string, int> streams_by_client;
  int streams = 0;

  enum class Admit { kYes, kStopping, kLimit };
  // Counts a stream from `client` (its address) against ServerOptions::max_streams and
  // max_streams_per_client.
  Admit AdmitStreamLocked(const std::string& client) {
    if (streams_closed) return Admit::kStopping;
    if (options.max_streams > 0 && streams >= options.max_streams) return Admit::kLimit;
    int& mine = streams_by_client[client];
    if (options.max_streams_per_client > 0 && mine >= options.max_streams_per_client) {
      if (mine == 0) streams_by_client.erase(client);
      return Admit::kLimit;
    }
    ++mine;
    ++streams;
    return Admit::kYes;
  }
  void ReleaseStreamLocked(const std::string& client) {
    --streams;
    auto it = streams_by_client.find(client);
    if (it != streams_by_client.end() && --it->second <= 0) streams_by_client.erase(it);
    streams_cv.notify_all();
  }
  Admit StreamStarted(int fd, const std::string& client) {
    std::lock_guard lock(streams_mu);
    Admit admit = AdmitStreamLocked(client);
    if (admit == Admit::kYes) stream_fds.insert(fd);
    return admit;
  }
  void StreamEnded(int fd, const std::string& client) {
    std::lock_guard lock(streams_mu);
    auto it = stream_fds.find(fd);
    if (it != stream_fds.end()) stream_fds.erase(it);
    ReleaseStreamLocked(client);
  }
  Admit SourceStarted(StreamControl* key, std::weak_ptr<StreamControl> control,
                      const std::string& client) {
    std::lock_guard lock(streams_mu);
    Admit admit = AdmitStreamLocked(client);
    if (admit == Admit::kYes) sources.emplace(key, std::move(control));
    return admit;
  }
  void SourceEnded(StreamControl* key, const std::string& client) {
    std::lock_guard lock(streams_mu);
    if (sources.erase(key) > 0) ReleaseStreamLocked(client);
  }
  void DoAccept();
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
  void on_field_impl(http::field name, beast::string_view, beast::string_view value,
                     beast::error_code&) override {
    if (name == http::field::host) ++hosts;
    if (name == http::field::transfer_encoding) {
      ++transfer_encodings;
      transfer_encoding = std::string(value);
    }
    for (auto [field, keep] :
         {std::pair{http::field::authorization, &authorization},
          std::pair{http::field::content_type, &content_type},
          std::pair{http::field::accept, &accept}, std::pair{http::field::expect, &expect},
          std::pair{http::field::user_agent, &user_agent}}) {
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
        p.authorization.empty() && req_.method == "GET" && PublicInfoPath(req_.path);
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
    HttpResponse res = server_->Call(req_);
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

void Server::Impl::DoAccept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping || !acceptor.is_open()) return;
    if (ec) {
      if (!OutOfResources(ec)) return DoAccept();
      // The connection stays in the backlog and the socket readable: retrying at once would
      // spin at a full core. Connections being served go on meanwhile and may free descriptors.
      accept_backoff = std::clamp(accept_backoff * 2, kAcceptBackoffMin, kAcceptBackoffMax);
      accept_timer.expires_after(accept_backoff);
      accept_timer.async_wait([this](beast::error_code ec) {
        if (!ec && !stopping) DoAccept();
      });
      return;
    }
    accept_backoff = {};
    if (options.max_connections > 0 && connections.load() >= options.max_connections) {
      beast::error_code ignored;
      socket.close(ignored);
      return DoAccept();
    }
    SetSocketOptions(socket);
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

uint16_t Server::port() const { return impl_->port; }

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                                      RequestHandler handler) {
  RaiseOpenFileLimit();
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
  impl->port = impl->acceptor.local_endpoint(ec).port();
  impl->DoAccept();
  int threads = options.threads > 0 ? options.threads : 1;
  try {
    for (int i = 0; i < threads; ++i) {
      impl->pool.emplace_back([io = &impl->ioc]() { io->run(); });
    }
  } catch (const std::system_error& e) {
    impl->ioc.stop();
    for (auto& t : impl->pool) t.join();
    return absl::ResourceExhaustedError(
        fmt::format("cannot start the server's {} threads: {}", threads, e.what()));
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
  // Closed before Stop() returns (the pool runs until ioc.stop() below), on the acceptor's
  // strand: from here on a connection attempt is refused.
  std::promise<void> closed;
  net::post(s.accept_strand, [&s, &closed]() {
    beast::error_code ec;
    s.acceptor.close(ec);
    s.accept_timer.cancel();
    closed.set_value();
  });
  closed.get_future().wait();
  // No stream starts from here on; those the pool serves end with a clean last chunk, and
  // those stuck in a write to a client that does not read are cut after a grace period.
  std::vector<std::shared_ptr<StreamControl>> sources;
  {
    std::lock_guard lock(s.streams_mu);
    s.streams_closed = true;
    for (auto& [key, weak] : s.sources) {
      if (auto control = weak.lock()) sources.push_back(std::move(control));
    }
  }
  for (auto& control : sources) control->RequestEnd();
  {
    std::unique_lock lock(s.streams_mu);
    if (!s.streams_cv.wait_for(lock, kStreamGrace, [&s] { return s.sources.empty(); })) {
      for (auto& control : sources) ::shutdown(control->Fd(), SHUT_RDWR);
      s.streams_cv.wait_for(lock, kStreamGrace, [&s] { return s.sources.empty(); });
    }
  }
  // The store may still call a source's wake until its watch is destroyed with the pool's
  // handlers: from now on that posts nothing.
  for (auto& control : sources) control->Silence();
  sources.clear();
  // The pool next: a handler still running may yet start a stream on a thread (StartStream
  // runs on the pool), and only once none can do the streams below make a complete list.
  s.ioc.stop();
  for (auto& t : s.pool) {
    if (t.joinable()) t.join();
  }
  // Streams on threads notice `stopping` within a poll interval and end with a clean last
  // chunk; those stuck in a write to a client that does not read are cut. Their threads use
  // this server, so Stop() returns only once every one has ended.
  std::unique_lock lock(s.streams_mu);
  if (!s.streams_cv.wait_for(lock, kStreamGrace, [&s] { return s.stream_fds.empty(); })) {
    for (int fd : s.stream_fds) ::shutdown(fd, SHUT_RDWR);
    s.streams_cv.wait(lock, [&s] { return s.stream_fds.empty(); });
  }
}

}  // namespace muster::apiserver
