// The REST handlers against a real store in a temporary directory, without sockets: requests
// in, Status codes, messages and stored state out. Watches run their stream function against a
// sink that records the chunks.

#include "apiserver/handlers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver {
namespace {

using ::testing::HasSubstr;

namespace json = boost::json;

class RecordingSink : public StreamSink {
 public:
  bool Write(std::string_view data) override {
    text.append(data);
    return true;
  }
  bool Cancelled() override { return cancel.load(); }
  std::string text;
  std::atomic<bool> cancel{false};
};

class HandlersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/muster-handlers-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    store::StoreOptions options;
    options.history = 64;
    auto store = store::Store::Open(dir_ + "/store.db", options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    HandlerOptions h;
    h.data_dir = dir_;
    h.now_unix = [] { return int64_t{1700000000}; };
    handlers_ = std::make_unique<Handlers>(*store_, h);
    ASSERT_TRUE(handlers_->Bootstrap().ok());
  }
  void TearDown() override {
    handlers_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  HttpResponse Call(std::string method, std::string path, std::string body = "",
                    std::string content_type = "application/json",
                    std::vector<std::pair<std::string, std::string>> query = {},
                    std::string accept = "application/json") {
    HttpRequest req;
    req.method = std::move(method);
    req.path = std::move(path);
    req.body = std::move(body);
    req.content_type = std::move(content_type);
    req.query = std::move(query);
    req.accept = std::move(accept);
    return handlers_->Handle(req);
  }

  static json::value Body(const HttpResponse& r) { return json::parse(r.body); }

  static std::string PodJson(std::string_view name, std::string_view labels = "{}") {
    return fmt::format(R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}","labels":{}}},)"
                       R"("spec":{{"containers":[{{"name":"c","image":"busybox"}}]}}}})",
                       name, labels);
  }

  std::string dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Handlers> handlers_;
};

constexpr char kPods[] = "/api/v1/namespaces/default/pods";
constexpr char kJobs[] = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs";
constexpr char kQueues[] = "/apis/scheduling.volcano.sh/v1beta1/queues";

TEST_F(HandlersTest, CreateStampsMetadata) {
  auto r = Call("POST", kPods, PodJson("p1"));
  ASSERT_EQ(r.status, 201) << r.body;
  auto meta = Body(r).at("metadata");
  EXPECT_EQ(meta.at("namespace").as_string(), "default");
  EXPECT_EQ(meta.at("uid").as_string().size(), 36u);
  EXPECT_EQ(meta.at("creationTimestamp").as_string(), "2023-11-14T22:13:20Z");
  EXPECT_EQ(meta.at("generation").as_int64(), 1);
  EXPECT_FALSE(meta.at("resourceVersion").as_string().empty());
  EXPECT_EQ(Body(r).at("status").at("phase").as_string(), "Pending");

  auto again = Call("POST", kPods, PodJson("p1"));
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(Body(again).at("reason").as_string(), "AlreadyExists");
  EXPECT_EQ(Body(again).at("message").as_string(), "pods \"p1\" already exists");
}

TEST_F(HandlersTest, CreateRefusals) {
  auto missing_ns = Call("POST", "/api/v1/namespaces/nope/pods", PodJson("p"));
  EXPECT_EQ(missing_ns.status, 404);
  EXPECT_EQ(Body(missing_ns).at("message").as_string(), "namespaces \"nope\" not found");

  std::string other_ns = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",)"
                         R"("namespace":"kube-system"},"spec":{"containers":[{"name":"c",)"
                         R"("image":"i"}]}})";
  EXPECT_EQ(Call("POST", kPods, other_ns).status, 400);
  EXPECT_EQ(Call("POST", kPods, "{not json").status, 400);
  EXPECT_EQ(Call("POST", kPods, "[1,2]").status, 400);
  EXPECT_EQ(Call("POST", kPods, PodJson("p"), "text/plain").status, 415);

  auto strict = Call("POST", kPods,
                     R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"s"},"spec":{)"
                     R"("containers":[{"name":"c","image":"i","imagex":"j"}]}})",
                     "application/json", {{"fieldValidation", "Strict"}});
  EXPECT_EQ(strict.status, 422) << strict.body;
  EXPECT_NE(strict.body.find("unknown field \\\"spec.containers[0].imagex\\\""), std::string::npos)
      << strict.body;
}

