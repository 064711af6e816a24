#pragma once

// The in-process client transport: a client::Transport that hands each request straight to the
// embedded API server's REST handlers, so that components running inside `muster up` (scheduler,
// controller, node agents) get exactly what an HTTP client gets (admission, defaulting,
// validation, Status errors) without sockets or serialization of the HTTP framing.
//
// Streams (watches, log follow) run the handler's stream function on the calling thread; `stop`
// is polled by it at least every 250 ms. StreamEvents hands a watch's objects over as the store
// holds them, parsed and immutable, so that N in-process watchers of a change cost no
// serialisation and no parse. BindAll stores a gang's bindings in one store commit
// (Handlers::BindAll).
//
// Lifetime: the transport and every stream through it must end before the ApiServer (or the
// Handlers) it was made from is destroyed. Thread-safety: as Handlers, usable from many threads.

#include <atomic>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"

namespace muster::apiserver {

class ApiServer;
class Handlers;

class LocalTransport : public client::Transport {
 public:
  explicit LocalTransport(Handlers& handlers);
  explicit LocalTransport(ApiServer& server);

  // A request answered with a stream (a watch) is refused with InvalidArgument: use Stream.
  absl::StatusOr<client::Response> Do(const client::Request& request) override;
  absl::StatusOr<client::Response> Stream(const client::Request& request,
                                          const std::function<bool(std::string_view)>& on_line,
                                          const std::atomic<bool>& stop) override;
  [[nodiscard]] bool BindsAtomically() const override { return true; }
  std::optional<absl::StatusOr<std::vector<absl::Status>>> BindAll(
      const std::vector<client::Binding>& bindings) override;
  // Objects created with one store commit (Handlers::CreateAll).
  std::optional<absl::StatusOr<std::vector<absl::Status>>> CreateAll(
      const client::Resource& resource,
      std::vector<std::pair<std::string, boost::json::object>> objects) override;
  // A watch's events are the store's parsed states, handed over without text.
  std::optional<absl::StatusOr<client::Response>> StreamEvents(
      const client::Request& request, const EventCallback& on_event,
      const std::atomic<bool>& stop) override;

 private:
  Handlers& handlers_;
};

}  // namespace muster::apiserver
