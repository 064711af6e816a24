// CustomResourceDefinitions and the custom resources they make the API server serve, through the
// REST handlers over a real store (as handlers_test.cc): what a CRD's author and its users see
// through kubectl: the CRD's validation and status, discovery, OpenAPI and tables, every verb on
// the custom resources, their schema's pruning, defaults and validation, the status and scale
// subresources, garbage collection, the CRD's deletion, and a restart.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/descriptors/crds.h"
#include "apiserver/handlers.h"
#include "apiserver/testing/handlers_fixture.h"
#include "apiserver/lifecycle.h"
#include "apiserver/resource_registry.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver {
namespace {

using ::testing::HasSubstr;

namespace json = boost::json;

class CollectingSink : public StreamSink {
 public:
  bool Write(std::string_view data) override {
    text.append(data);
    return true;
  }
  bool Cancelled() override { return false; }
  std::string text;
};

constexpr char kCrds[] = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
constexpr char kWidgets[] = "/apis/example.com/v1/namespaces/default/widgets";
constexpr char kTable[] = "application/json;as=Table;v=v1;g=meta.k8s.io";

// A namespaced Widget with a structural schema, a short name, printer columns and the status and
// scale subresources; `versions` replaces its one version when given.
std::string WidgetCrd(std::string_view versions = "") {
  const std::string v1 = R"([{"name":"v1","served":true,"storage":true,
    "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas",
                                         "statusReplicasPath":".status.replicas"}},
    "additionalPrinterColumns":[{"name":"Size","type":"string","jsonPath":".spec.size"},
                                {"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}],
    "schema":{"openAPIV3Schema":{"type":"object","properties":{
      "spec":{"type":"object","description":"What the widget should be.","required":["size"],
        "properties":{
          "size":{"type":"string","enum":["small","large"]},
          "replicas":{"type":"integer","minimum":0,"maximum":10,"default":1},
          "label":{"type":"string","pattern":"^[a-z]+$","maxLength":8},
          "port":{"x-kubernetes-int-or-string":true},
          "note":{"type":"string","nullable":true},
          "extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
      "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}])";
  return fmt::format(R"({{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
    "metadata":{{"name":"widgets.example.com"}},
    "spec":{{"group":"example.com","scope":"Namespaced",
      "names":{{"plural":"widgets","kind":"Widget","shortNames":["wd"],"categories":["all"]}},
      "versions":{}}}}})",
                     versions.empty() ? v1 : std::string(versions));
}

std::string Widget(std::string_view name, std::string_view spec) {
  return fmt::format(R"({{"apiVersion":"example.com/v1","kind":"Widget",)"
                     R"("metadata":{{"name":"{}"}},"spec":{}}})",
                     name, spec);
}

class CustomResourcesTest : public testing::HandlersFixture {
 protected:
  void CreateWidgetCrd() {
    HttpResponse r = Call("POST", kCrds, WidgetCrd());
    ASSERT_EQ(r.status, 201) << r.body;
  }
  // Lifecycle passes until nothing more changes (deletion goes in steps).
  void Settle() {
    Lifecycle lifecycle(*store_);
    for (int i = 0; i < 5; ++i) lifecycle.RunOnce(1700000000);
  }
};

std::vector<std::string> CauseFields(const json::value& status) {
  std::vector<std::string> fields;
  for (const json::value& c : status.at("details").at("causes").as_array()) {
    fields.emplace_back(c.at("field").as_string());
  }
  return fields;
}

TEST_F(CustomResourcesTest, ACrdIsEstablishedAtOnceAndItsKindDiscovered) {
  HttpResponse created = Call("POST", kCrds, WidgetCrd());
  ASSERT_EQ(created.status, 201) << created.body;
  const json::value crd = Body(created);
  const json::object& status = crd.at("status").as_object();
  EXPECT_EQ(status.at("acceptedNames").at("singular"), "widget");  // defaulted from the kind
  EXPECT_EQ(status.at("acceptedNames").at("listKind"), "WidgetList");
  EXPECT_EQ(status.at("storedVersions"), json::array{"v1"});
  std::map<std::string, std::string> conditions;
  for (const json::value& c : status.at("conditions").as_array()) {
    conditions[std::string(c.at("type").as_string())] = c.at("status").as_string();
  }
  EXPECT_EQ(conditions["NamesAccepted"], "True");
  EXPECT_EQ(conditions["Established"], "True");

  HttpResponse discovery = Call("GET", "/apis/example.com/v1");
  ASSERT_EQ(discovery.status, 200) << discovery.body;
  EXPECT_THAT(discovery.body, HasSubstr(R"("name":"widgets")"));
  EXPECT_THAT(discovery.body, HasSubstr(R"("shortNames":["wd"])"));
  EXPECT_THAT(discovery.body, HasSubstr(R"("name":"widgets/scale")"));
  // kubectl get crd: NAME, CREATED AT.
  json::value table = Body(Call("GET", kCrds, "", "", {}, kTable));
  EXPECT_EQ(table.at("columnDefinitions").as_array()[1].at("name"), "Created At");
}

TEST_F(CustomResourcesTest, AMalformedCrdIsRefusedNamingTheFieldAndNothingIsStored) {
  std::string bad = WidgetCrd(R"([{"name":"v1","served":true,"storage":true,
    "schema":{"openAPIV3Schema":{"type":"object","properties":{
      "x":{"type":"strin"},"y":{"properties":{"a":{"type":"string"}}}}}}}])");
  HttpResponse r = Call("POST", kCrds, bad);
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_THAT(CauseFields(Body(r)),
              ::testing::UnorderedElementsAre(
                  "spec.versions[0].schema.openAPIV3Schema.properties[x].type",
                  "spec.versions[0].schema.openAPIV3Schema.properties[y].type"));
  EXPECT_THAT(r.body, HasSubstr("must not be empty for specified object fields"));

  std::string two_storage = WidgetCrd(R"([
    {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}},
    {"name":"v2","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}])");
  r = Call("POST", kCrds, two_storage);
  ASSERT_EQ(r.status, 422);
  EXPECT_THAT(r.body, HasSubstr("must have exactly one version marked as storage version"));

  std::string misnamed = WidgetCrd();
  misnamed.replace(misnamed.find("widgets.example.com"), 19, "gadgets.example.com");
  r = Call("POST", kCrds, misnamed);
  ASSERT_EQ(r.status, 422);
  EXPECT_THAT(r.body, HasSubstr(R"(must be spec.names.plural+\".\"+spec.group)"));

  EXPECT_EQ(Call("GET", std::string(kCrds) + "/widgets.example.com").status, 404);
  EXPECT_EQ(Call("GET", kWidgets).status, 404);
}

TEST_F(CustomResourcesTest, ACrdMayNotRedefineWhatMusterServesButVolcanosOwnCrdsApply) {
  HttpResponse r = Call("POST", kCrds, R"({"apiVersion":"apiextensions.k8s.io/v1",
    "kind":"CustomResourceDefinition","metadata":{"name":"leases.coordination.k8s.io",
      "annotations":{"api-approved.kubernetes.io":"https://example.com"}},
    "spec":{"group":"coordination.k8s.io","scope":"Namespaced",
      "names":{"plural":"leases","kind":"Lease"},
      "versions":[{"name":"v2","served":true,"storage":true,
                   "schema":{"openAPIV3Schema":{"type":"object"}}}]}})");
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_THAT(r.body, HasSubstr("is a built-in resource that muster serves"));

  // `kubectl apply -f deploy/crds/`: the CRDs of the Volcano kinds muster serves itself.
  for (const json::value& crd : CustomResourceDefinitions()) {
    HttpResponse stored = Call("POST", kCrds, json::serialize(crd));
    ASSERT_EQ(stored.status, 201) << stored.body;
  }
  // Still muster's own queues: deleting the CRD leaves the default queue alone.
  ASSERT_EQ(Call("DELETE", std::string(kCrds) + "/queues.scheduling.volcano.sh").status, 200);
  Settle();
  EXPECT_EQ(Call("GET", std::string(kCrds) + "/queues.scheduling.volcano.sh").status, 404);
  EXPECT_EQ(Call("GET", "/apis/scheduling.volcano.sh/v1beta1/queues/default").status, 200);

  // A CRD giving a Volcano kind another kind is refused.
  std::string renamed = json::serialize(CustomResourceDefinitions()[0]);
  renamed.replace(renamed.find(R"("kind":"Job")"), 12, R"("kind":"Work")");
  r = Call("PUT", std::string(kCrds) + "/jobs.batch.volcano.sh", renamed);
  EXPECT_EQ(r.status, 422) << r.body;
}

