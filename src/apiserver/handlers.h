#pragma once

// The REST handlers of the embedded Kubernetes API server: routing of /api, /apis, /version and
// /openapi, and for every registry resource (resources.h) list, get, create, update, patch (four
// types), delete, watch, the status subresources, pods/binding, pods/eviction and pods/log, with
// kube-apiserver's semantics as kubectl 1.32 relies on them: k8s.io/apiserver
// pkg/endpoints/handlers (get.go, create.go, update.go, patch.go, delete.go, watch.go), and for
// pods/binding, pods/eviction and pods/log kubernetes pkg/registry/core/pod/storage/storage.go
// (BindingREST), eviction.go and pkg/registry/core/pod/rest/log.go; the rules are described in
// the Kubernetes API concepts (kubernetes.io/docs/reference/using-api/api-concepts/).
// docs/architecture.md lists the checks.
//
// Works on plain HttpRequest/HttpResponse values (http.h); server.cc carries them over HTTP.
// Every write is built completely and then stored with one Store::Commit, so a refused request
// stores nothing.
//
// Thread-safety: Handle() may be called from many threads at once.
//
// Split across files by concern: handlers.cc (routing, discovery, get, list), write.cc (create,
// update, patch, delete, binding; write_evict.cc the eviction), reviews.cc (`kubectl auth can-i`
// and `whoami`), watch.cc, logs.cc, pod_streams.cc (exec, attach, portforward), fields.cc
// (field selectors), strict.cc (fieldValidation),
// bootstrap.cc (default namespaces and queues).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "api/json_access.h"
#include "apiserver/descriptors/resources.h"
#include "apiserver/http.h"
#include "apiserver/status.h"
#include "boost/json/object.hpp"
#include "boost/json/value.hpp"
#include "common/pod_streams.h"
#include "store/store.h"

namespace muster::apiserver {

struct HandlerOptions {
  // Container logs are read from <data_dir>/logs/<namespace>/<pod>/<container>.log.
  std::string data_dir;
  // host:port as clients reach the server (legacy discovery's serverAddressByClientCIDRs).
  std::string server_address = "127.0.0.1:6443";
  // Watches with allowWatchBookmarks=true get a BOOKMARK this often.
  std::chrono::milliseconds bookmark_interval = std::chrono::seconds(10);
  // Watches without timeoutSeconds end after this long (kube-apiserver: 30-60 min).
  std::chrono::seconds default_watch_timeout = std::chrono::minutes(30);
  // How often a followed log file is polled for growth.
  std::chrono::milliseconds log_poll_interval = std::chrono::milliseconds(200);
  // Seconds since the Unix epoch; the wall clock when unset (tests pass a fake).
  std::function<int64_t()> now_unix;
  // Warnings, one line each (a damaged stored object a list or watch left out); stderr,
  // prefixed "muster apiserver: ", when unset.
  std::function<void(std::string_view)> log;
};

class ResourceRegistry;

// What a resource URL names.
struct Target {
  // Held for the request (and by a watch for its life): a custom resource's entry outlives a
  // change of its CustomResourceDefinition while a request uses it.
  std::shared_ptr<const ResourceInfo> resource;
  std::string ns;           // from the URL; "" for cluster-scoped or all-namespaces requests
  std::string name;         // "" for the collection
  std::string subresource;  // "", "status", "binding", "eviction", "log", "finalize"
};

// Label and field selectors of a list or watch, compiled.
struct ObjectFilter;

// One pod's binding to a node: what POST pods/NAME/binding carries, or one element of BindAll.
struct PodBinding {
  std::string ns;
  std::string pod;
  std::string node;
  std::string pod_uid;              // when not empty, the pod must still have this UID
  boost::json::object annotations;  // copied onto the pod (muster.dev/gpu-indices)
};

class Handlers {
 public:
  Handlers(store::Store& store, HandlerOptions options);
  ~Handlers();

