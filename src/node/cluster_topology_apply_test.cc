// ApplyHyperNodes (cluster_topology.h) against a real embedded API server: a cluster file's racks
// and spines are created, a second start writes nothing, a changed file updates its HyperNodes
// and deletes those it no longer has, and HyperNodes written by someone else are left alone.

#include <map>
#include <memory>
#include <string>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "gtest/gtest.h"
#include "node/cluster_file.h"
#include "node/cluster_topology.h"
#include "node/json_access.h"

namespace muster::node {
namespace {

namespace json = boost::json;

class ApplyHyperNodesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("hypernodes");
    ASSERT_FALSE(dir_.empty());
    auto server = apiserver::testing::StartTestServer(dir_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ =
        std::make_unique<client::Client>(std::make_shared<apiserver::LocalTransport>(*server_));
  }
  void TearDown() override {
    client_.reset();
    apiserver::testing::StopTestServer(server_, dir_);
  }

  std::vector<api::HyperNode> HyperNodesOf(const std::string& topology) {
    absl::StatusOr<ClusterSpec> spec =
        ParseClusterSpec("nodePools:\n  - {name: gpu, count: 6}\ntopology:\n" + topology);
    EXPECT_TRUE(spec.ok()) << spec.status();
    return spec.ok() ? spec->hypernodes : std::vector<api::HyperNode>{};
  }

  // name -> resourceVersion of every HyperNode stored.
  std::map<std::string, std::string> Stored() {
    std::map<std::string, std::string> out;
    absl::StatusOr<client::ObjectList> list = client_->List(client::HyperNodes(), "");
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return out;
    for (const json::object& item : list->items) {
      out[MetaString(item, "name")] = MetaString(item, "resourceVersion");
    }
    return out;
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> client_;
};

TEST_F(ApplyHyperNodesTest, CreatesThenKeepsThenFollowsTheFile) {
  const std::vector<api::HyperNode> three_racks =
      HyperNodesOf("  nodesPerRack: 2\n  racksPerSpine: 3\n");
  ASSERT_EQ(three_racks.size(), 4u);
  ASSERT_TRUE(ApplyHyperNodes(*client_, three_racks).ok());
  std::map<std::string, std::string> first = Stored();
  ASSERT_EQ(first.size(), 4u);
  absl::StatusOr<json::object> rack = client_->Get(client::HyperNodes(), "", "rack-1");
  ASSERT_TRUE(rack.ok()) << rack.status();
  EXPECT_EQ(json::serialize((*rack)["spec"]),
            R"({"tier":1,"tierName":"rack","members":[)"
            R"({"type":"Node","selector":{"exactMatch":{"name":"gpu-2"}}},)"
            R"({"type":"Node","selector":{"exactMatch":{"name":"gpu-3"}}}]})");

  // A restart with the same file writes nothing.
  ASSERT_TRUE(ApplyHyperNodes(*client_, three_racks).ok());
  EXPECT_EQ(Stored(), first);

  // Someone else's HyperNode stays whatever the file says.
  ASSERT_TRUE(client_
                  ->Create(client::HyperNodes(), "",
                           json::parse(R"({"metadata":{"name":"mine"},"spec":{"tier":1,)"
                                       R"("members":[{"type":"Node","selector":)"
                                       R"({"exactMatch":{"name":"gpu-5"}}}]}})")
                               .as_object())
                  .ok());
  // Racks of three: rack-0 and rack-1 change, rack-2 and the spine go.
  ASSERT_TRUE(ApplyHyperNodes(*client_, HyperNodesOf("  nodesPerRack: 3\n")).ok());
  std::map<std::string, std::string> second = Stored();
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(second.count("mine"), 1u);
  EXPECT_EQ(second.count("rack-2"), 0u);
  EXPECT_EQ(second.count("spine-0"), 0u);
  EXPECT_NE(second.at("rack-1"), first.at("rack-1"));
  rack = client_->Get(client::HyperNodes(), "", "rack-1");
  ASSERT_TRUE(rack.ok()) << rack.status();
  EXPECT_EQ(json::serialize((*rack)["spec"].at("members").at(0)),
            R"({"type":"Node","selector":{"exactMatch":{"name":"gpu-3"}}})");

  // A file without a topology removes what the earlier files made, and nothing else.
  ASSERT_TRUE(ApplyHyperNodes(*client_, {}).ok());
  EXPECT_EQ(Stored().size(), 1u);
  EXPECT_EQ(Stored().count("mine"), 1u);
}

}  // namespace
}  // namespace muster::node
