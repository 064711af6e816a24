// DashboardServer (muster scheduler --dashboard-address) against a test API server over HTTPS,
// reached as the scheduler reaches a cluster's (its kubeconfig, client::HttpTransport), and read
// as a browser reads it: plain HTTP on loopback, with and without the token.

#include "cmd/dashboard_server.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "apiserver/testing/test_server.h"
#include "boost/json/parse.hpp"
#include "client/client.h"
#include "client/http_transport.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "scheduler/scheduler.h"

namespace muster::cmd {
namespace {

using namespace std::chrono_literals;

// The scheduler's transport, counting the watches it holds open on the cluster.
class WatchCountingTransport : public client::Transport {
 public:
  explicit WatchCountingTransport(std::shared_ptr<client::Transport> inner)
      : inner_(std::move(inner)) {}
  absl::StatusOr<client::Response> Do(const client::Request& request) override {
    return inner_->Do(request);
  }
  absl::StatusOr<client::Response> Stream(const client::Request& request,
                                          const std::function<bool(std::string_view)>& on_line,
                                          const std::atomic<bool>& stop) override {
    ++open_;
    auto result = inner_->Stream(request, on_line, stop);
    --open_;
    return result;
  }
  int open() const { return open_.load(); }

 private:
  std::shared_ptr<client::Transport> inner_;
  std::atomic<int> open_{0};
};

// Polls `condition` every 20 ms for up to 10 s.
template <class F>
bool Eventually(F condition) {
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(20ms)) {
    if (condition()) return true;
  }
  return condition();
}

class DashboardServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("dashsched");
    ASSERT_FALSE(dir_.empty());
    auto server = apiserver::testing::StartTestServer(dir_);
    ASSERT_TRUE(server.ok()) << server.status();
    api_server_ = *std::move(server);
    auto config = client::LoadKubeconfig(api_server_->kubeconfig_path());
    ASSERT_TRUE(config.ok()) << config.status();
    auto upstream = client::MakeHttpTransport(*config);
    ASSERT_TRUE(upstream.ok()) << upstream.status();
    cluster_ = std::make_unique<client::Client>(*upstream);
    upstream_ = std::make_shared<WatchCountingTransport>(*upstream);
    DashboardServerOptions options;
    options.status = [] { return std::string(R"({"scheduler":{"cycles":7}})"); };
    auto dashboard = DashboardServer::Start("127.0.0.1:0", upstream_, std::move(options));
    ASSERT_TRUE(dashboard.ok()) << dashboard.status();
    dashboard_ = *std::move(dashboard);
    browser_ = Browser(dashboard_->token());
  }

  void TearDown() override {
    if (dashboard_) dashboard_->Stop();
    cluster_.reset();
    apiserver::testing::StopTestServer(api_server_, dir_);
  }

  // A client of the dashboard's port, sending `token` (none when empty).
  std::shared_ptr<client::Transport> Browser(const std::string& token) {
    client::HttpTransportConfig config;
    config.server = fmt::format("http://127.0.0.1:{}", dashboard_->port());
    config.token = token;
    auto transport = client::MakeHttpTransport(config);
    EXPECT_TRUE(transport.ok()) << transport.status();
    return transport.ok() ? *transport : nullptr;
  }

  static client::Response Get(client::Transport& via, const std::string& path,
                              std::vector<std::pair<std::string, std::string>> query = {}) {
    client::Request r;
    r.method = "GET";
    r.path = path;
    r.query = std::move(query);
    auto answer = via.Do(r);
    EXPECT_TRUE(answer.ok()) << answer.status();
    return answer.ok() ? *answer : client::Response{};
  }

  void CreateNode(const std::string& name, const std::string& pool) {
    auto created = cluster_->Create(
        client::Nodes(), "",
        boost::json::parse(fmt::format(R"({{"metadata":{{"name":"{}","labels":{{"pool":"{}"}}}}}})",
                                       name, pool))
            .as_object());
    ASSERT_TRUE(created.ok()) << created.status();
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> api_server_;
  std::unique_ptr<client::Client> cluster_;
  std::shared_ptr<WatchCountingTransport> upstream_;
  std::unique_ptr<DashboardServer> dashboard_;
  std::shared_ptr<client::Transport> browser_;
};

