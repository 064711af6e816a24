// RecordUpdateText (managed_fields.h) against RecordUpdate: for every write, the text it hands
// the store is byte for byte what RecordUpdate records, serialised, so that a state stored through
// either is the same text. The writes are a pod's life as `muster up` writes it (a controller
// creates it, a node agent writes its status again and again, another manager takes a field, a
// label is removed), the cases the field-ownership rules name (managed_fields.h), and a seeded
// random walk of updates by four managers.

#include <algorithm>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "api/managed_fields.h"
#include "api/testing/json.h"
#include "boost/json/serialize.hpp"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

namespace json = boost::json;
using test::Json;

FieldManager TextUpdater(std::string name, std::string subresource = "") {
  FieldManager who;
  who.manager = std::move(name);
  who.api_version = "v1";
  who.subresource = std::move(subresource);
  who.status_is_subresource = true;
  return who;
}

// A stored state: the object without its ownership, and the ownership as the store's text.
struct TextState {
  json::object object;
  std::string managed;  // "" for none
};

// `whole` as the store keeps it.
TextState KeptApart(json::object whole) {
  TextState s;
  json::value& meta = whole["metadata"];
  if (const json::value* managed = meta.as_object().if_contains("managedFields")) {
    s.managed = json::serialize(*managed);
    meta.as_object().erase("managedFields");
  }
  s.object = std::move(whole);
  return s;
}

// The update by `who` from `live` to `next` through both: RecordUpdate on the ownership parsed,
// RecordUpdateText on its text. Expects the same bytes; returns the new stored state.
TextState WriteBoth(const TextState& live, json::object next, const FieldManager& who, std::string_view now,
             std::string_view kind = "Pod") {
  json::object by_value = next;
  const std::optional<json::value> stored = ParseManagedFieldsText(live.managed);
  RecordUpdate(live.object, stored ? &*stored : nullptr, by_value, kind, who, now);
  const json::value* recorded = by_value.at("metadata").as_object().if_contains("managedFields");
  const std::string expected = recorded != nullptr ? json::serialize(*recorded) : "";
  const std::string text = RecordUpdateText(live.object, live.managed, next, kind, who, now);
  EXPECT_EQ(text, expected) << "write by " << who.manager << " at " << now;
  return TextState{std::move(next), text};
}

json::object& Member(json::object& o, std::string_view key) {
  json::value& v = o[key];
  if (!v.is_object()) v.emplace_object();
  return v.as_object();
}

const json::object kPodForText = Json(R"({"apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"job-worker-0","namespace":"ns","labels":{"app":"job","role":"worker"},
      "annotations":{"scheduling.k8s.io/group-name":"job"},
      "ownerReferences":[{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","name":"job",
        "uid":"u-1","controller":true}]},
    "spec":{"schedulerName":"volcano","containers":[{"name":"main","image":"busybox",
      "ports":[{"containerPort":80,"protocol":"TCP"}],
      "resources":{"limits":{"nvidia.com/gpu":1}},"env":[{"name":"A","value":"1"}]}],
      "tolerations":[{"key":"k","operator":"Exists"}]},
    "status":{"phase":"Pending"}})").as_object();

TEST(ManagedFieldsTextTest, APodsLifeStoresTheOwnershipRecordUpdateRecords) {
  const FieldManager controller = TextUpdater("muster");
  const FieldManager agent = TextUpdater("muster", "status");
  const FieldManager kubectl = TextUpdater("kubectl-label");

  // Created: one entry with every field the controller set.
  TextState pod = WriteBoth(TextState{}, kPodForText, controller, "T1");
  ASSERT_FALSE(pod.managed.empty());

  // The node agent's first status: a new entry of its own.
  json::object next = pod.object;
  Member(next, "status")["phase"] = "Running";
  Member(next, "status")["podIP"] = "10.0.0.1";
  pod = WriteBoth(pod, next, agent, "T2");

  // Written again by its owner, changed: its time moves, the controller's entry keeps its text.
  const std::string before = pod.managed;
  next = pod.object;
  Member(next, "status")["podIP"] = "10.0.0.2";
  pod = WriteBoth(pod, next, agent, "T3");
  EXPECT_NE(pod.managed, before);
  EXPECT_NE(pod.managed.find("T3"), std::string::npos);

  // Written again unchanged: the stored text, as it is.
  const std::string unchanged = pod.managed;
  pod = WriteBoth(pod, pod.object, agent, "T4");
  EXPECT_EQ(pod.managed, unchanged);

  // A field its entry does not own yet joins it.
  next = pod.object;
  Member(next, "status")["startTime"] = "T5";
  next["status"].as_object()["containerStatuses"] =
      Json(R"([{"name":"main","ready":true,"state":{"running":{"startedAt":"T5"}}}])");
  pod = WriteBoth(pod, next, agent, "T5");

  // Another manager takes a label the controller set, and removes another.
  next = pod.object;
  Member(Member(next, "metadata"), "labels")["app"] = "relabelled";
  Member(Member(next, "metadata"), "labels").erase("role");
  pod = WriteBoth(pod, next, kubectl, "T6");

  // The garbage collector's change of metadata (no field of the writer's): the owner reference
  // leaves the controller's entry.
  next = pod.object;
  Member(next, "metadata").erase("ownerReferences");
  pod = WriteBoth(pod, next, controller, "T7");

  // The spec changed by its creator: the container's image.
  next = pod.object;
  next["spec"].as_object()["containers"].as_array()[0].as_object()["image"] = "busybox:2";
  pod = WriteBoth(pod, next, controller, "T8");

  // Another manager removes a container port the controller owns: the port leaves its entry.
  next = pod.object;
  next["spec"].as_object()["containers"].as_array()[0].as_object().erase("ports");
  pod = WriteBoth(pod, next, kubectl, "T9");

  // The status taken over by a second status writer, whole: the agent's entry is left empty and
  // goes.
  next = pod.object;
  next["status"] = Json(R"({"phase":"Failed","podIP":"x","startTime":"y","containerStatuses":[]})");
  pod = WriteBoth(pod, next, TextUpdater("other", "status"), "T10");
}