TEST_F(CustomResourcesTest, ASecondCrdWithAKindInUseIsNotEstablished) {
  CreateWidgetCrd();
  HttpResponse r = Call("POST", kCrds, R"({"apiVersion":"apiextensions.k8s.io/v1",
    "kind":"CustomResourceDefinition","metadata":{"name":"gizmos.example.com"},
    "spec":{"group":"example.com","scope":"Namespaced",
      "names":{"plural":"gizmos","singular":"gizmo","kind":"Widget"},
      "versions":[{"name":"v1","served":true,"storage":true,
                   "schema":{"openAPIV3Schema":{"type":"object"}}}]}})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_THAT(r.body, HasSubstr(R"("reason":"KindConflict")"));
  EXPECT_THAT(r.body, HasSubstr(R"(\"Widget\" is already in use)"));
  EXPECT_EQ(Call("GET", "/apis/example.com/v1/namespaces/default/gizmos").status, 404);
}

TEST_F(CustomResourcesTest, CustomResourcesArePrunedDefaultedAndValidated) {
  CreateWidgetCrd();
  HttpResponse r =
      Call("POST", kWidgets,
           Widget("w1", R"({"size":"small","bogus":1,"port":"http","extra":{"any":[1]}})"));
  ASSERT_EQ(r.status, 201) << r.body;
  const json::value w = Body(r);
  EXPECT_EQ(w.at("spec").at("replicas"), 1);            // the default
  EXPECT_FALSE(w.at("spec").as_object().contains("bogus"));  // pruned
  EXPECT_EQ(w.at("spec").at("extra").at("any"), json::array{1});  // preserved
  EXPECT_THAT(r.headers, ::testing::Contains(::testing::Pair("Warning",
                                                             HasSubstr("spec.bogus"))));
  // fieldValidation=Strict (kubectl's default) refuses the unknown field instead.
  r = Call("POST", kWidgets, Widget("w2", R"({"size":"small","bogus":1})"), "application/json",
           {{"fieldValidation", "Strict"}});
  EXPECT_EQ(r.status, 422);
  EXPECT_THAT(r.body, HasSubstr(R"(unknown field \"spec.bogus\")"));

  r = Call("POST", kWidgets,
           Widget("bad", R"({"size":"huge","replicas":"three","label":"Bad","port":true,
                             "note":null})"));
  ASSERT_EQ(r.status, 422) << r.body;
  const json::value refused = Body(r);
  EXPECT_THAT(std::string(refused.at("message").as_string()),
              HasSubstr(R"(Widget.example.com "bad" is invalid)"));
  EXPECT_THAT(r.body, HasSubstr(R"(spec.replicas: Invalid value: \"string\": spec.replicas in )"
                                R"(body must be of type integer: \"string\")"));
  EXPECT_THAT(r.body, HasSubstr(R"(spec.size: Unsupported value: \"huge\": supported values: )"
                                R"(\"small\", \"large\")"));
  EXPECT_THAT(r.body, HasSubstr(R"(spec.label in body should match '^[a-z]+$')"));
  EXPECT_THAT(r.body, HasSubstr("spec.port"));
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("spec.note")));  // nullable
  r = Call("POST", kWidgets, Widget("bad", R"({"replicas":11})"));
  ASSERT_EQ(r.status, 422);
  EXPECT_THAT(CauseFields(Body(r)), ::testing::UnorderedElementsAre("spec.size", "spec.replicas"));
  EXPECT_THAT(r.body, HasSubstr("spec.replicas in body should be less than or equal to 10"));
  EXPECT_EQ(Call("GET", std::string(kWidgets) + "/bad").status, 404);
}

