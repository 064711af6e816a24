// pods/eviction and policy/v1 PodDisruptionBudgets through the REST handlers, against a real
// store in a temporary directory: what `kubectl drain` and `kubectl create pdb` meet.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "apiserver/handlers.h"
#include "apiserver/testing/handlers_fixture.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver {
namespace {

using ::testing::HasSubstr;
namespace json = boost::json;

constexpr char kPodsPath[] = "/api/v1/namespaces/default/pods";
constexpr char kBudgetsPath[] = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
constexpr int64_t kNow = 1700000000;

class EvictionTest : public testing::HandlersFixture {
 protected:
  // A pod labelled app=web; bound to n1 and Running (Ready or not) unless `pending`.
  void MakePod(std::string_view name, bool ready = true, bool pending = false) {
    auto created = Call("POST", kPodsPath,
                        fmt::format(R"({{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{}",)"
                                    R"("labels":{{"app":"web"}}}},"spec":{{"containers":)"
                                    R"([{{"name":"c","image":"busybox"}}]}}}})",
                                    name));
    ASSERT_EQ(created.status, 201) << created.body;
    if (pending) return;
    auto bound = Call("POST", fmt::format("{}/{}/binding", kPodsPath, name),
                      R"({"target":{"kind":"Node","name":"n1"}})");
    ASSERT_EQ(bound.status, 201) << bound.body;
    json::value pod = Body(Call("GET", fmt::format("{}/{}", kPodsPath, name)));
    pod.as_object()["status"] = json::parse(fmt::format(
        R"({{"phase":"Running","conditions":[{{"type":"Ready","status":"{}"}}]}})",
        ready ? "True" : "False"));
    auto running = Call("PUT", fmt::format("{}/{}/status", kPodsPath, name), json::serialize(pod));
    ASSERT_EQ(running.status, 200) << running.body;
  }

  // A budget over app=web with minAvailable `min_available`, its status as the disruption
  // controller would have written it.
  void MakeBudget(std::string_view name, int allowed, int healthy, int desired,
                  int observed_generation = 1) {
    auto created = Call("POST", kBudgetsPath,
                        fmt::format(R"({{"apiVersion":"policy/v1","kind":"PodDisruptionBudget",)"
                                    R"("metadata":{{"name":"{}"}},"spec":{{"minAvailable":{},)"
                                    R"("selector":{{"matchLabels":{{"app":"web"}}}}}}}})",
                                    name, desired));
    ASSERT_EQ(created.status, 201) << created.body;
    json::value budget = Body(created);
    budget.as_object()["status"] = json::parse(fmt::format(
        R"({{"disruptionsAllowed":{},"currentHealthy":{},"desiredHealthy":{},"expectedPods":{},)"
        R"("observedGeneration":{}}})",
        allowed, healthy, desired, healthy, observed_generation));
    auto updated =
        Call("PUT", fmt::format("{}/{}/status", kBudgetsPath, name), json::serialize(budget));
    ASSERT_EQ(updated.status, 200) << updated.body;
  }

  HttpResponse Evict(std::string_view pod, std::string_view delete_options = "",
                     std::string_view api_version = "policy/v1") {
    std::string body = fmt::format(
        R"({{"apiVersion":"{}","kind":"Eviction","metadata":{{"name":"{}","namespace":"default"}})",
        api_version, pod);
    if (!delete_options.empty()) body += fmt::format(R"(,"deleteOptions":{})", delete_options);
    body += "}";
    return Call("POST", fmt::format("{}/{}/eviction", kPodsPath, pod), body);
  }

  json::object Budget(std::string_view name) {
    return Body(Call("GET", fmt::format("{}/{}", kBudgetsPath, name))).as_object();
  }
  json::value Pod(std::string_view name) {
    return Body(Call("GET", fmt::format("{}/{}", kPodsPath, name)));
  }
};

std::string Str(const json::value& v) { return v.is_string() ? std::string(v.get_string()) : ""; }

