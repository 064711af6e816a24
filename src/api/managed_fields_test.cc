#include "api/managed_fields.h"

#include <optional>
#include <string>
#include <string_view>

#include "api/testing/json.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

namespace json = boost::json;
using json::value;

using test::Json;

FieldManager Applier(std::string name) {
  FieldManager who;
  who.manager = std::move(name);
  who.apply = true;
  who.api_version = "v1";
  return who;
}

FieldManager Updater(std::string name) {
  FieldManager who = Applier(std::move(name));
  who.apply = false;
  return who;
}

value ConfigMap(std::string_view data) {
  return Json(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":)" +
              std::string(data) + "}");
}

// The object after an apply that must go through without conflicts.
value Applied(const value& live, const value& config, const FieldManager& who, bool force = false,
              std::string_view kind = "ConfigMap") {
  absl::StatusOr<OwnedApply> owned = ApplyWithOwnership(live, config, kind, who, force, "T1");
  EXPECT_TRUE(owned.ok()) << owned.status();
  if (!owned.ok()) return value();
  if (!force) {
    EXPECT_TRUE(owned->conflicts.empty()) << owned->conflicts.size();
  }
  return owned->object;
}

const value& Managed(const value& object) { return object.at("metadata").at("managedFields"); }

// manager's entry's fieldsV1, serialized; "" when it has none.
std::string FieldsOf(const value& object, std::string_view manager, std::string_view operation) {
  const value* meta = object.as_object().if_contains("metadata");
  const value* managed = meta ? meta->as_object().if_contains("managedFields") : nullptr;
  if (managed == nullptr) return "";
  for (const value& e : managed->as_array()) {
    if (e.at("manager") == json::string(manager) && e.at("operation") == json::string(operation)) {
      return json::serialize(e.at("fieldsV1"));
    }
  }
  return "";
}

TEST(ManagedFieldsTest, AnApplyCreatesAnApplyEntryOwningWhatTheConfigurationSets) {
  value cm = Applied(value(), ConfigMap(R"({"a":"1"})"), Applier("manager-a"));
  EXPECT_EQ(cm.at("data"), Json(R"({"a":"1"})"));
  EXPECT_EQ(Managed(cm), Json(R"([{"manager":"manager-a","operation":"Apply","apiVersion":"v1",
      "time":"T1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}])"));
}

TEST(ManagedFieldsTest, TwoManagersOwnTheirOwnFieldsAndAChangeToTheOthersIsAConflict) {
  value cm = Applied(value(), ConfigMap(R"({"a":"1"})"), Applier("manager-a"));
  cm = Applied(cm, ConfigMap(R"({"b":"2"})"), Applier("manager-b"));
  EXPECT_EQ(cm.at("data"), Json(R"({"a":"1","b":"2"})"));
  EXPECT_EQ(FieldsOf(cm, "manager-a", "Apply"), R"({"f:data":{"f:a":{}}})");
  EXPECT_EQ(FieldsOf(cm, "manager-b", "Apply"), R"({"f:data":{"f:b":{}}})");

  absl::StatusOr<OwnedApply> refused = ApplyWithOwnership(
      cm, ConfigMap(R"({"a":"3","b":"2"})"), "ConfigMap", Applier("manager-b"), false, "T2");
  ASSERT_TRUE(refused.ok());
  ASSERT_EQ(refused->conflicts.size(), 1u);
  EXPECT_EQ(refused->conflicts[0].manager, R"("manager-a")");
  EXPECT_EQ(refused->conflicts[0].field, ".data.a");
  EXPECT_EQ(refused->object, cm);  // nothing changed
  EXPECT_EQ(ConflictMessage(refused->conflicts),
            R"(Apply failed with 1 conflict: conflict with "manager-a": .data.a)");

  value forced = Applied(cm, ConfigMap(R"({"a":"3","b":"2"})"), Applier("manager-b"), true);
  EXPECT_EQ(forced.at("data"), Json(R"({"a":"3","b":"2"})"));
  EXPECT_EQ(FieldsOf(forced, "manager-b", "Apply"), R"({"f:data":{"f:a":{},"f:b":{}}})");
  // manager-a owned only data.a: its entry is gone.
  EXPECT_EQ(FieldsOf(forced, "manager-a", "Apply"), "");
  EXPECT_EQ(Managed(forced).as_array().size(), 1u);
}