TEST_F(CustomResourcesTest, EveryVerbKubectlUses) {
  CreateWidgetCrd();
  ASSERT_EQ(Call("POST", "/api/v1/namespaces",
                 R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}})")
                .status,
            201);
  ASSERT_EQ(Call("POST", kWidgets, Widget("a", R"({"size":"small"})")).status, 201);
  std::string labelled = Widget("b", R"({"size":"large"})");
  labelled.replace(labelled.find(R"("name":"b")"), 10, R"("name":"b","labels":{"tier":"x"})");
  ASSERT_EQ(Call("POST", kWidgets, labelled).status, 201);
  ASSERT_EQ(Call("POST", "/apis/example.com/v1/namespaces/team/widgets",
                 Widget("c", R"({"size":"small"})"))
                .status,
            201);

  json::value all = Body(Call("GET", "/apis/example.com/v1/widgets"));
  EXPECT_EQ(all.at("kind"), "WidgetList");
  EXPECT_EQ(all.at("items").as_array().size(), 3u);
  EXPECT_EQ(Body(Call("GET", kWidgets)).at("items").as_array().size(), 2u);

  json::value a = Body(Call("GET", std::string(kWidgets) + "/a"));
  a.at("spec").as_object()["size"] = "large";
  HttpResponse put = Call("PUT", std::string(kWidgets) + "/a", json::serialize(a));
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(Body(put).at("metadata").at("generation"), 2);

  HttpResponse merge = Call("PATCH", std::string(kWidgets) + "/a", R"({"spec":{"replicas":4}})",
                            "application/merge-patch+json");
  ASSERT_EQ(merge.status, 200) << merge.body;
  EXPECT_EQ(Body(merge).at("spec").at("replicas"), 4);
  HttpResponse json_patch =
      Call("PATCH", std::string(kWidgets) + "/a",
           R"([{"op":"replace","path":"/spec/replicas","value":5}])",
           "application/json-patch+json");
  ASSERT_EQ(json_patch.status, 200) << json_patch.body;
  EXPECT_EQ(Body(json_patch).at("spec").at("replicas"), 5);
  // Field ownership, as for other kinds.
  EXPECT_THAT(json::serialize(Body(json_patch).at("metadata").at("managedFields")),
              HasSubstr("f:replicas"));
  EXPECT_EQ(Call("PATCH", std::string(kWidgets) + "/a", R"({"spec":{"replicas":6}})",
                 "application/strategic-merge-patch+json")
                .status,
            415);
  HttpResponse too_many = Call("PATCH", std::string(kWidgets) + "/a", R"({"spec":{"replicas":60}})",
                               "application/merge-patch+json");
  EXPECT_EQ(too_many.status, 422);

  HttpResponse collection = Call("DELETE", kWidgets, "", "", {{"labelSelector", "tier=x"}});
  ASSERT_EQ(collection.status, 200) << collection.body;
  EXPECT_EQ(Body(collection).at("items").as_array().size(), 1u);
  EXPECT_EQ(Call("GET", std::string(kWidgets) + "/b").status, 404);
  EXPECT_EQ(Call("GET", std::string(kWidgets) + "/a").status, 200);
  EXPECT_EQ(Call("DELETE", std::string(kWidgets) + "/a").status, 200);
  EXPECT_EQ(Call("GET", std::string(kWidgets) + "/a").status, 404);
}