TEST_F(EvictionTest, APodNoBudgetGuardsIsDeletedWithTheEvictionsDeleteOptions) {
  MakePod("web-0");
  auto evicted = Evict("web-0", R"({"gracePeriodSeconds":7})");
  ASSERT_EQ(evicted.status, 201) << evicted.body;
  EXPECT_EQ(Str(Body(evicted).at("status")), "Success");
  // A bound pod deletes gracefully: the node agent confirms. The grace period is the Eviction's.
  json::value pod = Pod("web-0");
  EXPECT_EQ(pod.at("metadata").at("deletionGracePeriodSeconds"), 7);
  bool disruption_target = false;
  for (const json::value& c : pod.at("status").at("conditions").as_array()) {
    if (Str(c.at("type")) == "DisruptionTarget") {
      disruption_target = true;
      EXPECT_EQ(Str(c.at("reason")), "EvictionByEvictionAPI");
      EXPECT_EQ(Str(c.at("status")), "True");
    }
  }
  EXPECT_TRUE(disruption_target) << pod;

  MakePod("pending", true, /*pending=*/true);
  ASSERT_EQ(Evict("pending").status, 201);
  EXPECT_EQ(Call("GET", fmt::format("{}/pending", kPodsPath)).status, 404);
}

TEST_F(EvictionTest, ABudgetAllowingNoDisruptionRefusesWith429AndKeepsThePod) {
  MakePod("web-0");
  MakeBudget("web", /*allowed=*/0, /*healthy=*/1, /*desired=*/1);
  auto refused = Evict("web-0");
  ASSERT_EQ(refused.status, 429) << refused.body;
  json::value status = Body(refused);
  EXPECT_EQ(Str(status.at("reason")), "TooManyRequests");
  EXPECT_EQ(Str(status.at("message")),
            "Cannot evict pod as it would violate the pod's disruption budget.");
  const json::array& causes = status.at("details").at("causes").as_array();
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(Str(causes[0].at("reason")), "DisruptionBudget");
  EXPECT_EQ(Str(causes[0].at("message")),
            "The disruption budget web needs 1 healthy pods and has 1 currently");
  EXPECT_FALSE(Pod("web-0").at("metadata").as_object().contains("deletionTimestamp"));
}

TEST_F(EvictionTest, AnEvictionSpendsOneDisruptionAndRecordsThePod) {
  MakePod("web-0");
  MakePod("web-1");
  MakeBudget("web", /*allowed=*/1, /*healthy=*/2, /*desired=*/1);
  ASSERT_EQ(Evict("web-0").status, 201);
  json::object budget = Budget("web");
  const json::object& status = budget.at("status").as_object();
  EXPECT_EQ(status.at("disruptionsAllowed"), 0);
  EXPECT_EQ(Str(status.at("disruptedPods").at("web-0")), "2023-11-14T22:13:20Z");
  const json::value& condition = status.at("conditions").as_array().at(0);
  EXPECT_EQ(Str(condition.at("type")), "DisruptionAllowed");
  EXPECT_EQ(Str(condition.at("status")), "False");
  EXPECT_EQ(Str(condition.at("reason")), "InsufficientPods");
  // The budget is spent: the other pod stays.
  EXPECT_EQ(Evict("web-1").status, 429);
  EXPECT_FALSE(Pod("web-1").at("metadata").as_object().contains("deletionTimestamp"));
}

// The budget's update and the pod's delete are one commit guarded by both: of two evictions
// racing for a budget of one, exactly one passes, whatever the interleaving.
TEST_F(EvictionTest, TwoConcurrentEvictionsCannotBothPassABudgetOfOne) {
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE(round);
    const std::string a = fmt::format("a-{}", round), b = fmt::format("b-{}", round);
    const std::string budget = fmt::format("web-{}", round);
    MakePod(a);
    MakePod(b);
    MakeBudget(budget, /*allowed=*/1, /*healthy=*/2, /*desired=*/1);
    std::atomic<int> passed{0}, refused{0};
    auto evict = [&](const std::string& pod) {
      const int code = Evict(pod).status;
      if (code == 201) ++passed;
      if (code == 429) ++refused;
    };
    std::thread first(evict, a), second(evict, b);
    first.join();
    second.join();
    EXPECT_EQ(passed.load(), 1);
    EXPECT_EQ(refused.load(), 1);
    EXPECT_EQ(Budget(budget).at("status").at("disruptionsAllowed"), 0);
    ASSERT_EQ(Call("DELETE", fmt::format("{}/{}", kBudgetsPath, budget)).status, 200);
    for (const std::string& pod : {a, b}) {
      Call("DELETE", fmt::format("{}/{}", kPodsPath, pod), R"({"gracePeriodSeconds":0})");
    }
  }
}

