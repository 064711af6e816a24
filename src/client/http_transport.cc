// The HTTP(S) transport (http_transport.h) over Boost.Beast, following client-go's rest and
// transport packages: the cached file token source (transport/token_source.go) and the token
// bucket rate limiter (util/flowcontrol/throttle.go). The kubeconfig and the in-cluster
// configuration are read in http_transport_config.cc, so that this stays the client layer's only
// Beast translation unit.

#include "client/http_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "boost/asio/connect.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"
#include "common/files.h"
#include "fmt/format.h"
#include "openssl/ssl.h"
#include "openssl/x509v3.h"

namespace muster::client {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
using common::ReadFile;

// How often a blocked read looks at `stop` (Transport::Stream's contract).
constexpr auto kPollInterval = std::chrono::milliseconds(250);
constexpr auto kTokenFileRefresh = std::chrono::seconds(60);
constexpr std::uint32_t kHeaderLimit = 64 * 1024;

// --- Rate limiting -------------------------------------------------------------------------------

// client-go's token bucket (flowcontrol over golang.org/x/time/rate): it holds up to `burst`
// tokens, starts full and gains `qps` a second. A request takes one; when none is left it
// reserves the next to come (the count goes below zero) and sleeps until then, so that waiting
// requests leave at `qps` in the order they came. qps <= 0: no limit.
class TokenBucket {
 public:
  TokenBucket(double qps, int burst)
      : qps_(qps), burst_(std::max(burst, 1)), tokens_(burst_), last_(Clock::now()) {}

  void Take() {
    if (qps_ <= 0) return;
    Clock::duration wait{};
    {
      std::lock_guard lock(mu_);
      const auto now = Clock::now();
      tokens_ = std::min(static_cast<double>(burst_),
                         tokens_ + std::chrono::duration<double>(now - last_).count() * qps_);
      last_ = now;
      tokens_ -= 1;
      if (tokens_ < 0) {
        wait = std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(-tokens_ / qps_));
      }
    }
    if (wait > Clock::duration::zero()) std::this_thread::sleep_for(wait);
  }

 private:
  const double qps_;
  const int burst_;
  std::mutex mu_;
  double tokens_;
  Clock::time_point last_;
};

// --- URLs ----------------------------------------------------------------------------------------

struct Url {
  bool tls = false;
  std::string host;  // without brackets
  std::string port;
  std::string host_header;  // "host:port" as the Host header carries it
  std::string base_path;    // a path prefix of the server URL, without the trailing slash
};

absl::StatusOr<Url> ParseUrl(const std::string& server) {
  Url url;
  std::string_view rest = server;
  if (rest.substr(0, 8) == "https://") {
    url.tls = true;
    rest.remove_prefix(8);
  } else if (rest.substr(0, 7) == "http://") {
    rest.remove_prefix(7);
  } else {
    return absl::InvalidArgumentError(
        fmt::format("server \"{}\": want http://HOST[:PORT] or https://HOST[:PORT]", server));
  }
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    url.base_path = std::string(rest.substr(slash));
    while (!url.base_path.empty() && url.base_path.back() == '/') url.base_path.pop_back();
  }
  std::string_view port;
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(fmt::format("server \"{}\": unclosed [", server));
    }
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') {
        return absl::InvalidArgumentError(fmt::format("server \"{}\": bad port", server));
      }
      port = after.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (url.host.empty()) {
    return absl::InvalidArgumentError(fmt::format("server \"{}\": no host", server));
  }
  if (port.empty()) port = url.tls ? "443" : "80";
  for (char c : port) {
    if (c < '0' || c > '9') {
      return absl::InvalidArgumentError(fmt::format("server \"{}\": bad port", server));
    }
  }
  url.port = std::string(port);
  url.host_header = std::string(authority);
  if (url.host_header.find(':') == std::string::npos ||
      (url.host_header[0] == '[' && url.host_header.back() == ']')) {
    url.host_header += ":" + url.port;
  }
  return url;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// Percent-encodes what is not unreserved (RFC 3986); `keep` lists further characters left as
