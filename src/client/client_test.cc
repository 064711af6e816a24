// The client layer against a real embedded API server (port 0, temporary data directory). Every
// behaviour is checked over both transports with the same test body: in-process
// (apiserver::LocalTransport, calling the REST handlers) and HTTP (HttpTransport from the
// kubeconfig the server writes). A separate test talks HTTPS with a bearer token to a server
// listening beyond loopback.

#include "client/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "client/http_transport.h"
#include "client/informer.h"
#include "fmt/format.h"

namespace muster::client {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

enum class Via { kInProcess, kHttp };

std::string TempDir() {
  char pattern[] = "/tmp/muster-client-XXXXXX";
  return ::mkdtemp(pattern);
}

json::object PodObject(std::string_view name, std::map<std::string, std::string> labels = {},
                       std::vector<std::string> containers = {"c"}) {
  json::object meta{{"name", name}};
  if (!labels.empty()) {
    json::object l;
    for (const auto& [k, v] : labels) l[k] = v;
    meta["labels"] = std::move(l);
  }
  json::array cs;
  for (const auto& c : containers) cs.push_back(json::object{{"name", c}, {"image", "busybox"}});
  return json::object{{"metadata", std::move(meta)}, {"spec", json::object{{"containers", cs}}}};
}

std::string Name(const json::object& obj) {
  return std::string(obj.at("metadata").at("name").as_string());
}
// Unlike api::MetaString, throws when metadata is missing: every object here must have it.
std::string MetaStr(const json::object& obj, std::string_view key) {
  const json::value* v = obj.at("metadata").get_object().if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}
std::string Label(const json::object& obj, std::string_view key) {
  const json::value* labels = obj.at("metadata").get_object().if_contains("labels");
  if (labels == nullptr || !labels->is_object()) return "";
  const json::value* v = labels->get_object().if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}
std::string NodeName(const json::object& pod) {
  const json::value* n = pod.at("spec").get_object().if_contains("nodeName");
  return n != nullptr && n->is_string() ? std::string(n->get_string()) : "";
}

// Forwards to another transport, counting list requests (GETs of a collection, not watches).
class CountingTransport : public Transport {
 public:
  explicit CountingTransport(std::shared_ptr<Transport> inner) : inner_(std::move(inner)) {}
  absl::StatusOr<Response> Do(const Request& request) override {
    if (request.method == "GET" && request.path.ends_with("/pods")) ++lists;
    return inner_->Do(request);
  }
  absl::StatusOr<Response> Stream(const Request& request,
                                  const std::function<bool(std::string_view)>& on_line,
                                  const std::atomic<bool>& stop) override {
    return inner_->Stream(request, on_line, stop);
  }
  std::optional<absl::StatusOr<std::vector<absl::Status>>> BindAll(
      const std::vector<Binding>& bindings) override {
    return inner_->BindAll(bindings);
  }
  std::atomic<int> lists{0};

 private:
  std::shared_ptr<Transport> inner_;
};

class ClientTest : public ::testing::TestWithParam<Via> {
 protected:
  void SetUp() override {
    dir_ = TempDir();
    apiserver::ApiServerOptions options;
    options.data_dir = dir_;
    options.listen = "127.0.0.1:0";
    options.threads = 2;
    options.watch_history = 32;  // small, so that tests can make a version expire
    auto server = apiserver::ApiServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    std::shared_ptr<Transport> inner;
    if (GetParam() == Via::kInProcess) {
      inner = std::make_shared<apiserver::LocalTransport>(*server_);
    } else {
      auto config = LoadKubeconfig(server_->kubeconfig_path());
      ASSERT_TRUE(config.ok()) << config.status();
      EXPECT_EQ(config->server, server_->url());
      auto http = MakeHttpTransport(*config);
      ASSERT_TRUE(http.ok()) << http.status();
      inner = *http;
    }
    transport_ = std::make_shared<CountingTransport>(inner);
    client_ = std::make_unique<Client>(transport_);
  }

  void TearDown() override {
    client_.reset();
    transport_.reset();
    if (server_) server_->Stop();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  json::object MustCreate(json::object pod) {
    auto created = client_->Create(Pods(), "default", std::move(pod));
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : json::object();
  }

  bool InProcess() const { return GetParam() == Via::kInProcess; }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::shared_ptr<CountingTransport> transport_;
  std::unique_ptr<Client> client_;
};

TEST(ResourceTest, Paths) {
  EXPECT_EQ(Pods().Path("default"), "/api/v1/namespaces/default/pods");
  EXPECT_EQ(Pods().Path(""), "/api/v1/pods");
  EXPECT_EQ(Pods().Path("ns", "p", "binding"), "/api/v1/namespaces/ns/pods/p/binding");
  EXPECT_EQ(Nodes().Path("", "n1", "status"), "/api/v1/nodes/n1/status");
  EXPECT_EQ(Queues().Path("ignored", "q"), "/apis/scheduling.volcano.sh/v1beta1/queues/q");
  EXPECT_EQ(VolcanoJobs().Path("default", "j"),
            "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs/j");
  EXPECT_EQ(Leases().ApiVersion(), "coordination.k8s.io/v1");
  EXPECT_EQ(PodGroups().ApiVersion(), "scheduling.volcano.sh/v1beta1");
}

// Answers every GET with the next of `answers` (the last one again once they run out).
class ScriptedTransport : public Transport {
 public:
  explicit ScriptedTransport(std::vector<Response> answers) : answers_(std::move(answers)) {}
  absl::StatusOr<Response> Do(const Request&) override {
    ++requests;
    Response r = answers_[std::min(next_, answers_.size() - 1)];
    ++next_;
    return r;
  }
  absl::StatusOr<Response> Stream(const Request&, const std::function<bool(std::string_view)>&,
                                  const std::atomic<bool>&) override {
    return absl::UnimplementedError("no watches here");
  }
  int requests = 0;