  HttpResponse Handle(const HttpRequest& request);

  // Binds several pods with ONE store commit, all or none (a gang's bindings). Each binding is
  // checked as POST pods/NAME/binding checks it (the same Invalid and Conflict errors), its
  // annotations are copied onto the pod and PodScheduled=True is set. Returns one entry per
  // binding: all nullopt when every binding was stored; otherwise nothing was stored, the
  // failing binding carries its error and the others a Conflict naming it. A pod changed
  // concurrently is re-read and the whole set retried.
  std::vector<std::optional<ApiError>> BindAll(const std::vector<PodBinding>& bindings);

  // Creates several objects of one resource, each (namespace, object) checked as POST checks it,
  // with one store commit for all that pass (Events recorded in bursts). Unlike BindAll the
  // objects are independent: one that is refused does not stop the others. Returns one entry per
  // object: nullopt when it was stored, else its error.
  std::vector<std::optional<ApiError>> CreateAll(
      const ResourceInfo& resource,
      std::vector<std::pair<std::string, boost::json::object>> objects);

  // Creates what a fresh cluster has, where missing: the namespaces default, kube-system,
  // kube-public and kube-node-lease, and the Volcano queues default and root (weight 1, Open).
  // Idempotent. Every namespace stored gets its "default" ServiceAccount where it lacks one.
  absl::Status Bootstrap();

  // The node agents of this process, for pods/exec, pods/attach and pods/portforward
  // (pod_streams.cc); null (the default, and `muster apiserver` alone): those requests are
  // refused saying that they need the nodes in the API server's process. `streams` must stay
  // valid until it is replaced or the server has stopped. Thread-safe.
  void SetPodStreams(common::PodStreams* streams) { pod_streams_.store(streams); }

 private:
  // The namespace's "default" ServiceAccount, as kube's serviceaccounts controller creates it:
  // made with the namespace (CreateObject) and at start-up (Bootstrap), so that it is there
  // before the first pod. Best effort, as the controller's: a namespace being deleted gets none.
  void EnsureDefaultServiceAccount(const std::string& ns);
  HttpResponse HandleResource(const HttpRequest& req, const Target& target);
  HttpResponse HandleResourceVerb(const HttpRequest& req, const Target& target);

  // DELETE of a collection (write_delete.cc): every object the selectors match, each as DELETE
  // of it would, as kube's deletecollection.
  HttpResponse DeleteCollection(const HttpRequest& req, const Target& t);
  // GET, PUT and PATCH of a custom resource's /scale (write_scale.cc): an autoscaling/v1 Scale
  // read from and written to the CRD's replica paths.
  HttpResponse Scale(const HttpRequest& req, const Target& t);
  // Reads (handlers.cc).
  HttpResponse Get(const HttpRequest& req, const Target& t);
  HttpResponse List(const HttpRequest& req, const Target& t);