TEST_F(HandlersTest, CreateFromYamlAndGenerateName) {
  auto r = Call("POST", kPods,
                "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: web-\nspec:\n"
                "  containers:\n  - name: c\n    image: nginx\n",
                "application/yaml");
  ASSERT_EQ(r.status, 201) << r.body;
  std::string name(Body(r).at("metadata").at("name").as_string());
  ASSERT_EQ(name.size(), 9u);
  EXPECT_EQ(name.substr(0, 4), "web-");
  for (char c : name.substr(4)) {
    EXPECT_NE(std::string_view("bcdfghjklmnpqrstvwxz2456789").find(c), std::string::npos);
  }
}

// handlers_fuzz: a YAML body with an overlong UTF-8 form ("\xc0\xb5") was stored, and every
// later response carrying the object was JSON that does not parse.
TEST_F(HandlersTest, YamlBodyWithAnOverlongUtf8FormIs400AndStoresNothing) {
  auto r = Call("POST", "/api/v1/namespaces/default/configmaps",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
                "data:\n  k\xc0\xb5: v\n",
                "application/yaml");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_THAT(r.body, HasSubstr("line 6: invalid UTF-8"));
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/default/configmaps/c").status, 404);
}

// Found by fuzz/handlers_fuzz: an apply patch whose YAML key holds a NUL before "N" was stored
// with a raw 0x85 byte (yaml-cpp's decoding), and every response carrying it did not parse.
TEST_F(HandlersTest, YamlThatDecodesToInvalidUtf8Is400AndStoresNothing) {
  const std::string body("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: \"a\\Nb\"\n");
  auto r = Call("POST", "/api/v1/namespaces/default/configmaps", body, "application/yaml");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_THAT(r.body, HasSubstr("not valid UTF-8"));
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/default/configmaps/c").status, 404);
}

TEST_F(HandlersTest, DryRunStoresNothing) {
  auto r = Call("POST", kPods, PodJson("dry"), "application/json", {{"dryRun", "All"}});
  EXPECT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Call("GET", std::string(kPods) + "/dry").status, 404);
}

TEST_F(HandlersTest, UpdateOptimisticConcurrencyAndGeneration) {
  auto created = Call("POST", kQueues,
                      R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",)"
                      R"("metadata":{"name":"q1"},"spec":{"weight":1}})");
  ASSERT_EQ(created.status, 201) << created.body;
  json::value q = Body(created);
  std::string rv(q.at("metadata").at("resourceVersion").as_string());

  q.as_object()["spec"].as_object()["weight"] = 2;
  auto updated = Call("PUT", std::string(kQueues) + "/q1", json::serialize(q));
  ASSERT_EQ(updated.status, 200) << updated.body;
  EXPECT_EQ(Body(updated).at("metadata").at("generation").as_int64(), 2);

  // The same body again carries the old resourceVersion.
  auto stale = Call("PUT", std::string(kQueues) + "/q1", json::serialize(q));
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(Body(stale).at("message").as_string(),
            "Operation cannot be fulfilled on queues.scheduling.volcano.sh \"q1\": the object has "
            "been modified; please apply your changes to the latest version and try again");

  // Custom resources need a resourceVersion on update.
  q.as_object()["metadata"].as_object().erase("resourceVersion");
  EXPECT_EQ(Call("PUT", std::string(kQueues) + "/q1", json::serialize(q)).status, 422);

  // A no-op update stores nothing new.
  json::value live = Body(Call("GET", std::string(kQueues) + "/q1"));
  auto noop = Call("PUT", std::string(kQueues) + "/q1", json::serialize(live));
  ASSERT_EQ(noop.status, 200);
  EXPECT_EQ(Body(noop).at("metadata").at("resourceVersion"),
            live.at("metadata").at("resourceVersion"));
}

TEST_F(HandlersTest, StatusSubresourceChangesOnlyStatus) {
  ASSERT_EQ(Call("POST", kPods, PodJson("p")).status, 201);
  json::value pod = Body(Call("GET", std::string(kPods) + "/p"));
  pod.as_object()["status"].as_object()["phase"] = "Running";
  pod.as_object()["spec"].as_object()["nodeName"] = "sneaky";
  auto r = Call("PUT", std::string(kPods) + "/p/status", json::serialize(pod));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r).at("status").at("phase").as_string(), "Running");
  EXPECT_FALSE(Body(r).at("spec").as_object().contains("nodeName"));

  // And the main resource ignores .status.
  json::value again = Body(r);
  again.as_object()["status"].as_object()["phase"] = "Failed";
  auto main = Call("PUT", std::string(kPods) + "/p", json::serialize(again));
  ASSERT_EQ(main.status, 200) << main.body;
  EXPECT_EQ(Body(main).at("status").at("phase").as_string(), "Running");
}

