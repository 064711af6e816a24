#include "client/client.h"

#include <chrono>
#include <thread>
#include <mutex>
#include <utility>

#include "api/json_access.h"
#include "api/time.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::client {

namespace json = boost::json;

namespace {

using api::ObjectAt;
using api::StringAt;

bool Is2xx(int status) { return status >= 200 && status < 300; }

absl::StatusOr<json::object> ParseObject(std::string_view text) {
  json::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) {
    std::string head(text.substr(0, 200));
    return absl::InternalError(
        fmt::format("the server's answer is not a JSON object: \"{}\"", head));
  }
  return std::move(v.get_object());
}

// The object of a 2xx answer, or the error the answer (or the transport) stands for.
absl::StatusOr<json::object> ObjectFrom(const absl::StatusOr<Response>& response) {
  if (!response.ok()) return response.status();
  if (!Is2xx(response->status)) return StatusFromResponse(*response);
  return ParseObject(response->body);
}

bool HasTypeMeta(const json::object& obj) {
  const json::value* api_version = obj.if_contains("apiVersion");
  const json::value* kind = obj.if_contains("kind");
  return api_version != nullptr && api_version->is_string() && !api_version->get_string().empty() &&
         kind != nullptr && kind->is_string() && !kind->get_string().empty();
}

void FillTypeMeta(json::object& obj, const Resource& resource) {
  const json::value* api_version = obj.if_contains("apiVersion");
  if (api_version == nullptr || !api_version->is_string() || api_version->get_string().empty()) {
    obj["apiVersion"] = resource.ApiVersion();
  }
  const json::value* kind = obj.if_contains("kind");
  if (kind == nullptr || !kind->is_string() || kind->get_string().empty()) {
    obj["kind"] = resource.kind;
  }
}

Request MakeRequest(std::string method, std::string path) {
  Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  return r;
}

void AddSelectors(Request& r, const ListOptions& options) {
  if (!options.label_selector.empty()) r.query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) r.query.emplace_back("fieldSelector", options.field_selector);
}

// client-go names events "<involved name>.<UnixNano in hex>"; a process-wide counter keeps the
// suffixes of events recorded within one nanosecond tick distinct.
std::string EventSuffix() {
  static std::mutex mu;
  static uint64_t last = 0;
  uint64_t now = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count());
  std::lock_guard lock(mu);
  last = now > last ? now : last + 1;
  return fmt::format("{:016x}", last);
}

std::string BindingBody(const Binding& b) {
  json::object meta;
  meta["name"] = b.pod;
  meta["namespace"] = b.ns;
  if (!b.pod_uid.empty()) meta["uid"] = b.pod_uid;
  if (!b.annotations.empty()) {
    json::object annotations;
    for (const auto& [k, v] : b.annotations) annotations[k] = v;
    meta["annotations"] = std::move(annotations);
  }
  json::object body;
  body["apiVersion"] = "v1";
  body["kind"] = "Binding";
  body["metadata"] = std::move(meta);
  body["target"] = json::object{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", b.node}};
  return json::serialize(body);
}

Request BindRequest(const Binding& b) {
  Request r = MakeRequest("POST", Pods().Path(b.ns, b.pod, "binding"));
  r.body = BindingBody(b);
  return r;
}

std::optional<WatchEventType> ParseEventType(std::string_view type) {
  if (type == "ADDED") return WatchEventType::kAdded;
  if (type == "MODIFIED") return WatchEventType::kModified;
  if (type == "DELETED") return WatchEventType::kDeleted;
  if (type == "BOOKMARK") return WatchEventType::kBookmark;
  return std::nullopt;
}

Resource MakeResource(std::string group, std::string version, std::string plural,
                      std::string kind, bool namespaced) {
  Resource r;
  r.group = std::move(group);
  r.version = std::move(version);
  r.plural = std::move(plural);
  r.kind = std::move(kind);
  r.namespaced = namespaced;
  return r;
}

}  // namespace

std::string Resource::Path(std::string_view ns, std::string_view name,
                           std::string_view subresource) const {
  std::string out = group.empty() ? fmt::format("/api/{}", version)
                                  : fmt::format("/apis/{}/{}", group, version);
  if (namespaced && !ns.empty()) out += fmt::format("/namespaces/{}", ns);
  out += "/";
  out += plural;
  if (!name.empty()) {
    out += "/";
    out += name;
    if (!subresource.empty()) {
      out += "/";
      out += subresource;
    }
  }
  return out;
}