  // Writes (write.cc).
  HttpResponse Create(const HttpRequest& req, const Target& t);
  HttpResponse Update(const HttpRequest& req, const Target& t);
  HttpResponse Patch(const HttpRequest& req, const Target& t);
  HttpResponse Delete(const HttpRequest& req, const Target& t);
  HttpResponse Bind(const HttpRequest& req, const Target& t);
  // POST pods/NAME/eviction (write_evict.cc): the pod deleted unless its PodDisruptionBudget
  // forbids it, the budget's disruptionsAllowed taken in the same store commit.
  HttpResponse Evict(const HttpRequest& req, const Target& t);
  // POST of a review (ResourceInfo::review; reviews.cc): the object back with its status.
  HttpResponse Review(const HttpRequest& req, const Target& t);
  // The pod as `binding` leaves it (nodeName, annotations, PodScheduled=True), checked against
  // its live state: the UID precondition, not being deleted, not bound yet. A binding records no
  // field ownership: the pod's stays as stored. It leaves it out of the pod and sets
  // `managed_text` to its stored text (store::Op::managed_fields), unless the store has no parsed
  // state or the binding adds the pod's first annotations (then the pod holds it, before them).
  ApiResult<boost::json::object> BoundPod(const store::Object& live, const PodBinding& binding,
                                          std::optional<std::string>& managed_text);
  // Stamps and stores a new object (shared by POST, apply-create and Bootstrap). `obj` has its
  // typemeta and metadata.name or generateName set. Returns the stored object's JSON.
  ApiResult<std::string> CreateObject(const ResourceInfo& resource, const std::string& ns,
                                      boost::json::object obj, bool dry_run);
  // CreateObject in two steps: everything but the store commit, then the commit (retried under
  // a fresh generated name when the first is taken).
  struct PreparedCreate {
    store::Op op;
    std::string generate_name;  // metadata.generateName, when the name was generated from it
  };
  ApiResult<PreparedCreate> PrepareCreate(const ResourceInfo& resource, const std::string& ns,
                                          boost::json::object obj);
  ApiResult<std::string> CommitCreate(const ResourceInfo& resource, PreparedCreate prepared);
  // Admission, field ownership (`own`, given the admitted state: it records managedFields in it,
  // or sets `text` to the managedFields text to store with it (store::Op::managed_fields), or
  // refuses an apply's conflicts), generation, the no-op check and the Commit of `next` replacing
  // `live`. `live_obj` is `live` without metadata.managedFields, whose stored text is
  // `live.ManagedFieldsText()`. On a revision conflict returns nullopt so that the caller can
  // retry on a fresh read.
  using OwnFields = std::function<std::optional<ApiError>(boost::json::object& next,
                                                          std::optional<std::string>& text)>;
  std::optional<ApiResult<std::string>> CommitUpdate(const Target& t, const store::Object& live,
                                                     const boost::json::object& live_obj,
                                                     boost::json::object next, bool dry_run,
                                                     bool user_precondition, const OwnFields& own);

  // Streams (watch.cc, logs.cc).
  HttpResponse Watch(const HttpRequest& req, const Target& t);
  HttpResponse Logs(const HttpRequest& req, const Target& t);
  // pods/exec, pods/attach, pods/portforward (pod_streams.cc): the checks and the connection
  // upgrade (upgrade.h).
  HttpResponse PodStream(const HttpRequest& req, const Target& t);

  [[nodiscard]] int64_t Now() const;
  void Log(std::string_view message) const;
  // The warning for a damaged object (store::Object::damaged) that `what` ("a list") left out.
  void LogSkippedDamaged(std::string_view what, const store::Object& object) const;

