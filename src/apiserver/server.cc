// The API server's listener: the accept loop (with back-off when out of descriptors and the
// connection limit), TLS setup, the thread pool, and Stop(), which ends streams cleanly before it
// returns. Each connection is server_session.cc.

#include "apiserver/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "apiserver/server_impl.h"
#include "fmt/format.h"

namespace muster::apiserver {

namespace {

// Stop() lets streams end by themselves (a clean last chunk) for this long, then cuts them.
constexpr auto kStreamGrace = std::chrono::seconds(2);
// Accepting while out of descriptors is retried after 10 ms, doubling up to 1 s.
constexpr std::chrono::milliseconds kAcceptBackoffMin(10);
constexpr std::chrono::milliseconds kAcceptBackoffMax(1000);
// TCP keep-alive probes on accepted connections, as kube-apiserver's defaultKeepAlivePeriod.
constexpr int kKeepAliveSeconds = 180;

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
    StartSession(this, std::move(socket));
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