TEST_F(DashboardServerTest, ThePagesFilesNeedNoToken) {
  auto anonymous = Browser("");
  client::Response page = Get(*anonymous, "/ui/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find(R"(<script src="dashboard.js")"), std::string::npos) << page.body;
  client::Response script = Get(*anonymous, "/ui/dashboard.js");
  EXPECT_EQ(script.status, 200);
  EXPECT_NE(script.body.find("/ui/status"), std::string::npos);
  EXPECT_EQ(Get(*anonymous, "/ui/nothing.js").status, 404);
}

TEST_F(DashboardServerTest, StatusAndTheClusterNeedTheToken) {
  auto anonymous = Browser("");
  auto wrong = Browser(std::string(dashboard_->token().size(), '0'));
  for (const std::string path : {"/ui/status", "/api/v1/nodes", "/api/v1/pods"}) {
    EXPECT_EQ(Get(*anonymous, path).status, 401) << path;
    EXPECT_EQ(Get(*wrong, path).status, 401) << path;
  }
  // Nor is the cluster's own token the dashboard's.
  auto config = client::LoadKubeconfig(api_server_->kubeconfig_path());
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(Get(*Browser(config->token), "/api/v1/nodes").status, 401);

  client::Response status = Get(*browser_, "/ui/status");
  EXPECT_EQ(status.status, 200);
  EXPECT_EQ(status.body, R"({"scheduler":{"cycles":7}})");
  EXPECT_EQ(dashboard_->url(),
            fmt::format("http://127.0.0.1:{}/ui/#token={}", dashboard_->port(),
                        dashboard_->token()));
  EXPECT_EQ(dashboard_->token().size(), 64u);
}

TEST_F(DashboardServerTest, ListsAreForwardedWithTheirQuery) {
  CreateNode("gpu-node-0", "a");
  CreateNode("gpu-node-1", "b");
  client::Response all = Get(*browser_, "/api/v1/nodes");
  ASSERT_EQ(all.status, 200) << all.body;
  boost::json::object list = boost::json::parse(all.body).as_object();
  EXPECT_EQ(list.at("kind").as_string(), "NodeList");
  ASSERT_EQ(list.at("items").as_array().size(), 2u);

  client::Response selected = Get(*browser_, "/api/v1/nodes", {{"labelSelector", "pool=b"}});
  ASSERT_EQ(selected.status, 200) << selected.body;
  const boost::json::value parsed = boost::json::parse(selected.body);
  const boost::json::array& items = parsed.at("items").as_array();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].at("metadata").at("name").as_string(), "gpu-node-1");

  // The other four collections answer too (the scheduler's RBAC allows them on a cluster).
  for (const std::string path :
       {"/api/v1/pods", "/api/v1/events", "/apis/scheduling.volcano.sh/v1beta1/podgroups",
        "/apis/scheduling.volcano.sh/v1beta1/queues"}) {
    client::Response r = Get(*browser_, path);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
  }
}

TEST_F(DashboardServerTest, AWatchRelaysAPodCreatedAfterItStarted) {
  client::Response listed = Get(*browser_, "/api/v1/pods");
  ASSERT_EQ(listed.status, 200) << listed.body;
  const std::string rv(
      boost::json::parse(listed.body).at("metadata").at("resourceVersion").as_string());

  client::Request watch;
  watch.method = "GET";
  watch.path = "/api/v1/pods";
  watch.query = {{"watch", "1"}, {"allowWatchBookmarks", "true"}, {"resourceVersion", rv}};
  std::atomic<bool> stop{false};
  std::atomic<bool> seen{false};
  absl::StatusOr<client::Response> ended;
  std::thread watcher([&] {
    ended = browser_->Stream(
        watch,
        [&](std::string_view line) {
          boost::json::value event = boost::json::parse(line);
          if (event.at("type").as_string() == "ADDED" &&
              event.at("object").at("metadata").at("name").as_string() == "late") {
            seen = true;
            return false;
          }
          return true;
        },
        stop);
  });
  auto created = cluster_->Create(
      client::Pods(), "default",
      boost::json::parse(R"({"metadata":{"name":"late"},)"
                         R"("spec":{"containers":[{"name":"c","image":"busybox"}]}})")
          .as_object());
  ASSERT_TRUE(created.ok()) << created.status();
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       !seen && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(20ms);
  }
  stop = true;
  watcher.join();
  EXPECT_TRUE(seen) << "the pod created after the watch began was not relayed";
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->status, 200);
}

