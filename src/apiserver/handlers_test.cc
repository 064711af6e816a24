// The REST handlers against a real store in a temporary directory, without sockets: requests
// in, Status codes, messages and stored state out. Watches run their stream function against a
// sink that records the chunks.

#include "apiserver/handlers.h"
#include "apiserver/testing/handlers_fixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "apiserver/lifecycle.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "common/container_log.h"
#include "fmt/format.h"
#include "store/sqlite_db.h"

namespace muster::apiserver {
namespace {

using ::testing::ElementsAre;
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

class HandlersTest : public testing::HandlersFixture {
 protected:
  void SetUp() override {
    store_options_.history = 64;
    HandlersFixture::SetUp();
  }
  // Rewrites a stored object's text behind the store's back, as a damaged file or a write from
  // before the store refused non-finite numbers leaves it, and opens the store again.
  void DamageStored(const store::Key& key, const std::string& text) {
    handlers_.reset();
    store_.reset();
    {
      auto db = store::Db::Open(dir_ + "/store.db");
      ASSERT_TRUE(db.ok()) << db.status();
      auto update = (*db)->Prepare(
          "UPDATE objects SET json = ?1 WHERE resource = ?2 AND namespace = ?3 AND name = ?4");
      ASSERT_TRUE(update.ok()) << update.status();
      update->BindText(1, text);
      update->BindText(2, key.resource);
      update->BindText(3, key.ns);
      update->BindText(4, key.name);
      ASSERT_TRUE(update->Run().ok());
    }
    Open();
    std::vector<store::DamagedObject> damaged = store_->Damaged();
    ASSERT_TRUE(std::any_of(damaged.begin(), damaged.end(),
                            [&](const store::DamagedObject& d) { return d.key == key; }));
  }
  static std::string PodJson(std::string_view name, std::string_view labels = "{}") {
    return fmt::format(R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}","labels":{}}},)"
                       R"("spec":{{"containers":[{{"name":"c","image":"busybox"}}]}}}})",
                       name, labels);
  }
};

constexpr char kPods[] = "/api/v1/namespaces/default/pods";
constexpr char kJobs[] = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs";
constexpr char kQueues[] = "/apis/scheduling.volcano.sh/v1beta1/queues";

// Secrets as kube-apiserver keeps them: stringData merged into data as base64 and never stored,
// type Opaque by default, data that is not base64 refused as kube's decoder refuses it, keys as
// for ConfigMaps, and what `immutable` and a type freeze.
TEST_F(HandlersTest, SecretsTakeStringDataAsBase64AndRefuseWhatKubeRefuses) {
  const std::string secrets = "/api/v1/namespaces/default/secrets";
  auto created = Call("POST", secrets,
                      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"token"},)"
                      R"("data":{"a":"b2xk"},"stringData":{"a":"new","user":"ml"}})");
  ASSERT_EQ(created.status, 201) << created.body;
  const json::value secret = Body(Call("GET", secrets + "/token"));
  EXPECT_EQ(secret.at("data"), json::parse(R"({"a":"bmV3","user":"bWw="})"));
  EXPECT_EQ(secret.at("type"), "Opaque");
  EXPECT_FALSE(secret.as_object().contains("stringData"));

  auto bad = Call("POST", secrets,
                  R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad"},)"
                  R"("data":{"k":"no!base64"}})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(Body(bad).at("message"),
            "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at "
            "input byte 2");
  auto key = Call("POST", secrets,
                  R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"k"},)"
                  R"("stringData":{"a/b":"x"}})");
  EXPECT_EQ(key.status, 422);
  EXPECT_THAT(std::string(Body(key).at("message").as_string()),
              HasSubstr("data[a/b]: Invalid value: \"a/b\": a valid config key must consist"));
  auto tls = Call("POST", secrets,
                  R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"tls"},)"
                  R"("type":"kubernetes.io/tls","stringData":{"tls.crt":"x"}})");
  EXPECT_EQ(tls.status, 422);
  EXPECT_THAT(std::string(Body(tls).at("message").as_string()),
              HasSubstr("data[tls.key]: Required value"));

  auto retyped = Call("PATCH", secrets + "/token", R"({"type":"kubernetes.io/basic-auth"})",
                      "application/merge-patch+json");
  EXPECT_EQ(retyped.status, 422);
  EXPECT_THAT(std::string(Body(retyped).at("message").as_string()),
              HasSubstr("type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"));
  ASSERT_EQ(Call("PATCH", secrets + "/token", R"({"immutable":true})",
                 "application/merge-patch+json")
                .status,
            200);
  auto frozen = Call("PATCH", secrets + "/token", R"({"stringData":{"a":"changed"}})",
                     "application/merge-patch+json");
  EXPECT_EQ(frozen.status, 422);
  EXPECT_THAT(std::string(Body(frozen).at("message").as_string()),
              HasSubstr("data: Forbidden: field is immutable when `immutable` is set"));
  EXPECT_EQ(Body(Call("GET", secrets + "/token")).at("data"), secret.at("data"));
}

// ConfigMaps keep kube's rules too: keys as IsConfigMapKey, binaryData in base64, a key in both
// maps refused, and nothing changes under `immutable: true`.
TEST_F(HandlersTest, ConfigMapsRefuseBadKeysAndStayFrozenWhenImmutable) {
  const std::string cms = "/api/v1/namespaces/default/configmaps";
  auto cm = [](std::string_view rest) {
    return fmt::format(R"({{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm"}},{}}})",
                       rest);
  };
  auto key = Call("POST", cms, cm(R"("data":{"..":"x"})"));
  EXPECT_EQ(key.status, 422);
  EXPECT_THAT(std::string(Body(key).at("message").as_string()),
              HasSubstr("data[..]: Invalid value: \"..\": must not be '..'"));
  auto binary = Call("POST", cms, cm(R"("binaryData":{"b":"%%%"})"));
  EXPECT_EQ(binary.status, 400);
  EXPECT_THAT(std::string(Body(binary).at("message").as_string()),
              HasSubstr("illegal base64 data at input byte 0"));
  auto both = Call("POST", cms, cm(R"("data":{"k":"x"},"binaryData":{"k":"eA=="})"));
  EXPECT_EQ(both.status, 422);
  EXPECT_THAT(std::string(Body(both).at("message").as_string()),
              HasSubstr("duplicate of key present in binaryData"));
  ASSERT_EQ(Call("POST", cms, cm(R"("data":{"k":"x"},"immutable":true)")).status, 201);
  auto frozen = Call("PATCH", cms + "/cm", R"({"data":{"k":"y"}})", "application/merge-patch+json");
  EXPECT_EQ(frozen.status, 422);
  EXPECT_THAT(std::string(Body(frozen).at("message").as_string()),
              HasSubstr("data: Forbidden: field is immutable when `immutable` is set"));
  auto thawed =
      Call("PATCH", cms + "/cm", R"({"immutable":false})", "application/merge-patch+json");
  EXPECT_EQ(thawed.status, 422);
  EXPECT_EQ(Body(Call("GET", cms + "/cm")).at("data").at("k"), "x");
}

// Every namespace has a "default" ServiceAccount, made with it; a pod naming one that does not
// exist is refused as kube's serviceaccount admission refuses it.
TEST_F(HandlersTest, NamespacesHaveADefaultServiceAccountAndPodsMustNameOneThatExists) {
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/default/serviceaccounts/default").status, 200);
  ASSERT_EQ(Call("POST", "/api/v1/namespaces",
                 R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}})")
                .status,
            201);
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/team/serviceaccounts/default").status, 200);

  auto pod = [](std::string_view account) {
    return fmt::format(R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p"}},)"
                       R"("spec":{{"serviceAccountName":"{}",)"
                       R"("containers":[{{"name":"c","image":"busybox"}}]}}}})",
                       account);
  };
  auto refused = Call("POST", "/api/v1/namespaces/team/pods", pod("trainer"));
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_EQ(Body(refused).at("message"),
            "pods \"p\" is forbidden: error looking up service account team/trainer: "
            "serviceaccount \"trainer\" not found");
  ASSERT_EQ(Call("POST", "/api/v1/namespaces/team/serviceaccounts",
                 R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"trainer"}})")
                .status,
            201);
  EXPECT_EQ(Call("POST", "/api/v1/namespaces/team/pods", pod("trainer")).status, 201);
}

// kube-apiserver stores its two system PriorityClasses at start-up; `kubectl get pc` lists them.
TEST_F(HandlersTest, AFreshClusterHasTheSystemPriorityClasses) {
  HttpResponse list = Call("GET", "/apis/scheduling.k8s.io/v1/priorityclasses");
  ASSERT_EQ(list.status, 200) << list.body;
  std::map<std::string, json::object> classes;
  const json::value body = Body(list);
  for (const json::value& item : body.at("items").as_array()) {
    classes[std::string(item.at("metadata").at("name").as_string())] = item.as_object();
  }
  ASSERT_EQ(classes.size(), 2u) << list.body;
  EXPECT_EQ(classes["system-node-critical"].at("value").to_number<int64_t>(), 2000001000);
  EXPECT_EQ(classes["system-cluster-critical"].at("value").to_number<int64_t>(), 2000000000);
  EXPECT_EQ(classes["system-cluster-critical"].at("preemptionPolicy").as_string(),
            "PreemptLowerPriority");
  EXPECT_EQ(classes["system-node-critical"].at("description").as_string(),
            "Used for system critical pods that must not be moved from their current node.");
  // Once stored they are kept: a second start changes nothing.
  const std::string rv =
      std::string(classes["system-node-critical"].at("metadata").at("resourceVersion").as_string());
  ASSERT_TRUE(handlers_->Bootstrap().ok());
  HttpResponse again =
      Call("GET", "/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical");
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(Body(again).at("metadata").at("resourceVersion").as_string(), rv);
}

