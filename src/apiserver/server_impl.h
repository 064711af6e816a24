#pragma once

// What the accept loop and Stop() (server.cc) share with the connections (server_session.cc and,
// once they switch protocols, server_upgrade.cc): the server's state (Server::Impl: the
// io_context and its pool, the acceptor, the stream limits and the streams in flight) and how
// Stop() reaches a connection that serves a stream. Internal to those three files.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/server.h"
#include "apiserver/status.h"
#include "apiserver/upgrade.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/defer.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/ssl.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/error.hpp"
#include "boost/beast/core/tcp_stream.hpp"
#include "boost/beast/ssl/ssl_stream.hpp"

namespace muster::apiserver {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

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

// Serves one accepted connection (TLS when the server has a certificate) until it closes; the
// session keeps itself alive on the io_context.
void StartSession(Server::Impl* server, tcp::socket socket);

// Carries a connection that switched protocols (server_upgrade.cc): writes upgrade->head, then
// serves the streams until either side ends. `early` is what the client sent after its request.
// Counted as a stream (ServerOptions::max_streams) and ended by Stop() as the other streams are.
void StartUpgraded(Server::Impl* server, beast::tcp_stream stream, std::string early,
                   std::shared_ptr<Upgrade> upgrade);
void StartUpgraded(Server::Impl* server, beast::ssl_stream<beast::tcp_stream> stream,
                   std::string early, std::shared_ptr<Upgrade> upgrade);

}  // namespace muster::apiserver
