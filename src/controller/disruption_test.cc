// The disruption controller's computation (disruption.h): a budget's status from its pods at a
// fixed time, as kube's disruption controller writes it.

#include "controller/disruption.h"

#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::Field;

constexpr int64_t kBudgetNow = 1700000000;  // 2023-11-14T22:13:20Z

// A pod labelled app=web in default, Running and Ready unless told otherwise.
class BudgetPod {
 public:
  explicit BudgetPod(std::string name) : name_(std::move(name)) {}
  BudgetPod& Unready() {
    ready_ = false;
    return *this;
  }
  BudgetPod& Labels(std::string labels) {
    labels_ = std::move(labels);
    return *this;
  }
  BudgetPod& Namespace(std::string ns) {
    ns_ = std::move(ns);
    return *this;
  }
  BudgetPod& Deleting() {
    deleting_ = true;
    return *this;
  }
  BudgetPod& OwnedBy(std::string uid) {
    owner_ = std::move(uid);
    return *this;
  }
  json::object Obj() const {
    std::string meta = fmt::format(R"({{"name":"{}","namespace":"{}","labels":{})", name_, ns_,
                                   labels_);
    if (deleting_) meta += R"(,"deletionTimestamp":"2023-11-14T22:13:00Z")";
    if (!owner_.empty()) {
      meta += fmt::format(R"(,"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet",)"
                          R"("name":"rs","uid":"{}","controller":true}}])",
                          owner_);
    }
    meta += "}";
    return json::parse(fmt::format(R"({{"metadata":{},"status":{{"phase":"Running",)"
                                   R"("conditions":[{{"type":"Ready","status":"{}"}}]}}}})",
                                   meta, ready_ ? "True" : "False"))
        .as_object();
  }

 private:
  std::string name_;
  bool ready_ = true;
  std::string labels_ = R"({"app":"web"})";
  std::string ns_ = "default";
  bool deleting_ = false;
  std::string owner_;
};

json::object MakeBudget(std::string_view spec, std::string_view status = "{}") {
  return json::parse(fmt::format(R"({{"metadata":{{"name":"web","namespace":"default",)"
                                 R"("generation":2}},"spec":{},"status":{}}})",
                                 spec, status))
      .as_object();
}

absl::StatusOr<int32_t> NoScaleLookup(const ControllerRef& ref, const std::string&) {
  return absl::FailedPreconditionError(fmt::format("{} has no scale", ref.kind));
}

int64_t Int(const json::object& status, std::string_view key) {
  return status.at(key).to_number<int64_t>();
}

const json::object& Condition(const json::object& status) {
  return status.at("conditions").as_array().at(0).as_object();
}

TEST(DisruptionTest, AnIntegerMinAvailableCountsTheReadyPodsItSelects) {
  std::vector<json::object> pods = {
      BudgetPod("web-0").Obj(),
      BudgetPod("web-1").Obj(),
      BudgetPod("web-2").Unready().Obj(),
      BudgetPod("going").Deleting().Obj(),
      BudgetPod("db-0").Labels(R"({"app":"db"})").Obj(),
      BudgetPod("elsewhere").Namespace("other").Obj(),
  };
  BudgetSync sync = SyncBudget(
      MakeBudget(R"({"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}})"), pods,
      NoScaleLookup, kBudgetNow);
  EXPECT_TRUE(sync.changed);
  EXPECT_EQ(Int(sync.status, "expectedPods"), 4);
  EXPECT_EQ(Int(sync.status, "currentHealthy"), 2);
  EXPECT_EQ(Int(sync.status, "desiredHealthy"), 1);
  EXPECT_EQ(Int(sync.status, "disruptionsAllowed"), 1);
  EXPECT_EQ(Int(sync.status, "observedGeneration"), 2);
  const json::object& condition = Condition(sync.status);
  EXPECT_EQ(condition.at("type"), "DisruptionAllowed");
  EXPECT_EQ(condition.at("status"), "True");
  EXPECT_EQ(condition.at("reason"), "SufficientPods");
  EXPECT_EQ(condition.at("lastTransitionTime"), "2023-11-14T22:13:20Z");
  EXPECT_TRUE(sync.events.empty());

  // The same pods again: nothing to write.
  json::object budget =
      MakeBudget(R"({"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}})",
                 json::serialize(sync.status));
  BudgetSync again = SyncBudget(budget, pods, NoScaleLookup, kBudgetNow + 30);
  EXPECT_FALSE(again.changed);

  // One ready pod fewer: no disruption allowed, the condition turns False.
  pods[1] = BudgetPod("web-1").Unready().Obj();
  BudgetSync fewer = SyncBudget(budget, pods, NoScaleLookup, kBudgetNow + 60);
  EXPECT_TRUE(fewer.changed);
  EXPECT_EQ(Int(fewer.status, "disruptionsAllowed"), 0);
  EXPECT_EQ(Condition(fewer.status).at("status"), "False");
  EXPECT_EQ(Condition(fewer.status).at("reason"), "InsufficientPods");
  EXPECT_EQ(Condition(fewer.status).at("lastTransitionTime"), "2023-11-14T22:14:20Z");
}