// Volcano's scheduler creates the queues root (the top of every tree, not reclaimable) and
// default at start; muster up has them before anyone writes, so a team queue can name root as
// its parent at once, and neither can be deleted.
TEST_F(HandlersTest, AFreshClusterHasTheRootAndDefaultQueues) {
  const std::string queues = "/apis/scheduling.volcano.sh/v1beta1/queues";
  HttpResponse root = Call("GET", queues + "/root");
  ASSERT_EQ(root.status, 200) << root.body;
  EXPECT_EQ(Body(root).at("spec").at("weight").to_number<int64_t>(), 1);
  EXPECT_EQ(Body(root).at("spec").at("reclaimable"), false);
  EXPECT_EQ(Body(root).at("status").at("state"), "Open");
  HttpResponse dflt = Call("GET", queues + "/default");
  ASSERT_EQ(dflt.status, 200) << dflt.body;
  EXPECT_EQ(Body(dflt).at("spec").at("reclaimable"), true);
  EXPECT_EQ(Body(dflt).at("status").at("state"), "Open");

  HttpResponse team = Call("POST", queues,
                           R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",)"
                           R"("metadata":{"name":"team"},"spec":{"parent":"root"}})");
  EXPECT_EQ(team.status, 201) << team.body;
  HttpResponse gone = Call("DELETE", queues + "/root");
  EXPECT_EQ(gone.status, 400) << gone.body;
  EXPECT_EQ(Body(gone).at("message"),
            "admission webhook \"validatequeue.volcano.sh\" denied the request: `root` queue "
            "can not be deleted");
}

// kubectl apply --prune and cluster-info dump look up kinds muster up runs no controller for:
// they list empty, and writing one is refused saying why instead of being stored to sit there.
TEST_F(HandlersTest, KindsWithoutAControllerListEmptyAndRefuseWritesSayingWhy) {
  for (const char* path :
       {"/apis/apps/v1/namespaces/default/deployments", "/apis/apps/v1/daemonsets",
        "/api/v1/namespaces/default/replicationcontrollers", "/api/v1/persistentvolumes",
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses"}) {
    HttpResponse list = Call("GET", path);
    ASSERT_EQ(list.status, 200) << path << ": " << list.body;
    EXPECT_TRUE(Body(list).at("items").as_array().empty()) << path;
  }
  constexpr char kDeployment[] =
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},)"
      R"("spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":)"
      R"({"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}})";
  const std::string deployments = "/apis/apps/v1/namespaces/default/deployments";
  HttpResponse created = Call("POST", deployments, kDeployment);
  EXPECT_EQ(created.status, 405) << created.body;
  EXPECT_EQ(Body(created).at("reason").as_string(), "MethodNotAllowed");
  EXPECT_THAT(std::string(Body(created).at("message").as_string()),
              HasSubstr("muster up runs no controller for apps/v1 Deployment objects"));
  HttpResponse applied =
      Call("PATCH", deployments + "/web", kDeployment, "application/apply-patch+yaml",
           {{"fieldManager", "kubectl"}});
  EXPECT_EQ(applied.status, 405) << applied.body;
  EXPECT_EQ(Call("PUT", deployments + "/web", kDeployment).status, 405);
  EXPECT_EQ(Call("GET", deployments + "/web").status, 404);

  // Discovery says what may be done with them.
  const json::value apps = Body(Call("GET", "/apis/apps/v1"));
  bool found = false;
  for (const json::value& r : apps.at("resources").as_array()) {
    if (r.at("name").as_string() != "deployments") continue;
    found = true;
    std::vector<std::string> verbs;
    for (const json::value& v : r.at("verbs").as_array()) verbs.emplace_back(v.as_string());
    EXPECT_THAT(verbs, ElementsAre("delete", "deletecollection", "get", "list", "watch"));
  }
  EXPECT_TRUE(found) << json::serialize(apps);
}

// Endpoints are stored as written (a Service without a selector has the addresses its user gives).
TEST_F(HandlersTest, EndpointsAreStoredAsWritten) {
  HttpResponse created = Call(
      "POST", "/api/v1/namespaces/default/endpoints",
      R"({"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"db"},"subsets":)"
      R"([{"addresses":[{"ip":"127.0.0.5"}],"ports":[{"port":5432,"protocol":"TCP"}]}]})");
  ASSERT_EQ(created.status, 201) << created.body;
  HttpResponse got = Call("GET", "/api/v1/namespaces/default/endpoints/db");
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(Body(got).at("subsets").at(0).at("addresses").at(0).at("ip").as_string(),
            "127.0.0.5");
}

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

TEST_F(HandlersTest, ErrorBodiesAreJsonWhateverBytesTheRequestCarried) {
  // A name from the URL (%ff%fe) and a field selector with a raw 0xff byte come back in the
  // Status with U+FFFD for each invalid byte; json::parse refuses invalid UTF-8.
  auto by_name = Call("GET", std::string(kPods) + "/\xff\xfe");
  EXPECT_EQ(by_name.status, 404);
  json::error_code error;
  json::value status = json::parse(by_name.body, error);
  ASSERT_FALSE(error) << error.message() << ": " << by_name.body;
  EXPECT_EQ(status.at("message").as_string(), "pods \"\uFFFD\uFFFD\" not found");
  EXPECT_EQ(status.at("details").at("name").as_string(), "\uFFFD\uFFFD");

  auto by_field = Call("GET", kPods, "", "", {{"fieldSelector", "spec.\xff=x"}});
  EXPECT_EQ(by_field.status, 400);
  status = json::parse(by_field.body, error);
  ASSERT_FALSE(error) << error.message() << ": " << by_field.body;
  EXPECT_EQ(status.at("message").as_string(), "field label not supported: spec.\uFFFD");
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
// (An Event: a ConfigMap's or Secret's data is refused past 1 MiB by validation first.)
TEST_F(HandlersTest, AWriteThatGrowsAnObjectPastTheLimitIs413AndChangesNothing) {
  const std::string cms = "/api/v1/namespaces/default/events";
  ASSERT_EQ(Call("POST", cms,
                 R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"c"},)"
                 R"("involvedObject":{"kind":"Pod","name":"p","namespace":"default"}})")
                .status,
            201);
  const std::string mib(1 << 20, 'x');
  auto first = Call("PATCH", cms + "/c", R"({"message":")" + mib + R"("})",
                    "application/merge-patch+json");
  ASSERT_EQ(first.status, 200) << first.body.substr(0, 300);
  auto second = Call("PATCH", cms + "/c", R"({"source":{"component":")" + mib + R"("}})",
                     "application/merge-patch+json");
  ASSERT_EQ(second.status, 413) << second.body.substr(0, 300);
  EXPECT_EQ(Body(second).at("reason").as_string(), "RequestEntityTooLarge");
  EXPECT_THAT(std::string(Body(second).at("message").as_string()),
              HasSubstr("more than the limit of 1572864"));
  json::value live = Body(Call("GET", cms + "/c"));
  EXPECT_FALSE(live.as_object().contains("source"));
  EXPECT_EQ(live.at("metadata").at("resourceVersion"),
            Body(first).at("metadata").at("resourceVersion"));
}

// boost::json parses 1e400 as an infinity and writes it back as the bare token Infinity: such
// a ConfigMap was stored, and from then on its list did not parse, DELETE answered 500 and its
// namespace could never finish terminating. kube's decoder refuses the number (400).
TEST_F(HandlersTest, ANumberBeyondADoubleIs400InEveryKindOfBodyAndStoresNothing) {
  const std::string cms = "/api/v1/namespaces/default/configmaps";
  auto refused = Call("POST", cms,
                      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"inf"},)"
                      R"("data":{"a":"b"},"x":1e400})");
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(Body(refused).at("reason").as_string(), "BadRequest");
  EXPECT_EQ(Body(refused).at("message").as_string(),
            "couldn't decode the request body as JSON: json: cannot unmarshal number 1e400 into "
            "Go struct field x of type float64");
  EXPECT_EQ(Call("GET", cms + "/inf").status, 404);

  auto created = Call("POST", cms,
                      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":)"
                      R"({"name":"c"},"data":{"a":"b"}})");
  ASSERT_EQ(created.status, 201) << created.body;
  const json::value before = Body(created);
  json::value put = before;
  put.as_object()["x"] = json::array{1, 2};
  std::string put_body = json::serialize(put);
  put_body.replace(put_body.find("[1,2]"), 5, "[1,-1e999]");
  auto put_refused = Call("PUT", cms + "/c", put_body);
  EXPECT_EQ(put_refused.status, 400) << put_refused.body;
  EXPECT_THAT(put_refused.body, HasSubstr("number -1e999 into Go struct field x[1] of type"));

  ASSERT_EQ(Call("POST", kPods, PodJson("p")).status, 201);
  const json::value pod_before = Body(Call("GET", std::string(kPods) + "/p"));
  struct Patch {
    std::string path;
    std::string type;
    std::string body;
    std::string says;
  };
  const std::vector<Patch> patches = {
      {cms + "/c", "application/merge-patch+json",
       R"({"metadata":{"labels":{"a":"b"}},"x":{"y":1e400}})",
       "number 1e400 into Go struct field x.y of type float64"},
      {std::string(kPods) + "/p", "application/strategic-merge-patch+json",
       R"({"spec":{"containers":[{"name":"c","x":1e400}]}})",
       "number 1e400 into Go struct field spec.containers[0].x of type float64"},
      {cms + "/c", "application/json-patch+json", R"([{"op":"add","path":"/x","value":1E+400}])",
       "number 1E+400 into Go struct field [0].value of type float64"},
  };
  for (const Patch& p : patches) {
    auto r = Call("PATCH", p.path, p.body, p.type);
    EXPECT_EQ(r.status, 400) << p.type << ": " << r.body;
    EXPECT_THAT(r.body, HasSubstr(p.says)) << p.type;
  }
  EXPECT_EQ(Body(Call("GET", cms + "/c")), before);
  EXPECT_EQ(Body(Call("GET", std::string(kPods) + "/p")), pod_before);
  auto list = Call("GET", cms);
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(Body(list).at("items").as_array().size(), 1u);

  // YAML, and apply patches (which kube decodes as YAML, JSON ones too): go-yaml resolves a
  // plain scalar that strconv.ParseFloat refuses as a string, and so does muster; `.inf` is
  // refused (ParseYamlDocumentsTest.ConversionErrorsNameTheLine).
  auto yaml =
      Call("POST", cms, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml\nx: 1e400\n",
           "application/yaml");
  ASSERT_EQ(yaml.status, 201) << yaml.body;
  EXPECT_EQ(Body(yaml).at("x"), "1e400");
  auto apply =
      Call("PATCH", cms + "/applied", R"({"apiVersion":"v1","kind":"ConfigMap","x":-1e999})",
           "application/apply-patch+json", {{"fieldManager", "test"}});
  ASSERT_EQ(apply.status, 201) << apply.body;
  EXPECT_EQ(Body(apply).at("x"), "-1e999");
}