TEST(ManagedFieldsTest, ApplyingTheValueAFieldHasSharesItWithoutConflict) {
  value cm = Applied(value(), ConfigMap(R"({"a":"1"})"), Applier("manager-a"));
  cm = Applied(cm, ConfigMap(R"({"a":"1"})"), Applier("manager-b"));
  EXPECT_EQ(FieldsOf(cm, "manager-a", "Apply"), R"({"f:data":{"f:a":{}}})");
  EXPECT_EQ(FieldsOf(cm, "manager-b", "Apply"), R"({"f:data":{"f:a":{}}})");
  // A drops data.a: B still owns it, so it stays.
  cm = Applied(cm, ConfigMap(R"({"z":"9"})"), Applier("manager-a"));
  EXPECT_EQ(cm.at("data"), Json(R"({"a":"1","z":"9"})"));
  // B drops it too: no one owns it, so it goes.
  cm = Applied(cm, ConfigMap(R"({})"), Applier("manager-b"));
  EXPECT_EQ(cm.at("data"), Json(R"({"z":"9"})"));
}

TEST(ManagedFieldsTest, AFieldDroppedFromTheConfigurationIsRemovedButOthersFieldsStay) {
  value cm = Applied(value(), ConfigMap(R"({"a":"1","c":"3"})"), Applier("manager-a"));
  cm.at("data").as_object()["d"] = "4";  // set by someone who owns nothing
  cm = Applied(cm, ConfigMap(R"({"a":"1"})"), Applier("manager-a"));
  EXPECT_EQ(cm.at("data"), Json(R"({"a":"1","d":"4"})"));
  EXPECT_EQ(FieldsOf(cm, "manager-a", "Apply"), R"({"f:data":{"f:a":{}}})");
}

TEST(ManagedFieldsTest, AnUnchangedApplyLeavesTheObjectAsItWas) {
  value cm = Applied(value(), ConfigMap(R"({"a":"1"})"), Applier("manager-a"));
  absl::StatusOr<OwnedApply> again = ApplyWithOwnership(cm, ConfigMap(R"({"a":"1"})"), "ConfigMap",
                                                        Applier("manager-a"), false, "T9");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->object, cm);  // the time stays T1
}

TEST(ManagedFieldsTest, KeyedListElementsAreOwnedFieldByField) {
  const value pod_a = Json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
      "spec":{"containers":[{"name":"main","image":"x"}]}})");
  value pod = Applied(value(), pod_a, Applier("manager-a"), false, "Pod");
  EXPECT_EQ(
      FieldsOf(pod, "manager-a", "Apply"),
      R"({"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:name":{}}}}})");
  const value env_b = Json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
      "spec":{"containers":[{"name":"main","env":[{"name":"RANK","value":"0"}]}]}})");
  pod = Applied(pod, env_b, Applier("manager-b"), false, "Pod");
  EXPECT_EQ(pod.at("spec").at("containers"),
            Json(R"([{"name":"main","image":"x","env":[{"name":"RANK","value":"0"}]}])"));

  const value image_b = Json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
      "spec":{"containers":[{"name":"main","image":"y"}]}})");
  absl::StatusOr<OwnedApply> refused =
      ApplyWithOwnership(pod, image_b, "Pod", Applier("manager-b"), false, "T2");
  ASSERT_TRUE(refused.ok());
  ASSERT_EQ(refused->conflicts.size(), 1u);
  EXPECT_EQ(refused->conflicts[0].field, R"(.spec.containers[name="main"].image)");
}