 private:
  std::vector<Response> answers_;
  size_t next_ = 0;
};

TEST(ListableWithinTest, WaitsOutARetryLaterButNotARefusal) {
  // kube-apiserver's watch cache of a CRD created a moment ago (Retry-After: 1).
  const Response initializing{
      429, R"({"kind":"Status","message":"storage is (re)initializing","reason":"TooManyRequests","code":429})"};
  const Response restarting{
      503, R"({"kind":"Status","message":"the server is restarting","reason":"ServiceUnavailable","code":503})"};
  const Response listed{200, R"({"kind":"HyperNodeList","metadata":{"resourceVersion":"7"},"items":[]})"};
  const Response not_found{
      404, R"({"kind":"Status","message":"the server could not find the requested resource","reason":"NotFound","code":404})"};
  // The CRD's storage comes up after two answers: listable.
  auto coming = std::make_shared<ScriptedTransport>(
      std::vector<Response>{initializing, restarting, initializing, listed});
  Client c1(coming);
  EXPECT_TRUE(ListableWithin(c1, HyperNodes(), 10s).ok());
  EXPECT_EQ(coming->requests, 4);
  // Not served at all: said at once.
  auto absent = std::make_shared<ScriptedTransport>(std::vector<Response>{not_found});
  Client c2(absent);
  EXPECT_TRUE(absl::IsNotFound(ListableWithin(c2, HyperNodes(), 10s)));
  EXPECT_EQ(absent->requests, 1);
  // Still initializing past the patience: that is the answer.
  auto down = std::make_shared<ScriptedTransport>(std::vector<Response>{initializing});
  Client c3(down);
  absl::Status gone = ListableWithin(c3, HyperNodes(), 600ms);
  EXPECT_TRUE(absl::IsResourceExhausted(gone)) << gone;
  EXPECT_GE(down->requests, 2);
  EXPECT_THAT(std::string(gone.message()), ::testing::HasSubstr("(re)initializing"));
}

TEST(StatusFromResponseTest, MapsCodesAndKeepsMessage) {
  auto status = [](int code, std::string_view reason) {
    return StatusFromResponse(
        {code, fmt::format(R"({{"kind":"Status","message":"m{}","reason":"{}","code":{}}})", code,
                           reason, code)});
  };
  EXPECT_TRUE(absl::IsNotFound(status(404, "NotFound")));
  EXPECT_TRUE(absl::IsAlreadyExists(status(409, "AlreadyExists")));
  EXPECT_TRUE(absl::IsAborted(status(409, "Conflict")));
  EXPECT_TRUE(absl::IsInvalidArgument(status(422, "Invalid")));
  EXPECT_TRUE(absl::IsInvalidArgument(status(400, "BadRequest")));
  EXPECT_TRUE(absl::IsOutOfRange(status(410, "Expired")));
  EXPECT_TRUE(absl::IsPermissionDenied(status(401, "Unauthorized")));
  EXPECT_TRUE(absl::IsPermissionDenied(status(403, "Forbidden")));
  EXPECT_TRUE(absl::IsUnavailable(status(500, "InternalError")));
  EXPECT_EQ(std::string(status(404, "NotFound").message()), "m404");
  EXPECT_EQ(std::string(StatusFromResponse({502, "bad gateway"}).message()), "bad gateway");
}

TEST_P(ClientTest, CreateGetListDelete) {
  MustCreate(PodObject("a", {{"app", "x"}}));
  MustCreate(PodObject("b", {{"app", "y"}}));

  auto a = client_->Get(Pods(), "default", "a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Name(*a), "a");
  EXPECT_EQ(MetaStr(*a, "namespace"), "default");
  EXPECT_EQ(MetaStr(*a, "uid").size(), 36u);

  auto again = client_->Create(Pods(), "default", PodObject("a"));
  EXPECT_TRUE(absl::IsAlreadyExists(again.status())) << again.status();
  EXPECT_EQ(std::string(again.status().message()), "pods \"a\" already exists");
  EXPECT_TRUE(absl::IsNotFound(client_->Get(Pods(), "default", "zzz").status()));
  auto invalid = client_->Create(Pods(), "default", json::object{{"metadata", {{"name", "bad"}}}});
  EXPECT_TRUE(absl::IsInvalidArgument(invalid.status())) << invalid.status();

  auto all = client_->List(Pods(), "default");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->items.size(), 2u);
  EXPECT_FALSE(all->resource_version.empty());
  EXPECT_EQ(std::string(all->items[0].at("kind").as_string()), "Pod");
  auto by_label = client_->List(Pods(), "default", {.label_selector = "app in (x,z)"});
  ASSERT_TRUE(by_label.ok()) << by_label.status();
  ASSERT_EQ(by_label->items.size(), 1u);
  EXPECT_EQ(Name(by_label->items[0]), "a");
  auto by_field = client_->List(Pods(), "", {.field_selector = "metadata.name=b"});
  ASSERT_TRUE(by_field.ok()) << by_field.status();
  ASSERT_EQ(by_field->items.size(), 1u);
  EXPECT_EQ(Name(by_field->items[0]), "b");
  EXPECT_TRUE(absl::IsInvalidArgument(
      client_->List(Pods(), "default", {.label_selector = "app in ("}).status()));

  auto queues = client_->List(Queues(), "");
  ASSERT_TRUE(queues.ok()) << queues.status();
  EXPECT_GE(queues->items.size(), 1u);  // the default queue

  EXPECT_TRUE(client_->Delete(Pods(), "default", "a", {.grace_period_seconds = 0}).ok());
  EXPECT_TRUE(absl::IsNotFound(client_->Get(Pods(), "default", "a").status()));
  EXPECT_TRUE(absl::IsNotFound(client_->Delete(Pods(), "default", "a")));
  auto b = client_->Get(Pods(), "default", "b");
  ASSERT_TRUE(b.ok());
  auto wrong_uid =
      client_->Delete(Pods(), "default", "b",
                      {.grace_period_seconds = 0, .precondition_uid = "not-the-uid"});
  EXPECT_TRUE(absl::IsAborted(wrong_uid)) << wrong_uid;
  EXPECT_TRUE(client_->Get(Pods(), "default", "b").ok());
}

TEST_P(ClientTest, UpdateWithStaleVersionIsAborted) {
  json::object a = MustCreate(PodObject("a", {{"app", "x"}}));
  json::object first = a;
  first["metadata"].as_object()["labels"].as_object()["app"] = "changed";
  auto updated = client_->Update(Pods(), first);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(Label(*updated, "app"), "changed");
  EXPECT_NE(MetaStr(*updated, "resourceVersion"), MetaStr(a, "resourceVersion"));

  json::object stale = a;  // the version before the update
  stale["metadata"].as_object()["labels"].as_object()["app"] = "lost";
  auto refused = client_->Update(Pods(), stale);
  EXPECT_TRUE(absl::IsAborted(refused.status())) << refused.status();
  EXPECT_NE(std::string(refused.status().message()).find("the object has been modified"),
            std::string::npos)
      << refused.status();
  EXPECT_EQ(Label(*client_->Get(Pods(), "default", "a"), "app"), "changed");
}

TEST_P(ClientTest, StatusUpdateAndPatches) {
  MustCreate(PodObject("a", {{"app", "x"}}, {"c1", "c2"}));

  auto merged = client_->Patch(Pods(), "default", "a", PatchType::kMerge,
                               R"({"metadata":{"labels":{"tier":"web"}}})");
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(Label(*merged, "tier"), "web");
  EXPECT_EQ(Label(*merged, "app"), "x");

  auto jsonp = client_->Patch(Pods(), "default", "a", PatchType::kJson,
                              R"([{"op":"replace","path":"/metadata/labels/app","value":"y"}])");
  ASSERT_TRUE(jsonp.ok()) << jsonp.status();
  EXPECT_EQ(Label(*jsonp, "app"), "y");

  // Strategic merge patches merge containers by name: c1 stays, c2 gets the new image.
  auto strategic =
      client_->Patch(Pods(), "default", "a", PatchType::kStrategic,
                     R"({"spec":{"containers":[{"name":"c2","image":"busybox:2"}]}})");
  ASSERT_TRUE(strategic.ok()) << strategic.status();
  const json::array& containers = strategic->at("spec").at("containers").as_array();
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(containers[0].at("image").as_string(), "busybox");
  EXPECT_EQ(containers[1].at("image").as_string(), "busybox:2");

  auto bad = client_->Patch(Pods(), "default", "a", PatchType::kJson, R"({"not":"a list"})");
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();

  // The status subresource: PUT changes only .status; the main resource leaves .status alone.
  auto live = client_->Get(Pods(), "default", "a");
  ASSERT_TRUE(live.ok());
  json::object with_status = *live;
  with_status["status"].as_object()["phase"] = "Running";
  with_status["metadata"].as_object()["labels"].as_object()["app"] = "ignored-by-status";
  auto status = client_->UpdateStatus(Pods(), with_status);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->at("status").at("phase").as_string(), "Running");
  EXPECT_EQ(Label(*status, "app"), "y");