TEST_F(EvictionTest, ABudgetItsControllerHasNotSeenIsStillBeingProcessed) {
  MakePod("web-0");
  MakeBudget("web", /*allowed=*/1, /*healthy=*/2, /*desired=*/1, /*observed_generation=*/0);
  auto refused = Evict("web-0");
  ASSERT_EQ(refused.status, 429);
  json::value status = Body(refused);
  EXPECT_EQ(Str(status.at("details").at("causes").at(0).at("message")),
            "The disruption budget web is still being processed by the server.");
  EXPECT_EQ(status.at("details").at("retryAfterSeconds"), 10);
}

// An unready pod counts for no healthy one: it goes while the budget has its healthy pods,
// without spending a disruption; Pending and finished pods go whatever the budget says.
TEST_F(EvictionTest, UnreadyPendingAndFinishedPodsGoWithoutSpendingTheBudget) {
  MakePod("web-0");
  MakePod("unready", /*ready=*/false);
  MakePod("pending", true, /*pending=*/true);
  MakeBudget("web", /*allowed=*/0, /*healthy=*/1, /*desired=*/1);
  EXPECT_EQ(Evict("unready").status, 201);
  EXPECT_EQ(Evict("pending").status, 201);
  EXPECT_EQ(Budget("web").at("status").at("disruptionsAllowed"), 0);
  EXPECT_FALSE(Budget("web").at("status").as_object().contains("disruptedPods"));
  EXPECT_EQ(Evict("web-0").status, 429);
}

TEST_F(EvictionTest, DryRunChangesNothing) {
  MakePod("web-0");
  MakeBudget("web", /*allowed=*/1, /*healthy=*/1, /*desired=*/0);
  ASSERT_EQ(Evict("web-0", R"({"dryRun":["All"]})").status, 201);
  EXPECT_EQ(Budget("web").at("status").at("disruptionsAllowed"), 1);
  EXPECT_FALSE(Pod("web-0").at("metadata").as_object().contains("deletionTimestamp"));
}

TEST_F(EvictionTest, PolicyV1beta1EvictionsAreAcceptedToo) {
  MakePod("web-0");
  ASSERT_EQ(Evict("web-0", "", "policy/v1beta1").status, 201);
  EXPECT_TRUE(Pod("web-0").at("metadata").as_object().contains("deletionTimestamp"));
}

TEST_F(EvictionTest, TwoBudgetsSelectingAPodAreRefused) {
  MakePod("web-0");
  MakeBudget("one", 1, 1, 0);
  MakeBudget("two", 1, 1, 0);
  auto refused = Evict("web-0");
  EXPECT_EQ(refused.status, 500);
  EXPECT_THAT(refused.body, HasSubstr("This pod has more than one PodDisruptionBudget"));
}

TEST_F(EvictionTest, BadEvictionsAreRefusedNamingWhatIsWrongAndChangeNothing) {
  MakePod("web-0");
  // Another pod's name in the body.
  auto other = Call("POST", fmt::format("{}/web-0/eviction", kPodsPath),
                    R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-1"}})");
  EXPECT_EQ(other.status, 400);
  EXPECT_EQ(Str(Body(other).at("message")), "name in URL does not match name in Eviction object");
  auto wrong_type = Evict("web-0", R"({"gracePeriodSeconds":"soon"})");
  EXPECT_EQ(wrong_type.status, 400);
  EXPECT_EQ(Str(Body(wrong_type).at("message")),
            "Eviction in version \"v1\" cannot be handled as a Eviction: json: cannot unmarshal "
            "string into Go struct field DeleteOptions.deleteOptions.gracePeriodSeconds of type "
            "int64");
  auto wrong_kind = Call("POST", fmt::format("{}/web-0/eviction", kPodsPath),
                         R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0"}})");
  EXPECT_EQ(wrong_kind.status, 400);
  EXPECT_THAT(wrong_kind.body, HasSubstr(R"(no kind \"Pod\" is registered for version \"v1\")"));
  auto bad_policy = Evict("web-0", R"({"propagationPolicy":"Sideways"})");
  EXPECT_EQ(bad_policy.status, 422);
  EXPECT_THAT(bad_policy.body, HasSubstr("propagationPolicy"));
  EXPECT_FALSE(Pod("web-0").at("metadata").as_object().contains("deletionTimestamp"));

  auto missing = Evict("nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(Str(Body(missing).at("message")), "pods \"nope\" not found");
  EXPECT_EQ(Call("GET", fmt::format("{}/web-0/eviction", kPodsPath)).status, 405);
}

