#pragma once

// The API client every muster component uses to talk to an API server: muster's own embedded one
// in-process (`muster up`), or any kube-apiserver over HTTP(S) (real clusters). One Client class
// speaks the Kubernetes REST conventions over a Transport; the transport decides how a request
// travels:
//   - HttpTransport (http_transport.h): HTTP/1.1 or HTTPS with a bearer token or client cert,
//     configured from a kubeconfig;
//   - apiserver::LocalTransport (apiserver/local_transport.h): calls the embedded server's REST
//     handlers directly, so admission, defaulting and validation are exactly those of HTTP
//     requests, and lets BindAll commit a gang's bindings in one store transaction.
//
// Objects are boost::json objects as the API serves them; typed views come from api/json_codec.h.
// Errors are absl::Status values mapped from the server's Status object:
//   404 -> NotFound, 409 reason AlreadyExists -> AlreadyExists, 409 Conflict -> Aborted,
//   400/422 -> InvalidArgument, 410 -> OutOfRange (expired resourceVersion), 401/403 ->
//   PermissionDenied, 429 -> ResourceExhausted, 5xx and transport failures -> Unavailable; the
//   message is the Status's.
//
// Thread-safety: a Client may be used from many threads at once.

#include <chrono>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "boost/json/object.hpp"
#include "boost/json/value.hpp"

namespace muster::client {

// A resource as URLs name it.
struct Resource {
  std::string group;    // "" for the core group
  std::string version;  // "v1", "v1alpha1", "v1beta1"
  std::string plural;   // "pods"
  std::string kind;     // "Pod"
  bool namespaced = true;

  // "v1" or "batch.volcano.sh/v1alpha1".
  [[nodiscard]] std::string ApiVersion() const {
    return group.empty() ? version : group + "/" + version;
  }
  // "/api/v1/namespaces/NS/pods[/NAME[/SUB]]"; ns "" for cluster-scoped or all namespaces.
  [[nodiscard]] std::string Path(std::string_view ns, std::string_view name = {},
                                 std::string_view subresource = {}) const;
};

// The resources muster components use.
const Resource& Pods();
const Resource& Nodes();
const Resource& Events();
const Resource& Namespaces();
const Resource& Services();
const Resource& Leases();            // coordination.k8s.io/v1
const Resource& PriorityClasses();   // scheduling.k8s.io/v1
const Resource& PodDisruptionBudgets();  // policy/v1
const Resource& BatchJobs();         // batch/v1 jobs (Kubernetes' own)
const Resource& CronJobs();          // batch/v1 cronjobs
const Resource& VolcanoJobs();       // batch.volcano.sh/v1alpha1 jobs
const Resource& PodGroups();         // scheduling.volcano.sh/v1beta1 podgroups
const Resource& Queues();            // scheduling.volcano.sh/v1beta1 queues (cluster-scoped)
const Resource& Commands();          // bus.volcano.sh/v1alpha1 commands
const Resource& HyperNodes();        // topology.volcano.sh/v1alpha1 hypernodes (cluster-scoped)

// --- Transport ---------------------------------------------------------------------------------

struct Request {
  std::string method;  // "GET", "POST", "PUT", "PATCH", "DELETE"
  std::string path;    // not percent-encoded: "/api/v1/namespaces/default/pods"
  std::vector<std::pair<std::string, std::string>> query;  // not percent-encoded
  std::string content_type = "application/json";
  std::string body;
};

struct Response {
  int status = 0;  // HTTP status code
  std::string body;
};

struct Binding {
  std::string ns;
  std::string pod;
  std::string node;
  std::string pod_uid;  // when set, the bind fails unless the pod still has this UID
  std::map<std::string, std::string> annotations;  // copied onto the pod (muster.dev/gpu-indices)
};

// Cuts a stream's bytes into the newline-terminated lines Transport::Stream hands out, as they
// arrive. Not thread-safe (one stream's reader).
class LineSplitter {
 public:
  // Appends `data` and calls `on_line` with each complete line (without its newline) until it
  // returns false; returns false from then on.
  bool Feed(std::string_view data, const std::function<bool(std::string_view)>& on_line);
  // The last line, when the stream ended without a newline.
  void Finish(const std::function<bool(std::string_view)>& on_line);