TEST_F(HandlersTest, PatchTypes) {
  ASSERT_EQ(Call("POST", kPods, PodJson("p")).status, 201);
  auto merge = Call("PATCH", std::string(kPods) + "/p", R"({"metadata":{"labels":{"a":"1"}}})",
                    "application/merge-patch+json");
  ASSERT_EQ(merge.status, 200) << merge.body;
  auto json_patch = Call("PATCH", std::string(kPods) + "/p",
                         R"([{"op":"add","path":"/metadata/labels/b","value":"2"}])",
                         "application/json-patch+json");
  ASSERT_EQ(json_patch.status, 200) << json_patch.body;
  auto strategic = Call("PATCH", std::string(kPods) + "/p",
                        R"({"spec":{"containers":[{"name":"c","image":"busybox:2"}]}})",
                        "application/strategic-merge-patch+json");
  ASSERT_EQ(strategic.status, 200) << strategic.body;
  json::value pod = Body(strategic);
  EXPECT_EQ(pod.at("metadata").at("labels").at("a").as_string(), "1");
  EXPECT_EQ(pod.at("metadata").at("labels").at("b").as_string(), "2");
  EXPECT_EQ(pod.at("spec").at("containers").at(0).at("image").as_string(), "busybox:2");
  EXPECT_EQ(Call("PATCH", std::string(kPods) + "/p", "{}", "text/plain").status, 415);
  EXPECT_EQ(
      Call("PATCH", std::string(kPods) + "/missing", "{}", "application/merge-patch+json").status,
      404);
}

// kube-apiserver cannot store an object past etcd's request limit (1.5 MiB by default); neither
// can muster's store. A write that would grow one past it is a 413 that changes nothing, where it
// used to be stored, and each patch that doubled a field made every later write slower.
TEST_F(HandlersTest, AWriteThatGrowsAnObjectPastTheLimitIs413AndChangesNothing) {
  const std::string cms = "/api/v1/namespaces/default/configmaps";
  ASSERT_EQ(Call("POST", cms, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}})")
                .status,
            201);
  const std::string mib(1 << 20, 'x');
  auto first = Call("PATCH", cms + "/c", R"({"data":{"a":")" + mib + R"("}})",
                    "application/merge-patch+json");
  ASSERT_EQ(first.status, 200) << first.body.substr(0, 300);
  auto second = Call("PATCH", cms + "/c", R"({"data":{"b":")" + mib + R"("}})",
                     "application/merge-patch+json");
  ASSERT_EQ(second.status, 413) << second.body.substr(0, 300);
  EXPECT_EQ(Body(second).at("reason").as_string(), "RequestEntityTooLarge");
  EXPECT_THAT(std::string(Body(second).at("message").as_string()),
              HasSubstr("more than the limit of 1572864"));
  json::value live = Body(Call("GET", cms + "/c"));
  EXPECT_FALSE(live.at("data").as_object().contains("b"));
  EXPECT_EQ(live.at("metadata").at("resourceVersion"),
            Body(first).at("metadata").at("resourceVersion"));
}

TEST_F(HandlersTest, StrategicMergeOnCustomResourceIs415AndApplyCreates) {
  std::string job = R"({"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",)"
                    R"("metadata":{"name":"j"},"spec":{"tasks":[{"name":"t","replicas":1,)"
                    R"("template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]}})";
  auto applied = Call("PATCH", std::string(kJobs) + "/j", job, "application/apply-patch+yaml",
                      {{"fieldManager", "kubectl"}});
  ASSERT_EQ(applied.status, 201) << applied.body;
  std::string queue =
      "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
      "metadata: {name: q}\nspec: {weight: 2}\n";
  ASSERT_EQ(
      Call("PATCH", std::string(kQueues) + "/q", queue, "application/apply-patch+yaml").status,
      201);
  auto again = Call("PATCH", std::string(kQueues) + "/q", queue, "application/apply-patch+yaml");
  EXPECT_EQ(again.status, 200) << again.body;
  auto strategic = Call("PATCH", std::string(kJobs) + "/j", R"({"metadata":{"labels":{"a":"b"}}})",
                        "application/strategic-merge-patch+json");
  EXPECT_EQ(strategic.status, 415);
  EXPECT_EQ(Body(strategic).at("reason").as_string(), "UnsupportedMediaType");
}