// A number within a double's range but beyond the Go type muster decodes a field as was stored as
// 0 (spec.priority) where kube's typed decoder refuses it; untyped fields keep it as a double, as
// kube's unstructured decoding keeps a float64.
TEST_F(HandlersTest, AnIntegerBeyondItsFieldsTypeIsRefusedNamingTheFieldAndKeptWhereUntyped) {
  auto pod = [](std::string_view priority) {
    return fmt::format(R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p"}},"spec":)"
                       R"({{"priority":{},"containers":[{{"name":"c","image":"i"}}]}}}})",
                       priority);
  };
  auto huge = Call("POST", kPods, pod("99999999999999999999999"));
  EXPECT_EQ(huge.status, 400) << huge.body;
  EXPECT_EQ(Body(huge).at("message").as_string(),
            "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal number "
            "1e+23 into Go struct field spec.priority of type int32");
  auto past_int32 = Call("POST", kPods, pod("3000000000"));
  EXPECT_EQ(past_int32.status, 400) << past_int32.body;
  EXPECT_THAT(past_int32.body, HasSubstr("cannot unmarshal number 3000000000 into Go struct "
                                         "field spec.priority of type int32"));
  auto fraction = Call("POST", kPods, pod("1.5"));
  EXPECT_EQ(fraction.status, 400) << fraction.body;
  EXPECT_THAT(fraction.body, HasSubstr("cannot unmarshal number 1.5 into Go struct field "
                                       "spec.priority of type int32"));
  EXPECT_EQ(Call("GET", std::string(kPods) + "/p").status, 404);
  EXPECT_EQ(Call("POST", kPods, pod("0")).status, 201);

  auto queue = Call("POST", kQueues,
                    R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",)"
                    R"("metadata":{"name":"q"},"spec":{"weight":99999999999999999999999}})");
  EXPECT_EQ(queue.status, 422) << queue.body;
  EXPECT_EQ(Body(queue).at("message").as_string(),
            "Queue.scheduling.volcano.sh \"q\" is invalid: spec.weight: Invalid value: "
            "\"1e+23\": spec.weight in body must be of type int32: \"1e+23\"");

  const std::string cms = "/api/v1/namespaces/default/configmaps";
  auto kept = Call("POST", cms,
                   R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},)"
                   R"("x":99999999999999999999999})");
  ASSERT_EQ(kept.status, 201) << kept.body;
  EXPECT_EQ(Body(Call("GET", cms + "/big")).at("x"), json::value(1e23));

  ASSERT_EQ(Call("POST", kPods, PodJson("d")).status, 201);
  auto grace = Call("DELETE", std::string(kPods) + "/d", R"({"gracePeriodSeconds":1e300})");
  EXPECT_EQ(grace.status, 400) << grace.body;
  EXPECT_EQ(Body(grace).at("message").as_string(),
            "json: cannot unmarshal number 1e+300 into Go struct field "
            "DeleteOptions.gracePeriodSeconds of type int64");
  EXPECT_EQ(Call("GET", std::string(kPods) + "/d").status, 200);
}

// The last guard: whatever reaches the store with a number JSON cannot write (here an
// in-process caller, past every body check) is refused, not stored unreadable.
TEST_F(HandlersTest, TheStoreRefusesANonFiniteNumberThatNoBodyCheckSaw) {
  const ResourceInfo& cms = *FindResource("", "v1", "configmaps");
  json::object cm{{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata", {{"name", "inf"}}},
                  {"x", std::numeric_limits<double>::infinity()}};
  std::vector<std::optional<ApiError>> created = handlers_->CreateAll(cms, {{"default", cm}});
  ASSERT_EQ(created.size(), 1u);
  ASSERT_TRUE(created[0].has_value());
  EXPECT_EQ(created[0]->code, 400);
  EXPECT_EQ(created[0]->message,
            "configmaps default/inf: x: the number is not finite, and JSON cannot represent it");
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/default/configmaps/inf").status, 404);
}

TEST_F(HandlersTest, ADamagedObjectIsLeftOutOfListsAndWatchesAndDeleteRemovesIt) {
  const std::string cms = "/api/v1/namespaces/default/configmaps";
  std::string revision;  // of "bad"
  for (std::string_view name : {"bad", "good"}) {
    auto created = Call("POST", cms,
                        fmt::format(R"({{"apiVersion":"v1","kind":"ConfigMap","metadata":)"
                                    R"({{"name":"{}","labels":{{"app":"x"}}}}}})",
                                    name));
    ASSERT_EQ(created.status, 201);
    if (revision.empty()) revision = Body(created).at("metadata").at("resourceVersion").as_string();
  }
  // What the server stored for `"x":1e400` before it refused such numbers.
  DamageStored({"configmaps", "default", "bad"},
               R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad"},"x":Infinity})");

  auto get = Call("GET", cms + "/bad");
  EXPECT_EQ(get.status, 500);
  EXPECT_EQ(Body(get).at("message").as_string(),
            "Internal error occurred: configmaps \"bad\" cannot be read: the stored object is "
            "damaged (not valid JSON: syntax error at byte 68); deleting it removes it outright, "
            "and `muster fsck` lists every damaged object");
  EXPECT_EQ(
      Call("PATCH", cms + "/bad", R"({"data":{"a":"b"}})", "application/merge-patch+json").status,
      500);

  for (const auto& [query, accept] :
       std::vector<std::pair<std::vector<std::pair<std::string, std::string>>, std::string>>{
           {{}, "application/json"},
           {{{"labelSelector", "app=x"}}, "application/json"},
           {{}, "application/json;as=Table;v=v1;g=meta.k8s.io"}}) {
    log_.clear();
    auto list = Call("GET", cms, "", "", query, accept);
    ASSERT_EQ(list.status, 200) << list.body;
    json::value body = Body(list);  // parses
    json::array& rows = body.as_object().contains("rows") ? body.at("rows").as_array()
                                                          : body.at("items").as_array();
    EXPECT_EQ(rows.size(), 1u) << list.body;
    ASSERT_EQ(log_.size(), 1u);
    EXPECT_EQ(log_[0], fmt::format("a list skips configmaps default/bad (revision {}): the "
                                   "stored object is damaged (not valid JSON: syntax error at "
                                   "byte 68); delete it, or run `muster fsck`",
                                   revision));
  }

  log_.clear();
  auto w = Call("GET", cms, "", "", {{"watch", "true"}, {"timeoutSeconds", "1"}});
  ASSERT_TRUE(w.stream);
  RecordingSink sink;
  w.stream(sink);
  json::value added = json::parse(sink.text);  // one event, of the good one
  EXPECT_EQ(added.at("object").at("metadata").at("name").as_string(), "good");
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_THAT(log_[0], HasSubstr(fmt::format("a watch skips configmaps default/bad (revision {})",
                                             revision)));

  // Its finalizers cannot be read: DELETE removes it outright, and watchers see a readable stub.
  auto watch = store_->WatchFrom("configmaps", "default", store_->Revision());
  ASSERT_TRUE(watch.ok());
  auto deleted = Call("DELETE", cms + "/bad");
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(Body(deleted),
            json::parse(fmt::format(R"({{"apiVersion":"v1","kind":"ConfigMap","metadata":)"
                                    R"({{"name":"bad","namespace":"default",)"
                                    R"("resourceVersion":"{}"}}}})",
                                    store_->Revision())));
  auto event = (*watch)->Next(std::chrono::seconds(5));
  ASSERT_TRUE(event.ok() && event->has_value());
  EXPECT_EQ((*event)->type, store::EventType::kDeleted);
  EXPECT_EQ(json::parse(*(*event)->object), Body(deleted));
  EXPECT_EQ(Call("GET", cms + "/bad").status, 404);
  EXPECT_TRUE(store_->Damaged().empty());
}

// kube's NamespaceLifecycle admission: the namespaces it keeps are refused with 403 Forbidden
// (kubectl: "Error from server (Forbidden): namespaces \"default\" is forbidden: ..."), also in
// a dry run, and stay.
TEST_F(HandlersTest, DeletingANamespaceKubeKeepsIsForbidden) {
  for (std::string_view ns : {"default", "kube-system", "kube-public"}) {
    for (bool dry_run : {false, true}) {
      auto r = Call("DELETE", fmt::format("/api/v1/namespaces/{}", ns), "", "application/json",
                    dry_run ? std::vector<std::pair<std::string, std::string>>{{"dryRun", "All"}}
                            : std::vector<std::pair<std::string, std::string>>{});
      EXPECT_EQ(r.status, 403) << ns << " " << r.body;
      EXPECT_EQ(Body(r).at("reason").as_string(), "Forbidden");
      EXPECT_EQ(Body(r).at("message").as_string(),
                fmt::format("namespaces \"{}\" is forbidden: this namespace may not be deleted", ns));
    }
    EXPECT_EQ(Call("GET", fmt::format("/api/v1/namespaces/{}", ns)).status, 200);
  }
}

TEST_F(HandlersTest, NamespaceDeletionFinishesOverDamagedObjects) {
  for (std::string_view ns : {"team-a", "team-b"}) {
    ASSERT_EQ(Call("POST", "/api/v1/namespaces",
                   fmt::format(R"({{"apiVersion":"v1","kind":"Namespace","metadata":)"
                               R"({{"name":"{}"}}}})",
                               ns))
                  .status,
              201);
    ASSERT_EQ(Call("POST", fmt::format("/api/v1/namespaces/{}/configmaps", ns),
                   R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}})")
                  .status,
              201);
  }
  // Damaged content in one namespace, and the other namespace itself damaged.
  DamageStored({"configmaps", "team-a", "c"}, R"({"metadata":{"name":"c"},"x":Infinity})");
  DamageStored({"namespaces", "", "team-b"}, R"({"metadata":)");

  for (std::string_view ns : {"team-a", "team-b"}) {
    auto r = Call("DELETE", fmt::format("/api/v1/namespaces/{}", ns));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(Body(r).at("status").at("phase").as_string(), "Terminating") << ns;
  }
  Lifecycle lifecycle(*store_);
  for (int pass = 0; pass < 3; ++pass) lifecycle.RunOnce(1700000000);
  for (std::string_view ns : {"team-a", "team-b"}) {
    EXPECT_EQ(Call("GET", fmt::format("/api/v1/namespaces/{}", ns)).status, 404) << ns;
    EXPECT_EQ(Call("GET", fmt::format("/api/v1/namespaces/{}/configmaps/c", ns)).status, 404);
  }
  EXPECT_TRUE(store_->Damaged().empty());
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
  ASSERT_EQ(Call("PATCH", std::string(kQueues) + "/q", queue, "application/apply-patch+yaml",
                 {{"fieldManager", "kubectl"}})
                .status,
            201);
  auto again = Call("PATCH", std::string(kQueues) + "/q", queue, "application/apply-patch+yaml",
                    {{"fieldManager", "kubectl"}});
  EXPECT_EQ(again.status, 200) << again.body;
  auto strategic = Call("PATCH", std::string(kJobs) + "/j", R"({"metadata":{"labels":{"a":"b"}}})",
                        "application/strategic-merge-patch+json");
  EXPECT_EQ(strategic.status, 415);
  EXPECT_EQ(Body(strategic).at("reason").as_string(), "UnsupportedMediaType");
}

