// Node maintenance: the disruption controller keeping PodDisruptionBudgets current so that
// evictions honour them, and the taint eviction controller deleting pods of NoExecute-tainted
// nodes, each against a real embedded API server (in-process, port 0, temporary data directory)
// with no node agent: a bound pod's deletion stays marked (deletionTimestamp) as on a node whose
// kubelet has not confirmed it yet.

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "controller/disruption_controller.h"
#include "controller/taint_eviction.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

bool EventuallyTrue(const std::function<bool()>& done, std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

api::Toleration NoExecuteToleration(std::optional<int64_t> seconds) {
  api::Toleration t;
  t.key = "k";
  t.op = "Exists";
  t.effect = "NoExecute";
  t.toleration_seconds = seconds;
  return t;
}

TEST(JudgeNoExecuteTaintsTest, AsKubesTaintManagerDecides) {
  using Kind = TaintVerdict::Kind;
  const api::Taint no_execute{"k", "v", "NoExecute"};
  const api::Taint other{"other", "", "NoExecute"};
  const api::Taint no_schedule{"k", "v", "NoSchedule"};
  // No NoExecute taint: nothing to do, whatever the tolerations.
  EXPECT_EQ(JudgeNoExecuteTaints({no_schedule}, {}), (TaintVerdict{Kind::kKeep, 0}));
  EXPECT_EQ(JudgeNoExecuteTaints({no_execute}, {}), (TaintVerdict{Kind::kEvictNow, 0}));
  EXPECT_EQ(JudgeNoExecuteTaints({no_execute}, {NoExecuteToleration(std::nullopt)}),
            (TaintVerdict{Kind::kKeep, 0}));
  EXPECT_EQ(JudgeNoExecuteTaints({no_execute}, {NoExecuteToleration(30)}),
            (TaintVerdict{Kind::kEvictAfter, 30}));
  EXPECT_EQ(JudgeNoExecuteTaints({no_execute}, {NoExecuteToleration(0)}),
            (TaintVerdict{Kind::kEvictNow, 0}));
  // Every NoExecute taint must be tolerated; the least tolerationSeconds of those used counts.
  EXPECT_EQ(JudgeNoExecuteTaints({no_execute, other}, {NoExecuteToleration(30)}),
            (TaintVerdict{Kind::kEvictNow, 0}));
  api::Toleration everything;  // empty key, Exists: tolerates every taint
  everything.op = "Exists";
  everything.toleration_seconds = 60;
  EXPECT_EQ(JudgeNoExecuteTaints({no_execute, other}, {NoExecuteToleration(30), everything}),
            (TaintVerdict{Kind::kEvictAfter, 30}));
  // The first toleration that tolerates a taint is the one used (GetMatchingTolerations).
  EXPECT_EQ(JudgeNoExecuteTaints({no_execute}, {NoExecuteToleration(std::nullopt), everything}),
            (TaintVerdict{Kind::kKeep, 0}));
}

class NodeMaintenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("maintenance");
    auto server = apiserver::testing::StartTestServer(dir_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    api_ = std::make_unique<client::Client>(std::make_shared<apiserver::LocalTransport>(*server_));
    auto node = api_->Create(client::Nodes(), "",
                             json::parse(R"({"metadata":{"name":"n1"}})").as_object());
    ASSERT_TRUE(node.ok()) << node.status();
  }
  void TearDown() override {
    if (disruption_) disruption_->Stop();
    if (taints_) taints_->Stop();
    apiserver::testing::StopTestServer(server_, dir_);
  }

  // A pod labelled app=web, bound to n1, Running and Ready, with `tolerations` (JSON).
  void RunningPod(const std::string& name, const std::string& tolerations = "[]") {
    auto created = api_->Create(
        client::Pods(), "default",
        json::parse(fmt::format(R"({{"metadata":{{"name":"{}","labels":{{"app":"web"}}}},)"
                                R"("spec":{{"containers":[{{"name":"c","image":"busybox"}}],)"
                                R"("tolerations":{}}}}})",
                                name, tolerations))
            .as_object());
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_TRUE(api_->Bind({"default", name, "n1", "", {}}).ok());
    auto patched = api_->Patch(
        client::Pods(), "default", name, client::PatchType::kMerge,
        R"({"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}})",
        "status");
    ASSERT_TRUE(patched.ok()) << patched.status();
  }
  bool Terminating(const std::string& name) {
    auto pod = api_->Get(client::Pods(), "default", name);
    return pod.ok() && pod->at("metadata").as_object().contains("deletionTimestamp");
  }
  std::optional<json::object> BudgetStatus(const std::string& name) {
    auto pdb = api_->Get(client::PodDisruptionBudgets(), "default", name);
    if (!pdb.ok()) return std::nullopt;
    return pdb->at("status").as_object();
  }
  bool HasEvent(const std::string& reason, const std::string& message) {
    auto events = api_->List(client::Events(), "default");
    if (!events.ok()) return false;
    for (const json::object& e : events->items) {
      if (e.at("reason") == reason.c_str() && e.at("message") == message.c_str()) return true;
    }
    return false;
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> api_;
  std::unique_ptr<Controller> disruption_;
  std::unique_ptr<Controller> taints_;
};

