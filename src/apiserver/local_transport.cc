#include "apiserver/local_transport.h"

#include <string>
#include <utility>

#include "api/json_parse.h"
#include "apiserver/apiserver.h"
#include "apiserver/descriptors/resources.h"
#include "apiserver/handlers.h"
#include "apiserver/status.h"
#include "boost/json/parse.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

namespace {

HttpRequest ToHttp(const client::Request& r) {
  HttpRequest req;
  req.method = r.method;
  req.path = r.path;
  req.query = r.query;
  req.body = r.body;
  req.accept = "application/json";
  req.user_agent = "muster";  // in-process controllers write as field manager "muster"
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
    if (!lines_.Feed(data, on_line_)) ended_ = true;
    return !Cancelled();
  }

  bool Cancelled() override { return ended_ || stop_.load(); }

  // The last line, when the stream ended without a newline.
  void Finish() { lines_.Finish(on_line_); }

 private:
  const std::function<bool(std::string_view)>& on_line_;
  const std::atomic<bool>& stop_;
  client::LineSplitter lines_;
  bool ended_ = false;
};

// Each outcome as the Status an HTTP client maps the same answer to.
std::vector<absl::Status> ToStatuses(const std::vector<std::optional<ApiError>>& errors) {
  std::vector<absl::Status> out;
  out.reserve(errors.size());
  for (const auto& e : errors) {
    out.push_back(e ? client::StatusFromResponse({e->code, StatusJson(*e)}) : absl::OkStatus());
  }
  return out;
}

// Takes a watch's events as objects (StreamSink::TakesEvents); what the watch writes as text
// (bookmarks, an ERROR) is parsed into events too.
class EventSink : public StreamSink {
 public:
  EventSink(const client::Transport::EventCallback& on_event, const std::atomic<bool>& stop)
      : on_event_(on_event), stop_(stop) {}

  bool TakesEvents() const override { return true; }

  bool WriteEvent(std::string_view type, std::shared_ptr<const json::value> object) override {
    if (Cancelled()) return false;
    if (!on_event_(type, std::move(object))) ended_ = true;
    return !Cancelled();
  }

  bool Write(std::string_view data) override {
    if (Cancelled()) return false;
    lines_.Feed(data, [this](std::string_view line) {
      Line(line);
      return !ended_;
    });
    return !Cancelled();
  }

  bool Cancelled() override { return ended_ || stop_.load(); }

 private:
  void Line(std::string_view line) {
    if (line.empty()) return;
    json::error_code ec;
    json::value v = api::ParseJsonText(line, ec);
    json::object* o = ec ? nullptr : v.if_object();
    const json::value* type = o == nullptr ? nullptr : o->if_contains("type");
    json::value* object = o == nullptr ? nullptr : o->if_contains("object");
    if (type == nullptr || !type->is_string() || object == nullptr) {
      ended_ = true;  // the server wrote something that is not a watch event; it is a bug
      return;
    }
    if (!on_event_(type->get_string(), std::make_shared<const json::value>(std::move(*object)))) {
      ended_ = true;
    }
  }

  const client::Transport::EventCallback& on_event_;
  const std::atomic<bool>& stop_;
  client::LineSplitter lines_;
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

std::optional<absl::StatusOr<std::vector<absl::Status>>> LocalTransport::CreateAll(
    const client::Resource& resource, std::vector<std::pair<std::string, json::object>> objects) {
  const ResourceInfo* res = FindResource(resource.group, resource.version, resource.plural);
  if (res == nullptr) return std::nullopt;  // the Client posts them, and gets the 404
  return absl::StatusOr<std::vector<absl::Status>>(
      ToStatuses(handlers_.CreateAll(*res, std::move(objects))));
}

std::optional<absl::StatusOr<client::Response>> LocalTransport::StreamEvents(
    const client::Request& request, const EventCallback& on_event, const std::atomic<bool>& stop) {
  HttpResponse r = handlers_.Handle(ToHttp(request));
  if (r.status < 200 || r.status >= 300) {
    return absl::StatusOr<client::Response>(client::Response{r.status, std::move(r.body)});
  }
  EventSink sink(on_event, stop);
  if (r.stream) {
    r.stream(sink);
  } else {
    sink.Write(r.body);
    sink.Write("\n");
  }
  return absl::StatusOr<client::Response>(client::Response{200, ""});
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
  return absl::StatusOr<std::vector<absl::Status>>(ToStatuses(handlers_.BindAll(pods)));
}

}  // namespace muster::apiserver