// A field manager that is not valid UTF-8 (a query parameter's percent-escapes decode to any
// bytes) is recorded with U+FFFD in place of each bad byte, as kube-apiserver stores it: the
// answer and the stored object stay JSON that any client reads. Found by handlers_fuzz.
TEST_F(HandlersTest, AFieldManagerThatIsNotUtf8IsRecordedAsValidText) {
  std::string job = R"({"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",)"
                    R"("metadata":{"name":"j"},"spec":{"tasks":[{"name":"t","replicas":1,)"
                    R"("template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]}})";
  for (int status : {201, 200}) {
    auto applied = Call("PATCH", std::string(kJobs) + "/j", job, "application/apply-patch+yaml",
                        {{"fieldManager", "ku\xff\xfe"}});
    ASSERT_EQ(applied.status, status) << applied.body;
    json::value body = Body(applied);  // a strict parse: it fails on invalid UTF-8
    const json::array& managed = body.at("metadata").at("managedFields").as_array();
    ASSERT_EQ(managed.size(), 1u);
    EXPECT_EQ(managed[0].at("manager").as_string(), "ku\xef\xbf\xbd\xef\xbf\xbd");
  }
  auto got = Call("GET", std::string(kJobs) + "/j");
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(Body(got).at("metadata").at("managedFields").as_array()[0].at("manager").as_string(),
            "ku\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_TRUE(store_->Damaged().empty());
}

// Server-side apply by two field managers over HTTP: the 409 a changed field of another's gets
// (kube's message and FieldManagerConflict cause), force, and the option checks every write has.
TEST_F(HandlersTest, ServerSideApplyKeepsFieldOwnershipAndRefusesConflicts) {
  const std::string cm = "/api/v1/namespaces/default/configmaps/s";
  auto apply = [&](std::string manager, std::string data, bool force = false) {
    std::vector<std::pair<std::string, std::string>> query = {{"fieldManager", manager}};
    if (force) query.emplace_back("force", "true");
    return Call("PATCH", cm,
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata: " + data + "\n",
                "application/apply-patch+yaml", query);
  };
  ASSERT_EQ(apply("a", "{x: '1'}").status, 201);
  ASSERT_EQ(apply("b", "{y: '2'}").status, 200);
  auto refused = apply("b", "{x: '3', y: '2'}");
  ASSERT_EQ(refused.status, 409) << refused.body;
  const json::value status = Body(refused);
  EXPECT_EQ(status.at("reason"), "Conflict");
  EXPECT_EQ(status.at("message"), "Apply failed with 1 conflict: conflict with \"a\": .data.x");
  EXPECT_EQ(status.at("details").at("causes"),
            json::parse(R"([{"reason":"FieldManagerConflict","message":"conflict with \"a\"",)"
                        R"("field":".data.x"}])"));
  EXPECT_EQ(Body(Call("GET", cm)).at("data").at("x"), "1");
  auto forced = apply("b", "{x: '3', y: '2'}", true);
  ASSERT_EQ(forced.status, 200) << forced.body;
  const json::value forced_body = Body(forced);
  const json::value& managed = forced_body.at("metadata").at("managedFields");
  ASSERT_EQ(managed.as_array().size(), 1u) << managed;
  EXPECT_EQ(managed.at(0).at("manager"), "b");

  auto nameless = Call("PATCH", cm, "{\"data\":{\"z\":\"1\"}}", "application/apply-patch+yaml");
  EXPECT_EQ(nameless.status, 422);
  EXPECT_EQ(Body(nameless).at("message"),
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required "
            "for apply patch");
  auto forced_merge = Call("PATCH", cm, "{}", "application/merge-patch+json", {{"force", "true"}});
  EXPECT_EQ(forced_merge.status, 422);
  auto with_managed =
      Call("PATCH", cm, R"({"metadata":{"managedFields":[]},"data":{"z":"1"}})",
           "application/apply-patch+yaml", {{"fieldManager", "a"}});
  EXPECT_EQ(with_managed.status, 400);
  EXPECT_EQ(Body(with_managed).at("message"), "metadata.managedFields must be nil");
}

// Writes read the stored state without its field ownership and take managedFields from the
// stored text: patches of every kind keep them, a JSON patch may still test or remove them, and
// a patch that changes nothing is no new revision.
TEST_F(HandlersTest, PatchesKeepFieldOwnershipAndAJsonPatchStillSeesIt) {
  const std::string cm = "/api/v1/namespaces/default/configmaps/owned";
  ASSERT_EQ(Call("POST", "/api/v1/namespaces/default/configmaps",
                 R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"owned"},)"
                 R"("data":{"a":"1"}})",
                 "application/json", {{"fieldManager", "creator"}})
                .status,
            201);
  auto merged = Call("PATCH", cm, R"({"data":{"b":"2"}})", "application/merge-patch+json",
                     {{"fieldManager", "editor"}});
  ASSERT_EQ(merged.status, 200) << merged.body;
  const json::value merged_body = Body(merged);
  const json::array& managed = merged_body.at("metadata").at("managedFields").as_array();
  ASSERT_EQ(managed.size(), 2u) << merged.body;
  EXPECT_EQ(managed[0].at("manager"), "creator");
  EXPECT_EQ(json::serialize(managed[1].at("fieldsV1")), R"({"f:data":{"f:b":{}}})");

  // The same patch again changes nothing: the same revision, ownership as it was.
  auto again = Call("PATCH", cm, R"({"data":{"b":"2"}})", "application/merge-patch+json",
                    {{"fieldManager", "editor"}});
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(Body(again).at("metadata"), merged_body.at("metadata"));

  auto tested = Call("PATCH", cm,
                     R"([{"op":"test","path":"/metadata/managedFields/0/manager",)"
                     R"("value":"creator"},{"op":"add","path":"/data/c","value":"3"}])",
                     "application/json-patch+json", {{"fieldManager", "editor"}});
  ASSERT_EQ(tested.status, 200) << tested.body;
  EXPECT_EQ(Body(tested).at("data").at("c"), "3");
  auto wrong = Call("PATCH", cm,
                    R"([{"op":"test","path":"/metadata/managedFields/0/manager","value":"x"}])",
                    "application/json-patch+json");
  EXPECT_EQ(wrong.status, 422) << wrong.body;
  // Removing them is no change of anyone's ownership (kube keeps the stored ones).
  auto removed = Call("PATCH", cm, R"([{"op":"remove","path":"/metadata/managedFields"}])",
                      "application/json-patch+json", {{"fieldManager", "editor"}});
  ASSERT_EQ(removed.status, 200) << removed.body;
  EXPECT_EQ(Body(removed).at("metadata").at("managedFields"),
            Body(tested).at("metadata").at("managedFields"));
  EXPECT_EQ(Body(Call("GET", cm)).at("metadata").at("managedFields").as_array().size(), 2u);
}

// The writes `muster up` makes of a pod hand the stored ownership on as text where it does not
// change hands: a binding and a status written again by its owner keep managedFields byte for
// byte, a new writer's entry joins the stored ones, and every stored text is what the parsed
// ownership serialises to, which GET and the write's answer (a dry run's too) return.
TEST_F(HandlersTest, APodsWritesKeepTheOwnershipTheyLeaveByteForByte) {
  const store::Key key{.resource = "pods", .ns = "default", .name = "owned"};
  const std::string pod = std::string(kPods) + "/owned";
  auto stored = [&] {
    absl::StatusOr<store::Object> got = store_->Get(key);
    return got.ok() ? std::string(got->ManagedFieldsText()) : std::string("missing");
  };
  auto answered = [&](const HttpResponse& r) {
    return json::serialize(Body(r).at("metadata").at("managedFields"));
  };
  auto status_patch = [&](std::string_view phase) {
    return Call("PATCH", pod + "/status",
                fmt::format(R"([{{"op":"add","path":"/status/phase","value":"{}"}}])", phase),
                "application/json-patch+json", {{"fieldManager", "agent"}});
  };
  ASSERT_EQ(Call("POST", kPods, PodJson("owned", R"({"app":"x"})"), "application/json",
                 {{"fieldManager", "controller"}})
                .status,
            201);
  const std::string created = stored();
  ASSERT_NE(created.find(R"("manager":"controller")"), std::string::npos) << created;

  // The agent's first status: its entry after the controller's, which keeps its text.
  auto running = status_patch("Running");
  ASSERT_EQ(running.status, 200) << running.body;
  const std::string with_agent = stored();
  EXPECT_EQ(with_agent, answered(running));
  EXPECT_EQ(with_agent.substr(0, created.size() - 1), created.substr(0, created.size() - 1));
  EXPECT_NE(with_agent.find(R"("manager":"agent")"), std::string::npos) << with_agent;

  // A binding records no ownership.
  ASSERT_EQ(Call("POST", pod + "/binding",
                 R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"owned"},)"
                 R"("target":{"kind":"Node","name":"n1"}})")
                .status,
            201);
  EXPECT_EQ(stored(), with_agent);
  EXPECT_EQ(answered(Call("GET", pod)), with_agent);

  // The agent's phase again, changed (the handlers' clock stands still: the same time).
  auto succeeded = status_patch("Succeeded");
  ASSERT_EQ(succeeded.status, 200) << succeeded.body;
  EXPECT_EQ(Body(succeeded).at("status").at("phase"), "Succeeded");
  EXPECT_EQ(stored(), with_agent);
  // Unchanged: no new revision.
  const std::string revision = std::string(
      Body(succeeded).at("metadata").at("resourceVersion").as_string());
  auto again = status_patch("Succeeded");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(Body(again).at("metadata").at("resourceVersion").as_string(), revision);

  // Another manager takes the label from the controller; a dry run answers what the write stores.
  auto label = [&](bool dry_run) {
    std::vector<std::pair<std::string, std::string>> query = {{"fieldManager", "labeller"}};
    if (dry_run) query.emplace_back("dryRun", "All");
    return Call("PATCH", pod, R"({"metadata":{"labels":{"app":"y"}}})",
                "application/merge-patch+json", query);
  };
  auto dry = label(true);
  ASSERT_EQ(dry.status, 200) << dry.body;
  EXPECT_EQ(stored(), with_agent);
  auto relabelled = label(false);
  ASSERT_EQ(relabelled.status, 200) << relabelled.body;
  EXPECT_EQ(stored(), answered(relabelled));
  EXPECT_EQ(answered(dry), answered(relabelled));
  const json::value entries = json::parse(stored());
  ASSERT_EQ(entries.as_array().size(), 3u) << stored();
  EXPECT_EQ(json::serialize(entries.at(2).at("fieldsV1")),
            R"({"f:metadata":{"f:labels":{"f:app":{}}}})");
  EXPECT_EQ(json::serialize(entries.at(0).at("fieldsV1")).find("f:app"), std::string::npos);
}