  auto patched_status = client_->Patch(Pods(), "default", "a", PatchType::kMerge,
                                       R"({"status":{"phase":"Succeeded"}})", "status");
  ASSERT_TRUE(patched_status.ok()) << patched_status.status();
  EXPECT_EQ(patched_status->at("status").at("phase").as_string(), "Succeeded");
}

TEST_P(ClientTest, BindSetsNodeAnnotationsAndCondition) {
  json::object p1 = MustCreate(PodObject("p1"));
  ASSERT_TRUE(client_
                  ->Bind({.ns = "default",
                          .pod = "p1",
                          .node = "n1",
                          .pod_uid = MetaStr(p1, "uid"),
                          .annotations = {{"muster.dev/gpu-indices", "0,1"}}})
                  .ok());
  auto bound = client_->Get(Pods(), "default", "p1");
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(NodeName(*bound), "n1");
  EXPECT_EQ(bound->at("metadata").at("annotations").at("muster.dev/gpu-indices").as_string(), "0,1");
  bool scheduled = false;
  for (const auto& c : bound->at("status").at("conditions").as_array()) {
    if (c.at("type").as_string() == "PodScheduled") scheduled = c.at("status").as_string() == "True";
  }
  EXPECT_TRUE(scheduled);

  absl::Status twice = client_->Bind({.ns = "default", .pod = "p1", .node = "n2"});
  EXPECT_TRUE(absl::IsAborted(twice)) << twice;
  EXPECT_NE(std::string(twice.message()).find("already assigned to node \"n1\""),
            std::string::npos)
      << twice;

  MustCreate(PodObject("p2"));
  absl::Status wrong_uid =
      client_->Bind({.ns = "default", .pod = "p2", .node = "n1", .pod_uid = "other"});
  EXPECT_TRUE(absl::IsAborted(wrong_uid)) << wrong_uid;
  EXPECT_TRUE(absl::IsNotFound(client_->Bind({.ns = "default", .pod = "none", .node = "n1"})));
  EXPECT_TRUE(absl::IsInvalidArgument(client_->Bind({.ns = "default", .pod = "p2", .node = ""})));
  EXPECT_EQ(NodeName(*client_->Get(Pods(), "default", "p2")), "");
}

TEST_P(ClientTest, BindAllIsAllOrNothingInProcess) {
  MustCreate(PodObject("g1"));
  MustCreate(PodObject("g2"));
  MustCreate(PodObject("g3"));
  MustCreate(PodObject("taken"));
  ASSERT_TRUE(client_->Bind({.ns = "default", .pod = "taken", .node = "n9"}).ok());

  // One binding of the gang is bad (its pod is already bound).
  auto mixed = client_->BindAll({{.ns = "default", .pod = "g1", .node = "n1"},
                                 {.ns = "default", .pod = "taken", .node = "n1"}});
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  ASSERT_EQ(mixed->size(), 2u);
  EXPECT_TRUE(absl::IsAborted((*mixed)[1])) << (*mixed)[1];
  EXPECT_NE(std::string((*mixed)[1].message()).find("already assigned"), std::string::npos);
  if (InProcess()) {
    // One transaction: nothing was bound, and g1's outcome names the failing binding.
    EXPECT_FALSE((*mixed)[0].ok());
    EXPECT_NE(std::string((*mixed)[0].message()).find("default/taken"), std::string::npos)
        << (*mixed)[0];
    EXPECT_EQ(NodeName(*client_->Get(Pods(), "default", "g1")), "");
  } else {
    // One by one over HTTP: g1 was bound.
    EXPECT_TRUE((*mixed)[0].ok()) << (*mixed)[0];
    EXPECT_EQ(NodeName(*client_->Get(Pods(), "default", "g1")), "n1");
  }
  EXPECT_EQ(NodeName(*client_->Get(Pods(), "default", "taken")), "n9");

  auto gang = client_->BindAll(
      {{.ns = "default", .pod = "g2", .node = "n2", .annotations = {{"muster.dev/gpu-indices", "3"}}},
       {.ns = "default", .pod = "g3", .node = "n3"}});
  ASSERT_TRUE(gang.ok()) << gang.status();
  ASSERT_EQ(gang->size(), 2u);
  EXPECT_TRUE((*gang)[0].ok()) << (*gang)[0];
  EXPECT_TRUE((*gang)[1].ok()) << (*gang)[1];
  auto g2 = client_->Get(Pods(), "default", "g2");
  EXPECT_EQ(NodeName(*g2), "n2");
  EXPECT_EQ(g2->at("metadata").at("annotations").at("muster.dev/gpu-indices").as_string(), "3");
  EXPECT_EQ(NodeName(*client_->Get(Pods(), "default", "g3")), "n3");
}

TEST_P(ClientTest, RecordEventIsListedLikeKubectlGetEvents) {
  json::object pod = MustCreate(PodObject("trainer-0"));
  ASSERT_TRUE(client_
                  ->RecordEvent({.involved_api_version = "v1",
                                 .involved_kind = "Pod",
                                 .involved_namespace = "default",
                                 .involved_name = "trainer-0",
                                 .involved_uid = MetaStr(pod, "uid"),
                                 .type = "Warning",
                                 .reason = "FailedScheduling",
                                 .message = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
                                 .source_component = "volcano"})
                  .ok());
  ASSERT_TRUE(client_
                  ->RecordEvent({.involved_api_version = "v1",
                                 .involved_kind = "Node",
                                 .involved_name = "node-1",
                                 .reason = "NodeReady",
                                 .message = "Node node-1 status is now: NodeReady",
                                 .source_component = "kubelet",
                                 .source_host = "node-1"})
                  .ok());
  auto events = client_->List(Events(), "default",
                              {.field_selector = "involvedObject.name=trainer-0"});
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->items.size(), 1u);
  const json::object& e = events->items[0];
  std::string name = Name(e);
  ASSERT_EQ(name.size(), std::string("trainer-0.").size() + 16) << name;
  EXPECT_EQ(name.substr(0, 10), "trainer-0.");
  EXPECT_EQ(name.find_first_not_of("0123456789abcdef", 10), std::string::npos) << name;
  EXPECT_EQ(e.at("reason").as_string(), "FailedScheduling");
  EXPECT_EQ(e.at("type").as_string(), "Warning");
  EXPECT_EQ(e.at("count").as_int64(), 1);
  EXPECT_EQ(e.at("source").at("component").as_string(), "volcano");
  EXPECT_EQ(e.at("involvedObject").at("uid").as_string(), MetaStr(pod, "uid"));
  EXPECT_EQ(e.at("firstTimestamp"), e.at("lastTimestamp"));