TEST(ManagedFieldsTest, AnUpdateTakesTheFieldsItChangesAndThenAnApplyConflictsWithIt) {
  value cm = Applied(value(), ConfigMap(R"({"a":"1","b":"2"})"), Applier("kubectl"));
  json::object next = cm.as_object();
  next["data"].as_object()["a"] = "edited";
  RecordUpdate(cm.as_object(), next, "ConfigMap", Updater("kubectl-edit"), "T2");
  const value edited(next);
  EXPECT_EQ(FieldsOf(edited, "kubectl-edit", "Update"), R"({"f:data":{"f:a":{}}})");
  EXPECT_EQ(FieldsOf(edited, "kubectl", "Apply"), R"({"f:data":{"f:b":{}}})");

  // Re-applying the old value is a change of kubectl-edit's field now.
  absl::StatusOr<OwnedApply> refused = ApplyWithOwnership(
      edited, ConfigMap(R"({"a":"1","b":"2"})"), "ConfigMap", Applier("kubectl"), false, "T3");
  ASSERT_TRUE(refused.ok());
  ASSERT_EQ(refused->conflicts.size(), 1u);
  EXPECT_EQ(refused->conflicts[0].manager, R"("kubectl-edit" using v1)");
}

TEST(ManagedFieldsTest, ACreateRecordsEveryFieldAndAnUnchangedUpdateTouchesNothing) {
  json::object created = ConfigMap(R"({"a":"1"})").as_object();
  created["metadata"].as_object()["labels"] = Json(R"({"app":"x"})");
  RecordUpdate(json::object(), created, "ConfigMap", Updater("kubectl-create"), "T1");
  EXPECT_EQ(FieldsOf(value(created), "kubectl-create", "Update"),
            R"({"f:data":{"f:a":{}},"f:metadata":{"f:labels":{"f:app":{}}}})");

  json::object same = created;
  same["metadata"].as_object()["resourceVersion"] = "7";  // server-owned: no one's field
  RecordUpdate(created, same, "ConfigMap", Updater("someone-else"), "T2");
  EXPECT_EQ(same.at("metadata").at("managedFields"), created.at("metadata").at("managedFields"));

  json::object removed = created;
  removed["data"].as_object().erase("a");
  RecordUpdate(created, removed, "ConfigMap", Updater("kubectl-edit"), "T3");
  // data.a is gone from every entry; labels remain kubectl-create's.
  EXPECT_EQ(FieldsOf(value(removed), "kubectl-create", "Update"),
            R"({"f:metadata":{"f:labels":{"f:app":{}}}})");
}

TEST(ManagedFieldsTest, ManagedFieldsSentWithAnUpdateReplaceTheStoredOnes) {
  value cm = Applied(value(), ConfigMap(R"({"a":"1"})"), Applier("manager-a"));
  json::object cleared = cm.as_object();
  cleared["metadata"].as_object()["managedFields"] = Json("[{}]");
  RecordUpdate(cm.as_object(), cleared, "ConfigMap", Updater("reset"), "T2");
  EXPECT_FALSE(cleared.at("metadata").as_object().contains("managedFields"));

  json::object kept = cm.as_object();
  kept["metadata"].as_object().erase("managedFields");  // absent: the stored ones stay
  RecordUpdate(cm.as_object(), kept, "ConfigMap", Updater("other"), "T2");
  EXPECT_EQ(kept.at("metadata").at("managedFields"), Managed(cm));

  json::object nulled = cm.as_object();
  nulled["metadata"].as_object()["managedFields"] = nullptr;
  RecordUpdate(cm.as_object(), nulled, "ConfigMap", Updater("other"), "T2");
  EXPECT_EQ(nulled.at("metadata").at("managedFields"), Managed(cm));
}

