// The PodGroup controller: the standalone PodGroup it writes (pure), which pods get one, and the
// controller itself against a real embedded API server (in-process, port 0, temporary data
// directory) with nothing else running.

#include "controller/podgroup_controller.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "boost/json/serialize.hpp"
#include "core/testing/builders.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using core::test::MakePod;

TEST(StandalonePodGroupTest, VolcanosOneMemberGroupOwnedByThePod) {
  api::Pod pod =
      MakePod("team", "solo").Uid("u-1").Req("cpu", "2").Req("memory", "4Gi").Gpus(1).Obj();
  pod.meta.annotations[kQueueNameAnnotation] = "ml";
  pod.spec.priority_class_name = "high";
  EXPECT_EQ(StandalonePodGroupName(pod), "podgroup-u-1");
  EXPECT_EQ(
      boost::json::serialize(StandalonePodGroup(pod)),
      R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"PodGroup",)"
      R"("metadata":{"name":"podgroup-u-1","namespace":"team","ownerReferences":)"
      R"([{"apiVersion":"v1","kind":"Pod","name":"solo","uid":"u-1","controller":true,)"
      R"("blockOwnerDeletion":true}]},"spec":{"minMember":1,"queue":"ml",)"
      R"("priorityClassName":"high","minResources":{"cpu":"2","memory":"4Gi","nvidia.com/gpu":"1"}},)"
      R"("status":{"phase":"Pending"}})");
}

TEST(StandalonePodGroupTest, PodsOfOneControllerShareItsGroup) {
  api::Pod pod = MakePod("team", "web-1").Uid("u-1").Obj();
  pod.meta.owner_references.push_back({"apps/v1", "ReplicaSet", "web", "rs-9", true, true});
  EXPECT_EQ(StandalonePodGroupName(pod), "podgroup-rs-9");
  boost::json::object pg = StandalonePodGroup(pod);
  const auto& owner = pg["metadata"].as_object()["ownerReferences"].as_array()[0].as_object();
  EXPECT_EQ(owner.at("kind").as_string(), "ReplicaSet");
  EXPECT_EQ(owner.at("uid").as_string(), "rs-9");
  EXPECT_EQ(pg["spec"].as_object()["queue"].as_string(), "default");
  EXPECT_FALSE(pg["spec"].as_object().contains("minResources"));
}

// The scheduler's rule (scheduler/cluster_mirror.cc: a gang pod naming no group waits).
TEST(StandalonePodGroupTest, OnlyPendingPodsOfTheSchedulersNamingNoGroupGetOne) {
  const std::vector<std::string> names = {"volcano", "muster"};
  api::Pod pod = MakePod("ns", "p").Uid("u").Obj();  // schedulerName volcano
  pod.meta.annotations.erase(api::kGroupNameAnnotation);
  EXPECT_TRUE(NeedsStandalonePodGroup(pod, names));
  pod.spec.scheduler_name = "muster";
  EXPECT_TRUE(NeedsStandalonePodGroup(pod, names));
  EXPECT_FALSE(NeedsStandalonePodGroup(pod, {"volcano"}));
  for (const char* other : {"", "default-scheduler", "yunikorn"}) {
    api::Pod p = pod;
    p.spec.scheduler_name = other;
    EXPECT_FALSE(NeedsStandalonePodGroup(p, names)) << other;
  }
  api::Pod grouped = pod;
  grouped.meta.annotations[api::kGroupNameAnnotation] = "pg";
  EXPECT_FALSE(NeedsStandalonePodGroup(grouped, names));
  grouped.meta.annotations[api::kGroupNameAnnotation] = "";
  EXPECT_TRUE(NeedsStandalonePodGroup(grouped, names));
  api::Pod bound = pod;
  bound.spec.node_name = "n1";
  EXPECT_FALSE(NeedsStandalonePodGroup(bound, names));
  api::Pod deleting = pod;
  deleting.meta.deletion_timestamp = "2026-01-01T00:00:00Z";
  EXPECT_FALSE(NeedsStandalonePodGroup(deleting, names));
  for (const char* phase : {"Succeeded", "Failed"}) {
    api::Pod done = pod;
    done.status.phase = phase;
    EXPECT_FALSE(NeedsStandalonePodGroup(done, names)) << phase;
  }
}