int64_t StatusInt(const std::optional<json::object>& status, const char* key) {
  if (!status || !status->contains(key)) return -1;
  return status->at(key).to_number<int64_t>();
}

// A budget of minAvailable 2 over three ready pods allows one eviction; the eviction spends it,
// the controller counts the evicted pod out, and the next eviction is refused until the budget is
// relaxed (a new generation, observed).
TEST_F(NodeMaintenanceTest, TheDisruptionControllerKeepsBudgetsCurrentForEvictions) {
  for (const char* name : {"web-0", "web-1", "web-2"}) RunningPod(name);
  disruption_ = NewDisruptionController(*api_);
  ASSERT_TRUE(disruption_->Start().ok());
  auto created = api_->Create(client::PodDisruptionBudgets(), "default",
                              json::parse(R"({"metadata":{"name":"web"},"spec":{"minAvailable":2,
                                  "selector":{"matchLabels":{"app":"web"}}}})")
                                  .as_object());
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(EventuallyTrue([&] {
    auto s = BudgetStatus("web");
    return StatusInt(s, "observedGeneration") == 1 && StatusInt(s, "disruptionsAllowed") == 1;
  }));
  auto status = BudgetStatus("web");
  EXPECT_EQ(StatusInt(status, "currentHealthy"), 3);
  EXPECT_EQ(StatusInt(status, "desiredHealthy"), 2);
  EXPECT_EQ(StatusInt(status, "expectedPods"), 3);

  ASSERT_TRUE(api_->Evict("default", "web-0").ok());
  EXPECT_TRUE(Terminating("web-0"));
  // The evicted pod is being deleted: it counts for no healthy pod and leaves disruptedPods.
  ASSERT_TRUE(EventuallyTrue([&] {
    auto s = BudgetStatus("web");
    return StatusInt(s, "currentHealthy") == 2 && !s->contains("disruptedPods");
  }));
  EXPECT_EQ(StatusInt(BudgetStatus("web"), "disruptionsAllowed"), 0);
  absl::Status refused = api_->Evict("default", "web-1");
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_FALSE(Terminating("web-1"));

  auto relaxed = api_->Patch(client::PodDisruptionBudgets(), "default", "web",
                             client::PatchType::kMerge, R"({"spec":{"minAvailable":1}})");
  ASSERT_TRUE(relaxed.ok()) << relaxed.status();
  ASSERT_TRUE(EventuallyTrue([&] {
    auto s = BudgetStatus("web");
    return StatusInt(s, "observedGeneration") == 2 && StatusInt(s, "disruptionsAllowed") == 1;
  }));
  EXPECT_TRUE(api_->Evict("default", "web-1").ok());
}

// A NoExecute taint: the pod that does not tolerate it goes at once with kube's event, the one
// with tolerationSeconds after them, those tolerating it for ever (or for an hour) stay, and
// removing the taint cancels the pending deletion.
TEST_F(NodeMaintenanceTest, TheTaintEvictionControllerDeletesPodsThatDoNotTolerateNoExecute) {
  RunningPod("plain");
  RunningPod("forever", R"([{"key":"k","operator":"Exists","effect":"NoExecute"}])");
  RunningPod("brief",
             R"([{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":1}])");
  RunningPod("hour",
             R"([{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":3600}])");
  taints_ = NewTaintEvictionController(*api_);
  ASSERT_TRUE(taints_->Start().ok());
  ASSERT_TRUE(taints_->WaitIdle(15s));
  for (const char* name : {"plain", "forever", "brief", "hour"}) EXPECT_FALSE(Terminating(name));

  auto tainted =
      api_->Patch(client::Nodes(), "", "n1", client::PatchType::kMerge,
                  R"({"spec":{"taints":[{"key":"k","value":"v","effect":"NoExecute"}]}})");
  ASSERT_TRUE(tainted.ok()) << tainted.status();
  ASSERT_TRUE(EventuallyTrue([&] { return Terminating("plain"); }));
  EXPECT_TRUE(EventuallyTrue(
      [&] { return HasEvent("TaintManagerEviction", "Marking for deletion Pod default/plain"); }));
  auto plain = api_->Get(client::Pods(), "default", "plain");
  ASSERT_TRUE(plain.ok());
  bool disruption_target = false;
  for (const json::value& c : plain->at("status").at("conditions").as_array()) {
    disruption_target |= c.at("type") == "DisruptionTarget" &&
                         c.at("reason") == "DeletionByTaintManager";
  }
  EXPECT_TRUE(disruption_target) << json::serialize(*plain);

  ASSERT_TRUE(EventuallyTrue([&] { return Terminating("brief"); }));
  ASSERT_TRUE(taints_->WaitIdle(15s));
  EXPECT_FALSE(Terminating("forever"));
  EXPECT_FALSE(Terminating("hour"));

  auto untainted = api_->Patch(client::Nodes(), "", "n1", client::PatchType::kMerge,
                               R"({"spec":{"taints":null}})");
  ASSERT_TRUE(untainted.ok()) << untainted.status();
  EXPECT_TRUE(EventuallyTrue(
      [&] { return HasEvent("TaintManagerEviction", "Cancelling deletion of Pod default/hour"); }));
  EXPECT_FALSE(Terminating("hour"));
}

}  // namespace
}  // namespace muster::controller