  auto node_events = client_->List(Events(), "default", {.field_selector = "reason=NodeReady"});
  ASSERT_TRUE(node_events.ok());
  ASSERT_EQ(node_events->items.size(), 1u);
  EXPECT_EQ(node_events->items[0].at("source").at("host").as_string(), "node-1");
}

TEST_P(ClientTest, RecordEventsWritesEachAndOneRefusedEventDoesNotStopTheOthers) {
  std::vector<EventRecord> records;
  for (int i = 0; i < 5; ++i) {
    records.push_back({.involved_api_version = "v1",
                       .involved_kind = "Pod",
                       .involved_namespace = i == 2 ? "no-such-namespace" : "default",
                       .involved_name = fmt::format("worker-{}", i),
                       .reason = "Scheduled",
                       .message = fmt::format("Successfully assigned default/worker-{} to n", i),
                       .source_component = "volcano"});
  }
  auto written = client_->RecordEvents(records);
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), 5u);
  for (int i = 0; i < 5; ++i) {
    if (i == 2) {
      EXPECT_TRUE(absl::IsNotFound((*written)[i])) << (*written)[i];
      EXPECT_NE((*written)[i].message().find("no-such-namespace"), std::string::npos);
    } else {
      EXPECT_TRUE((*written)[i].ok()) << i << ": " << (*written)[i];
    }
  }
  auto events = client_->List(Events(), "default", {.field_selector = "reason=Scheduled"});
  ASSERT_TRUE(events.ok()) << events.status();
  std::set<std::string> about;
  for (const json::object& e : events->items) {
    about.insert(std::string(e.at("involvedObject").at("name").as_string()));
    EXPECT_EQ(e.at("count").as_int64(), 1);
  }
  EXPECT_EQ(about, (std::set<std::string>{"worker-0", "worker-1", "worker-3", "worker-4"}));
}

TEST_P(ClientTest, WatchDeliversEventsInOrder) {
  auto list = client_->List(Pods(), "default");
  ASSERT_TRUE(list.ok());
  std::atomic<bool> stop{false};
  std::vector<std::pair<WatchEventType, std::string>> seen;
  std::promise<absl::Status> done;
  std::thread watcher([&] {
    done.set_value(client_->Watch(
        Pods(), "default", list->resource_version, {.label_selector = "app=w"},
        [&](const WatchEvent& e) {
          if (e.type == WatchEventType::kBookmark) return true;
          seen.emplace_back(e.type, Name(*e.object) + ":" + Label(*e.object, "step"));
          return seen.size() < 4;
        },
        stop));
  });
  MustCreate(PodObject("other", {{"app", "not-watched"}}));
  MustCreate(PodObject("w1", {{"app", "w"}, {"step", "1"}}));
  ASSERT_TRUE(client_
                  ->Patch(Pods(), "default", "w1", PatchType::kMerge,
                          R"({"metadata":{"labels":{"step":"2"}}})")
                  .ok());
  MustCreate(PodObject("w2", {{"app", "w"}, {"step", "1"}}));
  ASSERT_TRUE(client_->Delete(Pods(), "default", "w1", {.grace_period_seconds = 0}).ok());
  auto result = done.get_future();
  if (result.wait_for(20s) != std::future_status::ready) stop = true;
  watcher.join();
  EXPECT_TRUE(result.get().ok());
  std::vector<std::pair<WatchEventType, std::string>> want = {
      {WatchEventType::kAdded, "w1:1"},
      {WatchEventType::kModified, "w1:2"},
      {WatchEventType::kAdded, "w2:1"},
      {WatchEventType::kDeleted, "w1:2"}};
  EXPECT_EQ(seen, want);
}

TEST_P(ClientTest, WatchStopsWhenAskedAndExpiredVersionIsOutOfRange) {
  auto before = client_->List(Pods(), "default");
  ASSERT_TRUE(before.ok());

  // A quiet watch returns soon after `stop` is set.
  std::atomic<bool> stop{false};
  auto started = std::chrono::steady_clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(300ms);
    stop = true;
  });
  absl::Status quiet = client_->Watch(
      Pods(), "default", before->resource_version, {}, [](const WatchEvent&) { return true; },
      stop);
  stopper.join();
  EXPECT_TRUE(quiet.ok()) << quiet;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);

  // More pod events than the server keeps (watch_history 32): the old version has expired.
  MustCreate(PodObject("churn"));
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(client_
                    ->Patch(Pods(), "default", "churn", PatchType::kMerge,
                            fmt::format(R"({{"metadata":{{"labels":{{"i":"{}"}}}}}})", i))
                    .ok());
  }
  std::atomic<bool> never{false};
  int delivered = 0;
  absl::Status expired = client_->Watch(
      Pods(), "default", before->resource_version, {},
      [&](const WatchEvent&) {
        ++delivered;
        return true;
      },
      never);
  EXPECT_TRUE(absl::IsOutOfRange(expired)) << expired;
  EXPECT_NE(std::string(expired.message()).find("too old resource version"), std::string::npos)
      << expired;
  EXPECT_EQ(delivered, 0);
}

