// The queue controller (queue_controller.h) against a real embedded API server, in-process, doing
// what Volcano's queue controller does on a cluster where no API server of muster's admits
// queues: the default and root queues made, a new queue opened and given root as its parent,
// closing and reopening down a tree, and the PodGroup gauges by phase.

#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "boost/json/parse.hpp"
#include "controller/queue_controller.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "store/store.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

std::string QueueCtlStr(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::value* cur = nullptr;
  const json::object* obj = &o;
  for (std::string_view key : path) {
    if (obj == nullptr) return "";
    cur = obj->if_contains(key);
    if (cur == nullptr) return "";
    obj = cur->is_object() ? &cur->get_object() : nullptr;
  }
  return cur != nullptr && cur->is_string() ? std::string(cur->get_string()) : "";
}

bool QueueCtlEventually(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

class QueueControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("queuectl");
    auto server = apiserver::testing::StartTestServer(dir_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    api_ = std::make_unique<client::Client>(std::make_shared<apiserver::LocalTransport>(*server_));
  }

  void TearDown() override {
    controller_.reset();
    apiserver::testing::StopTestServer(server_, dir_);
  }

  void StartController() {
    QueueControllerOptions options;
    options.metrics = registry_;
    controller_ = NewQueueController(*api_, options);
    ASSERT_TRUE(controller_->Start(10s).ok());
  }

  json::object CreateQueue(std::string_view name, std::string_view parent) {
    std::string spec = parent.empty() ? R"({"weight":1})"
                                      : fmt::format(R"({{"weight":1,"parent":"{}"}})", parent);
    auto created = api_->Create(
        client::Queues(), "",
        json::parse(fmt::format(R"({{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",
                                    "metadata":{{"name":"{}"}},"spec":{}}})",
                                name, spec))
            .as_object());
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : json::object();
  }

  // A Command as `vcctl queue operate` creates it, the queue its controller reference; each
  // under a name of its own.
  void IssueQueueCommand(std::string_view action, const json::object& queue) {
    const std::string name = QueueCtlStr(queue, {"metadata", "name"});
    const std::string command = fmt::format("{}-{}", name, ++commands_issued_);
    auto created = api_->Create(
        client::Commands(), "default",
        json::parse(fmt::format(
                        R"({{"apiVersion":"bus.volcano.sh/v1alpha1","kind":"Command",
            "metadata":{{"name":"{}"}},"action":"{}",
            "target":{{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue","name":"{}",
                       "uid":"{}","controller":true,"blockOwnerDeletion":true}}}})",
                        command, action, name, QueueCtlStr(queue, {"metadata", "uid"})))
            .as_object());
    ASSERT_TRUE(created.ok()) << created.status();
  }

  json::object Queue(std::string_view name) {
    auto queue = api_->Get(client::Queues(), "", name);
    return queue.ok() ? *queue : json::object();
  }

  // "state parent closed-by-parent" of queue `name`; "<gone>" when it is not there.
  std::string Shown(std::string_view name) {
    auto queue = api_->Get(client::Queues(), "", name);
    if (!queue.ok()) return "<gone>";
    return fmt::format("{} {} {}", QueueCtlStr(*queue, {"status", "state"}),
                       QueueCtlStr(*queue, {"spec", "parent"}),
                       QueueCtlStr(*queue, {"metadata", "annotations", "volcano.sh/closed-by-parent"}));
  }

  // The value of gauge `name` for queue `queue`; -1 when there is no such series.
  double Gauge(std::string_view name, std::string_view queue) {
    for (const prometheus::MetricFamily& family : registry_->Collect()) {
      if (family.name != name) continue;
      for (const prometheus::ClientMetric& metric : family.metric) {
        for (const prometheus::ClientMetric::Label& label : metric.label) {
          if (label.name == "queue_name" && label.value == queue) return metric.gauge.value;
        }
      }
    }
    return -1;
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> api_;
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<Controller> controller_;
  int commands_issued_ = 0;
};