TEST_F(CustomResourcesTest, StatusAndScaleSubresources) {
  CreateWidgetCrd();
  ASSERT_EQ(Call("POST", kWidgets, Widget("w", R"({"size":"small","replicas":2})")).status, 201);
  // The main resource leaves status alone; /status changes only status.
  json::value w = Body(Call("GET", std::string(kWidgets) + "/w"));
  w.as_object()["status"] = json::object{{"replicas", 2}};
  ASSERT_EQ(Call("PUT", std::string(kWidgets) + "/w", json::serialize(w)).status, 200);
  EXPECT_FALSE(Body(Call("GET", std::string(kWidgets) + "/w")).as_object().contains("status"));
  HttpResponse status = Call("PATCH", std::string(kWidgets) + "/w/status",
                             R"({"status":{"replicas":2},"spec":{"replicas":9}})",
                             "application/merge-patch+json");
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_EQ(Body(status).at("status").at("replicas"), 2);
  EXPECT_EQ(Body(status).at("spec").at("replicas"), 2);

  json::value scale = Body(Call("GET", std::string(kWidgets) + "/w/scale"));
  EXPECT_EQ(scale.at("kind"), "Scale");
  EXPECT_EQ(scale.at("apiVersion"), "autoscaling/v1");
  EXPECT_EQ(scale.at("spec").at("replicas"), 2);
  EXPECT_EQ(scale.at("status").at("replicas"), 2);
  // kubectl scale: a merge patch of the Scale.
  HttpResponse scaled = Call("PATCH", std::string(kWidgets) + "/w/scale",
                             R"({"spec":{"replicas":7}})", "application/merge-patch+json");
  ASSERT_EQ(scaled.status, 200) << scaled.body;
  EXPECT_EQ(Body(scaled).at("spec").at("replicas"), 7);
  EXPECT_EQ(Body(Call("GET", std::string(kWidgets) + "/w")).at("spec").at("replicas"), 7);
  // The schema still holds: past its maximum.
  EXPECT_EQ(Call("PATCH", std::string(kWidgets) + "/w/scale", R"({"spec":{"replicas":70}})",
                 "application/merge-patch+json")
                .status,
            422);
}