// A watch of the pods that runs until `stop` or its end; `returned` once it has.
std::thread WatchPods(client::Transport& browser, std::atomic<bool>& stop,
                      std::atomic<bool>& returned) {
  return std::thread([&] {
    client::Request watch;
    watch.method = "GET";
    watch.path = "/api/v1/pods";
    watch.query = {{"watch", "1"}};
    (void)browser.Stream(watch, [](std::string_view) { return true; }, stop);
    returned = true;
  });
}

TEST_F(DashboardServerTest, ABrowserThatGoesEndsItsWatchOnTheCluster) {
  std::atomic<bool> stop{false};
  std::atomic<bool> returned{false};
  std::thread watcher = WatchPods(*browser_, stop, returned);
  EXPECT_TRUE(Eventually([&] { return upstream_->open() == 1; }));
  stop = true;  // the browser closes its connection
  watcher.join();
  EXPECT_TRUE(Eventually([&] { return upstream_->open() == 0; }))
      << "the cluster's watch outlived the browser's";
}

TEST_F(DashboardServerTest, StopEndsTheWatchesBeingRelayed) {
  std::atomic<bool> stop{false};
  std::atomic<bool> returned{false};
  std::thread watcher = WatchPods(*browser_, stop, returned);
  EXPECT_TRUE(Eventually([&] { return upstream_->open() == 1; }));
  dashboard_->Stop();
  EXPECT_EQ(upstream_->open(), 0);
  EXPECT_TRUE(Eventually([&] { return returned.load(); }))
      << "the browser's watch did not end with the server";
  stop = true;
  watcher.join();
}

TEST_F(DashboardServerTest, AWatchEndsWhenTheClustersDoes) {
  client::Request watch;
  watch.method = "GET";
  watch.path = "/apis/scheduling.volcano.sh/v1beta1/queues";
  watch.query = {{"watch", "true"}, {"timeoutSeconds", "1"}};
  std::atomic<bool> stop{false};
  const auto start = std::chrono::steady_clock::now();
  std::thread guard([&] {
    for (int i = 0; i < 200 && !stop; ++i) std::this_thread::sleep_for(50ms);
    stop = true;  // the relay did not end: the assertion below fails
  });
  auto ended = browser_->Stream(watch, [](std::string_view) { return true; }, stop);
  const bool relay_ended = !stop.exchange(true);
  guard.join();
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->status, 200);
  EXPECT_TRUE(relay_ended) << "the watch went on after the API server ended it";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 9s);
}

TEST_F(DashboardServerTest, AWatchTheClusterRefusesEndsWithItsStatus) {
  client::Request watch;
  watch.method = "GET";
  watch.path = "/api/v1/nodes";
  watch.query = {{"watch", "1"}, {"timeoutSeconds", "soon"}};
  std::atomic<bool> stop{false};
  std::vector<std::string> lines;
  auto ended = browser_->Stream(
      watch,
      [&](std::string_view line) {
        lines.emplace_back(line);
        return true;
      },
      stop);
  ASSERT_TRUE(ended.ok()) << ended.status();
  ASSERT_EQ(lines.size(), 1u);
  boost::json::value event = boost::json::parse(lines[0]);
  EXPECT_EQ(event.at("type").as_string(), "ERROR");
  EXPECT_EQ(event.at("object").at("code").as_int64(), 400);
  EXPECT_NE(std::string(event.at("object").at("message").as_string()).find("timeoutSeconds"),
            std::string::npos)
      << lines[0];
}