TEST(ManagedFieldsTest, StoredManagedFieldsThatDoNotDecodeCountAsNone) {
  value cm = ConfigMap(R"({"a":"1"})");
  cm.at("metadata").as_object()["managedFields"] = Json(R"([{"manager":"x","operation":"Bogus"}])");
  value applied = Applied(cm, ConfigMap(R"({"a":"2"})"), Applier("manager-a"));
  EXPECT_EQ(applied.at("data").at("a"), "2");
  EXPECT_EQ(Managed(applied).as_array().size(), 1u);
  EXPECT_EQ(FieldsOf(applied, "manager-a", "Apply"), R"({"f:data":{"f:a":{}}})");
}

TEST(ManagedFieldsTest, StatusBelongsToTheStatusSubresourceOnly) {
  const value job = Json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
      "spec":{"nodeName":"n1"},"status":{"phase":"Pending"}})");
  FieldManager main = Applier("kubectl");
  main.status_is_subresource = true;
  value applied = Applied(value(), job, main, false, "Pod");
  EXPECT_EQ(FieldsOf(applied, "kubectl", "Apply"), R"({"f:spec":{"f:nodeName":{}}})");

  json::object next = applied.as_object();
  next["status"] = Json(R"({"phase":"Running"})");
  next["spec"].as_object()["nodeName"] = "ignored-by-status";
  FieldManager kubelet = Updater("kubelet");
  kubelet.subresource = "status";
  RecordUpdate(applied.as_object(), next, "Pod", kubelet, "T2");
  const value& entry = next.at("metadata").at("managedFields").at(1);
  EXPECT_EQ(entry.at("subresource"), "status");
  EXPECT_EQ(json::serialize(entry.at("fieldsV1")), R"({"f:status":{"f:phase":{}}})");
}

// The write paths keep a stored state and its field ownership apart (the store's parsed state
// leaves managedFields out): the entries a write does not touch are written back as stored, and
// RecordUpdate says whether ownership changed.
TEST(ManagedFieldsTest, AnUpdateFromAStateKeptApartFromItsOwnershipSaysWhetherItChanged) {
  const value pod = Json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
      "spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Pending"}})");
  FieldManager creator = Updater("creator");
  creator.status_is_subresource = true;
  json::object created = pod.as_object();
  RecordUpdate(json::object(), created, "Pod", creator, "T1");
  const value stored = created.at("metadata").at("managedFields");
  json::object live = created;
  live["metadata"].as_object().erase("managedFields");

  FieldManager kubelet = Updater("kubelet");
  kubelet.subresource = "status";
  kubelet.status_is_subresource = true;
  json::object running = live;
  running["status"].as_object()["phase"] = "Running";
  EXPECT_TRUE(RecordUpdate(live, &stored, running, "Pod", kubelet, "T2"));
  const json::array& entries = running.at("metadata").at("managedFields").as_array();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0], stored.at(0));
  EXPECT_EQ(json::serialize(entries[1].at("fieldsV1")), R"({"f:status":{"f:phase":{}}})");
  EXPECT_EQ(entries[1].at("time"), "T2");

  // Nothing owned changes: the stored ownership comes back, and RecordUpdate says so.
  json::object same = live;
  same["metadata"].as_object()["resourceVersion"] = "9";
  EXPECT_FALSE(RecordUpdate(live, &stored, same, "Pod", kubelet, "T3"));
  EXPECT_EQ(same.at("metadata").at("managedFields"), stored);

  // A field removed from the spec leaves the entry that owned it.
  json::object bare = live;
  bare["spec"].as_object()["containers"].as_array()[0].as_object().erase("image");
  EXPECT_TRUE(RecordUpdate(live, &stored, bare, "Pod", Updater("editor"), "T4"));
  EXPECT_EQ(FieldsOf(value(bare), "creator", "Update"),
            R"({"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:name":{}}}}})");
}

