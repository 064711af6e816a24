#pragma once

// Plain HTTP request and response values exchanged between the network layer (server.cc, the
// only translation unit that includes Boost.Beast) and the REST handlers. Keeping Beast out of
// the handlers keeps their compile time small and lets tests call them without sockets.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace boost::json {
class value;
}  // namespace boost::json

namespace muster::apiserver {

struct Upgrade;  // upgrade.h

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // percent-decoded: "/api/v1/namespaces/default/pods"
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in request order
  std::string content_type;
  std::string accept;
  std::string user_agent;  // the default field manager of a write (api/managed_fields.h)
  std::string body;
  // A connection upgrade (pods/exec, attach, portforward): the Upgrade field, lower-cased
  // ("websocket", "spdy/3.1"), the WebSocket handshake's key and its subprotocols (every
  // Sec-WebSocket-Protocol field, joined with commas), and the SPDY stream protocols asked for
  // (X-Stream-Protocol-Version fields, joined with commas).
  std::string upgrade;
  std::string websocket_key;
  std::string websocket_protocols;
  std::string stream_protocols;

  // The first value of query parameter `name`; "" when absent.
  [[nodiscard]] std::string_view Param(std::string_view name) const {
    for (const auto& [k, v] : query) {
      if (k == name) return v;
    }
    return {};
  }
  [[nodiscard]] bool HasParam(std::string_view name) const {
    for (const auto& [k, v] : query) {
      if (k == name) return true;
    }
    return false;
  }
};

// Where a streaming response writes its chunks. Used from the one thread that runs the stream.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // Sends `data` as one chunk and flushes it. False once the client is gone or the server is
  // stopping; the stream should then return.
  virtual bool Write(std::string_view data) = 0;
  // True when the client has closed its end or the server is stopping. Cheap and non-blocking,
  // meant to be polled between waits (every few hundred milliseconds).
  virtual bool Cancelled() = 0;

  // A sink inside the server's process (apiserver::LocalTransport) may take a watch's events as
  // the store's parsed, immutable objects instead of text: a watch then calls WriteEvent for
  // each ADDED/MODIFIED/DELETED event (in order with what it writes as text: bookmarks, errors)
  // and nobody serialises or parses the object. False from WriteEvent ends the stream, as from
  // Write.
  [[nodiscard]] virtual bool TakesEvents() const { return false; }
  virtual bool WriteEvent(std::string_view type, std::shared_ptr<const boost::json::value> object) {
    (void)type;
    (void)object;
    return false;
  }
};

// A streaming response that needs no thread of its own: the server (server.cc) serves many of
// them on its pool, asking each for output when it says it has some (the `wake` callback), when
// its next deadline comes (a timeout, a bookmark) or when the previous output has been sent.
// Watches use this over HTTP; in-process callers (LocalTransport) run the same watch through
// HttpResponse::stream.
class StreamSource {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Poll {
    kWait,   // nothing more for now: poll again after a wake or at NextPoll()
    kMore,   // more is ready: poll again once `out` is sent (bounds what one poll buffers)
    kEnded,  // `out` holds the last output
  };
  virtual ~StreamSource() = default;
  // Called once, before the first Next. `wake` may be called from any thread, any number of
  // times, and may still be called while or just after Stop() runs (the server ignores those).
  virtual void Start(std::function<void()> wake) = 0;
  // Appends the output ready now to `out`; never blocks for long (no waiting for events).
  virtual Poll Next(std::string& out) = 0;
  // When to poll again without a wake (Clock::time_point::max(): only after one).
  [[nodiscard]] virtual Clock::time_point NextPoll() const = 0;
  // Releases what the stream holds: the client went away, the server stops or the stream ended.
  // Called once, never concurrently with Next.
  virtual void Stop() = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // When set, the body is streamed with chunked transfer encoding instead of `body`: after the
  // headers are sent the server calls `stream` on a thread of its own and ends the response
  // when it returns. Watches and `pods/log?follow=true` use this.
  std::function<void(StreamSink&)> stream;
  // The same stream without a thread (see StreamSource); where set the server uses it instead
  // of `stream`, which stays set for callers that run streams on their own threads.
  std::shared_ptr<StreamSource> source;
  // When set, the connection switches protocols (upgrade.h): the server writes upgrade->head
  // (status, headers and body above are unused) and carries the streams until either side ends.
  // Only over HTTP: an in-process request carries no Upgrade field and is refused.
  std::shared_ptr<Upgrade> upgrade;
};

}  // namespace muster::apiserver