TEST_P(ClientTest, LogsAndFollowedLogStream) {
  MustCreate(PodObject("runner"));
  const std::string log_dir = dir_ + "/logs/default/runner";
  std::filesystem::create_directories(log_dir);
  {
    std::ofstream out(log_dir + "/c.log");
    out << "epoch 1\nepoch 2\n";
  }
  auto logs = client_->Logs("default", "runner");
  ASSERT_TRUE(logs.ok()) << logs.status();
  EXPECT_EQ(*logs, "epoch 1\nepoch 2\n");
  auto bad = client_->Logs("default", "runner", "nope");
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_TRUE(absl::IsNotFound(client_->Logs("default", "absent").status()));

  // `kubectl logs -f`: lines as they are written, until the caller has enough.
  Request follow;
  follow.method = "GET";
  follow.path = Pods().Path("default", "runner", "log");
  follow.query = {{"follow", "true"}};
  std::vector<std::string> lines;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::this_thread::sleep_for(300ms);
    std::ofstream out(log_dir + "/c.log", std::ios::app);
    out << "epoch 3\n";
  });
  std::thread stopper([&] {
    std::this_thread::sleep_for(10s);
    stop = true;
  });
  auto streamed = transport_->Stream(
      follow,
      [&](std::string_view line) {
        lines.emplace_back(line);
        return lines.size() < 3;
      },
      stop);
  stop = true;
  writer.join();
  stopper.join();
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(streamed->status, 200);
  EXPECT_EQ(lines, (std::vector<std::string>{"epoch 1", "epoch 2", "epoch 3"}));
}

TEST_P(ClientTest, ManyThreadsShareOneClient) {
  constexpr int kThreads = 6, kEach = 20;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (!client_->Create(Pods(), "default", PodObject(fmt::format("t{}-{}", t, i))).ok()) {
          ++failures;
        }
        if (!client_->Get(Pods(), "default", fmt::format("t{}-{}", t, i)).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto all = client_->List(Pods(), "default");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->items.size(), size_t{kThreads * kEach});
}

// Records what an informer's handlers see.
struct Recorder {
  std::mutex mu;
  std::vector<std::string> log;  // "add x", "update x", "delete x"
  std::map<std::string, int> adds;
  std::map<std::string, int> deletes;

  InformerHandlers Handlers(std::function<void(const json::object&)> on_update_hook = {}) {
    InformerHandlers h;
    h.on_add = [this](const json::object& o) {
      std::lock_guard lock(mu);
      log.push_back("add " + Name(o));
      ++adds[Name(o)];
    };
    h.on_update = [this, on_update_hook](const json::object& old_obj, const json::object& o) {
      EXPECT_EQ(Name(old_obj), Name(o));
      {
        std::lock_guard lock(mu);
        log.push_back("update " + Name(o));
      }
      if (on_update_hook) on_update_hook(o);
    };
    h.on_delete = [this](const json::object& o) {
      std::lock_guard lock(mu);
      log.push_back("delete " + Name(o));
      ++deletes[Name(o)];
    };
    return h;
  }
  std::vector<std::string> Log() {
    std::lock_guard lock(mu);
    return log;
  }
};