// An eviction's record keeps its pod out of the healthy count until the pod is being deleted or
// two minutes have passed; an old record is dropped with a NotDeleted event.
TEST(DisruptionTest, DisruptedPodsCountAsGoneUntilTheirRecordRunsOut) {
  std::vector<json::object> pods = {BudgetPod("web-0").Obj(), BudgetPod("web-1").Obj(),
                                    BudgetPod("web-2").Obj()};
  const std::string spec = R"({"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}})";
  BudgetSync recent = SyncBudget(
      MakeBudget(spec, R"({"disruptedPods":{"web-0":"2023-11-14T22:12:20Z"}})"), pods,
      NoScaleLookup, kBudgetNow);
  EXPECT_EQ(Int(recent.status, "currentHealthy"), 2);
  EXPECT_EQ(Int(recent.status, "disruptionsAllowed"), 1);
  EXPECT_EQ(json::serialize(recent.status.at("disruptedPods")),
            R"({"web-0":"2023-11-14T22:12:20Z"})");
  ASSERT_TRUE(recent.recheck_unix.has_value());
  EXPECT_EQ(*recent.recheck_unix, kBudgetNow + 60);

  BudgetSync old = SyncBudget(
      MakeBudget(spec, R"({"disruptedPods":{"web-0":"2023-11-14T22:10:00Z","gone":)"
                       R"("2023-11-14T22:13:00Z"}})"),
      pods, NoScaleLookup, kBudgetNow);
  EXPECT_EQ(Int(old.status, "currentHealthy"), 3);
  EXPECT_FALSE(old.status.contains("disruptedPods"));
  EXPECT_FALSE(old.recheck_unix.has_value());
  ASSERT_EQ(old.events.size(), 1u);
  EXPECT_TRUE(old.events[0].about_pod);
  EXPECT_EQ(old.events[0].pod, "web-0");
  EXPECT_EQ(old.events[0].reason, "NotDeleted");
}

TEST(DisruptionTest, ANilSelectorSelectsNothingAndAnEmptyOneEverythingInTheNamespace) {
  std::vector<json::object> pods = {BudgetPod("web-0").Obj(),
                                    BudgetPod("db-0").Labels(R"({"app":"db"})").Obj(),
                                    BudgetPod("elsewhere").Labels("{}").Namespace("other").Obj()};
  BudgetSync none = SyncBudget(MakeBudget(R"({"minAvailable":1})"), pods, NoScaleLookup, kBudgetNow);
  EXPECT_EQ(Int(none.status, "expectedPods"), 0);
  EXPECT_EQ(Int(none.status, "disruptionsAllowed"), 0);
  EXPECT_THAT(none.events, ElementsAre(Field(&BudgetEvent::reason, "NoPods")));
  BudgetSync all =
      SyncBudget(MakeBudget(R"({"minAvailable":1,"selector":{}})"), pods, NoScaleLookup, kBudgetNow);
  EXPECT_EQ(Int(all.status, "expectedPods"), 2);
  EXPECT_EQ(Int(all.status, "disruptionsAllowed"), 1);
}

// maxUnavailable and percentages count the pods' controllers' scales; a controller without one
// fails the sync safe: no disruption, condition SyncFailed with the reason.
TEST(DisruptionTest, ScalesOfControllersOrAFailSafeStatus) {
  std::vector<json::object> pods = {BudgetPod("web-0").OwnedBy("rs-1").Obj(),
                                    BudgetPod("web-1").OwnedBy("rs-1").Obj(),
                                    BudgetPod("web-2").OwnedBy("rs-1").Obj()};
  const ScaleLookup four = [](const ControllerRef& ref, const std::string& ns) {
    EXPECT_EQ(ref.uid, "rs-1");
    EXPECT_EQ(ns, "default");
    return absl::StatusOr<int32_t>(4);
  };
  BudgetSync max = SyncBudget(
      MakeBudget(R"({"maxUnavailable":"25%","selector":{"matchLabels":{"app":"web"}}})"), pods,
      four, kBudgetNow);
  EXPECT_EQ(Int(max.status, "expectedPods"), 4);
  EXPECT_EQ(Int(max.status, "desiredHealthy"), 3);
  EXPECT_EQ(Int(max.status, "disruptionsAllowed"), 0);
  BudgetSync min = SyncBudget(
      MakeBudget(R"({"minAvailable":"50%","selector":{"matchLabels":{"app":"web"}}})"), pods,
      four, kBudgetNow);
  EXPECT_EQ(Int(min.status, "desiredHealthy"), 2);
  EXPECT_EQ(Int(min.status, "disruptionsAllowed"), 1);

  BudgetSync failed = SyncBudget(
      MakeBudget(R"({"maxUnavailable":1,"selector":{"matchLabels":{"app":"web"}}})",
                 R"({"disruptionsAllowed":2,"currentHealthy":3})"),
      pods, NoScaleLookup, kBudgetNow);
  EXPECT_TRUE(failed.changed);
  EXPECT_EQ(Int(failed.status, "disruptionsAllowed"), 0);
  EXPECT_EQ(Int(failed.status, "currentHealthy"), 3);  // failSafe changes nothing else
  EXPECT_EQ(Condition(failed.status).at("reason"), "SyncFailed");
  EXPECT_EQ(Condition(failed.status).at("message"), "ReplicaSet has no scale");
  EXPECT_THAT(failed.events,
              ElementsAre(Field(&BudgetEvent::reason, "CalculateExpectedPodCountFailed")));
}

}  // namespace
}  // namespace muster::controller