 private:
  std::string pending_;
  bool ended_ = false;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // One request, one response. A transport failure (connection refused, TLS) is an error
  // status; any HTTP answer, 4xx and 5xx included, is a Response.
  virtual absl::StatusOr<Response> Do(const Request& request) = 0;
  // A streaming GET (watch, log follow): `on_line` gets each newline-terminated line (without
  // the newline) as it arrives and returns false to end the stream. Returns when the server ends
  // the stream, `on_line` returns false, or `stop` becomes true (checked at least every 250 ms).
  // A non-2xx answer is returned as its Response (the body being the Status) without calling
  // `on_line`; a 2xx stream that ends returns {200, ""}.
  virtual absl::StatusOr<Response> Stream(const Request& request,
                                          const std::function<bool(std::string_view)>& on_line,
                                          const std::atomic<bool>& stop) = 0;
  // Several bindings stored together, all or none (the gang rule), where the transport can;
  // nullopt when it cannot (the Client then posts them one by one). Each element of the result
  // is that binding's outcome.
  virtual std::optional<absl::StatusOr<std::vector<absl::Status>>> BindAll(
      const std::vector<Binding>& bindings) {
    (void)bindings;
    return std::nullopt;
  }
  // Whether BindAll is all or none: then no gang can be left half-bound, and nothing need be
  // recorded before binding one (scheduler/gang_repair.h).
  [[nodiscard]] virtual bool BindsAtomically() const { return false; }
  // Several objects of one resource created with one store commit, where the transport can (in
  // process); each (namespace, object) is checked as a POST is and is independent of the others.
  // nullopt when it cannot (the Client then posts them one by one). Each element of the result
  // is that object's outcome.
  virtual std::optional<absl::StatusOr<std::vector<absl::Status>>> CreateAll(
      const Resource& resource, std::vector<std::pair<std::string, boost::json::object>> objects) {
    (void)resource;
    (void)objects;
    return std::nullopt;
  }
  // A watch whose events arrive as objects rather than lines, where the transport can (in
  // process, the store's own parsed states, shared by every watcher and never changed):
  // `on_event` gets each event's type ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR") and
  // object. nullopt when the transport cannot (the Client then reads lines from Stream);
  // otherwise as Stream.
  using EventCallback =
      std::function<bool(std::string_view type, std::shared_ptr<const boost::json::value> object)>;
  virtual std::optional<absl::StatusOr<Response>> StreamEvents(const Request& request,
                                                               const EventCallback& on_event,
                                                               const std::atomic<bool>& stop) {
    (void)request;
    (void)on_event;
    (void)stop;
    return std::nullopt;
  }
};

// --- Client ------------------------------------------------------------------------------------

struct ListOptions {
  std::string label_selector;  // "app=x,tier in (a,b)"
  std::string field_selector;  // "spec.nodeName=node-1"
};

struct ObjectList {
  std::vector<boost::json::object> items;
  std::string resource_version;  // the list's, to start a watch from
};

enum class PatchType { kMerge, kJson, kStrategic };

struct DeleteOptions {
  std::optional<int64_t> grace_period_seconds;  // 0: immediately
  std::string propagation_policy;               // "Background", "Foreground", "Orphan" or ""
  std::string precondition_uid;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // Immutable: in process it is the API server's own stored state, shared with other watchers.
  std::shared_ptr<const boost::json::object> object;
};

// A Kubernetes Event (core/v1) to record; the Client fills in names, counts and timestamps.
struct EventRecord {
  // The object it is about.
  std::string involved_api_version;  // "v1"
  std::string involved_kind;         // "Pod"
  std::string involved_namespace;
  std::string involved_name;
  std::string involved_uid;
  std::string type = "Normal";  // "Normal" or "Warning"
  std::string reason;           // "Scheduled", "FailedScheduling", "Unschedulable"
  std::string message;
  std::string source_component;  // "volcano", "default-scheduler", "vc-controller-manager", ...
  std::string source_host;       // the node, for kubelet events

  // A Normal event about the pod NS/NAME with that uid; the caller says what happened.
  static EventRecord AboutPod(std::string ns, std::string name, std::string uid) {
    EventRecord e;
    e.involved_api_version = "v1";
    e.involved_kind = "Pod";
    e.involved_namespace = std::move(ns);
    e.involved_name = std::move(name);
    e.involved_uid = std::move(uid);
    return e;
  }
};

class Client {
 public:
  explicit Client(std::shared_ptr<Transport> transport);

