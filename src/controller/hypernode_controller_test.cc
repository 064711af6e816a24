// The HyperNode controller (hypernode_controller.h) against a real embedded API server,
// in-process: each HyperNode's status.nodeCount (the NODECOUNT column of `kubectl get
// hypernodes`) counts the existing nodes it holds, through member racks too, and follows nodes
// that join, leave or are relabelled, and edits of the HyperNodes.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "boost/json/parse.hpp"
#include "controller/hypernode_controller.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

class HyperNodeControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("hnctl");
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
    HyperNodeControllerOptions options;
    options.node_recount_delay = 20ms;
    controller_ = NewHyperNodeController(*api_, options);
    ASSERT_TRUE(controller_->Start(10s).ok());
  }

  void CreateNode(std::string_view name, std::string_view rack) {
    std::string labels = rack.empty() ? "{}" : fmt::format(R"({{"rack":"{}"}})", rack);
    auto created = api_->Create(
        client::Nodes(), "",
        json::parse(fmt::format(R"({{"apiVersion":"v1","kind":"Node",
                                    "metadata":{{"name":"{}","labels":{}}}}})",
                                name, labels))
            .as_object());
    ASSERT_TRUE(created.ok()) << created.status();
  }

  // members: the JSON array of spec.members.
  void ApplyHyperNode(std::string_view name, int tier, std::string_view members) {
    const std::string body =
        fmt::format(R"({{"apiVersion":"topology.volcano.sh/v1alpha1","kind":"HyperNode",
                        "metadata":{{"name":"{}"}},"spec":{{"tier":{},"members":{}}}}})",
                    name, tier, members);
    auto got = api_->Get(client::HyperNodes(), "", name);
    if (got.ok()) {
      auto patched = api_->Patch(client::HyperNodes(), "", name, client::PatchType::kMerge,
                                 fmt::format(R"({{"spec":{{"members":{}}}}})", members));
      ASSERT_TRUE(patched.ok()) << patched.status();
      return;
    }
    auto created = api_->Create(client::HyperNodes(), "", json::parse(body).as_object());
    ASSERT_TRUE(created.ok()) << created.status();
  }

  // The HyperNode's status.nodeCount; -1 when it has none.
  int64_t NodeCount(std::string_view name) {
    auto got = api_->Get(client::HyperNodes(), "", name);
    if (!got.ok()) return -2;
    const json::value* status = got->if_contains("status");
    if (status == nullptr || !status->is_object()) return -1;
    const json::value* count = status->get_object().if_contains("nodeCount");
    return count != nullptr && count->is_int64() ? count->get_int64() : -1;
  }

  // True once every count is as wanted (10 s at most).
  bool CountsBecome(const std::vector<std::pair<std::string, int64_t>>& want) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (true) {
      bool all = true;
      for (const auto& [name, count] : want) all = all && NodeCount(name) == count;
      if (all) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
  }

  std::string Counts() {
    return fmt::format("rack-a {}, rack-b {}, spine {}", NodeCount("rack-a"), NodeCount("rack-b"),
                       NodeCount("spine"));
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> api_;
  std::unique_ptr<Controller> controller_;
};

constexpr std::string_view kRackA =
    R"([{"type":"Node","selector":{"exactMatch":{"name":"a1"}}},
        {"type":"Node","selector":{"exactMatch":{"name":"a2"}}},
        {"type":"Node","selector":{"exactMatch":{"name":"a3"}}}])";
constexpr std::string_view kRackB =
    R"([{"type":"Node","selector":{"labelMatch":{"matchLabels":{"rack":"b"}}}}])";
constexpr std::string_view kSpine =
    R"([{"type":"HyperNode","selector":{"exactMatch":{"name":"rack-a"}}},
        {"type":"HyperNode","selector":{"exactMatch":{"name":"rack-b"}}}])";

TEST_F(HyperNodeControllerTest, CountsTheExistingNodesOfEachHyperNodeThroughItsRacks) {
  CreateNode("a1", "");
  CreateNode("a2", "");  // a3 is named by rack-a but has not joined
  CreateNode("b1", "b");
  CreateNode("b2", "b");
  CreateNode("c1", "c");
  ApplyHyperNode("rack-a", 1, kRackA);
  ApplyHyperNode("rack-b", 1, kRackB);
  ApplyHyperNode("spine", 2, kSpine);
  StartController();
  EXPECT_TRUE(CountsBecome({{"rack-a", 2}, {"rack-b", 2}, {"spine", 4}})) << Counts();
}

TEST_F(HyperNodeControllerTest, FollowsNodesThatJoinLeaveOrAreRelabelled) {
  CreateNode("a1", "");
  CreateNode("b1", "b");
  ApplyHyperNode("rack-a", 1, kRackA);
  ApplyHyperNode("rack-b", 1, kRackB);
  ApplyHyperNode("spine", 2, kSpine);
  StartController();
  ASSERT_TRUE(CountsBecome({{"rack-a", 1}, {"rack-b", 1}, {"spine", 2}})) << Counts();

  CreateNode("a3", "");  // named by rack-a: it joins
  EXPECT_TRUE(CountsBecome({{"rack-a", 2}, {"rack-b", 1}, {"spine", 3}})) << Counts();

  CreateNode("x1", "");  // in no rack
  auto relabelled = api_->Patch(client::Nodes(), "", "x1", client::PatchType::kMerge,
                                R"({"metadata":{"labels":{"rack":"b"}}})");
  ASSERT_TRUE(relabelled.ok()) << relabelled.status();
  EXPECT_TRUE(CountsBecome({{"rack-a", 2}, {"rack-b", 2}, {"spine", 4}})) << Counts();

  ASSERT_TRUE(api_->Delete(client::Nodes(), "", "a1").ok());
  EXPECT_TRUE(CountsBecome({{"rack-a", 1}, {"rack-b", 2}, {"spine", 3}})) << Counts();
}

TEST_F(HyperNodeControllerTest, RecountsWhenAHyperNodesMembersChange) {
  CreateNode("a1", "");
  CreateNode("a2", "");
  CreateNode("b1", "b");
  ApplyHyperNode("rack-a", 1, kRackA);
  ApplyHyperNode("rack-b", 1, kRackB);
  StartController();
  ASSERT_TRUE(CountsBecome({{"rack-a", 2}, {"rack-b", 1}})) << Counts();

  // A spine made after the controller started, then rack-a cut to one node.
  ApplyHyperNode("spine", 2, kSpine);
  EXPECT_TRUE(CountsBecome({{"spine", 3}})) << Counts();
  ApplyHyperNode("rack-a", 1, R"([{"type":"Node","selector":{"regexMatch":{"pattern":"^a2$"}}}])");
  EXPECT_TRUE(CountsBecome({{"rack-a", 1}, {"rack-b", 1}, {"spine", 2}})) << Counts();

  // Someone writing a wrong count gets it put right.
  auto wrong = api_->Patch(client::HyperNodes(), "", "rack-b", client::PatchType::kMerge,
                           R"({"status":{"nodeCount":7}})", "status");
  ASSERT_TRUE(wrong.ok()) << wrong.status();
  EXPECT_TRUE(CountsBecome({{"rack-b", 1}})) << Counts();
}

}  // namespace
}  // namespace muster::controller