json::object PodObject(const std::string& name, const std::string& scheduler,
                       const std::string& group) {
  json::object meta{{"name", name}};
  if (!group.empty()) meta["annotations"] = json::object{{api::kGroupNameAnnotation, group}};
  json::object spec{
      {"containers", json::array{json::object{{"name", "c"}, {"image", "busybox"}}}}};
  if (!scheduler.empty()) spec["schedulerName"] = scheduler;
  return json::object{{"metadata", std::move(meta)}, {"spec", std::move(spec)}};
}

std::string Str(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::object* cur = &o;
  const json::value* v = nullptr;
  for (std::string_view p : path) {
    if (cur == nullptr) return "";
    v = cur->if_contains(p);
    if (v == nullptr) return "";
    cur = v->if_object();
  }
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = 15s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

class PodGroupControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("pgcontroller");
    auto server = apiserver::testing::StartTestServer(dir_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    api_ = std::make_unique<client::Client>(std::make_shared<apiserver::LocalTransport>(*server_));
  }

  void TearDown() override {
    if (controller_) controller_->Stop();
    controller_.reset();
    apiserver::testing::StopTestServer(server_, dir_);
  }

  std::string CreatePod(const std::string& name, const std::string& scheduler,
                        const std::string& group) {
    auto created = api_->Create(client::Pods(), "default", PodObject(name, scheduler, group));
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? Str(*created, {"metadata", "uid"}) : "";
  }
  json::object GetPod(const std::string& name) {
    auto pod = api_->Get(client::Pods(), "default", name);
    return pod.ok() ? *pod : json::object{};
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> api_;
  std::unique_ptr<Controller> controller_;
};

TEST_F(PodGroupControllerTest, GroupsAPlainPodAndAnnotatesItButLeavesAGroupedPodAlone) {
  const std::string solo = CreatePod("solo", "volcano", "");
  CreatePod("member", "volcano", "pg");
  CreatePod("plain", "", "");  // kube-scheduler's (or muster's with --serve-default-scheduler)
  controller_ = NewPodGroupController(*api_);
  ASSERT_TRUE(controller_->Start().ok());
  // A pod that arrives through the watch rather than the first list.
  const std::string late = CreatePod("late", "muster", "");

  for (const auto& [name, uid] : {std::pair{"solo", solo}, std::pair{"late", late}}) {
    // Captured by copy: clang 14 cannot capture a structured binding.
    ASSERT_TRUE(WaitFor([&, n = name, u = uid] {
      return Str(GetPod(n), {"metadata", "annotations", api::kGroupNameAnnotation}) ==
             "podgroup-" + u;
    })) << name;
    auto pg = api_->Get(client::PodGroups(), "default", "podgroup-" + uid);
    ASSERT_TRUE(pg.ok()) << pg.status();
    EXPECT_EQ((*pg)["spec"].as_object()["minMember"].to_number<int64_t>(), 1);
    EXPECT_EQ(Str(*pg, {"spec", "queue"}), "default");
    const json::object& owner =
        (*pg)["metadata"].as_object()["ownerReferences"].as_array().at(0).as_object();
    EXPECT_EQ(owner.at("kind").as_string(), "Pod");
    EXPECT_EQ(owner.at("uid").as_string(), uid);
  }
  ASSERT_TRUE(controller_->WaitIdle(15s));

  EXPECT_EQ(Str(GetPod("member"), {"metadata", "annotations", api::kGroupNameAnnotation}), "pg");
  EXPECT_EQ(Str(GetPod("plain"), {"metadata", "annotations", api::kGroupNameAnnotation}), "");
  auto groups = api_->List(client::PodGroups(), "default");
  ASSERT_TRUE(groups.ok()) << groups.status();
  EXPECT_EQ(groups->items.size(), 2u);
}

}  // namespace
}  // namespace muster::controller