TEST(ManagedFieldsTextTest, StoredOwnershipThatDoesNotReadCountsAsNone) {
  const FieldManager who = TextUpdater("muster");
  json::object live = Json(R"({"metadata":{"name":"c"},"data":{"a":"1"}})").as_object();
  json::object next = live;
  Member(next, "data")["a"] = "2";
  for (std::string_view stored :
       {R"([{"manager":"m","operation":"Nope","fieldsType":"FieldsV1","fieldsV1":{}}])",
        R"([{"manager":"m","operation":"Update","fieldsType":"FieldsV2","fieldsV1":{}}])", R"([1])",
        R"({"not":"a list"})", R"("text")"}) {
    WriteBoth(TextState{live, std::string(stored)}, next, who, "T1", "ConfigMap");
    WriteBoth(TextState{live, std::string(stored)}, live, who, "T1", "ConfigMap");
  }
  // An entry left with no fields goes, even when the write changes nothing.
  WriteBoth(TextState{live, R"([{"manager":"m","operation":"Update","apiVersion":"v1","time":"T0",)"
                     R"("fieldsType":"FieldsV1","fieldsV1":{}}])"},
        live, who, "T1", "ConfigMap");
}

TEST(ManagedFieldsTextTest, AnApplierAndAnUpdaterShareAFieldUntilTheUpdaterChangesIt) {
  json::object live = Json(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},
      "data":{"a":"1","b":"2"}})").as_object();
  RecordUpdate(json::object(), live, "ConfigMap", TextUpdater("editor"), "T1");
  absl::StatusOr<OwnedApply> applied = ApplyWithOwnership(
      json::value(live), Json(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},
          "data":{"a":"1"}})"),
      "ConfigMap", FieldManager{.manager = "applier",
                                .apply = true,
                                .api_version = "v1",
                                .subresource = "",
                                .status_is_subresource = false}, false,
      "T2");
  ASSERT_TRUE(applied.ok()) << applied.status();
  TextState cm = KeptApart(applied->object.as_object());
  json::object next = cm.object;
  Member(next, "data")["b"] = "3";
  cm = WriteBoth(cm, next, TextUpdater("editor"), "T3", "ConfigMap");
  next = cm.object;
  Member(next, "data")["a"] = "4";
  cm = WriteBoth(cm, next, TextUpdater("editor"), "T4", "ConfigMap");
  EXPECT_EQ(cm.managed.find("applier"), std::string::npos) << cm.managed;
}

// Four managers (two of the main resource, two of /status) change, add and remove fields of a
// pod at random, 400 writes from one seed; every write stores the same bytes both ways.
TEST(ManagedFieldsTextTest, ARandomWalkOfUpdatesStoresTheSameBytesBothWays) {
  const std::vector<FieldManager> managers = {TextUpdater("muster"), TextUpdater("kubectl"),
                                              TextUpdater("muster", "status"),
                                              TextUpdater("kubelet", "status")};
  std::mt19937 random(16);
  TextState pod = WriteBoth(TextState{}, kPodForText, managers[0], "T0");
  for (int step = 1; step <= 400; ++step) {
    const FieldManager& who = managers[random() % managers.size()];
    json::object next = pod.object;
    const bool status = who.subresource == "status";
    json::object& target = status ? Member(next, "status") : Member(Member(next, "metadata"), "labels");
    const std::string key = std::string(status ? "s" : "l") + std::to_string(random() % 5);
    switch (random() % 4) {
      case 0:
        target.erase(key);
        break;
      case 1:
        target[key] = json::object{{"v", static_cast<int64_t>(random() % 3)}};
        break;
      case 2:
        break;  // written again as it is
      default:
        target[key] = static_cast<int64_t>(random() % 3);
        break;
    }
    if (!status && random() % 4 == 0) {
      json::object& container =
          next["spec"].as_object()["containers"].as_array()[0].as_object();
      // The image, or an element of the env list (keyed by name) set, changed or removed.
      if (random() % 2 == 0) {
        container["image"] = "busybox:" + std::to_string(random() % 3);
      } else {
        json::array& env = container["env"].as_array();
        const std::string name = "E" + std::to_string(random() % 3);
        auto it = std::find_if(env.begin(), env.end(), [&](const json::value& e) {
          return e.at("name") == json::string(name);
        });
        if (it != env.end() && random() % 2 == 0) {
          env.erase(it);
        } else if (it != env.end()) {
          it->as_object()["value"] = std::to_string(random() % 3);
        } else {
          env.push_back(json::object{{"name", name}, {"value", "0"}});
        }
      }
    }
    pod = WriteBoth(pod, std::move(next), who, "T" + std::to_string(step));
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace muster::api