TEST_F(CustomResourcesTest, TablesOpenApiAndWatch) {
  CreateWidgetCrd();
  ASSERT_EQ(Call("POST", kWidgets, Widget("w", R"({"size":"large"})")).status, 201);
  json::value table = Body(Call("GET", kWidgets, "", "", {}, kTable));
  std::vector<std::string> headers;
  for (const json::value& c : table.at("columnDefinitions").as_array()) {
    headers.emplace_back(c.at("name").as_string());
  }
  EXPECT_EQ(headers, (std::vector<std::string>{"Name", "Size", "Replicas"}));
  EXPECT_EQ(table.at("rows").as_array()[0].at("cells"), (json::array{"w", "large", 1}));

  // kubectl explain widget.spec reads the group-version's OpenAPI v3 document.
  HttpResponse index = Call("GET", "/openapi/v3");
  EXPECT_THAT(index.body, HasSubstr("apis/example.com/v1"));
  HttpResponse doc = Call("GET", "/openapi/v3/apis/example.com/v1");
  ASSERT_EQ(doc.status, 200);
  const json::value schema =
      Body(doc).at("components").at("schemas").at("com.example.v1.Widget");
  EXPECT_EQ(schema.at("properties").at("spec").at("description"), "What the widget should be.");
  EXPECT_EQ(schema.at("x-kubernetes-group-version-kind").as_array()[0].at("kind"), "Widget");

  // A watch from the list's resourceVersion sees a later change.
  const json::value list = Body(Call("GET", kWidgets));
  const std::string rv(list.at("metadata").at("resourceVersion").as_string());
  ASSERT_EQ(Call("PATCH", std::string(kWidgets) + "/w", R"({"spec":{"size":"small"}})",
                 "application/merge-patch+json")
                .status,
            200);
  HttpResponse watch = Call("GET", kWidgets, "", "",
                            {{"watch", "true"}, {"resourceVersion", rv}, {"timeoutSeconds", "1"}});
  ASSERT_TRUE(watch.stream);
  CollectingSink sink;
  watch.stream(sink);
  EXPECT_THAT(sink.text, HasSubstr(R"("type":"MODIFIED")"));
  EXPECT_THAT(sink.text, HasSubstr(R"("size":"small")"));
}