  absl::StatusOr<boost::json::object> Get(const Resource& resource, std::string_view ns,
                                          std::string_view name);
  // ns "" for every namespace (or a cluster-scoped resource).
  absl::StatusOr<ObjectList> List(const Resource& resource, std::string_view ns,
                                  const ListOptions& options = {});
  // apiVersion and kind are filled in when missing. Returns the stored object.
  absl::StatusOr<boost::json::object> Create(const Resource& resource, std::string_view ns,
                                             boost::json::object object);
  // PUT of the whole object (namespace and name from its metadata); a stale
  // metadata.resourceVersion fails with Aborted.
  absl::StatusOr<boost::json::object> Update(const Resource& resource, boost::json::object object);
  // PUT to the status subresource.
  absl::StatusOr<boost::json::object> UpdateStatus(const Resource& resource,
                                                   boost::json::object object);
  absl::StatusOr<boost::json::object> Patch(const Resource& resource, std::string_view ns,
                                            std::string_view name, PatchType type,
                                            std::string_view patch,
                                            std::string_view subresource = {});
  // Patch, for a caller that needs only whether it took: the object the server answers with is
  // not parsed (on a pod, with its field ownership, that is most of what the patch costs).
  absl::Status PatchWithoutResult(const Resource& resource, std::string_view ns,
                                  std::string_view name, PatchType type, std::string_view patch,
                                  std::string_view subresource = {});
  absl::Status Delete(const Resource& resource, std::string_view ns, std::string_view name,
                      const DeleteOptions& options = {});

  // POST pods/NAME/eviction (a policy/v1 Eviction): the pod deleted with `options` unless its
  // PodDisruptionBudget forbids it, which is ResourceExhausted (429) with the server's message.
  absl::Status Evict(std::string_view ns, std::string_view pod, const DeleteOptions& options = {});

  // POST pods/NAME/binding.
  absl::Status Bind(const Binding& binding);
  // Binds a gang: in one transaction where the transport allows (in-process), else one by one.
  // Returns each binding's outcome in order; the outer status is a transport failure.
  absl::StatusOr<std::vector<absl::Status>> BindAll(const std::vector<Binding>& bindings);

  // Creates a core/v1 Event (name "<involved>.<unique suffix>", firstTimestamp/lastTimestamp
  // now, count 1, source set).
  absl::Status RecordEvent(const EventRecord& event);
  // Records several Events, in one store commit where the transport allows (in process), else
  // one by one. Returns each Event's outcome in order; the outer status is a transport failure
  // of the one commit.
  absl::StatusOr<std::vector<absl::Status>> RecordEvents(const std::vector<EventRecord>& events);

  // Watches from `resource_version` until `stop` becomes true or `on_event` returns false.
  // Returns OutOfRange when the server says the version is too old (the caller relists), OK
  // when stopped or when the server ended the watch (the caller re-watches from the last
  // version it saw). `on_event` may keep the event's object (it is never changed).
  absl::Status Watch(const Resource& resource, std::string_view ns,
                     std::string_view resource_version, const ListOptions& options,
                     const std::function<bool(WatchEvent&)>& on_event,
                     const std::atomic<bool>& stop);

  // GET pods/NAME/log (one container; "" when the pod has one).
  absl::StatusOr<std::string> Logs(std::string_view ns, std::string_view pod,
                                   std::string_view container = {});

  Transport& transport() { return *transport_; }

 private:
  std::shared_ptr<Transport> transport_;
};

// The absl::Status for a non-2xx response (see the mapping above).
absl::Status StatusFromResponse(const Response& response);

// Whether `resource` can be listed (cluster-wide): what a component checks before it watches a
// kind that a cluster may not serve (Volcano's HyperNodes before 1.11) or may not let it list.
// An answer that says "later" is asked again every 250 ms for up to `patience`: 429 (a CRD just
// created, whose watch cache answers "storage is (re)initializing" with Retry-After) and 5xx (a
// server restarting). OK when a list succeeds; otherwise the lasting refusal (NotFound,
// Forbidden, or a "later" past `patience`).
absl::Status ListableWithin(Client& client, const Resource& resource,
                            std::chrono::milliseconds patience);

}  // namespace muster::client