// A dryRun other than All, or an unknown fieldValidation, is refused before anything is written:
// taken for a real write or no validation, a typo would change the cluster.
TEST_F(HandlersTest, UnknownDryRunAndFieldValidationValuesAre422AndWriteNothing) {
  auto create = Call("POST", kPods, PodJson("typo"), "application/json", {{"dryRun", "all"}});
  EXPECT_EQ(create.status, 422) << create.body;
  EXPECT_EQ(Body(create).at("message"),
            "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: "
            "[]string{\"all\"}: supported values: \"All\"");
  EXPECT_EQ(Call("GET", std::string(kPods) + "/typo").status, 404);
  auto validation =
      Call("POST", kPods, PodJson("typo"), "application/json", {{"fieldValidation", "strict"}});
  EXPECT_EQ(validation.status, 422);
  EXPECT_EQ(Body(validation).at("details").at("causes").at(0).at("field"), "fieldValidation");
  ASSERT_EQ(Call("POST", kPods, PodJson("kept")).status, 201);
  auto remove = Call("DELETE", std::string(kPods) + "/kept", "", "application/json",
                     {{"dryRun", "yes"}});
  EXPECT_EQ(remove.status, 422) << remove.body;
  EXPECT_EQ(Call("GET", std::string(kPods) + "/kept").status, 200);
}

// Query parameter values kube-apiserver refuses are 400 (422 for its option validations) with
// the parameter named, never read as a default; booleans take any value, as Go's
// Convert_Slice_string_To_bool does ("0" and "false" are false, anything else true).
TEST_F(HandlersTest, BadQueryParameterValuesAreRefusedNamingTheParameter) {
  ASSERT_EQ(Call("POST", kPods, PodJson("q")).status, 201);
  const std::vector<std::tuple<std::string, std::string, std::string, std::string, int>> cases = {
      {"GET", kPods, "limit", "ten", 400},
      {"GET", kPods, "limit", "-1", 400},
      {"GET", kPods, "resourceVersion", "abc", 400},
      {"GET", kPods, "labelSelector", "=a", 400},
      {"GET", kPods, "resourceVersionMatch", "Newest", 422},
      {"DELETE", std::string(kPods) + "/q", "gracePeriodSeconds", "soon", 400},
      {"DELETE", std::string(kPods) + "/q", "propagationPolicy", "Sideways", 422},
      {"DELETE", std::string(kPods) + "/q", "dryRun", "true", 422},
  };
  for (const auto& [method, path, param, value, code] : cases) {
    auto r = Call(method, path, "", "application/json", {{param, value}});
    EXPECT_EQ(r.status, code) << param << "=" << value << ": " << r.body;
    EXPECT_NE(r.body.find(param == "labelSelector" ? "found '='" : param), std::string::npos)
        << param << "=" << value << ": " << r.body;
  }
  auto watch = Call("GET", kPods, "", "application/json",
                    {{"watch", "true"}, {"timeoutSeconds", "later"}});
  EXPECT_EQ(watch.status, 400);
  EXPECT_NE(watch.body.find("timeoutSeconds"), std::string::npos) << watch.body;
  EXPECT_EQ(Call("GET", std::string(kPods) + "/q").status, 200);  // no delete went through
}

// Applying a Volcano Job unchanged, server-side or as a merge patch of what kubectl's client-side
// apply sends, writes nothing: no new resourceVersion or generation, so `kubectl diff` finds
// nothing and no watcher wakes (the defaults admission adds were compared before they were).
TEST_F(HandlersTest, AnUnchangedApplyOfAVolcanoJobWritesNoNewRevision) {
  std::string job = R"({"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",)"
                    R"("metadata":{"name":"j"},"spec":{"minAvailable":1,"tasks":[{"name":"t",)"
                    R"("replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]}})";
  auto created = Call("PATCH", std::string(kJobs) + "/j", job, "application/apply-patch+yaml",
                      {{"fieldManager", "kubectl"}});
  ASSERT_EQ(created.status, 201) << created.body;
  const json::value first = Body(created).at("metadata");
  auto meta = [&] { return Body(Call("GET", std::string(kJobs) + "/j")).at("metadata"); };
  for (int i = 0; i < 2; ++i) {
    auto again = Call("PATCH", std::string(kJobs) + "/j", job, "application/apply-patch+yaml",
                      {{"fieldManager", "kubectl"}});
    ASSERT_EQ(again.status, 200) << again.body;
    auto merged = Call("PATCH", std::string(kJobs) + "/j", R"({"spec":{"minAvailable":1}})",
                       "application/merge-patch+json");
    ASSERT_EQ(merged.status, 200) << merged.body;
    EXPECT_EQ(meta().at("resourceVersion"), first.at("resourceVersion")) << "apply " << i;
    EXPECT_EQ(meta().at("generation"), first.at("generation")) << "apply " << i;
  }
  auto changed = Call("PATCH", std::string(kJobs) + "/j",
                      R"({"spec":{"tasks":[{"name":"t","replicas":2,)"
                      R"("template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]}})",
                      "application/merge-patch+json");
  ASSERT_EQ(changed.status, 200) << changed.body;
  EXPECT_EQ(meta().at("generation").as_int64(), first.at("generation").as_int64() + 1);
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
  EXPECT_EQ(Body(expired).at("message").as_string(),
            "The provided continue parameter is too old to display a consistent list result. You "
            "can start a new list without the continue parameter.");
}

// Query parameters as kube-apiserver checks them (k8s.io/apiserver pkg/storage,
// pkg/endpoints/handlers/get.go; apimachinery internalversion/validation).
class ListParamsTest : public HandlersTest {
 protected:
  HttpResponse List(std::vector<std::pair<std::string, std::string>> query,
                    std::string path = kPods) {
    return Call("GET", std::move(path), "", "", std::move(query));
  }
  static std::string Message(const HttpResponse& r) {
    return std::string(Body(r).at("message").as_string());
  }
  static std::string Token(std::string_view json_text) {
    return absl::WebSafeBase64Escape(absl::string_view(json_text.data(), json_text.size()));
  }
  // The first page's continue token of a list of pods (3 pods, limit 1).
  std::string FirstPageToken(std::string path = kPods) {
    for (const char* name : {"p0", "p1", "p2"}) Call("POST", kPods, PodJson(name));
    auto page = List({{"limit", "1"}}, std::move(path));
    EXPECT_EQ(page.status, 200) << page.body;
    return std::string(Body(page).at("metadata").at("continue").as_string());
  }
};

TEST_F(ListParamsTest, AResourceVersionThatIsNoDecimalUnsignedIntegerIs400) {
  ASSERT_EQ(Call("POST", kPods, PodJson("p")).status, 201);
  const std::string pod = std::string(kPods) + "/p";
  for (const char* rv : {"abc", "-1", "+1", "1.5", " 1", "0x10"}) {
    SCOPED_TRACE(rv);
    const std::string want = fmt::format(
        "invalid resource version: resourceVersion: Invalid value: \"{0}\": strconv.ParseUint: "
        "parsing \"{0}\": invalid syntax",
        rv);
    auto list = List({{"resourceVersion", rv}});
    EXPECT_EQ(list.status, 400);
    EXPECT_EQ(Body(list).at("reason").as_string(), "BadRequest");
    EXPECT_EQ(Message(list), want);
    auto get = Call("GET", pod, "", "", {{"resourceVersion", rv}});
    EXPECT_EQ(get.status, 400);
    EXPECT_EQ(Message(get), want);
    auto watch = List({{"watch", "true"}, {"resourceVersion", rv}});
    EXPECT_FALSE(watch.stream);
    EXPECT_EQ(watch.status, 400);
    EXPECT_EQ(Message(watch), want);
  }
  auto huge = List({{"resourceVersion", "18446744073709551616"}});
  EXPECT_EQ(huge.status, 400);
  EXPECT_EQ(Message(huge),
            "invalid resource version: resourceVersion: Invalid value: \"18446744073709551616\": "
            "strconv.ParseUint: parsing \"18446744073709551616\": value out of range");
  // Invalid UTF-8 is quoted as Go quotes it, and the body stays JSON.
  EXPECT_THAT(Message(List({{"resourceVersion", "\xff"}})), HasSubstr(R"(Invalid value: "\xff")"));
  for (const char* rv : {"", "0", "1", "007"}) {
    EXPECT_EQ(List({{"resourceVersion", rv}}).status, 200) << rv;
    EXPECT_EQ(Call("GET", pod, "", "", {{"resourceVersion", rv}}).status, 200) << rv;
  }
}