// Most writes are a manager writing again the fields it owns (a node agent's pod status): the
// other entries stay as stored and only the writer's time moves. A write that takes a field from
// another manager, or removes one another owns, changes their entries as any update does.
TEST(ManagedFieldsTest, AManagerRewritingItsOwnFieldsMovesOnlyItsTime) {
  const value pod = Json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
      "spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Pending"}})");
  FieldManager creator = Updater("creator");
  creator.status_is_subresource = true;
  FieldManager kubelet = Updater("kubelet");
  kubelet.subresource = "status";
  kubelet.status_is_subresource = true;
  FieldManager other = kubelet;
  other.manager = "other";

  // A write from `live` (kept without its ownership, `stored`) to `next` by `who`; the result
  // with its managedFields.
  auto write = [](const json::object& whole, const FieldManager& who, std::string_view now,
                  auto change) {
    json::object live = whole;
    const value stored = live["metadata"].as_object()["managedFields"];
    live["metadata"].as_object().erase("managedFields");
    json::object next = live;
    change(next);
    RecordUpdate(live, stored.is_null() ? nullptr : &stored, next, "Pod", who, now);
    return next;
  };
  auto status = [](json::object& o) -> json::object& { return o["status"].as_object(); };

  json::object created = pod.as_object();
  RecordUpdate(json::object(), created, "Pod", creator, "T1");
  json::object running = write(created, kubelet, "T2", [&](json::object& o) {
    status(o)["phase"] = "Running";
  });
  json::object done = write(running, kubelet, "T3", [&](json::object& o) {
    status(o)["phase"] = "Succeeded";
  });
  const json::array& before = running.at("metadata").at("managedFields").as_array();
  const json::array& after = done.at("metadata").at("managedFields").as_array();
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0], before[0]);
  EXPECT_EQ(after[1].at("time"), "T3");
  EXPECT_EQ(json::serialize(after[1].at("fieldsV1")), R"({"f:status":{"f:phase":{}}})");

  // A new field joins the writer's entry.
  json::object with_ip = write(done, kubelet, "T4", [&](json::object& o) {
    status(o)["podIP"] = "10.0.0.1";
  });
  EXPECT_EQ(FieldsOf(value(with_ip), "kubelet", "Update"),
            R"({"f:status":{"f:phase":{},"f:podIP":{}}})");

  // Another manager takes podIP and adds a message: the kubelet keeps the phase alone.
  json::object taken = write(with_ip, other, "T5", [&](json::object& o) {
    status(o)["podIP"] = "10.0.0.2";
    status(o)["message"] = "moved";
  });
  EXPECT_EQ(FieldsOf(value(taken), "kubelet", "Update"), R"({"f:status":{"f:phase":{}}})");
  EXPECT_EQ(FieldsOf(value(taken), "other", "Update"),
            R"({"f:status":{"f:message":{},"f:podIP":{}}})");

  // The kubelet rewrites its phase and removes what the other owns: that entry goes.
  json::object cleared = write(taken, kubelet, "T6", [&](json::object& o) {
    status(o)["phase"] = "Failed";
    status(o).erase("podIP");
    status(o).erase("message");
  });
  EXPECT_EQ(FieldsOf(value(cleared), "other", "Update"), "");
  EXPECT_EQ(FieldsOf(value(cleared), "kubelet", "Update"), R"({"f:status":{"f:phase":{}}})");
  EXPECT_EQ(cleared.at("metadata").at("managedFields").as_array().size(), 2u);
}

// A field an updater shares with an applier (the applier set the value it had) is the updater's
// alone once the updater changes it again.
TEST(ManagedFieldsTest, AnUpdateOfASharedFieldTakesItFromTheOtherOwner) {
  json::object live = ConfigMap(R"({"a":"1"})").as_object();
  RecordUpdate(json::object(), live, "ConfigMap", Updater("editor"), "T1");
  value shared = Applied(value(live), ConfigMap(R"({"a":"1"})"), Applier("applier"));
  EXPECT_EQ(FieldsOf(shared, "applier", "Apply"), R"({"f:data":{"f:a":{}}})");
  EXPECT_EQ(FieldsOf(shared, "editor", "Update"), R"({"f:data":{"f:a":{}}})");

  json::object whole = shared.as_object();
  json::object live_part = whole;
  const value stored = live_part["metadata"].as_object()["managedFields"];
  live_part["metadata"].as_object().erase("managedFields");
  json::object next = live_part;
  next["data"].as_object()["a"] = "2";
  EXPECT_TRUE(RecordUpdate(live_part, &stored, next, "ConfigMap", Updater("editor"), "T2"));
  EXPECT_EQ(FieldsOf(value(next), "applier", "Apply"), "");
  EXPECT_EQ(FieldsOf(value(next), "editor", "Update"), R"({"f:data":{"f:a":{}}})");
}