TEST_F(DashboardServerTest, OnlyListsAndWatchesOfTheFiveCollectionsAreForwarded) {
  CreateNode("gpu-node-0", "a");
  for (const std::string method : {"POST", "DELETE", "PUT", "PATCH"}) {
    client::Request r;
    r.method = method;
    r.path = "/api/v1/nodes";
    r.body = R"({"metadata":{"name":"injected"}})";
    auto answer = browser_->Do(r);
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(answer->status, 405) << method;
  }
  for (const std::string path :
       {"/api/v1/nodes/gpu-node-0", "/api/v1/namespaces/default/pods", "/api/v1/secrets",
        "/api/v1/configmaps", "/apis/batch.volcano.sh/v1alpha1/jobs", "/version", "/"}) {
    EXPECT_EQ(Get(*browser_, path).status, 404) << path;
  }
  auto nodes = cluster_->List(client::Nodes(), "");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(nodes->items.size(), 1u) << "a refused write reached the cluster";
}

// A cluster behind a broken proxy: lists cannot reach it, watches get the proxy's own page.
class BrokenProxyTransport : public client::Transport {
 public:
  absl::StatusOr<client::Response> Do(const client::Request&) override {
    return absl::UnavailableError("connection refused");
  }
  absl::StatusOr<client::Response> Stream(const client::Request&,
                                          const std::function<bool(std::string_view)>&,
                                          const std::atomic<bool>&) override {
    return client::Response{502, "<html>Bad Gateway</html>"};
  }
};

TEST(DashboardServerUpstreamTest, AClusterOutOfReachIsAStatusTheBrowserCanRead) {
  DashboardServerOptions options;
  options.token = "t0k3n";
  auto dashboard = DashboardServer::Start("127.0.0.1:0", std::make_shared<BrokenProxyTransport>(),
                                          std::move(options));
  ASSERT_TRUE(dashboard.ok()) << dashboard.status();
  client::HttpTransportConfig config;
  config.server = fmt::format("http://127.0.0.1:{}", (*dashboard)->port());
  config.token = "t0k3n";
  auto browser = client::MakeHttpTransport(config);
  ASSERT_TRUE(browser.ok());

  client::Request list;
  list.method = "GET";
  list.path = "/api/v1/nodes";
  auto listed = (*browser)->Do(list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->status, 503);
  const boost::json::value status = boost::json::parse(listed->body);
  EXPECT_EQ(status.at("message").as_string(), "the cluster's API server: connection refused");

  client::Request watch = list;
  watch.query = {{"watch", "1"}};
  std::vector<std::string> lines;
  std::atomic<bool> stop{false};
  auto ended = (*browser)->Stream(
      watch,
      [&](std::string_view line) {
        lines.emplace_back(line);
        return true;
      },
      stop);
  ASSERT_TRUE(ended.ok()) << ended.status();
  ASSERT_EQ(lines.size(), 1u);
  const boost::json::value event = boost::json::parse(lines[0]);  // JSON, whatever the proxy said
  EXPECT_EQ(event.at("type").as_string(), "ERROR");
  EXPECT_EQ(event.at("object").at("message").as_string(),
            "the cluster's API server: HTTP 502: <html>Bad Gateway</html>");
}

TEST(DashboardServerStartTest, ABadAddressIsRefused) {
  client::HttpTransportConfig config;
  config.server = "http://127.0.0.1:1";
  auto upstream = client::MakeHttpTransport(config);
  ASSERT_TRUE(upstream.ok());
  auto started = DashboardServer::Start("nowhere", *upstream);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(started.status().message().find("nowhere"), std::string::npos);
}

TEST(DashboardStatusJsonTest, IsWhatThePageReads) {
  scheduler::SchedulerStats stats;
  stats.cycles = 42;
  stats.last_cycle = std::chrono::microseconds(1500);
  stats.cycle_p50 = std::chrono::microseconds(1234);
  stats.cycle_p99 = std::chrono::microseconds(20001);
  EXPECT_EQ(DashboardStatusJson(stats),
            R"({"scheduler":{"cycles":42,"lastCycleMs":1.500,"cycleP50Ms":1.234,)"
            R"("cycleP99Ms":20.001}})");
}

}  // namespace
}  // namespace muster::cmd