// --- PodDisruptionBudget admission ---------------------------------------------------------------

std::string BudgetJson(std::string_view spec) {
  return fmt::format(R"({{"apiVersion":"policy/v1","kind":"PodDisruptionBudget",)"
                     R"("metadata":{{"name":"web"}},"spec":{}}})",
                     spec);
}

TEST_F(EvictionTest, BudgetsAreValidatedWithKubesMessagesAndNothingIsStored) {
  struct Case {
    std::string_view spec, message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"minAvailable":1,"maxUnavailable":1,"selector":{}})",
            "spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:&intstr.IntOrString"
            "{Type:0, IntVal:1, StrVal:\"\"}, MaxUnavailable:&intstr.IntOrString{Type:0, IntVal:1, "
            "StrVal:\"\"}}: minAvailable and maxUnavailable cannot be both set"},
           {R"({"minAvailable":"120%"})",
            "spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, "
            "StrVal:\"120%\"}: must not be greater than 100%"},
           {R"({"maxUnavailable":"half"})",
            "spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, "
            "StrVal:\"half\"}: a valid percent string must be a numeric string followed by an "
            "ending '%' (e.g. '1%' or '93%', regex used for validation is '[0-9]+%')"},
           {R"({"maxUnavailable":-1})",
            "spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"},
           {R"({"minAvailable":1,"selector":{"matchExpressions":[{"key":"app","operator":"Is"}]}})",
            "spec.selector.matchExpressions[0].operator: Invalid value: \"Is\": not a valid "
            "selector operator"},
           {R"({"minAvailable":1,"unhealthyPodEvictionPolicy":"Never"})",
            "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: "
            "\"AlwaysAllow\", \"IfHealthyBudget\""},
       }) {
    SCOPED_TRACE(c.spec);
    auto refused = Call("POST", kBudgetsPath, BudgetJson(c.spec));
    ASSERT_EQ(refused.status, 422) << refused.body;
    EXPECT_EQ(Str(Body(refused).at("message")),
              fmt::format("PodDisruptionBudget.policy \"web\" is invalid: {}", c.message));
    EXPECT_EQ(Call("GET", fmt::format("{}/web", kBudgetsPath)).status, 404);
  }
  auto not_int = Call("POST", kBudgetsPath, BudgetJson(R"({"minAvailable":true})"));
  EXPECT_EQ(not_int.status, 400);
  EXPECT_THAT(Str(Body(not_int).at("message")), HasSubstr("intstr.IntOrString"));
}

TEST_F(EvictionTest, ABudgetStartsWithZeroCountersAndItsStatusIsWrittenThroughStatus) {
  auto created = Call("POST", kBudgetsPath,
                      BudgetJson(R"({"minAvailable":"50%","selector":{"matchLabels":{"a":"b"}}})"));
  ASSERT_EQ(created.status, 201) << created.body;
  json::value budget = Body(created);
  EXPECT_EQ(json::serialize(budget.at("status")),
            R"({"disruptionsAllowed":0,"currentHealthy":0,"desiredHealthy":0,"expectedPods":0})");
  EXPECT_EQ(budget.at("metadata").at("generation"), 1);
  // A spec change bumps generation; the object's write leaves status alone.
  budget.as_object()["spec"].as_object()["minAvailable"] = 2;
  budget.as_object()["status"].as_object()["disruptionsAllowed"] = 5;
  auto updated = Call("PUT", fmt::format("{}/web", kBudgetsPath), json::serialize(budget));
  ASSERT_EQ(updated.status, 200) << updated.body;
  EXPECT_EQ(Body(updated).at("metadata").at("generation"), 2);
  EXPECT_EQ(Body(updated).at("status").at("disruptionsAllowed"), 0);
  json::value next = Body(updated);
  next.as_object()["status"].as_object()["disruptionsAllowed"] = -1;
  auto negative = Call("PUT", fmt::format("{}/web/status", kBudgetsPath), json::serialize(next));
  EXPECT_EQ(negative.status, 422);
  EXPECT_THAT(Str(Body(negative).at("message")),
              HasSubstr("status.disruptionsAllowed: Invalid value: -1: must be greater than or "
                        "equal to 0"));
}

}  // namespace
}  // namespace muster::apiserver