const Resource& Pods() {
  static const Resource* const r = new Resource(MakeResource("", "v1", "pods", "Pod", true));
  return *r;
}
const Resource& Nodes() {
  static const Resource* const r = new Resource(MakeResource("", "v1", "nodes", "Node", false));
  return *r;
}
const Resource& Events() {
  static const Resource* const r = new Resource(MakeResource("", "v1", "events", "Event", true));
  return *r;
}
const Resource& Namespaces() {
  static const Resource* const r =
      new Resource(MakeResource("", "v1", "namespaces", "Namespace", false));
  return *r;
}
const Resource& Services() {
  static const Resource* const r =
      new Resource(MakeResource("", "v1", "services", "Service", true));
  return *r;
}
const Resource& Leases() {
  static const Resource* const r =
      new Resource(MakeResource("coordination.k8s.io", "v1", "leases", "Lease", true));
  return *r;
}
const Resource& PodDisruptionBudgets() {
  static const Resource* const r = new Resource(
      MakeResource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true));
  return *r;
}
const Resource& BatchJobs() {
  static const Resource* const r =
      new Resource(MakeResource("batch", "v1", "jobs", "Job", true));
  return *r;
}
const Resource& CronJobs() {
  static const Resource* const r =
      new Resource(MakeResource("batch", "v1", "cronjobs", "CronJob", true));
  return *r;
}
const Resource& PriorityClasses() {
  static const Resource* const r = new Resource(
      MakeResource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false));
  return *r;
}
const Resource& VolcanoJobs() {
  static const Resource* const r =
      new Resource(MakeResource("batch.volcano.sh", "v1alpha1", "jobs", "Job", true));
  return *r;
}
const Resource& PodGroups() {
  static const Resource* const r = new Resource(
      MakeResource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", true));
  return *r;
}
const Resource& Queues() {
  static const Resource* const r =
      new Resource(MakeResource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", false));
  return *r;
}

const Resource& HyperNodes() {
  static const Resource* const r = new Resource(
      MakeResource("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", false));
  return *r;
}

const Resource& Commands() {
  static const Resource* const r =
      new Resource(MakeResource("bus.volcano.sh", "v1alpha1", "commands", "Command", true));
  return *r;
}

absl::Status StatusFromResponse(const Response& response) {
  std::string message;
  std::string reason;
  json::error_code ec;
  json::value v = json::parse(response.body, ec);
  if (!ec && v.is_object()) {
    message = StringAt(&v.get_object(), "message");
    reason = StringAt(&v.get_object(), "reason");
  }
  if (message.empty()) {
    message = response.body.empty() ? fmt::format("the server answered HTTP {}", response.status)
                                    : response.body.substr(0, 500);
  }
  const int code = response.status;
  if (code == 404) return absl::NotFoundError(message);
  if (code == 409) {
    return reason == "AlreadyExists" ? absl::AlreadyExistsError(message)
                                     : absl::AbortedError(message);
  }
  if (code == 400 || code == 422) return absl::InvalidArgumentError(message);
  if (code == 410) return absl::OutOfRangeError(message);
  if (code == 401 || code == 403) return absl::PermissionDeniedError(message);
  if (code == 405) return absl::UnimplementedError(message);
  if (code == 429) return absl::ResourceExhaustedError(message);
  if (code >= 500) return absl::UnavailableError(message);
  if (code >= 400) return absl::FailedPreconditionError(message);
  return absl::UnknownError(message);
}

bool LineSplitter::Feed(std::string_view data,
                        const std::function<bool(std::string_view)>& on_line) {
  if (ended_) return false;
  pending_.append(data);
  size_t start = 0;
  for (size_t nl = pending_.find('\n'); nl != std::string::npos;
       nl = pending_.find('\n', start)) {
    if (!on_line(std::string_view(pending_).substr(start, nl - start))) {
      ended_ = true;
      break;
    }
    start = nl + 1;
  }
  pending_.erase(0, start);
  return !ended_;
}

void LineSplitter::Finish(const std::function<bool(std::string_view)>& on_line) {
  if (!ended_ && !pending_.empty()) on_line(pending_);
  pending_.clear();
}

Client::Client(std::shared_ptr<Transport> transport) : transport_(std::move(transport)) {}

absl::StatusOr<json::object> Client::Get(const Resource& resource, std::string_view ns,
                                         std::string_view name) {
  return ObjectFrom(transport_->Do(MakeRequest("GET", resource.Path(ns, name))));
}

absl::StatusOr<ObjectList> Client::List(const Resource& resource, std::string_view ns,
                                        const ListOptions& options) {
  Request r = MakeRequest("GET", resource.Path(ns));
  AddSelectors(r, options);
  auto body = ObjectFrom(transport_->Do(r));
  if (!body.ok()) return body.status();
  ObjectList out;
  out.resource_version = StringAt(ObjectAt(&*body, "metadata"), "resourceVersion");
  if (json::value* items = body->if_contains("items"); items != nullptr && items->is_array()) {
    out.items.reserve(items->get_array().size());
    for (json::value& item : items->get_array()) {
      if (!item.is_object()) continue;
      FillTypeMeta(item.get_object(), resource);
      out.items.push_back(std::move(item.get_object()));
    }
  }
  return out;
}

absl::StatusOr<json::object> Client::Create(const Resource& resource, std::string_view ns,
                                            json::object object) {
  FillTypeMeta(object, resource);
  Request r = MakeRequest("POST", resource.Path(ns));
  r.body = json::serialize(object);
  return ObjectFrom(transport_->Do(r));
}

absl::StatusOr<json::object> Client::Update(const Resource& resource, json::object object) {
  FillTypeMeta(object, resource);
  const json::object* meta = ObjectAt(&object, "metadata");
  std::string name = StringAt(meta, "name");
  if (name.empty()) return absl::InvalidArgumentError("Update: the object has no metadata.name");
  Request r = MakeRequest("PUT", resource.Path(StringAt(meta, "namespace"), name));
  r.body = json::serialize(object);
  return ObjectFrom(transport_->Do(r));
}

absl::StatusOr<json::object> Client::UpdateStatus(const Resource& resource, json::object object) {
  FillTypeMeta(object, resource);
  const json::object* meta = ObjectAt(&object, "metadata");
  std::string name = StringAt(meta, "name");
  if (name.empty()) {
    return absl::InvalidArgumentError("UpdateStatus: the object has no metadata.name");
  }
  Request r = MakeRequest("PUT", resource.Path(StringAt(meta, "namespace"), name, "status"));
  r.body = json::serialize(object);
  return ObjectFrom(transport_->Do(r));
}

namespace {

Request PatchRequest(const Resource& resource, std::string_view ns, std::string_view name,
                     PatchType type, std::string_view patch, std::string_view subresource) {
  Request r = MakeRequest("PATCH", resource.Path(ns, name, subresource));
  switch (type) {
    case PatchType::kMerge:
      r.content_type = "application/merge-patch+json";
      break;
    case PatchType::kJson:
      r.content_type = "application/json-patch+json";
      break;
    case PatchType::kStrategic:
      r.content_type = "application/strategic-merge-patch+json";
      break;
  }
  r.body = std::string(patch);
  return r;
}

}  // namespace

absl::StatusOr<json::object> Client::Patch(const Resource& resource, std::string_view ns,
                                           std::string_view name, PatchType type,
                                           std::string_view patch, std::string_view subresource) {
  return ObjectFrom(transport_->Do(PatchRequest(resource, ns, name, type, patch, subresource)));
}

absl::Status Client::PatchWithoutResult(const Resource& resource, std::string_view ns,
                                        std::string_view name, PatchType type,
                                        std::string_view patch, std::string_view subresource) {
  absl::StatusOr<Response> response =
      transport_->Do(PatchRequest(resource, ns, name, type, patch, subresource));
  if (!response.ok()) return response.status();
  if (!Is2xx(response->status)) return StatusFromResponse(*response);
  return absl::OkStatus();
}

absl::Status Client::Delete(const Resource& resource, std::string_view ns, std::string_view name,
                            const DeleteOptions& options) {
  Request r = MakeRequest("DELETE", resource.Path(ns, name));
  json::object body{{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (!options.precondition_uid.empty()) {
    body["preconditions"] = json::object{{"uid", options.precondition_uid}};
  }
  r.body = json::serialize(body);
  auto response = transport_->Do(r);
  if (!response.ok()) return response.status();
  if (!Is2xx(response->status)) return StatusFromResponse(*response);
  return absl::OkStatus();
}

absl::Status Client::Evict(std::string_view ns, std::string_view pod,
                           const DeleteOptions& options) {
  Request r = MakeRequest("POST", Pods().Path(ns, pod, "eviction"));
  json::object delete_options;
  if (options.grace_period_seconds) {
    delete_options["gracePeriodSeconds"] = *options.grace_period_seconds;
  }
  if (!options.propagation_policy.empty()) {
    delete_options["propagationPolicy"] = options.propagation_policy;
  }
  if (!options.precondition_uid.empty()) {
    delete_options["preconditions"] = json::object{{"uid", options.precondition_uid}};
  }
  json::object body{{"apiVersion", "policy/v1"},
                    {"kind", "Eviction"},
                    {"metadata", json::object{{"name", pod}, {"namespace", ns}}}};
  if (!delete_options.empty()) body["deleteOptions"] = std::move(delete_options);
  r.body = json::serialize(body);
  auto response = transport_->Do(r);
  if (!response.ok()) return response.status();
  if (!Is2xx(response->status)) return StatusFromResponse(*response);
  return absl::OkStatus();
}

absl::Status Client::Bind(const Binding& binding) {
  auto response = transport_->Do(BindRequest(binding));
  if (!response.ok()) return response.status();
  if (!Is2xx(response->status)) return StatusFromResponse(*response);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<absl::Status>> Client::BindAll(const std::vector<Binding>& bindings) {
  if (auto together = transport_->BindAll(bindings)) return std::move(*together);
  std::vector<absl::Status> out;
  out.reserve(bindings.size());
  for (const Binding& b : bindings) {
    auto response = transport_->Do(BindRequest(b));
    if (!response.ok()) return response.status();
    out.push_back(Is2xx(response->status) ? absl::OkStatus() : StatusFromResponse(*response));
  }
  return out;
}

namespace {

// Events about cluster-scoped objects (nodes, queues) live in "default", as kube's do.
std::string EventNamespace(const EventRecord& event) {
  return event.involved_namespace.empty() ? "default" : event.involved_namespace;
}

// The core/v1 Event for `event`, first seen `now`, under a fresh unique name.
json::object EventObject(const EventRecord& event, const std::string& now) {
  json::object involved{{"apiVersion", event.involved_api_version},
                        {"kind", event.involved_kind},
                        {"name", event.involved_name}};
  if (!event.involved_namespace.empty()) involved["namespace"] = event.involved_namespace;
  if (!event.involved_uid.empty()) involved["uid"] = event.involved_uid;
  json::object source{{"component", event.source_component}};
  if (!event.source_host.empty()) source["host"] = event.source_host;
  json::object obj{{"apiVersion", "v1"}, {"kind", "Event"}};
  obj["metadata"] = json::object{{"name", fmt::format("{}.{}", event.involved_name, EventSuffix())},
                                 {"namespace", EventNamespace(event)}};
  obj["involvedObject"] = std::move(involved);
  obj["reason"] = event.reason;
  obj["message"] = event.message;
  obj["type"] = event.type;
  obj["source"] = std::move(source);
  obj["firstTimestamp"] = now;
  obj["lastTimestamp"] = now;
  obj["count"] = 1;
  obj["reportingComponent"] = event.source_component;
  obj["reportingInstance"] = event.source_host;
  return obj;
}

}  // namespace

absl::Status Client::RecordEvent(const EventRecord& event) {
  const std::string ns = EventNamespace(event);
  const std::string now = api::FormatTime(std::chrono::system_clock::now());
  absl::Status last;
  // A name collision (another process recording in the same nanosecond) gets a fresh suffix.
  for (int attempt = 0; attempt < 3; ++attempt) {
    // As Create, without parsing the stored Event that comes back (nobody reads it).
    Request r = MakeRequest("POST", Events().Path(ns));
    r.body = json::serialize(EventObject(event, now));
    absl::StatusOr<Response> response = transport_->Do(r);
    if (!response.ok()) return response.status();
    if (Is2xx(response->status)) return absl::OkStatus();
    last = StatusFromResponse(*response);
    if (!absl::IsAlreadyExists(last)) return last;
  }
  return last;
}

absl::StatusOr<std::vector<absl::Status>> Client::RecordEvents(
    const std::vector<EventRecord>& events) {
  const std::string now = api::FormatTime(std::chrono::system_clock::now());
  std::vector<std::pair<std::string, json::object>> objects;
  objects.reserve(events.size());
  for (const EventRecord& event : events) {
    objects.emplace_back(EventNamespace(event), EventObject(event, now));
  }
  if (auto together = transport_->CreateAll(Events(), std::move(objects))) {
    if (!together->ok()) return together->status();
    std::vector<absl::Status> out = **std::move(together);
    // A name collision is retried alone, under a fresh name.
    for (size_t i = 0; i < out.size(); ++i) {
      if (absl::IsAlreadyExists(out[i])) out[i] = RecordEvent(events[i]);
    }
    return out;
  }
  std::vector<absl::Status> out;
  out.reserve(events.size());
  for (const EventRecord& event : events) out.push_back(RecordEvent(event));
  return out;
}

absl::Status Client::Watch(const Resource& resource, std::string_view ns,
                           std::string_view resource_version, const ListOptions& options,
                           const std::function<bool(WatchEvent&)>& on_event,
                           const std::atomic<bool>& stop) {
  Request r = MakeRequest("GET", resource.Path(ns));
  r.query.emplace_back("watch", "1");
  if (!resource_version.empty()) r.query.emplace_back("resourceVersion", resource_version);
  r.query.emplace_back("allowWatchBookmarks", "true");
  AddSelectors(r, options);

  absl::Status stream_error;  // an ERROR event, or a line that does not parse
  auto on_object = [&](std::string_view type, std::shared_ptr<const json::value> object) {
    if (object == nullptr || !object->is_object()) {
      stream_error = absl::InternalError(fmt::format("watch: a {} event without an object", type));
      return false;
    }
    if (type == "ERROR") {
      Response status;
      const json::value* code = object->get_object().if_contains("code");
      status.status = code != nullptr && code->is_int64() ? static_cast<int>(code->get_int64())
                                                          : 500;
      status.body = json::serialize(*object);
      stream_error = StatusFromResponse(status);
      return false;
    }
    auto event_type = ParseEventType(type);
    if (!event_type) {
      stream_error = absl::InternalError(fmt::format("watch: unknown event type \"{}\"", type));
      return false;
    }
    if (*event_type != WatchEventType::kBookmark && !HasTypeMeta(object->get_object())) {
      auto filled = std::make_shared<json::value>(*object);
      FillTypeMeta(filled->get_object(), resource);
      object = std::move(filled);
    }
    WatchEvent event;
    event.type = *event_type;
    event.object = std::shared_ptr<const json::object>(object, &object->get_object());
    return on_event(event);
  };
  if (auto streamed = transport_->StreamEvents(r, on_object, stop)) {
    if (!streamed->ok()) return streamed->status();
    if (!Is2xx((*streamed)->status)) return StatusFromResponse(**streamed);
    return stream_error;
  }
  auto on_line = [&](std::string_view line) {
    if (line.empty() || line == "\r") return true;
    json::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) {
      stream_error = absl::InternalError(
          fmt::format("watch: a line that is not a JSON object: \"{}\"", line.substr(0, 200)));
      return false;
    }
    json::object& o = v.get_object();
    std::string type = StringAt(&o, "type");
    json::value* object = o.if_contains("object");
    return on_object(type, object == nullptr
                               ? nullptr
                               : std::make_shared<const json::value>(std::move(*object)));
  };
  auto response = transport_->Stream(r, on_line, stop);
  if (!response.ok()) return response.status();
  if (!Is2xx(response->status)) return StatusFromResponse(*response);
  return stream_error;
}

absl::StatusOr<std::string> Client::Logs(std::string_view ns, std::string_view pod,
                                         std::string_view container) {
  Request r = MakeRequest("GET", Pods().Path(ns, pod, "log"));
  if (!container.empty()) r.query.emplace_back("container", container);
  auto response = transport_->Do(r);
  if (!response.ok()) return response.status();
  if (!Is2xx(response->status)) return StatusFromResponse(*response);
  return std::move(response->body);
}

absl::Status ListableWithin(Client& client, const Resource& resource,
                            std::chrono::milliseconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (true) {
    absl::StatusOr<ObjectList> probe = client.List(resource, "");
    if (probe.ok()) return absl::OkStatus();
    const bool later = absl::IsUnavailable(probe.status()) ||
                       absl::IsResourceExhausted(probe.status());  // 503, 429: ask again
    if (!later || std::chrono::steady_clock::now() >= deadline) {
      return probe.status();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace muster::client