TEST(ManagedFieldsTest, SeveralConflictsAreListedByManager) {
  EXPECT_EQ(ConflictMessage({{R"("b")", ".data.x"}, {R"("a")", ".data.y"}, {R"("a")", ".data.z"}}),
            "Apply failed with 3 conflicts: conflicts with \"a\":\n- .data.y\n- .data.z\n"
            "conflicts with \"b\":\n- .data.x");
}

TEST(ManagedFieldsTest, TheDefaultManagerIsTheUserAgentsProduct) {
  EXPECT_EQ(ManagerFromUserAgent("kubectl/v1.32.0 (linux/amd64) kubernetes/abc"), "kubectl");
  EXPECT_EQ(ManagerFromUserAgent("python-requests"), "python-requests");
  EXPECT_EQ(ManagerFromUserAgent(""), "");
  EXPECT_EQ(ManagerFromUserAgent(std::string(300, 'x')).size(), 128u);
}

TEST(ManagedFieldsTest, SetListsOwnTheirValues) {
  const value cm = Json(R"({"apiVersion":"v1","kind":"ConfigMap",
      "metadata":{"name":"s","finalizers":["a.io/x"]}})");
  value applied = Applied(value(), cm, Applier("manager-a"));
  EXPECT_EQ(FieldsOf(applied, "manager-a", "Apply"),
            R"({"f:metadata":{"f:finalizers":{"v:\"a.io/x\"":{}}}})");
}

TEST(ManagedFieldsTest, WithoutManagedFieldsCopiesAllButTheOwnership) {
  value cm = Json(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},
      "data":{"a":"1"}})");
  RecordUpdate(json::object(), cm.as_object(), "ConfigMap", Updater("kubectl-create"), "T1");
  ASSERT_TRUE(cm.at("metadata").as_object().contains("managedFields"));
  const json::object copy = WithoutManagedFields(cm.as_object());
  EXPECT_EQ(json::serialize(copy),
            R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},"data":{"a":"1"}})");
  EXPECT_TRUE(cm.at("metadata").as_object().contains("managedFields"));  // the original keeps them
  const value plain = Json(R"({"kind":"ConfigMap","metadata":"not an object"})");
  EXPECT_EQ(WithoutManagedFields(plain.as_object()), plain.as_object());
}

TEST(ManagedFieldsTest, ManagedFieldsInTextReadsMetadataMembersAlone) {
  value cm = Json(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},
      "data":{"managedFields":"not this one"}})");
  RecordUpdate(json::object(), cm.as_object(), "ConfigMap", Updater("kubectl-create"), "T1");
  const std::string text = json::serialize(cm);
  const std::optional<value> managed = ManagedFieldsInText(text);
  ASSERT_TRUE(managed.has_value());
  EXPECT_EQ(*managed, cm.at("metadata").at("managedFields"));

  // None, or nothing that is a stored object: nullopt, never the same word elsewhere.
  EXPECT_EQ(ManagedFieldsInText(R"({"metadata":{"name":"s"},"data":{"managedFields":"x"}})"),
            std::nullopt);
  EXPECT_EQ(ManagedFieldsInText(R"({"managedFields":[{"manager":"m"}]})"), std::nullopt);
  EXPECT_EQ(ManagedFieldsInText(R"([1,2])"), std::nullopt);
  EXPECT_EQ(ManagedFieldsInText(R"({"metadata":"s"})"), std::nullopt);
  EXPECT_EQ(ManagedFieldsInText(""), std::nullopt);
}

}  // namespace
}  // namespace muster::api