TEST_F(ListParamsTest, AResourceVersionAheadOfTheStoreIs504TooLarge) {
  ASSERT_EQ(Call("POST", kPods, PodJson("p")).status, 201);
  const int64_t current = store_->Revision();
  const std::string ahead = std::to_string(current + 5);
  const std::string want =
      fmt::format("Timeout: Too large resource version: {}, current: {}", current + 5, current);
  auto expect_too_large = [&](const HttpResponse& r) {
    EXPECT_EQ(r.status, 504) << r.body;
    json::value status = Body(r);
    EXPECT_EQ(status.at("reason").as_string(), "Timeout");
    EXPECT_EQ(status.at("message").as_string(), want);
    EXPECT_EQ(status.at("details").at("causes").at(0).at("reason").as_string(),
              "ResourceVersionTooLarge");
    EXPECT_EQ(status.at("details").at("causes").at(0).at("message").as_string(),
              "Too large resource version");
    EXPECT_EQ(status.at("details").at("retryAfterSeconds").as_int64(), 1);
    EXPECT_THAT(r.headers,
                ::testing::Contains(std::pair<std::string, std::string>("Retry-After", "1")));
  };
  expect_too_large(List({{"resourceVersion", ahead}}));
  expect_too_large(List({{"resourceVersion", ahead}, {"resourceVersionMatch", "NotOlderThan"}}));
  expect_too_large(List({{"resourceVersion", ahead}, {"resourceVersionMatch", "Exact"}}));
  expect_too_large(Call("GET", std::string(kPods) + "/p", "", "", {{"resourceVersion", ahead}}));
  EXPECT_EQ(List({{"resourceVersion", std::to_string(current)}}).status, 200);

  // A watch that lists first answers with an ERROR event; a plain watch waits for events after N.
  auto initial = List({{"watch", "true"},
                       {"sendInitialEvents", "true"},
                       {"resourceVersionMatch", "NotOlderThan"},
                       {"resourceVersion", ahead}});
  ASSERT_TRUE(initial.stream);
  RecordingSink sink;
  initial.stream(sink);
  json::value event = json::parse(sink.text);
  EXPECT_EQ(event.at("type").as_string(), "ERROR");
  EXPECT_EQ(event.at("object").at("code").as_int64(), 504);
  EXPECT_EQ(event.at("object").at("message").as_string(), want);
  auto plain = List(
      {{"watch", "true"}, {"resourceVersion", "18446744073709551615"}, {"timeoutSeconds", "1"}});
  ASSERT_TRUE(plain.stream);
  RecordingSink quiet;
  plain.stream(quiet);
  EXPECT_EQ(quiet.text, "");
}

TEST_F(ListParamsTest, ResourceVersionMatchAndSendInitialEventsAreCheckedAsKubeDoes) {
  struct Case {
    std::vector<std::pair<std::string, std::string>> query;
    std::string want;  // after `ListOptions.meta.k8s.io "" is invalid: `
  };
  const std::string unset =
      "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden "
      "unless resourceVersion is provided";
  const std::vector<Case> cases = {
      {{{"resourceVersionMatch", "NotOlderThan"}}, unset},
      {{{"resourceVersion", "0"}, {"resourceVersionMatch", "Exact"}},
       R"(resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for )"
       R"(resourceVersion "0")"},
      {{{"resourceVersion", "1"}, {"resourceVersionMatch", "Newest"}},
       R"(resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", )"
       R"("NotOlderThan", "")"},
      {{{"resourceVersionMatch", "Newest"}},
       "[" + unset +
           R"(, resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", )"
           R"("NotOlderThan", ""])"},
      {{{"resourceVersion", "1"}, {"resourceVersionMatch", "NotOlderThan"}, {"continue", "x"}},
       "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is "
       "provided"},
      {{{"sendInitialEvents", "true"}},
       "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"},
      {{{"watch", "true"}, {"sendInitialEvents", "true"}},
       "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch "
       "to NotOlderThan"},
      {{{"watch", "true"}, {"sendInitialEvents", "false"}},
       "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch "
       "to NotOlderThan"},
      {{{"watch", "true"}, {"resourceVersionMatch", "NotOlderThan"}},
       "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
       "sendInitialEvents is provided"},
      {{{"watch", "true"}, {"sendInitialEvents", "true"}, {"resourceVersionMatch", "Exact"}},
       "[resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
       "resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "
       R"("Exact": supported values: "NotOlderThan"])"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    auto r = List(c.query);
    EXPECT_FALSE(r.stream);
    ASSERT_EQ(r.status, 422) << r.body;
    json::value status = Body(r);
    EXPECT_EQ(status.at("reason").as_string(), "Invalid");
    EXPECT_EQ(status.at("details").at("kind").as_string(), "ListOptions");
    EXPECT_EQ(status.at("details").at("group").as_string(), "meta.k8s.io");
    EXPECT_EQ(status.at("message").as_string(),
              "ListOptions.meta.k8s.io \"\" is invalid: " + c.want);
  }
  const std::string rv = std::to_string(store_->Revision());
  EXPECT_EQ(List({{"resourceVersion", rv}, {"resourceVersionMatch", "NotOlderThan"}}).status, 200);
  EXPECT_EQ(List({{"resourceVersion", rv}, {"resourceVersionMatch", "Exact"}}).status, 200);
  // kube does not ask a watch-list for bookmarks.
  auto watch_list = List({{"watch", "true"},
                          {"sendInitialEvents", "true"},
                          {"resourceVersionMatch", "NotOlderThan"},
                          {"timeoutSeconds", "1"}});
  EXPECT_EQ(watch_list.status, 200);
  EXPECT_TRUE(watch_list.stream);
}

TEST_F(ListParamsTest, AnExactListIsServedWhileNothingOfItChangedSinceItsRevision) {
  ASSERT_EQ(Call("POST", kPods, PodJson("p0")).status, 201);
  const std::string at = std::to_string(store_->Revision());
  ASSERT_EQ(Call("POST", kQueues,
                 R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",)"
                 R"("metadata":{"name":"q"},"spec":{"weight":1}})")
                .status,
            201);
  ASSERT_GT(store_->Revision(), std::stoll(at));
  auto same = List({{"resourceVersion", at}, {"resourceVersionMatch", "Exact"}});
  ASSERT_EQ(same.status, 200) << same.body;
  EXPECT_EQ(Body(same).at("metadata").at("resourceVersion").as_string(), at);
  EXPECT_EQ(Body(same).at("items").as_array().size(), 1u);

  ASSERT_EQ(Call("POST", kPods, PodJson("p1")).status, 201);
  auto changed = List({{"resourceVersion", at}, {"resourceVersionMatch", "Exact"}});
  EXPECT_EQ(changed.status, 410);
  EXPECT_EQ(Body(changed).at("reason").as_string(), "Expired");
  EXPECT_EQ(Message(changed), "The resourceVersion for the provided list is too old.");
  // Other namespaces' pods are not this list's.
  auto elsewhere = List({{"resourceVersion", at}, {"resourceVersionMatch", "Exact"}},
                        "/api/v1/namespaces/kube-system/pods");
  EXPECT_EQ(elsewhere.status, 200) << elsewhere.body;
}

TEST_F(ListParamsTest, ContinueTokensAreDecodedAsKubeDoesAndOnlyThisServersListsAreTaken) {
  const std::string token = FirstPageToken();
  EXPECT_EQ(List({{"limit", "1"}, {"continue", token}}).status, 200);
  EXPECT_EQ(List({{"limit", "1"}, {"continue", token}, {"resourceVersion", "0"}}).status, 200);
  auto with_rv = List({{"continue", token}, {"resourceVersion", "3"}});
  EXPECT_EQ(with_rv.status, 400);
  EXPECT_EQ(Message(with_rv), "specifying resource version is not allowed when using continue");

  std::string decoded;
  ASSERT_TRUE(absl::WebSafeBase64Unescape(token, &decoded));
  json::object fields = json::parse(decoded).as_object();
  const int64_t rv = fields.at("rv").as_int64();
  struct Case {
    std::string token;
    std::string want;  // after "invalid continue token: continue key is not valid"
  };
  json::object moved = fields;
  moved["start"] = "default/p1";  // the signature of another start key
  json::object unsigned_token = fields;
  unsigned_token.erase("sig");  // what kube-apiserver issues
  const std::string forged = ": it was not issued by this server for this list";
  const std::vector<Case> cases = {
      {"garbage!", ": illegal base64 data at input byte 7"},
      {token + "=", fmt::format(": illegal base64 data at input byte {}", token.size())},
      {Token("not json"), ": the token is not a JSON object"},
      {Token(R"({"v":"meta.k8s.io/v2","rv":5,"start":"default/p0"})"),
       ": server does not recognize this encoded version meta.k8s.io/v2"},
      {Token(R"({"v":"meta.k8s.io/v1","rv":0,"start":"default/p0"})"),
       ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)"},
      {Token(R"({"v":"meta.k8s.io/v1","rv":5,"start":""})"),
       ": encoded start key empty (version meta.k8s.io/v1)"},
      {Token(fmt::format(R"({{"v":"meta.k8s.io/v1","rv":{},"start":"default/../x"}})", rv)),
       ": default/../x"},
      {Token(json::serialize(moved)), forged},
      {Token(json::serialize(unsigned_token)), forged},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.token);
    auto r = List({{"limit", "1"}, {"continue", c.token}});
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(Body(r).at("reason").as_string(), "BadRequest");
    EXPECT_EQ(Message(r), "invalid continue token: continue key is not valid" + c.want);
  }
  // A token is good for its own list only, and for the server that issued it.
  EXPECT_EQ(Message(List({{"continue", token}}, "/api/v1/pods")),
            "invalid continue token: continue key is not valid" + forged);
  EXPECT_EQ(Message(List({{"continue", token}}, "/api/v1/namespaces/default/configmaps")),
            "invalid continue token: continue key is not valid" + forged);
  Handlers other(*store_, HandlerOptions{});
  HttpRequest req;
  req.method = "GET";
  req.path = kPods;
  req.query = {{"continue", token}};
  EXPECT_EQ(other.Handle(req).status, 400);
}