TEST_F(CustomResourcesTest, ServedVersionsShareOneStoredObject) {
  const std::string schema = R"("schema":{"openAPIV3Schema":{"type":"object",)"
                             R"("x-kubernetes-preserve-unknown-fields":true}})";
  const std::string versions =
      fmt::format(R"([{{"name":"v1beta1","served":true,"storage":false,{0}}},)"
                  R"({{"name":"v1","served":true,"storage":true,{0}}}])",
                  schema);
  HttpResponse r = Call("POST", kCrds, WidgetCrd(versions));
  ASSERT_EQ(r.status, 201) << r.body;
  std::string old = Widget("w", R"({"size":"small"})");
  old.replace(old.find("example.com/v1"), 14, "example.com/v1beta1");
  HttpResponse created = Call("POST", "/apis/example.com/v1beta1/namespaces/default/widgets", old);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(Body(created).at("apiVersion"), "example.com/v1beta1");
  EXPECT_EQ(Body(Call("GET", std::string(kWidgets) + "/w")).at("apiVersion"), "example.com/v1");
  json::value list = Body(Call("GET", "/apis/example.com/v1beta1/namespaces/default/widgets"));
  EXPECT_EQ(list.at("items").as_array()[0].at("apiVersion"), "example.com/v1beta1");
  // The group prefers its newest version.
  EXPECT_THAT(Call("GET", "/apis/example.com").body,
              HasSubstr(R"("preferredVersion":{"groupVersion":"example.com/v1")"));
}

