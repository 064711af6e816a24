#include "apiserver/local_transport.h"

#include <string>
#include <utility>

#include "apiserver/apiserver.h"
#include "apiserver/handlers.h"
#include "apiserver/status.h"
#include "fmt/format.h"

namespace muster::apiserver {

namespace {

HttpRequest ToHttp(const client::Request& r) {
  HttpRequest req;
  req.method = r.method;
  req.path = r.path;
  req.query = r.query;
  req.body = r.body;
  req.accept = "application/json";
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    req.content_type = r.content_type;
  }
  return req;
}

// Splits what a stream writes into lines for `on_line`.
class LineSink : public StreamSink {
 public:
  LineSink(const std::function<bool(std::string_view)>& on_line, const std::atomic<bool>& stop)
      : on_line_(on_line), stop_(stop) {}

  bool Write(std::string_view data) override {
    if (Cancelled()) return false;
    pending_.append(data);
    size_t start = 0;
    for (size_t nl = pending_.find('\n'); nl != std::string::npos;
         nl = pending_.find('\n', start)) {
      if (!on_line_(std::string_view(pending_).substr(start, nl - start))) {
        ended_ = true;
        break;
      }
      start = nl + 1;
    }
    pending_.erase(0, start);
    return !Cancelled();
  }

  bool Cancelled() override { return ended_ || stop_.load(); }

  // The last line, when the stream ended without a newline.
  void Finish() {
    if (!ended_ && !pending_.empty()) on_line_(pending_);
    pending_.clear();
  }

 private:
  const std::function<bool(std::string_view)>& on_line_;
  const std::atomic<bool>& stop_;
  std::string pending_;
  bool ended_ = false;
};

}  // namespace

LocalTransport::LocalTransport(Handlers& handlers) : handlers_(handlers) {}
LocalTransport::LocalTransport(ApiServer& server) : handlers_(server.handlers()) {}

absl::StatusOr<client::Response> LocalTransport::Do(const client::Request& request) {
  HttpResponse r = handlers_.Handle(ToHttp(request));
  if (r.stream) {
    return absl::InvalidArgumentError(
        fmt::format("{} {} answers with a stream; use Stream", request.method, request.path));
  }
  return client::Response{r.status, std::move(r.body)};
}

absl::StatusOr<client::Response> LocalTransport::Stream(
    const client::Request& request, const std::function<bool(std::string_view)>& on_line,
    const std::atomic<bool>& stop) {
  HttpResponse r = handlers_.Handle(ToHttp(request));
  if (r.status < 200 || r.status >= 300) return client::Response{r.status, std::move(r.body)};
  LineSink sink(on_line, stop);
  if (r.stream) {
    r.stream(sink);
  } else {
    sink.Write(r.body);
  }
  sink.Finish();
  return client::Response{200, ""};
}

std::optional<absl::StatusOr<std::vector<absl::Status>>> LocalTransport::BindAll(
    const std::vector<client::Binding>& bindings) {
  std::vector<PodBinding> pods;
  pods.reserve(bindings.size());
  for (const client::Binding& b : bindings) {
    PodBinding& p = pods.emplace_back();
    p.ns = b.ns;
    p.pod = b.pod;
    p.node = b.node;
    p.pod_uid = b.pod_uid;
    for (const auto& [k, v] : b.annotations) p.annotations[k] = v;
  }
  std::vector<std::optional<ApiError>> errors = handlers_.BindAll(pods);
  std::vector<absl::Status> out;
  out.reserve(errors.size());
  for (const auto& e : errors) {
    // The same mapping an HTTP client applies to the same Status.
    out.push_back(e ? client::StatusFromResponse({e->code, StatusJson(*e)}) : absl::OkStatus());
  }
  return absl::StatusOr<std::vector<absl::Status>>(std::move(out));
}

}  // namespace muster::apiserver