TEST_F(ListParamsTest, SelectorsAreParsedAsKubeParsesThem) {
  ASSERT_EQ(Call("POST", kPods, PodJson("empty", R"({"a":""})")).status, 201);
  ASSERT_EQ(Call("POST", kPods, PodJson("five", R"({"a":"x","n":"5"})")).status, 201);
  struct Case {
    std::string label;
    std::string field;
    std::string want;
  };
  const std::vector<Case> refused = {
      {"=a", "", "found '=', expected: !, identifier, or 'end of string'"},
      {"a,", "", "found '', expected: identifier after ','"},
      {"a in (x", "", "unable to parse requirement: found '', expected: ',' or ')'"},
      {"a$b=c", "",
       "unable to parse requirement: <nil>: Invalid value: \"a$b\": name part must consist of "
       "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
       "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
      {"", "metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"},
      {"", "=x", "field label not supported: "},
      {"", "metadata.name=a=b", "invalid field selector: unescaped character in value: 61"},
  };
  for (const Case& c : refused) {
    SCOPED_TRACE(c.label + " | " + c.field);
    std::vector<std::pair<std::string, std::string>> query;
    if (!c.label.empty()) query.emplace_back("labelSelector", c.label);
    if (!c.field.empty()) query.emplace_back("fieldSelector", c.field);
    auto list = List(query);
    EXPECT_EQ(list.status, 400);
    EXPECT_EQ(Body(list).at("reason").as_string(), "BadRequest");
    EXPECT_EQ(Message(list), c.want);
    query.emplace_back("watch", "true");
    auto watch = List(query);
    EXPECT_EQ(watch.status, 400);
    EXPECT_EQ(Message(watch), c.want);
  }
  // What kube accepts: "()" is the empty value; Gt and Lt compare integers.
  auto names = [&](const std::string& selector) {
    auto list = List({{"labelSelector", selector}});
    EXPECT_EQ(list.status, 200) << list.body;
    json::value body = Body(list);
    std::vector<std::string> out;
    for (const auto& item : body.at("items").as_array()) {
      out.emplace_back(item.at("metadata").at("name").as_string());
    }
    return out;
  };
  EXPECT_EQ(names("a in ()"), std::vector<std::string>{"empty"});
  EXPECT_EQ(names("a notin ()"), std::vector<std::string>{"five"});
  EXPECT_EQ(names("n>4"), std::vector<std::string>{"five"});
  EXPECT_EQ(names("n<5"), std::vector<std::string>{});
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

// kube-apiserver reads a boolean query parameter as false for "0" and "false" in any case and
// true otherwise (apimachinery's Convert_Slice_string_To_bool): the Python client's `watch=True`
// is a watch, `watch=False` a list.
TEST_F(HandlersTest, WatchIsABooleanAsKubeReadsIt) {
  const std::string cms = "/api/v1/namespaces/default/configmaps";
  for (const char* yes : {"true", "True", "TRUE", "1", "t", ""}) {
    auto w = Call("GET", cms, "", "", {{"watch", yes}, {"timeoutSeconds", "1"}});
    EXPECT_TRUE(w.stream) << "watch=" << yes << ": " << w.body;
  }
  for (const char* no : {"false", "False", "FALSE", "0"}) {
    auto l = Call("GET", cms, "", "", {{"watch", no}});
    EXPECT_FALSE(l.stream) << "watch=" << no;
    EXPECT_EQ(l.status, 200) << l.body;
    EXPECT_THAT(l.body, HasSubstr("\"kind\":\"ConfigMapList\"")) << "watch=" << no;
  }
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
  EXPECT_TRUE(IsLongRunning(req("GET", "/api/v1/pods", {{"watch", "True"}})));
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
  // What `kubectl create namespace team-c` sends, as protobuf (kube's runtime.Unknown envelope).
  std::string body("k8s\0", 4);
  body += std::string("\x0a\x0f\x0a\x02v1\x12\x09Namespace", 17);
  body += std::string("\x12\x0e\x0a\x08\x0a\x06team-c\x12\x00\x1a\x00", 16);
  body += std::string("\x1a\x00\x22\x00", 4);
  auto r = Call("POST", "/api/v1/namespaces", body, "application/vnd.kubernetes.protobuf");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r).at("metadata").at("name").as_string(), "team-c");
  EXPECT_EQ(
      Call("POST", "/api/v1/namespaces", "k8s\0junk", "application/vnd.kubernetes.protobuf").status,
      400);
}

// --- 404 details, /openapi/v2, strategic merge for every built-in kind
// ----------------------------

TEST_F(HandlersTest, NotFoundNamesTheObjectAndAnUnknownPathHasEmptyDetails) {
  auto missing = Call("GET", std::string(kPods) + "/absent");
  ASSERT_EQ(missing.status, 404);
  EXPECT_EQ(Body(missing).at("details"), json::parse(R"({"name":"absent","kind":"pods"})"));
  auto job = Call("GET", std::string(kJobs) + "/absent");
  EXPECT_EQ(Body(job).at("details"),
            json::parse(R"({"name":"absent","group":"batch.volcano.sh","kind":"jobs"})"));
  // kube-apiserver's generic 404 carries `"details":{}`: `kubectl debug` reads details.name of
  // the 404 for pods/ephemeralcontainers (not served) to say ephemeral containers are disabled.
  ASSERT_EQ(Call("POST", kPods, PodJson("p")).status, 201);
  for (std::string path :
       {std::string(kPods) + "/p/ephemeralcontainers", std::string("/api/v1/frobs")}) {
    auto unknown = Call("PATCH", path, "{}", "application/strategic-merge-patch+json");
    ASSERT_EQ(unknown.status, 404) << path;
    EXPECT_EQ(Body(unknown).at("details"), json::object()) << path;
    EXPECT_EQ(Body(unknown).at("message").as_string(),
              "the server could not find the requested resource");
  }
}

TEST_F(HandlersTest, OpenApiV2IsServedAsJsonOrProtobufAsKubectlAsksForIt) {
  auto proto = Call("GET", "/openapi/v2", "", "", {},
                    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf");
  ASSERT_EQ(proto.status, 200);
  EXPECT_EQ(proto.content_type, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf");
  EXPECT_EQ(proto.body.substr(0, 5), std::string("\x0a\x03"
                                                 "2.0",
                                                 5));
  auto plain = Call("GET", "/openapi/v2", "", "", {}, "");
  ASSERT_EQ(plain.status, 200);
  EXPECT_EQ(Body(plain).at("swagger").as_string(), "2.0");
  EXPECT_EQ(Call("GET", "/openapi/v2", "", "", {}, "text/html").status, 406);
  EXPECT_EQ(Call("POST", "/openapi/v2").status, 405);
}

TEST_F(HandlersTest, StrategicMergePatchWorksOnEveryBuiltInKind) {
  ASSERT_EQ(Call("POST", "/api/v1/namespaces/default/configmaps",
                 R"({"metadata":{"name":"x"},"data":{"a":"1"}})")
                .status,
            201);
  auto cm = Call("PATCH", "/api/v1/namespaces/default/configmaps/x", R"({"data":{"k":"v"}})",
                 "application/strategic-merge-patch+json");
  ASSERT_EQ(cm.status, 200) << cm.body;
  EXPECT_EQ(Body(cm).at("data"), json::parse(R"({"a":"1","k":"v"})"));
  ASSERT_EQ(Call("POST", "/api/v1/namespaces/default/services",
                 R"({"metadata":{"name":"s"},"spec":{"ports":[{"name":"a","port":80},
                     {"name":"b","port":81}]}})")
                .status,
            201);
  auto svc = Call("PATCH", "/api/v1/namespaces/default/services/s",
                  R"({"spec":{"ports":[{"port":81,"targetPort":8081}]}})",
                  "application/strategic-merge-patch+json");
  ASSERT_EQ(svc.status, 200) << svc.body;
  EXPECT_EQ(Body(svc).at("spec").at("ports").as_array().size(), 2u);
  ASSERT_EQ(Call("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                 R"({"metadata":{"name":"high"},"value":1000})")
                .status,
            201);
  auto pc = Call("PATCH", "/apis/scheduling.k8s.io/v1/priorityclasses/high",
                 R"({"description":"d"})", "application/strategic-merge-patch+json");
  EXPECT_EQ(pc.status, 200) << pc.body;
  ASSERT_EQ(Call("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
                 R"({"metadata":{"name":"l"},"spec":{"holderIdentity":"a"}})")
                .status,
            201);
  auto lease = Call("PATCH", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l",
                    R"({"spec":{"holderIdentity":"b"}})", "application/strategic-merge-patch+json");
  EXPECT_EQ(lease.status, 200) << lease.body;
}

// --- Reviews
// ---------------------------------------------------------------------------------------

constexpr char kAccessReviews[] = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
constexpr char kRulesReviews[] = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
constexpr char kSubjectReviews[] = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

TEST_F(HandlersTest, AccessReviewsAreAllowedAndAnswerWithTheSpec) {
  // What `kubectl auth can-i create pods` sends (as JSON).
  auto r = Call("POST", kAccessReviews,
                R"({"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1",
                    "metadata":{"creationTimestamp":null},
                    "spec":{"resourceAttributes":{"namespace":"default","verb":"create",
                                                  "resource":"pods"}},"status":{"allowed":false}})");
  ASSERT_EQ(r.status, 201) << r.body;
  json::value body = Body(r);
  EXPECT_EQ(body.at("kind").as_string(), "SelfSubjectAccessReview");
  EXPECT_EQ(body.at("spec"), json::parse(R"({"resourceAttributes":{"namespace":"default",
                                                 "verb":"create","resource":"pods"}})"));
  EXPECT_TRUE(body.at("status").at("allowed").as_bool());
  EXPECT_FALSE(body.at("status").at("reason").as_string().empty());
  auto non_resource =
      Call("POST", kAccessReviews,
           R"({"spec":{"nonResourceAttributes":{"path":"/healthz","verb":"get"}}})");
  ASSERT_EQ(non_resource.status, 201) << non_resource.body;
  EXPECT_TRUE(Body(non_resource).at("status").at("allowed").as_bool());
  // Nothing is stored: a second review is answered the same.
  EXPECT_EQ(
      Call("POST", kAccessReviews, R"({"spec":{"resourceAttributes":{"verb":"get"}}})").status,
      201);
}

TEST_F(HandlersTest, AccessReviewsAreValidatedAsKubeDoes) {
  auto none = Call("POST", kAccessReviews, R"({"spec":{}})");
  ASSERT_EQ(none.status, 422);
  EXPECT_EQ(Body(none).at("message").as_string(),
            "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: "
            "spec.resourceAttributes: Invalid value: \"null\": exactly one of "
            "nonResourceAttributes or resourceAttributes must be specified");
  auto both = Call("POST", kAccessReviews,
                   R"({"spec":{"resourceAttributes":{"verb":"get"},
                               "nonResourceAttributes":{"path":"/x","verb":"get"}}})");
  ASSERT_EQ(both.status, 422);
  EXPECT_THAT(Body(both).at("message").as_string(),
              HasSubstr("spec.nonResourceAttributes: Invalid value: "
                        "authorization.NonResourceAttributes{Path:\"/x\", Verb:\"get\"}: cannot be "
                        "specified in combination with resourceAttributes"));
  auto named = Call("POST", kAccessReviews,
                    R"({"metadata":{"name":"x"},"spec":{"resourceAttributes":{"verb":"get"}}})");
  EXPECT_EQ(named.status, 422);
  EXPECT_THAT(Body(named).at("message").as_string(), HasSubstr("metadata: Invalid value"));
  auto wrong_kind = Call("POST", kAccessReviews, R"({"kind":"Pod","spec":{}})");
  EXPECT_EQ(wrong_kind.status, 400);
}

TEST_F(HandlersTest, RulesReviewListsEverythingForTheAdmin) {
  auto r = Call("POST", kRulesReviews, R"({"spec":{"namespace":"default"}})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r).at("status"),
            json::parse(R"({"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}],
                            "nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}],
                            "incomplete":false})"));
  auto no_namespace = Call("POST", kRulesReviews, R"({"spec":{}})");
  EXPECT_EQ(no_namespace.status, 400);
  EXPECT_EQ(Body(no_namespace).at("message").as_string(), "no namespace on request");
}