TEST_F(HandlersTest, BindingAndAlreadyBound) {
  ASSERT_EQ(Call("POST", kPods, PodJson("p")).status, 201);
  std::string binding = R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},)"
                        R"("target":{"kind":"Node","name":"n1"}})";
  auto first = Call("POST", std::string(kPods) + "/p/binding", binding);
  ASSERT_EQ(first.status, 201) << first.body;
  EXPECT_EQ(Body(first).at("status").as_string(), "Success");
  json::value pod = Body(Call("GET", std::string(kPods) + "/p"));
  EXPECT_EQ(pod.at("spec").at("nodeName").as_string(), "n1");
  EXPECT_EQ(pod.at("status").at("conditions").at(0).at("type").as_string(), "PodScheduled");

  auto second = Call("POST", std::string(kPods) + "/p/binding", binding);
  EXPECT_EQ(second.status, 409);
  EXPECT_EQ(Body(second).at("message").as_string(),
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to "
            "node \"n1\"");
}

TEST_F(HandlersTest, ListSelectorsAndPaging) {
  for (int i = 0; i < 5; ++i) {
    std::string labels = i % 2 == 0 ? R"({"parity":"even"})" : R"({"parity":"odd"})";
    ASSERT_EQ(Call("POST", kPods, PodJson(fmt::format("p{}", i), labels)).status, 201);
  }
  auto even = Call("GET", kPods, "", "", {{"labelSelector", "parity=even"}});
  ASSERT_EQ(even.status, 200);
  EXPECT_EQ(Body(even).at("items").as_array().size(), 3u);
  EXPECT_EQ(Body(even).at("kind").as_string(), "PodList");

  auto by_name = Call("GET", "/api/v1/pods", "", "", {{"fieldSelector", "metadata.name=p3"}});
  ASSERT_EQ(Body(by_name).at("items").as_array().size(), 1u);
  auto bad = Call("GET", kPods, "", "", {{"fieldSelector", "spec.foo=x"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(Body(bad).at("message").as_string(), "field label not supported: spec.foo");

  std::vector<std::string> names;
  std::string token;
  do {
    std::vector<std::pair<std::string, std::string>> q = {{"limit", "2"}};
    if (!token.empty()) q.emplace_back("continue", token);
    auto page = Call("GET", kPods, "", "", q);
    ASSERT_EQ(page.status, 200) << page.body;
    json::value v = Body(page);
    for (const auto& item : v.at("items").as_array()) {
      names.emplace_back(item.at("metadata").at("name").as_string());
    }
    const json::value* c = v.at("metadata").as_object().if_contains("continue");
    token = c != nullptr ? std::string(c->as_string()) : "";
  } while (!token.empty());
  EXPECT_EQ(names, (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4"}));

  EXPECT_EQ(Call("GET", kPods, "", "", {{"continue", "garbage!"}}).status, 400);
}

TEST_F(HandlersTest, ExpiredContinueTokenIs410) {
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(Call("POST", kPods, PodJson(fmt::format("p{}", i))).status, 201);
  auto page = Call("GET", kPods, "", "", {{"limit", "1"}});
  std::string token(Body(page).at("metadata").at("continue").as_string());
  for (int i = 0; i < 100; ++i) {  // past the 64 events of history
    ASSERT_EQ(Call("PATCH", std::string(kPods) + "/p0",
                   fmt::format(R"({{"metadata":{{"labels":{{"n":"{}"}}}}}})", i),
                   "application/merge-patch+json")
                  .status,
              200);
  }
  auto expired = Call("GET", kPods, "", "", {{"limit", "1"}, {"continue", token}});
  EXPECT_EQ(expired.status, 410);
  EXPECT_EQ(Body(expired).at("reason").as_string(), "Expired");
}

TEST_F(HandlersTest, TableForGet) {
  ASSERT_EQ(Call("POST", kPods, PodJson("p")).status, 201);
  auto r = Call("GET", std::string(kPods) + "/p", "", "", {},
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
  ASSERT_EQ(r.status, 200);
  json::value table = Body(r);
  EXPECT_EQ(table.at("kind").as_string(), "Table");
  EXPECT_EQ(table.at("rows").as_array().size(), 1u);
  EXPECT_EQ(table.at("rows").at(0).at("object").at("metadata").at("name").as_string(), "p");
}

TEST(IsLongRunningTest, PicksWatchesAndStreamingSubresourcesAsKubeApiserverDoes) {
  auto req = [](std::string method, std::string path,
                std::vector<std::pair<std::string, std::string>> query = {}) {
    HttpRequest r;
    r.method = std::move(method);
    r.path = std::move(path);
    r.query = std::move(query);
    return r;
  };
  EXPECT_TRUE(IsLongRunning(req("GET", "/api/v1/pods", {{"watch", "true"}})));
  EXPECT_TRUE(IsLongRunning(req("GET", "/api/v1/namespaces/default/pods", {{"watch", "1"}})));
  EXPECT_TRUE(IsLongRunning(req("GET", "/api/v1/namespaces", {{"watch", "true"}})));
  EXPECT_TRUE(
      IsLongRunning(req("GET", "/apis/batch.volcano.sh/v1alpha1/jobs", {{"watch", "true"}})));
  EXPECT_TRUE(IsLongRunning(req("GET", "/api/v1/watch/pods")));
  EXPECT_TRUE(IsLongRunning(req("GET", "/api/v1/namespaces/default/pods/p/log")));
  EXPECT_TRUE(IsLongRunning(req("POST", "/api/v1/namespaces/default/pods/p/exec")));
  EXPECT_TRUE(IsLongRunning(req("GET", "/api/v1/namespaces/default/pods/p/portforward")));

  EXPECT_FALSE(IsLongRunning(req("GET", "/api/v1/pods")));
  EXPECT_FALSE(IsLongRunning(req("GET", "/api/v1/pods", {{"watch", "false"}})));
  EXPECT_FALSE(IsLongRunning(req("GET", "/api/v1/namespaces/default/pods/p", {{"watch", "1"}})));
  EXPECT_FALSE(IsLongRunning(req("POST", "/api/v1/namespaces/default/pods", {{"watch", "1"}})));
  EXPECT_FALSE(IsLongRunning(req("PUT", "/api/v1/namespaces/default/pods/p/status")));
  EXPECT_FALSE(IsLongRunning(req("PUT", "/api/v1/namespaces/ns/finalize")));
  EXPECT_FALSE(IsLongRunning(req("GET", "/version")));
  EXPECT_FALSE(IsLongRunning(req("GET", "/api")));
}

TEST_F(HandlersTest, WatchSelectorTransitions) {
  ASSERT_EQ(Call("POST", kPods, PodJson("a", R"({"app":"x"})")).status, 201);
  auto w = Call("GET", kPods, "", "",
                {{"watch", "true"}, {"labelSelector", "app=x"}, {"timeoutSeconds", "3"}});
  ASSERT_TRUE(w.stream);
  RecordingSink sink;
  std::thread run([&] { w.stream(sink); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Stops matching: DELETED; matches again: ADDED; a non-matching pod: nothing.
  ASSERT_EQ(Call("PATCH", std::string(kPods) + "/a", R"({"metadata":{"labels":{"app":"y"}}})",
                 "application/merge-patch+json")
                .status,
            200);
  ASSERT_EQ(Call("PATCH", std::string(kPods) + "/a", R"({"metadata":{"labels":{"app":"x"}}})",
                 "application/merge-patch+json")
                .status,
            200);
  ASSERT_EQ(Call("POST", kPods, PodJson("b", R"({"app":"z"})")).status, 201);
  ASSERT_EQ(Call("DELETE", std::string(kPods) + "/a").status, 200);
  run.join();  // timeoutSeconds ends it

  std::vector<std::string> types;
  size_t pos = 0;
  while (pos < sink.text.size()) {
    size_t nl = sink.text.find('\n', pos);
    json::value e = json::parse(sink.text.substr(pos, nl - pos));
    types.emplace_back(e.at("type").as_string());
    EXPECT_EQ(e.at("object").at("metadata").at("name").as_string(), "a");
    pos = nl + 1;
  }
  EXPECT_EQ(types, (std::vector<std::string>{"ADDED", "DELETED", "ADDED", "DELETED"}));
}

TEST_F(HandlersTest, WatchFromExpiredResourceVersion) {
  ASSERT_EQ(Call("POST", kPods, PodJson("p0")).status, 201);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(Call("PATCH", std::string(kPods) + "/p0",
                   fmt::format(R"({{"metadata":{{"labels":{{"n":"{}"}}}}}})", i),
                   "application/merge-patch+json")
                  .status,
              200);
  }
  auto w = Call("GET", kPods, "", "", {{"watch", "1"}, {"resourceVersion", "2"}});
  ASSERT_TRUE(w.stream);
  RecordingSink sink;
  w.stream(sink);
  json::value e = json::parse(sink.text);
  EXPECT_EQ(e.at("type").as_string(), "ERROR");
  EXPECT_EQ(e.at("object").at("code").as_int64(), 410);
  EXPECT_EQ(e.at("object").at("reason").as_string(), "Expired");
}

TEST_F(HandlersTest, BookmarksAndInitialEventsEnd) {
  HandlerOptions options;
  options.data_dir = dir_;
  options.bookmark_interval = std::chrono::milliseconds(100);
  Handlers handlers(*store_, options);
  ASSERT_EQ(Call("POST", kPods, PodJson("p")).status, 201);
  HttpRequest req;
  req.method = "GET";
  req.path = kPods;
  req.query = {{"watch", "true"},
               {"sendInitialEvents", "true"},
               {"allowWatchBookmarks", "true"},
               {"resourceVersionMatch", "NotOlderThan"},
               {"timeoutSeconds", "1"}};
  auto w = handlers.Handle(req);
  ASSERT_TRUE(w.stream);
  RecordingSink sink;
  w.stream(sink);
  std::vector<json::value> events;
  size_t pos = 0;
  while (pos < sink.text.size()) {
    size_t nl = sink.text.find('\n', pos);
    events.push_back(json::parse(sink.text.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  ASSERT_GE(events.size(), 3u) << sink.text;
  EXPECT_EQ(events[0].at("type").as_string(), "ADDED");
  EXPECT_EQ(events[1].at("type").as_string(), "BOOKMARK");
  EXPECT_EQ(events[1].at("object").at("metadata").at("annotations").at("k8s.io/initial-events-end"),
            "true");
  EXPECT_EQ(events[2].at("type").as_string(), "BOOKMARK");
  EXPECT_EQ(events[2].at("object").at("kind").as_string(), "Pod");
}

TEST_F(HandlersTest, DeleteAndDiscovery) {
  ASSERT_EQ(Call("POST", kPods, PodJson("p")).status, 201);
  auto deleted = Call("DELETE", std::string(kPods) + "/p", R"({"propagationPolicy":"Background"})");
  EXPECT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(Call("GET", std::string(kPods) + "/p").status, 404);
  EXPECT_EQ(Call("DELETE", std::string(kPods) + "/p").status, 404);

  auto version = Call("GET", "/version");
  EXPECT_EQ(Body(version).at("minor").as_string(), "32");
  auto aggregated = Call("GET", "/apis", "", "", {},
                         "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  EXPECT_EQ(aggregated.content_type,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/kube-system/services").status, 200);
  auto unknown = Call("GET", "/api/v1/frobs");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(Body(unknown).at("kind").as_string(), "Status");
}

TEST_F(HandlersTest, ProtobufNamespace) {
  // What `kubectl create namespace team-c` sends (kube-api.md §10).
  std::string body("k8s\0", 4);
  body += std::string("\x0a\x0f\x0a\x02v1\x12\x09Namespace", 17);
  body += std::string("\x12\x0e\x0a\x08\x0a\x06team-c\x12\x00\x1a\x00", 16);
  body += std::string("\x1a\x00\x22\x00", 4);
  auto r = Call("POST", "/api/v1/namespaces", body, "application/vnd.kubernetes.protobuf");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r).at("metadata").at("name").as_string(), "team-c");
  EXPECT_EQ(
      Call("POST", "/api/v1/namespaces", "k8s\0junk", "application/vnd.kubernetes.protobuf").status,
      415);
}

}  // namespace
}  // namespace muster::apiserver