// they are ('/' in paths).
std::string Escape(std::string_view in, std::string_view keep) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(in.size());
  for (char c : in) {
    auto u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~' || keep.find(c) != std::string_view::npos) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

std::string Target(const Url& url, const Request& r) {
  std::string target = Escape(url.base_path + r.path, "/:@");
  char sep = '?';
  for (const auto& [k, v] : r.query) {
    target += sep;
    target += Escape(k, "");
    target += '=';
    target += Escape(v, "");
    sep = '&';
  }
  return target;
}

// --- Connections ---------------------------------------------------------------------------------

// One HTTP/1.1 connection with its own io_context: every operation is asynchronous and run
// from the calling thread in slices of kPollInterval, so that a stop flag or a deadline can
// interrupt it (which closes the connection).
class Connection {
 public:
  Connection() = default;

  absl::Status Connect(const Url& url, ssl::context* tls_context, const std::string& verify_name,
                       bool verify, Clock::time_point deadline) {
    beast::error_code ec;
    tcp::resolver resolver(ioc_);
    auto endpoints = resolver.resolve(url.host, url.port, ec);
    if (ec) return Failure(fmt::format("resolving {}", url.host), ec);
    if (tls_context != nullptr) {
      tls_.emplace(ioc_, *tls_context);
      SSL* native = tls_->native_handle();
      const std::string& name = verify_name.empty() ? url.host : verify_name;
      if (!IsIpLiteral(name)) SSL_set_tlsext_host_name(native, name.c_str());
      if (verify) {
        tls_->set_verify_mode(ssl::verify_peer);
        X509_VERIFY_PARAM* param = SSL_get0_param(native);
        if (IsIpLiteral(name)) {
          X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
        } else {
          X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
        }
      } else {
        tls_->set_verify_mode(ssl::verify_none);
      }
    } else {
      plain_.emplace(ioc_);
    }
    ec = Await(
        [&](auto handler) {
          net::async_connect(Socket(), endpoints,
                             [handler](beast::error_code e, const tcp::endpoint&) { handler(e); });
        },
        nullptr, deadline);
    if (ec) return Failure(fmt::format("connecting to {}", url.host_header), ec);
    Socket().set_option(tcp::no_delay(true), ec);
    if (tls_) {
      ec = Await([&](auto handler) { tls_->async_handshake(ssl::stream_base::client, handler); },
                 nullptr, deadline);
      if (ec) return Failure(fmt::format("TLS handshake with {}", url.host_header), ec);
    }
    return absl::OkStatus();
  }

  // Sends `req` and reads the response header into `parser`.
  template <class Parser>
  beast::error_code SendAndReadHeader(http::request<http::string_body>& req, Parser& parser,
                                      const std::atomic<bool>* stop, Clock::time_point deadline) {
    beast::error_code ec = WithStream([&](auto& stream) {
      return Await([&](auto handler) { http::async_write(stream, req, handler); }, stop,
                   deadline);
    });
    if (ec) return ec;
    return WithStream([&](auto& stream) {
      return Await([&](auto handler) { http::async_read_header(stream, buffer_, parser, handler); },
                   stop, deadline);
    });
  }

  template <class Parser>
  beast::error_code ReadAll(Parser& parser, Clock::time_point deadline) {
    return WithStream([&](auto& stream) {
      return Await([&](auto handler) { http::async_read(stream, buffer_, parser, handler); },
                   nullptr, deadline);
    });
  }

  // Reads some of a buffer_body's payload.
  beast::error_code ReadSome(http::response_parser<http::buffer_body>& parser,
                             const std::atomic<bool>* stop, Clock::time_point deadline) {
    beast::error_code ec = WithStream([&](auto& stream) {
      return Await([&](auto handler) { http::async_read_some(stream, buffer_, parser, handler); },
                   stop, deadline);
    });
    if (ec == http::error::need_buffer) ec = {};
    return ec;
  }

  // An idle connection the server has closed (or sent something unasked on) is not reusable.
  // TLS connections may legitimately carry unread records (session tickets), so only plain ones
  // are probed; a stale TLS connection is caught by the retry in Exchange.
  bool LooksAlive() {
    if (broken_) return false;
    if (tls_) return true;
    pollfd p{};
    p.fd = Socket().native_handle();
    p.events = POLLIN;
    return ::poll(&p, 1, 0) == 0 && buffer_.size() == 0;
  }

  void MarkBroken() { broken_ = true; }
  bool broken() const { return broken_; }

 private:
  tcp::socket& Socket() { return tls_ ? tls_->next_layer() : *plain_; }

  template <class F>
  beast::error_code WithStream(F&& f) {
    if (tls_) return f(*tls_);
    return f(*plain_);
  }

  // Runs the operation `start` begins to completion. When `stop` becomes true or the deadline
  // passes first, closes the socket (the operation then completes, aborted) and answers
  // operation_aborted or timeout.
  template <class Start>
  beast::error_code Await(Start&& start, const std::atomic<bool>* stop,
                          Clock::time_point deadline) {
    bool done = false;
    beast::error_code result;
    start([&done, &result](beast::error_code ec, auto&&...) {
      result = ec;
      done = true;
    });
    beast::error_code interrupted;
    while (!done) {
      ioc_.restart();
      ioc_.run_one_for(kPollInterval);
      if (done || interrupted) continue;
      const bool stopped = stop != nullptr && stop->load();
      if (stopped || Clock::now() >= deadline) {
        interrupted = stopped ? beast::error_code(net::error::operation_aborted)
                              : beast::error_code(beast::error::timeout);
        beast::error_code ignored;
        Socket().cancel(ignored);
        Socket().close(ignored);
        broken_ = true;
      }
    }
    if (interrupted) return interrupted;
    if (result) broken_ = true;
    return result;
  }

  static absl::Status Failure(const std::string& what, const beast::error_code& ec) {
    return absl::UnavailableError(fmt::format("{}: {}", what, ec.message()));
  }

  net::io_context ioc_{1};
  std::optional<tcp::socket> plain_;
  std::optional<ssl::stream<tcp::socket>> tls_;
  beast::flat_buffer buffer_;
  bool broken_ = false;
};

// --- The transport -------------------------------------------------------------------------------

class HttpTransport : public Transport {
 public:
  HttpTransport(HttpTransportConfig config, Url url, std::unique_ptr<ssl::context> tls_context)
      : config_(std::move(config)),
        url_(std::move(url)),
        tls_context_(std::move(tls_context)),
        limiter_(config_.qps, config_.burst) {}

  absl::StatusOr<Response> Do(const Request& request) override {
    limiter_.Take();
    auto token = Token(/*reread=*/false);
    if (!token.ok()) return token.status();
    auto out = DoWith(request, *token);
    if (out.ok() && out->status == 401) {
      if (auto fresh = RotatedToken(*token)) {
        limiter_.Take();
        out = DoWith(request, *fresh);
      }
    }
    return out;
  }

  absl::StatusOr<Response> Stream(const Request& request,
                                  const std::function<bool(std::string_view)>& on_line,
                                  const std::atomic<bool>& stop) override {
    limiter_.Take();
    auto token = Token(/*reread=*/false);
    if (!token.ok()) return token.status();
    auto out = StreamWith(request, *token, on_line, stop);
    if (out.ok() && out->status == 401) {
      if (auto fresh = RotatedToken(*token)) {
        limiter_.Take();
        out = StreamWith(request, *fresh, on_line, stop);
      }
    }
    return out;
  }

 private:
  absl::StatusOr<Response> DoWith(const Request& request, const std::string& token) {
    const auto deadline = Clock::now() + config_.request_timeout;
    auto req = BuildRequest(request, token);
    std::optional<http::response_parser<http::string_body>> parser;
    auto conn = Exchange(request, req, parser, nullptr, deadline);
    if (!conn.ok()) return conn.status();
    if (beast::error_code ec = (*conn)->ReadAll(*parser, deadline)) return Failure(request, ec);
    auto& res = parser->get();
    Response out;
    out.status = static_cast<int>(res.result_int());
    out.body = std::move(res.body());
    if (parser->keep_alive()) Release(std::move(*conn));
    return out;
  }

  absl::StatusOr<Response> StreamWith(const Request& request, const std::string& token,
                                      const std::function<bool(std::string_view)>& on_line,
                                      const std::atomic<bool>& stop) {
    const auto deadline = Clock::now() + config_.request_timeout;
    auto req = BuildRequest(request, token);
    std::optional<http::response_parser<http::buffer_body>> parser;
    auto conn = Exchange(request, req, parser, &stop, deadline);
    if (absl::IsCancelled(conn.status())) return Response{200, ""};  // stopped
    if (!conn.ok()) return conn.status();

    const int status = static_cast<int>(parser->get().result_int());
    const bool success = status >= 200 && status < 300;
    std::string body;     // a refusal's Status
    LineSplitter lines;
    bool ended_by_caller = false;
    char buf[16 * 1024];
    beast::error_code ec;
    while (!parser->is_done()) {
      parser->get().body().data = buf;
      parser->get().body().size = sizeof(buf);
      // A refusal's body arrives at once; a stream's takes as long as it runs.
      ec = success ? (*conn)->ReadSome(*parser, &stop, Clock::time_point::max())
                   : (*conn)->ReadSome(*parser, nullptr, deadline);
      if (ec) break;
      size_t n = sizeof(buf) - parser->get().body().size;
      if (!success) {
        body.append(buf, n);
        continue;
      }
      if (!lines.Feed(std::string_view(buf, n), on_line)) ended_by_caller = true;
      if (ended_by_caller || stop.load()) break;
    }
    if (ec && ec != net::error::operation_aborted) {
      // The server went away mid-stream (restart, network): for a watch that is an end like
      // any other, the caller re-watches; a refusal's body must arrive whole.
      if (!success) return Failure(request, ec);
      return Response{200, ""};
    }
    if (ended_by_caller || stop.load() || ec) {
      (*conn)->MarkBroken();  // the rest of the body is unread
      if (success) return Response{200, ""};
    }
    if (!success) {
      if (parser->keep_alive() && parser->is_done()) Release(std::move(*conn));
      return Response{status, std::move(body)};
    }
    lines.Finish(on_line);
    if (parser->keep_alive()) Release(std::move(*conn));
    return Response{200, ""};
  }

  http::request<http::string_body> BuildRequest(const Request& r, const std::string& token) {
    http::request<http::string_body> req;
    req.version(11);
    req.method_string(r.method);
    req.target(Target(url_, r));
    req.set(http::field::host, url_.host_header);
    req.set(http::field::user_agent, "muster/0.1");
    req.set(http::field::accept, "application/json");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
      req.set(http::field::content_type, r.content_type);
      req.body() = r.body;
    }
    req.keep_alive(true);
    req.prepare_payload();
    return req;
  }

  // The bearer token: the configured one, else the token file's, read again when the last read
  // is a minute old or `reread` asks for it.
  absl::StatusOr<std::string> Token(bool reread) {
    if (!config_.token.empty() || config_.token_file.empty()) return config_.token;
    std::lock_guard lock(token_mu_);
    const auto now = Clock::now();
    if (reread || token_read_ == Clock::time_point() || now - token_read_ >= kTokenFileRefresh) {
      auto text = ReadFile(config_.token_file);
      if (!text) {
        return absl::UnavailableError(fmt::format("cannot read token file {}", config_.token_file));
      }
      while (!text->empty() && (text->back() == '\n' || text->back() == '\r' ||
                                text->back() == ' ')) {
        text->pop_back();
      }
      file_token_ = std::move(*text);
      token_read_ = now;
    }
    return file_token_;
  }

  // After a 401 for a request sent with `used`: the token file read again at once, when it now
  // holds another token (the kubelet rotated it); nullopt when there is no file or it still holds
  // `used`, so that a request is sent again at most once.
  std::optional<std::string> RotatedToken(const std::string& used) {
    if (!config_.token.empty() || config_.token_file.empty()) return std::nullopt;
    auto fresh = Token(/*reread=*/true);
    if (!fresh.ok() || *fresh == used) return std::nullopt;
    return *fresh;
  }

  // The start of Do and Stream: sends `req` on an idle pooled connection or a new one and reads
  // the response header into `parser`, made afresh for each try. A pooled connection the server
  // closed while idle fails before any answer, so such a failure is tried once more on a new
  // connection (a timeout is not). Returns the connection with the body unread; Cancelled when
  // `stop` was set, Unavailable when the request failed.
  template <class Body>
  absl::StatusOr<std::unique_ptr<Connection>> Exchange(
      const Request& request, http::request<http::string_body>& req,
      std::optional<http::response_parser<Body>>& parser, const std::atomic<bool>* stop,
      Clock::time_point deadline) {
    for (int attempt = 0;; ++attempt) {
      bool reused = false;
      auto conn = Acquire(deadline, reused);
      if (!conn.ok()) return conn.status();
      parser.emplace();
      parser->header_limit(kHeaderLimit);
      parser->body_limit(std::numeric_limits<std::uint64_t>::max());
      beast::error_code ec = (*conn)->SendAndReadHeader(req, *parser, stop, deadline);
      if (!ec) return conn;
      if (stop != nullptr && ec == net::error::operation_aborted) {
        return absl::CancelledError("stopped");
      }
      if (reused && attempt == 0 && ec != beast::error::timeout) continue;
      return Failure(request, ec);
    }
  }

  absl::StatusOr<std::unique_ptr<Connection>> Acquire(Clock::time_point deadline, bool& reused) {
    {
      std::lock_guard lock(pool_mu_);
      while (!idle_.empty()) {
        std::unique_ptr<Connection> c = std::move(idle_.back());
        idle_.pop_back();
        if (c->LooksAlive()) {
          reused = true;
          return c;
        }
      }
    }
    reused = false;
    auto c = std::make_unique<Connection>();
    if (auto s = c->Connect(url_, tls_context_.get(), config_.tls_server_name,
                            !config_.insecure_skip_tls_verify, deadline);
        !s.ok()) {
      return s;
    }
    return c;
  }

  void Release(std::unique_ptr<Connection> c) {
    if (c->broken()) return;
    std::lock_guard lock(pool_mu_);
    if (idle_.size() < config_.max_idle_connections) idle_.push_back(std::move(c));
  }

  absl::Status Failure(const Request& r, const beast::error_code& ec) const {
    return absl::UnavailableError(
        fmt::format("{} {}{}: {}", r.method, config_.server, r.path, ec.message()));
  }

  HttpTransportConfig config_;
  Url url_;
  std::unique_ptr<ssl::context> tls_context_;  // null for http://

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Connection>> idle_;

  std::mutex token_mu_;
  std::string file_token_;
  Clock::time_point token_read_;

  TokenBucket limiter_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<Transport>> MakeHttpTransport(const HttpTransportConfig& config) {
  auto url = ParseUrl(config.server);
  if (!url.ok()) return url.status();
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs its key, and a key its certificate");
  }
  std::unique_ptr<ssl::context> tls;
  if (url->tls) {
    tls = std::make_unique<ssl::context>(ssl::context::tls_client);
    tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    beast::error_code ec;
    if (!config.ca_pem.empty()) {
      tls->add_certificate_authority(net::buffer(config.ca_pem), ec);
      if (ec) {
        return absl::InvalidArgumentError(
            fmt::format("the certificate authority is not a PEM certificate: {}", ec.message()));
      }
    } else {
      tls->set_default_verify_paths(ec);
    }
    if (!config.client_cert_pem.empty()) {
      tls->use_certificate_chain(net::buffer(config.client_cert_pem), ec);
      if (ec) {
        return absl::InvalidArgumentError(
            fmt::format("the client certificate is not a PEM certificate: {}", ec.message()));
      }
      tls->use_private_key(net::buffer(config.client_key_pem), ssl::context::pem, ec);
      if (ec) {
        return absl::InvalidArgumentError(
            fmt::format("the client key is not a PEM private key: {}", ec.message()));
      }
    }
  } else if (!config.client_cert_pem.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("server {} is plain HTTP; a client certificate needs https://", config.server));
  }
  return std::shared_ptr<Transport>(
      std::make_shared<HttpTransport>(config, std::move(*url), std::move(tls)));
}

}  // namespace muster::client