TEST_F(CustomResourcesTest, CustomResourcesAreOwnersAndDependentsForGarbageCollection) {
  CreateWidgetCrd();
  HttpResponse owner = Call("POST", kWidgets, Widget("owner", R"({"size":"small"})"));
  ASSERT_EQ(owner.status, 201);
  const std::string uid(Body(owner).at("metadata").at("uid").as_string());
  const std::string ref = fmt::format(
      R"("ownerReferences":[{{"apiVersion":"example.com/v1","kind":"Widget","name":"owner",)"
      R"("uid":"{}"}}])",
      uid);
  std::string dependent = Widget("dependent", R"({"size":"small"})");
  dependent.replace(dependent.find(R"("name":"dependent")"), 18,
                    R"("name":"dependent",)" + ref);
  ASSERT_EQ(Call("POST", kWidgets, dependent).status, 201);
  ASSERT_EQ(Call("POST", "/api/v1/namespaces/default/configmaps",
                 fmt::format(R"({{"apiVersion":"v1","kind":"ConfigMap",)"
                             R"("metadata":{{"name":"cm",{}}}}})",
                             ref))
                .status,
            201);
  Settle();  // the owner is there: nothing goes
  EXPECT_EQ(Call("GET", std::string(kWidgets) + "/dependent").status, 200);
  ASSERT_EQ(Call("DELETE", std::string(kWidgets) + "/owner").status, 200);
  Settle();
  EXPECT_EQ(Call("GET", std::string(kWidgets) + "/dependent").status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/default/configmaps/cm").status, 404);
}

TEST_F(CustomResourcesTest, DeletingTheCrdDeletesItsResourcesAndStopsServingThem) {
  CreateWidgetCrd();
  ASSERT_EQ(Call("POST", kWidgets, Widget("w", R"({"size":"small"})")).status, 201);
  HttpResponse deleted = Call("DELETE", std::string(kCrds) + "/widgets.example.com");
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_THAT(deleted.body, HasSubstr("customresourcecleanup.apiextensions.k8s.io"));
  EXPECT_THAT(deleted.body, HasSubstr(R"("type":"Terminating")"));
  // Terminating: still read, no longer created in.
  EXPECT_EQ(Call("GET", std::string(kWidgets) + "/w").status, 200);
  HttpResponse refused = Call("POST", kWidgets, Widget("late", R"({"size":"small"})"));
  EXPECT_EQ(refused.status, 405);
  EXPECT_THAT(refused.body, HasSubstr("terminating"));

  Settle();
  EXPECT_EQ(Call("GET", std::string(kCrds) + "/widgets.example.com").status, 404);
  EXPECT_EQ(Call("GET", kWidgets).status, 404);
  EXPECT_TRUE(store_->List("widgets.example.com", "").items.empty());
  EXPECT_THAT(Call("GET", "/apis").body, ::testing::Not(HasSubstr("example.com")));
}

// An operator's CRD holds a pod template in its schema: its JSON nests far deeper than Boost's
// default limit of 32, as do such objects. Both are taken, stored, and read back after a restart.
TEST_F(CustomResourcesTest, DeepSchemasAndObjectsAreTakenAndSurviveARestart) {
  std::string schema = R"({"type":"string"})";
  std::string object = R"("leaf")";
  for (int i = 0; i < 30; ++i) {
    schema = fmt::format(R"({{"type":"object","properties":{{"f":{}}}}})", schema);
    object = fmt::format(R"({{"f":{}}})", object);
  }
  std::string crd = WidgetCrd(fmt::format(
      R"([{{"name":"v1","served":true,"storage":true,"schema":{{"openAPIV3Schema":)"
      R"({{"type":"object","properties":{{"spec":{}}}}}}}}}])",
      schema));
  HttpResponse r = Call("POST", kCrds, crd);
  ASSERT_EQ(r.status, 201) << r.body;
  r = Call("POST", kWidgets, Widget("deep", object));
  ASSERT_EQ(r.status, 201) << r.body;
  Close();
  Open();
  EXPECT_TRUE(store_->Damaged().empty());
  r = Call("GET", std::string(kWidgets) + "/deep");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr(R"("f":"leaf")"));
}

TEST_F(CustomResourcesTest, WhatIsServedIsRebuiltFromTheStoreAfterARestart) {
  CreateWidgetCrd();
  ASSERT_EQ(Call("POST", kWidgets, Widget("w", R"({"size":"small"})")).status, 201);
  Close();
  Open();
  HttpResponse got = Call("GET", std::string(kWidgets) + "/w");
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(Call("POST", kWidgets, Widget("v", R"({"size":"medium"})")).status, 422);
}

// The first requests of a fresh server come at once from many threads (informers starting): every
// one gets what is served, none the empty snapshot of a rebuild another thread has begun (which
// crashed the handlers once, under load).
TEST(ResourceRegistryTest, CallsRacingTheFirstRebuildAllGetTheSnapshot) {
  char pattern[] = "/tmp/muster-registry-XXXXXX";
  const std::string dir = ::mkdtemp(pattern);
  auto store = store::Store::Open(dir + "/store.db");
  ASSERT_TRUE(store.ok()) << store.status();
  for (int round = 0; round < 50; ++round) {
    ResourceRegistry registry(**store);
    std::atomic<int> missing{0};
    std::vector<std::thread> callers;
    for (int i = 0; i < 8; ++i) {
      callers.emplace_back([&] {
        std::shared_ptr<const ServedResources> current = registry.Current();
        if (current == nullptr || current->resources == nullptr) ++missing;
      });
    }
    for (std::thread& t : callers) t.join();
    ASSERT_EQ(missing.load(), 0) << "round " << round;
  }
  store->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace muster::apiserver