template <class Pred>
bool Eventually(Pred pred, std::chrono::milliseconds timeout = 20s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

TEST_P(ClientTest, InformerSeesAddsUpdatesDeletes) {
  MustCreate(PodObject("x"));
  MustCreate(PodObject("y"));
  Recorder rec;
  Informer informer(*client_, Pods(), "default");
  informer.AddHandlers(rec.Handlers());
  ASSERT_TRUE(informer.Start().ok());
  ASSERT_TRUE(informer.WaitForSync(10s));
  EXPECT_EQ(rec.Log(), (std::vector<std::string>{"add x", "add y"}));
  EXPECT_TRUE(informer.Get("default", "x").has_value());
  EXPECT_FALSE(informer.Get("default", "zzz").has_value());

  MustCreate(PodObject("z"));
  ASSERT_TRUE(client_
                  ->Patch(Pods(), "default", "x", PatchType::kMerge,
                          R"({"metadata":{"labels":{"v":"2"}}})")
                  .ok());
  ASSERT_TRUE(client_->Delete(Pods(), "default", "y", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(Eventually([&] { return rec.Log().size() >= 5; }));
  EXPECT_EQ(rec.Log(),
            (std::vector<std::string>{"add x", "add y", "add z", "update x", "delete y"}));
  auto cached = informer.List();
  ASSERT_EQ(cached.size(), 2u);
  EXPECT_EQ(Name(cached[0]), "x");
  EXPECT_EQ(Label(cached[0], "v"), "2");
  EXPECT_EQ(Name(cached[1]), "z");
  // The last event applied was y's delete, after x's update.
  EXPECT_GT(std::stoll(informer.LastResourceVersion()),
            std::stoll(MetaStr(cached[0], "resourceVersion")));
  informer.Stop();
  informer.Stop();  // idempotent
}

// on_upsert hands a keeper the cached state itself (what the node agent keeps of its pods), for
// every add and update and never for a delete.
TEST_P(ClientTest, InformerUpsertHandsOverTheCachedStateOnAddAndUpdate) {
  MustCreate(PodObject("x"));
  std::mutex mu;
  std::vector<std::shared_ptr<const json::object>> kept;
  Informer informer(*client_, Pods(), "default");
  InformerHandlers h;
  h.on_upsert = [&](const std::shared_ptr<const json::object>& o) {
    std::lock_guard lock(mu);
    kept.push_back(o);
  };
  informer.AddHandlers(std::move(h));
  ASSERT_TRUE(informer.Start().ok());
  ASSERT_TRUE(informer.WaitForSync(10s));
  auto count = [&] {
    std::lock_guard lock(mu);
    return kept.size();
  };
  ASSERT_EQ(count(), 1u);
  ASSERT_TRUE(client_
                  ->Patch(Pods(), "default", "x", PatchType::kMerge,
                          R"({"metadata":{"labels":{"v":"2"}}})")
                  .ok());
  ASSERT_TRUE(Eventually([&] { return count() == 2; }));
  ASSERT_TRUE(client_->Delete(Pods(), "default", "x", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(Eventually([&] { return informer.List().empty(); }));
  informer.Stop();
  std::lock_guard lock(mu);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(Name(*kept[0]), "x");
  EXPECT_EQ(Label(*kept[0], "v"), "");
  // What was handed over is the state as it was then, unchanged by the later update.
  EXPECT_EQ(Label(*kept[1], "v"), "2");
}

TEST_P(ClientTest, InformerRelistsAfterItsVersionExpires) {
  MustCreate(PodObject("x"));
  MustCreate(PodObject("y"));
  MustCreate(PodObject("gate"));
  Recorder rec;
  // The handler of gate's update holds the informer's thread: it stops reading its watch while
  // the server's history (32 events) moves on past it.
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> gate_once{false};
  Informer informer(*client_, Pods(), "default");
  informer.AddHandlers(rec.Handlers([&](const json::object& o) {
    if (Name(o) == "gate" && !gate_once.exchange(true)) {
      entered.set_value();
      released.wait();
    }
  }));
  ASSERT_TRUE(informer.Start().ok());
  ASSERT_TRUE(informer.WaitForSync(10s));
  const int lists_before = transport_->lists.load();

  ASSERT_TRUE(client_
                  ->Patch(Pods(), "default", "gate", PatchType::kMerge,
                          R"({"metadata":{"labels":{"closed":"true"}}})")
                  .ok());
  ASSERT_EQ(entered.get_future().wait_for(10s), std::future_status::ready);
  // Enough bytes that an HTTP server blocks writing to the informer's unread socket, and more
  // events than the history holds.
  const std::string ballast(48 * 1024, 'b');
  constexpr int kBulk = 150;
  for (int i = 0; i < kBulk; ++i) {
    json::object pod = PodObject(fmt::format("bulk-{:03}", i));
    pod["metadata"].as_object()["annotations"] = json::object{{"ballast", ballast}};
    MustCreate(std::move(pod));
  }
  ASSERT_TRUE(client_
                  ->Patch(Pods(), "default", "x", PatchType::kMerge,
                          R"({"metadata":{"labels":{"v":"2"}}})")
                  .ok());
  ASSERT_TRUE(client_->Delete(Pods(), "default", "y", {.grace_period_seconds = 0}).ok());
  release.set_value();

  ASSERT_TRUE(Eventually([&] {
    auto x = informer.Get("default", "x");
    return informer.List().size() == kBulk + 2 && x && Label(*x, "v") == "2" &&
           !informer.Get("default", "y");
  })) << informer.List().size();
  EXPECT_GT(transport_->lists.load(), lists_before) << "the informer did not relist";
  // Handlers run after the cache is updated: once the thread has ended, every handler call for
  // the state seen above has been made.
  informer.Stop();
  std::lock_guard lock(rec.mu);
  for (int i = 0; i < kBulk; ++i) {
    EXPECT_EQ(rec.adds[fmt::format("bulk-{:03}", i)], 1) << i;
  }
  EXPECT_EQ(rec.deletes["y"], 1);
  EXPECT_EQ(rec.adds["x"], 1);
  EXPECT_EQ(rec.deletes["x"], 0);
}

INSTANTIATE_TEST_SUITE_P(Transports, ClientTest, ::testing::Values(Via::kInProcess, Via::kHttp),
                         [](const ::testing::TestParamInfo<Via>& info) {
                           return info.param == Via::kInProcess ? "InProcess" : "Http";
                         });

// --- HTTPS, bearer token, kubeconfig -----------------------------------------------------------

TEST(HttpsTest, TokenAndTlsFromTheServersKubeconfig) {
  const std::string dir = TempDir();
  apiserver::ApiServerOptions options;
  options.data_dir = dir;
  options.listen = "0.0.0.0:0";  // beyond loopback: TLS and a token
  options.threads = 2;
  auto server = apiserver::ApiServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_EQ((*server)->url().substr(0, 8), "https://");

  auto config = LoadKubeconfig((*server)->kubeconfig_path());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, (*server)->url());
  EXPECT_FALSE(config->token.empty());
  EXPECT_NE(config->ca_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_EQ(config->default_namespace, "default");
  {
    auto transport = MakeHttpTransport(*config);
    ASSERT_TRUE(transport.ok()) << transport.status();
    Client client(*transport);
    auto namespaces = client.List(Namespaces(), "");
    ASSERT_TRUE(namespaces.ok()) << namespaces.status();
    std::set<std::string> names;
    for (const auto& ns : namespaces->items) names.insert(Name(ns));
    EXPECT_TRUE(names.contains("default"));
    EXPECT_TRUE(names.contains("kube-system"));

    // A watch streams over TLS too.
    std::atomic<bool> stop{false};
    std::string added;
    std::thread creator([&] {
      std::this_thread::sleep_for(200ms);
      EXPECT_TRUE(client.Create(Pods(), "default", PodObject("tls-pod")).ok());
    });
    absl::Status watched = client.Watch(
        Pods(), "default", namespaces->resource_version, {},
        [&](const WatchEvent& e) {
          if (e.type != WatchEventType::kAdded) return true;
          added = Name(*e.object);
          return false;
        },
        stop);
    creator.join();
    EXPECT_TRUE(watched.ok()) << watched;
    EXPECT_EQ(added, "tls-pod");
  }

  // The token read from a file (kubeconfig tokenFile).
  HttpTransportConfig token_file = *config;
  token_file.token.clear();
  token_file.token_file = dir + "/token";
  EXPECT_TRUE(Client(*MakeHttpTransport(token_file)).List(Pods(), "default").ok());
  token_file.token_file = dir + "/absent-token";
  auto no_file = Client(*MakeHttpTransport(token_file)).List(Pods(), "default");
  EXPECT_TRUE(absl::IsUnavailable(no_file.status())) << no_file.status();

  // Without the token: 401.
  HttpTransportConfig no_token = *config;
  no_token.token.clear();
  auto anonymous = Client(*MakeHttpTransport(no_token)).List(Pods(), "default");
  EXPECT_TRUE(absl::IsPermissionDenied(anonymous.status())) << anonymous.status();

  // Without the CA the server's certificate is not trusted; skipping verification works.
  HttpTransportConfig no_ca = *config;
  no_ca.ca_pem.clear();
  auto untrusted = Client(*MakeHttpTransport(no_ca)).List(Pods(), "default");
  EXPECT_TRUE(absl::IsUnavailable(untrusted.status())) << untrusted.status();
  no_ca.insecure_skip_tls_verify = true;
  EXPECT_TRUE(Client(*MakeHttpTransport(no_ca)).List(Pods(), "default").ok());

  // The certificate names 127.0.0.1 and localhost, not other names.
  HttpTransportConfig wrong_name = *config;
  wrong_name.tls_server_name = "not-the-server.example";
  auto mismatch = Client(*MakeHttpTransport(wrong_name)).List(Pods(), "default");
  EXPECT_TRUE(absl::IsUnavailable(mismatch.status())) << mismatch.status();

  (*server)->Stop();
  server->reset();
  std::filesystem::remove_all(dir);
}

TEST(HttpTransportTest, TransportFailuresAreUnavailable) {
  // A port nothing listens on: bind one, note it, close it.
  const std::string dir = TempDir();
  apiserver::ApiServerOptions options;
  options.data_dir = dir;
  options.listen = "127.0.0.1:0";
  options.insecure_http = true;  // a transport from the URL alone
  auto server = apiserver::ApiServer::Start(options);
  ASSERT_TRUE(server.ok());
  const std::string url = (*server)->url();
  auto transport = MakeHttpTransport({.server = url});
  ASSERT_TRUE(transport.ok());
  Client client(*transport);
  ASSERT_TRUE(client.Get(Namespaces(), "", "default").ok());
  (*server)->Stop();
  server->reset();
  auto refused = client.Get(Namespaces(), "", "default");
  EXPECT_TRUE(absl::IsUnavailable(refused.status())) << refused.status();
  std::filesystem::remove_all(dir);

  EXPECT_TRUE(absl::IsInvalidArgument(MakeHttpTransport({.server = "ftp://x"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(MakeHttpTransport({.server = "http://h:port"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      MakeHttpTransport({.server = "https://h:1", .ca_pem = "not a pem"}).status()));
}

// `muster up` restarted on the same data directory and port: pooled connections to the old
// process are replaced without the caller noticing, and an informer catches up by relisting.
TEST(HttpTransportTest, ClientAndInformerSurviveAServerRestart) {
  const std::string dir = TempDir();
  apiserver::ApiServerOptions options;
  options.data_dir = dir;
  options.listen = "127.0.0.1:0";
  options.threads = 2;
  auto server = apiserver::ApiServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  options.listen = (*server)->listen_address();
  auto config = LoadKubeconfig((*server)->kubeconfig_path());
  ASSERT_TRUE(config.ok());
  auto transport = MakeHttpTransport(*config);
  ASSERT_TRUE(transport.ok());
  Client client(*transport);
  ASSERT_TRUE(client.Create(Pods(), "default", PodObject("x")).ok());
  ASSERT_TRUE(client.Create(Pods(), "default", PodObject("y")).ok());

  Recorder rec;
  Informer informer(client, Pods(), "default");
  informer.AddHandlers(rec.Handlers());
  ASSERT_TRUE(informer.Start().ok());
  ASSERT_TRUE(informer.WaitForSync(10s));

  (*server)->Stop();
  server->reset();
  auto restarted = apiserver::ApiServer::Start(options);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  // The pooled keep-alive connection went with the old process; this request must not fail.
  auto y = client.Get(Pods(), "default", "y");
  EXPECT_TRUE(y.ok()) << y.status();
  ASSERT_TRUE(client.Create(Pods(), "default", PodObject("z")).ok());
  ASSERT_TRUE(client.Delete(Pods(), "default", "y", {.grace_period_seconds = 0}).ok());

  EXPECT_TRUE(Eventually([&] {
    auto items = informer.List();
    return items.size() == 2 && Name(items[0]) == "x" && Name(items[1]) == "z";
  }));
  informer.Stop();
  std::lock_guard lock(rec.mu);
  EXPECT_EQ(rec.adds["z"], 1);
  EXPECT_EQ(rec.deletes["y"], 1);
  EXPECT_EQ(rec.adds["x"], 1);
  (*restarted)->Stop();
  restarted->reset();
  std::filesystem::remove_all(dir);
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

TEST(KubeconfigTest, ReadsContextsFilesAndRefusesWhatItCannotUse) {
  const std::string dir = TempDir();
  WriteFile(dir + "/ca.crt", "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
  WriteFile(dir + "/token", "file-token\n");
  WriteFile(dir + "/config", R"(apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster:
    server: https://10.0.0.5:6443
    certificate-authority: ca.crt
- name: dev
  cluster:
    server: https://dev.example:443
    insecure-skip-tls-verify: true
    tls-server-name: api.dev
users:
- name: alice
  user:
    tokenFile: token
- name: bob
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
- name: carol
  user:
    exec:
      command: aws
contexts:
- name: prod
  context: {cluster: prod, user: alice, namespace: team}
- name: dev
  context: {cluster: dev, user: bob}
- name: cloud
  context: {cluster: prod, user: carol}
- name: broken
  context: {cluster: nowhere, user: alice}
current-context: prod
)");
  auto prod = LoadKubeconfig(dir + "/config");
  ASSERT_TRUE(prod.ok()) << prod.status();
  EXPECT_EQ(prod->server, "https://10.0.0.5:6443");
  EXPECT_EQ(prod->ca_pem, "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(prod->token_file, dir + "/token");
  EXPECT_EQ(prod->default_namespace, "team");
  EXPECT_FALSE(prod->insecure_skip_tls_verify);

  auto dev = LoadKubeconfig(dir + "/config", "dev");
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_EQ(dev->server, "https://dev.example:443");
  EXPECT_TRUE(dev->insecure_skip_tls_verify);
  EXPECT_EQ(dev->tls_server_name, "api.dev");
  EXPECT_EQ(dev->client_cert_pem, "CERT");
  EXPECT_EQ(dev->client_key_pem, "KEY");
  EXPECT_TRUE(dev->token.empty());

  auto cloud = LoadKubeconfig(dir + "/config", "cloud");
  EXPECT_TRUE(absl::IsInvalidArgument(cloud.status()));
  EXPECT_NE(std::string(cloud.status().message()).find("exec"), std::string::npos);
  auto broken = LoadKubeconfig(dir + "/config", "broken");
  EXPECT_TRUE(absl::IsInvalidArgument(broken.status()));
  EXPECT_NE(std::string(broken.status().message()).find("no cluster named \"nowhere\""),
            std::string::npos)
      << broken.status();
  auto missing_context = LoadKubeconfig(dir + "/config", "nope");
  EXPECT_TRUE(absl::IsInvalidArgument(missing_context.status()));
  EXPECT_TRUE(absl::IsNotFound(LoadKubeconfig(dir + "/absent").status()));
  WriteFile(dir + "/bad", "clusters: [\n");
  auto bad = LoadKubeconfig(dir + "/bad");
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_NE(std::string(bad.status().message()).find("line"), std::string::npos) << bad.status();
  std::filesystem::remove_all(dir);
}

// The server answers 401 while the token file holds a stale token; once the kubelet has written
// the new one, the very next request succeeds: a 401 makes the transport read the file again at
// once (and send the request once more), rather than a minute later.
TEST(HttpsTest, ATokenFileIsReadAgainAtOnceWhenTheServerAnswers401) {
  const std::string dir = TempDir();
  apiserver::ApiServerOptions options;
  options.data_dir = dir;
  options.listen = "0.0.0.0:0";  // beyond loopback: a token is required
  options.threads = 2;
  auto server = apiserver::ApiServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto config = LoadKubeconfig((*server)->kubeconfig_path());
  ASSERT_TRUE(config.ok()) << config.status();
  const std::string good_token = config->token;
  ASSERT_FALSE(good_token.empty());
  config->token.clear();
  config->token_file = dir + "/rotated-token";
  WriteFile(config->token_file, "stale-token\n");
  auto transport = MakeHttpTransport(*config);
  ASSERT_TRUE(transport.ok()) << transport.status();
  Client client(*transport);
  auto refused = client.List(Namespaces(), "");
  EXPECT_TRUE(absl::IsPermissionDenied(refused.status())) << refused.status();

  WriteFile(config->token_file, good_token + "\n");
  auto listed = client.List(Namespaces(), "");
  EXPECT_TRUE(listed.ok()) << listed.status();

  (*server)->Stop();
  server->reset();
  std::filesystem::remove_all(dir);
}

// client-go's token bucket: with qps 10 and burst 2, two requests go at once and the next ten one
// every 100 ms.
TEST(HttpTransportTest, QpsAndBurstLimitTheRequestRate) {
  const std::string dir = TempDir();
  apiserver::ApiServerOptions options;
  options.data_dir = dir;
  options.listen = "127.0.0.1:0";
  options.insecure_http = true;  // a transport from the URL alone
  auto server = apiserver::ApiServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto transport = MakeHttpTransport({.server = (*server)->url(), .qps = 10, .burst = 2});
  ASSERT_TRUE(transport.ok()) << transport.status();
  Client client(*transport);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(client.Get(Namespaces(), "", "default").ok());
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, 900ms) << std::chrono::duration<double>(elapsed).count() << " s";
  (*server)->Stop();
  server->reset();
  std::filesystem::remove_all(dir);
}

// --- In-cluster configuration ------------------------------------------------------------------

// Sets or unsets environment variables for one test and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
  }
  // nullptr unsets.
  void Set(const std::string& name, const char* value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value != nullptr) {
      ::setenv(name.c_str(), value, 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

constexpr char kCaPem[] = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";

// A service account directory as the kubelet mounts one.
std::string ServiceAccountDir() {
  const std::string dir = TempDir();
  WriteFile(dir + "/ca.crt", kCaPem);
  WriteFile(dir + "/token", "sa-token\n");
  WriteFile(dir + "/namespace", "team-a\n");
  return dir;
}

TEST(InClusterConfigTest, ReadsTheServiceAccountAndTheServiceEnvironment) {
  const std::string dir = ServiceAccountDir();
  ScopedEnv env;
  env.Set("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  env.Set("KUBERNETES_SERVICE_PORT", "443");
  env.Set("POD_NAMESPACE", nullptr);
  auto config = InClusterConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->ca_pem, kCaPem);
  EXPECT_EQ(config->token_file, dir + "/token");  // a file, so that a rotated token is read
  EXPECT_TRUE(config->token.empty());
  EXPECT_EQ(config->default_namespace, "team-a");
  EXPECT_FALSE(config->insecure_skip_tls_verify);

  env.Set("POD_NAMESPACE", "from-downward-api");
  EXPECT_EQ(InClusterConfig(dir)->default_namespace, "from-downward-api");
  env.Set("POD_NAMESPACE", nullptr);
  std::filesystem::remove(dir + "/namespace");
  EXPECT_EQ(InClusterConfig(dir)->default_namespace, "default");

  env.Set("KUBERNETES_SERVICE_HOST", "fd00:10:96::1");
  EXPECT_EQ(InClusterConfig(dir)->server, "https://[fd00:10:96::1]:443");
  std::filesystem::remove_all(dir);
}

TEST(InClusterConfigTest, SaysWhatIsMissing) {
  const std::string dir = ServiceAccountDir();
  ScopedEnv env;
  env.Set("KUBERNETES_SERVICE_HOST", nullptr);
  env.Set("KUBERNETES_SERVICE_PORT", "443");
  auto outside = InClusterConfig(dir);
  EXPECT_TRUE(absl::IsNotFound(outside.status())) << outside.status();
  EXPECT_EQ(outside.status().message(),
            "not running in a cluster: KUBERNETES_SERVICE_HOST is not set");

  env.Set("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  env.Set("KUBERNETES_SERVICE_PORT", nullptr);
  auto no_port = InClusterConfig(dir);
  EXPECT_TRUE(absl::IsNotFound(no_port.status())) << no_port.status();
  EXPECT_NE(no_port.status().message().find("KUBERNETES_SERVICE_PORT is not set"),
            std::string::npos);
  env.Set("KUBERNETES_SERVICE_PORT", "https");
  EXPECT_TRUE(absl::IsInvalidArgument(InClusterConfig(dir).status()));
  env.Set("KUBERNETES_SERVICE_PORT", "443");

  WriteFile(dir + "/token", "\n");
  auto empty = InClusterConfig(dir);
  EXPECT_TRUE(absl::IsFailedPrecondition(empty.status())) << empty.status();
  EXPECT_EQ(empty.status().message(), dir + "/token is empty");
  std::filesystem::remove(dir + "/token");
  auto no_token = InClusterConfig(dir);
  EXPECT_TRUE(absl::IsFailedPrecondition(no_token.status())) << no_token.status();
  EXPECT_EQ(no_token.status().message(),
            "cannot read " + dir + "/token: No such file or directory");
  std::filesystem::remove(dir + "/ca.crt");
  auto no_ca = InClusterConfig(dir);
  EXPECT_EQ(no_ca.status().message(),
            "cannot read " + dir + "/ca.crt: No such file or directory");
  std::filesystem::remove_all(dir);
}

// A pod's view of muster's own HTTPS server: the service environment names it, the service
// account holds its CA and token, and the configuration connects.
TEST(InClusterConfigTest, ConnectsWithTheServiceAccount) {
  const std::string data = TempDir();
  apiserver::ApiServerOptions options;
  options.data_dir = data;
  options.listen = "0.0.0.0:0";
  options.threads = 2;
  auto server = apiserver::ApiServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto kubeconfig = LoadKubeconfig((*server)->kubeconfig_path());
  ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
  const std::string url = (*server)->url();
  const std::string port = url.substr(url.rfind(':') + 1);

  const std::string dir = TempDir();
  WriteFile(dir + "/ca.crt", kubeconfig->ca_pem);
  WriteFile(dir + "/token", kubeconfig->token + "\n");
  WriteFile(dir + "/namespace", "default\n");
  ScopedEnv env;
  env.Set("KUBERNETES_SERVICE_HOST", "127.0.0.1");
  env.Set("KUBERNETES_SERVICE_PORT", port.c_str());
  auto config = InClusterConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status();
  auto transport = MakeHttpTransport(*config);
  ASSERT_TRUE(transport.ok()) << transport.status();
  auto listed = Client(*transport).List(Namespaces(), "");
  EXPECT_TRUE(listed.ok()) << listed.status();

  (*server)->Stop();
  server->reset();
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(data);
}

}  // namespace
}  // namespace muster::client