  store::Store& store_;
  HandlerOptions options_;
  std::string continue_key_;  // signs `continue` tokens (random per server)
  // What is served: the compiled-in resources and those of the stored CRDs.
  std::unique_ptr<ResourceRegistry> registry_;
  std::atomic<common::PodStreams*> pod_streams_{nullptr};
};

// --- Helpers shared by the handler files -------------------------------------------------------

// Decodes a request body (JSON; YAML for application/yaml and apply patches; kube's protobuf for
// the built-in kinds, protobuf.h) into an object.
ApiResult<boost::json::object> DecodeBodyObject(const HttpRequest& req);
// A Content-Type or Accept entry without its parameters ("application/json; charset=utf-8" is
// "application/json").
std::string_view MediaType(std::string_view content_type);

// The shared readers (api/json_access.h), by the names the handlers have always used.
using api::ObjectAt;
using api::StringAt;
// apiVersion and kind of a body must name the URL's resource (400 otherwise); missing ones are
// filled in (write.cc).
std::optional<ApiError> CheckTypeMeta(boost::json::object& obj, const ResourceInfo& res);
std::string NewUid();  // a random (v4) UUID
// generateName's suffix: 5 characters from kube's alphabet (no vowels, no look-alikes).
std::string RandomNameSuffix();
// Whether an Accept header asks for a meta.k8s.io Table.
bool WantsTable(std::string_view accept);
// A decimal integer (what absl::SimpleAtoi accepts, for std::string_view); nullopt otherwise.
std::optional<int64_t> ParseInt(std::string_view text);
// A resourceVersion parameter as kube's storage reads it (APIObjectVersioner.ParseResourceVersion):
// "" and "0" are 0, anything else a decimal unsigned 64-bit integer; else 400 `invalid resource
// version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid
// syntax`.
ApiResult<uint64_t> ParseResourceVersion(std::string_view text);
// A boolean query parameter's value as kube's parameter codec reads it: false for "0" and "false"
// (any case), true for anything else, the empty value included.
bool QueryBool(std::string_view value);
// A GET of a collection with `watch` true as QueryBool reads it (the Python client sends
// `watch=True`): the verb watch.
bool IsWatch(const HttpRequest& req);
// ListOptions checked as kube-apiserver's ListResource checks them (apimachinery
// internalversion/validation ValidateListOptions, or validateWatchOptions for a watch, after
// SetListOptionsDefaults): resourceVersionMatch only with a resourceVersion, not with continue,
// Exact or NotOlderThan (NotOlderThan only, and only with sendInitialEvents, for a watch), Exact
// not with "0"; sendInitialEvents only for a watch, with NotOlderThan. The error is 422
// `ListOptions.meta.k8s.io "" is invalid: ...` with one cause per broken rule.
std::optional<ApiError> CheckListOptions(const HttpRequest& req, bool watch);
// The container a pods/log, exec or attach request names (`requested`), or the pod's only one when
// it names none; 400 with kube's messages otherwise (pod/strategy.go validateContainer).
ApiResult<std::string> ChooseContainer(const boost::json::object& pod, const std::string& requested,
                                       const std::string& pod_name);
// A JSON response with the given code.
HttpResponse JsonResponse(int status, std::string body);
// A non-owning handle on an entry of the compiled-in table, which lives for the process.
std::shared_ptr<const ResourceInfo> Builtin(const ResourceInfo& resource);
// A custom resource's object (or list, or Table) as `resource`'s version serves it: stored in the
// CRD's storage version, it gets the served apiVersion (conversion None). Anything else as it is.
std::string ServedVersionOf(const ResourceInfo& resource, std::string body);
// The 500 for reading or changing an object whose stored text cannot be served
// (store::Object::damaged): what is wrong, and that deleting it works.
ApiError DamagedObjectError(const ResourceInfo& resource, const store::Object& object);

// kube-apiserver's long-running check (BasicLongRunningRequestCheck with the verbs watch and
// proxy, the subresources attach, exec, log, portforward and proxy): such requests are not
// counted against --max-requests-inflight (ServerOptions::long_running).
bool IsLongRunning(const HttpRequest& req);

// Field selectors (fields.cc): the fields of `obj` that field selectors may name for `resource`,
// and whether `field` is one of them.
bool FieldSelectable(const ResourceInfo& resource, std::string_view field);
std::vector<std::pair<std::string, std::string>> SelectableFields(const ResourceInfo& resource,
                                                                  const boost::json::object& obj);

// Compiles the labelSelector and fieldSelector query parameters (400 on bad syntax or an
// unsupported field). A filter that matches everything needs no parsed object.
ApiResult<std::shared_ptr<const ObjectFilter>> CompileFilter(const HttpRequest& req,
                                                             const ResourceInfo& resource);
bool FilterIsEmpty(const ObjectFilter& filter);
bool FilterMatches(const ObjectFilter& filter, const ResourceInfo& resource,
                   const boost::json::object& obj);

// fieldValidation (strict.cc): the paths of fields in `obj` that the resource's OpenAPI schema
// does not know ("spec.foo", "spec.containers[0].imagex").
std::vector<std::string> UnknownFields(const ResourceInfo& resource,
                                       const boost::json::object& obj);

}  // namespace muster::apiserver