TEST_F(HandlersTest, SubjectReviewSaysWhoTheCallerIs) {
  auto r = Call("POST", kSubjectReviews, R"({"apiVersion":"authentication.k8s.io/v1",
                                            "kind":"SelfSubjectReview","metadata":{}})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Body(r).at("status").at("userInfo"), json::parse(R"({"username":"muster-admin",
                            "groups":["system:masters","system:authenticated"]})"));
  EXPECT_EQ(Body(r).at("metadata").at("creationTimestamp").as_string(), "2023-11-14T22:13:20Z");
}

TEST_F(HandlersTest, ReviewsServeOnlyTheCollectionsPost) {
  EXPECT_EQ(Call("GET", kAccessReviews).status, 405);
  EXPECT_EQ(Call("PUT", kSubjectReviews, "{}").status, 405);
  EXPECT_EQ(Call("GET", std::string(kRulesReviews) + "/x").status, 404);
  EXPECT_EQ(Call("POST",
                 "/apis/authorization.k8s.io/v1/namespaces/default/"
                 "selfsubjectaccessreviews",
                 R"({"spec":{"resourceAttributes":{"verb":"get"}}})")
                .status,
            404);
}

// --- pods/log ------------------------------------------------------------------------------------

class LogsTest : public HandlersTest {
 protected:
  static constexpr int64_t kNow = 1700000000;  // HandlersTest's clock
  static constexpr int64_t kStart = kNow - 100;

  static std::chrono::system_clock::time_point At(int64_t unix_seconds) {
    return std::chrono::system_clock::time_point(std::chrono::seconds(unix_seconds));
  }
  std::string LogPath(const std::string& pod) const {
    return dir_ + "/logs/default/" + pod + "/c.log";
  }
  // Pod `name` bound to node n, whose container c ran twice (`lastState` names the first run when
  // `restarted`): "a", "b" at kStart+1, +50; then "c", "d" at kStart+61, +90.
  void MakePod(const std::string& name, bool restarted) {
    ASSERT_EQ(Call("POST", kPods, PodJson(name)).status, 201);
    const std::string last =
        restarted ? R"(,"lastState":{"terminated":{"exitCode":1,"containerID":"muster://u-c-0"}})"
                  : "";
    auto status = Call("PATCH", std::string(kPods) + "/" + name + "/status",
                       fmt::format(R"({{"status":{{"containerStatuses":[{{"name":"c",
                           "containerID":"muster://u-c-1","state":{{"running":{{}}}}{}}}]}}}})",
                                   last),
                       "application/merge-patch+json");
    ASSERT_EQ(status.status, 200) << status.body;
    auto bound = Call("PATCH", std::string(kPods) + "/" + name, R"({"spec":{"nodeName":"n"}})",
                      "application/merge-patch+json");
    ASSERT_TRUE(bound.status == 200 || bound.status == 422) << bound.body;
    if (bound.status != 200) {
      ASSERT_EQ(Call("POST", std::string(kPods) + "/" + name + "/binding",
                     R"({"target":{"kind":"Node","name":"n"}})")
                    .status,
                201);
    }
    std::filesystem::create_directories(dir_ + "/logs/default/" + name);
    {
      auto first =
          common::ContainerLogWriter::Open(LogPath(name), true, "muster://u-c-0", At(kStart));
      ASSERT_TRUE(first.ok());
      ASSERT_TRUE(first->Append("a\n", At(kStart + 1)).ok());
      ASSERT_TRUE(first->Append("b\n", At(kStart + 50)).ok());
    }
    auto second =
        common::ContainerLogWriter::Open(LogPath(name), false, "muster://u-c-1", At(kStart + 60));
    ASSERT_TRUE(second.ok());
    ASSERT_TRUE(second->Append("c\n", At(kStart + 61)).ok());
    ASSERT_TRUE(second->Append("d\n", At(kStart + 90)).ok());
  }
  HttpResponse Logs(const std::string& pod,
                    std::vector<std::pair<std::string, std::string>> query = {}) {
    return Call("GET", std::string(kPods) + "/" + pod + "/log", "", "", std::move(query), "*/*");
  }
};

TEST_F(LogsTest, TheCurrentRunAndWithPreviousTheOneBefore) {
  MakePod("p", /*restarted=*/true);
  EXPECT_EQ(Logs("p").body, "c\nd\n");
  EXPECT_EQ(Logs("p", {{"previous", "true"}}).body, "a\nb\n");
  EXPECT_EQ(Logs("p", {{"previous", "true"}, {"tailLines", "1"}}).body, "b\n");
}

TEST_F(LogsTest, PreviousWithoutAnEarlierRunIs400AsKubelet) {
  MakePod("p", /*restarted=*/false);
  auto r = Logs("p", {{"previous", "true"}});
  ASSERT_EQ(r.status, 400);
  EXPECT_EQ(Body(r).at("message").as_string(),
            "previous terminated container \"c\" in pod \"p\" not found");
  // A pod on no node has no logs at all yet, an earlier run's neither.
  ASSERT_EQ(Call("POST", kPods, PodJson("pending")).status, 201);
  auto pending = Logs("pending", {{"previous", "true"}});
  EXPECT_EQ(pending.status, 200);
  EXPECT_EQ(pending.body, "");
}

TEST_F(LogsTest, TimestampsSinceTailAndLimit) {
  MakePod("p", /*restarted=*/true);
  EXPECT_EQ(Logs("p", {{"timestamps", "true"}}).body,
            "2023-11-14T22:12:41.000000000Z c\n2023-11-14T22:13:10.000000000Z d\n");
  EXPECT_EQ(Logs("p", {{"sinceSeconds", "20"}}).body, "d\n");  // since kNow-20 = kStart+80
  EXPECT_EQ(Logs("p", {{"sinceTime", "2023-11-14T22:12:41Z"}}).body, "c\nd\n");
  EXPECT_EQ(Logs("p", {{"sinceTime", "2023-11-14T22:12:42Z"}}).body, "d\n");
  EXPECT_EQ(Logs("p", {{"tailLines", "1"}}).body, "d\n");
  EXPECT_EQ(Logs("p", {{"tailLines", "0"}}).body, "");
  EXPECT_EQ(Logs("p", {{"limitBytes", "3"}}).body, "c\nd");
  // The limit counts the timestamps too.
  EXPECT_EQ(Logs("p", {{"timestamps", "1"}, {"limitBytes", "12"}}).body, "2023-11-14T2");
  EXPECT_EQ(Logs("p", {{"timestamps", "true"}, {"previous", "true"}, {"sinceSeconds", "60"}}).body,
            "2023-11-14T22:12:30.000000000Z b\n");
}

TEST_F(LogsTest, BadOptionsAre400WhenTheyDoNotDecodeAnd422WhenInvalid) {
  MakePod("p", /*restarted=*/true);
  const auto message = [&](std::vector<std::pair<std::string, std::string>> query) {
    auto r = Logs("p", std::move(query));
    return fmt::format("{} {}", r.status, Body(r).at("message").as_string());
  };
  EXPECT_EQ(message({{"limitBytes", "-1"}}),
            "422 PodLogOptions \"p\" is invalid: limitBytes: Invalid value: -1: must be greater "
            "than 0");
  EXPECT_EQ(message({{"tailLines", "-2"}}),
            "422 PodLogOptions \"p\" is invalid: tailLines: Invalid value: -2: must be greater "
            "than or equal to 0");
  EXPECT_EQ(message({{"sinceSeconds", "0"}}),
            "422 PodLogOptions \"p\" is invalid: sinceSeconds: Invalid value: 0: must be greater "
            "than 0");
  EXPECT_EQ(message({{"sinceSeconds", "5"}, {"sinceTime", "2023-11-14T22:12:02Z"}}),
            "422 PodLogOptions \"p\" is invalid: : Forbidden: at most one of `sinceTime` or "
            "`sinceSeconds` may be specified");
  EXPECT_EQ(message({{"limitBytes", "0"}, {"tailLines", "-1"}}),
            "422 PodLogOptions \"p\" is invalid: [tailLines: Invalid value: -1: must be greater "
            "than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]");
  EXPECT_EQ(message({{"sinceTime", "yesterday"}}),
            "400 parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse "
            "\"yesterday\" as \"2006\"");
  EXPECT_EQ(message({{"tailLines", "ten"}}),
            "400 strconv.ParseInt: parsing \"ten\": invalid syntax");
  // Options come before the pod: a missing pod with bad options is 400 too.
  auto absent = Logs("absent", {{"limitBytes", "x"}});
  EXPECT_EQ(absent.status, 400);
  EXPECT_EQ(Logs("absent").status, 404);
}

TEST_F(LogsTest, ALogWithoutAnIndexIsOneRunOfUnknownTimes) {
  ASSERT_EQ(Call("POST", kPods, PodJson("plain")).status, 201);
  std::filesystem::create_directories(dir_ + "/logs/default/plain");
  std::ofstream(LogPath("plain")) << "one\ntwo\n";
  EXPECT_EQ(Logs("plain").body, "one\ntwo\n");
  EXPECT_EQ(Logs("plain", {{"tailLines", "1"}}).body, "two\n");
  // Such lines are timed by the file's modification time.
  EXPECT_THAT(Logs("plain", {{"timestamps", "true"}}).body,
              ::testing::MatchesRegex("[0-9-]+T[0-9:]+\\.[0-9]{9}Z one\n[0-9-]+T[0-9:.]+Z two\n"));
}

TEST_F(LogsTest, AFollowedLogIsTimedAsItGrowsAndEndsAtItsLimit) {
  MakePod("p", /*restarted=*/true);
  auto r = Logs("p", {{"follow", "true"}, {"timestamps", "true"}, {"limitBytes", "103"}});
  ASSERT_TRUE(r.stream);
  RecordingSink sink;
  std::thread streaming([&] { r.stream(sink); });  // returns once 103 bytes are sent
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  {
    auto writer = common::ContainerLogWriter::Open(LogPath("p"), false, "muster://u-c-2", At(kNow));
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->Append("e\nmore than the limit\n", At(kNow + 1)).ok());
  }
  streaming.join();
  EXPECT_EQ(sink.text,
            "2023-11-14T22:12:41.000000000Z c\n2023-11-14T22:13:10.000000000Z d\n"
            "2023-11-14T22:13:21.000000000Z e\n2023");  // the next line's timestamp, cut
}

}  // namespace
}  // namespace muster::apiserver