// A cluster without muster's API server: no default or root queue, and a queue as kubectl
// stores it, with neither status.state nor spec.parent. The controller makes the two and gives
// the queue Open and root, as Volcano's scheduler and queue controller do.
TEST_F(QueueControllerTest, MakesDefaultAndRootAndOpensANewQueueUnderRoot) {
  CreateQueue("team", "");
  ASSERT_TRUE(api_->PatchWithoutResult(client::Queues(), "", "team", client::PatchType::kMerge,
                                       R"({"status":{"state":null}})", "status")
                  .ok());
  for (const char* name : {"default", "root"}) {
    store::Op remove;
    remove.kind = store::OpKind::kDelete;
    remove.key = {"queues.scheduling.volcano.sh", "", name};
    auto removed = server_->store().Commit({remove});
    ASSERT_TRUE(removed.ok()) << removed.status();
  }
  ASSERT_EQ(Shown("team"), "  ");
  ASSERT_EQ(Shown("root"), "<gone>");

  StartController();
  json::object root = Queue("root");
  json::object fallback = Queue("default");
  ASSERT_FALSE(root.empty());
  ASSERT_FALSE(fallback.empty());
  EXPECT_FALSE(root.at("spec").at("reclaimable").as_bool());
  EXPECT_TRUE(fallback.at("spec").at("reclaimable").as_bool());
  EXPECT_TRUE(QueueCtlEventually([&] { return Shown("team") == "Open root "; }))
      << Shown("team");
  EXPECT_TRUE(QueueCtlEventually([&] { return Shown("default") == "Open root "; }))
      << Shown("default");
  // root is nobody's child.
  EXPECT_TRUE(QueueCtlEventually([&] { return Shown("root") == "Open  "; })) << Shown("root");
}

// CloseQueue on org closes its open child and marks it closed by its parent; a child closed by
// its own Command is left as it is. OpenQueue on org reopens only what org's closing closed.
TEST_F(QueueControllerTest, ClosingAParentClosesItsChildrenAndOpeningItReopensThem) {
  StartController();
  json::object org = CreateQueue("org", "root");
  CreateQueue("team-a", "org");
  json::object team_b = CreateQueue("team-b", "org");
  IssueQueueCommand("CloseQueue", team_b);
  ASSERT_TRUE(QueueCtlEventually([&] { return Shown("team-b") == "Closed org "; }))
      << Shown("team-b");

  IssueQueueCommand("CloseQueue", org);
  EXPECT_TRUE(QueueCtlEventually([&] { return Shown("org") == "Closed root "; })) << Shown("org");
  EXPECT_TRUE(QueueCtlEventually([&] { return Shown("team-a") == "Closed org true"; }))
      << Shown("team-a");
  EXPECT_EQ(Shown("team-b"), "Closed org ");

  IssueQueueCommand("OpenQueue", org);
  EXPECT_TRUE(QueueCtlEventually([&] { return Shown("org") == "Open root false"; }))
      << Shown("org");
  EXPECT_TRUE(QueueCtlEventually([&] { return Shown("team-a") == "Open org false"; }))
      << Shown("team-a");
  ASSERT_TRUE(controller_->WaitIdle(10s));
  EXPECT_EQ(Shown("team-b"), "Closed org ");
}

// volcano_queue_pod_group_<phase>_count{queue_name}, as the PodGroups come, move and go.
TEST_F(QueueControllerTest, CountsEachQueuesPodGroupsByPhase) {
  StartController();
  CreateQueue("team", "root");
  for (const char* name : {"a", "b"}) {
    auto created = api_->Create(
        client::PodGroups(), "default",
        json::parse(fmt::format(R"({{"apiVersion":"scheduling.volcano.sh/v1beta1",
            "kind":"PodGroup","metadata":{{"name":"{}"}},"spec":{{"minMember":1,"queue":"team"}},
            "status":{{"phase":"Pending"}}}})",
                                name))
            .as_object());
    ASSERT_TRUE(created.ok()) << created.status();
  }
  EXPECT_TRUE(QueueCtlEventually(
      [&] { return Gauge("volcano_queue_pod_group_pending_count", "team") == 2; }));
  EXPECT_EQ(Gauge("volcano_queue_pod_group_running_count", "team"), 0);

  ASSERT_TRUE(api_->PatchWithoutResult(client::PodGroups(), "default", "a",
                                       client::PatchType::kMerge,
                                       R"({"status":{"phase":"Running"}})", "status")
                  .ok());
  EXPECT_TRUE(QueueCtlEventually([&] {
    return Gauge("volcano_queue_pod_group_running_count", "team") == 1 &&
           Gauge("volcano_queue_pod_group_pending_count", "team") == 1;
  })) << Gauge("volcano_queue_pod_group_running_count", "team");

  ASSERT_TRUE(api_->Delete(client::PodGroups(), "default", "a").ok());
  EXPECT_TRUE(QueueCtlEventually(
      [&] { return Gauge("volcano_queue_pod_group_running_count", "team") == 0; }));
  // A deleted queue's series go.
  ASSERT_TRUE(api_->Delete(client::PodGroups(), "default", "b").ok());
  ASSERT_TRUE(api_->Delete(client::Queues(), "", "team").ok());
  EXPECT_TRUE(QueueCtlEventually(
      [&] { return Gauge("volcano_queue_pod_group_pending_count", "team") == -1; }));
}

}  // namespace
}  // namespace muster::controller
