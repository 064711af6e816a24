// The node agent against a real embedded API server (port 0, temporary data directory) through
// the in-process transport: nodes and leases registered, pods bound to its nodes run to their
// final phase with logs readable through pods/log, and deleted pods stopped and removed.

#include "node/agent.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/json_access.h"

namespace muster::node {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using namespace std::chrono_literals;

constexpr char kCluster[] = R"(
nodePools:
  - name: gpu
    count: 2
    labels: {node.kubernetes.io/instance-type: g4dn.xlarge}
    taints: ["nvidia.com/gpu=present:NoSchedule"]
    allocatable: {cpu: "4", memory: 16Gi}
    gpu: {count: 1, model: Tesla-T4, memory: 15360Mi}
  - name: local
    runtime: process
)";

class NodeAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("agent");
    ASSERT_FALSE(dir_.empty());
    auto server = apiserver::testing::StartTestServer(dir_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = std::make_unique<client::Client>(std::make_shared<apiserver::LocalTransport>(*server_));
    auto nodes = ParseClusterFile(kCluster);
    ASSERT_TRUE(nodes.ok()) << nodes.status();
    NodeAgentOptions agent_options;
    agent_options.data_dir = dir_;
    agent_options.lease_renew_interval = 300ms;
    agent_options.status_report_interval = 300ms;
    agent_options.backoff_initial = 100ms;
    agent_options.backoff_max = 400ms;
    agent_options.shutdown_grace = 1s;
    agent_ = std::make_unique<NodeAgent>(*client_, *nodes, agent_options);
    absl::Status started = agent_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  void TearDown() override {
    if (agent_) agent_->Stop();
    agent_.reset();
    client_.reset();
    apiserver::testing::StopTestServer(server_, dir_);
  }

  json::object CreatePod(const std::string& yaml_json) {
    auto created = client_->Create(client::Pods(), "default", json::parse(yaml_json).as_object());
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : json::object();
  }

  // Polls the pod until `pred` holds; returns the last version seen.
  json::object WaitPod(const std::string& name, const std::function<bool(const json::object&)>& pred,
                       std::chrono::milliseconds timeout = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    json::object last;
    while (std::chrono::steady_clock::now() < deadline) {
      auto pod = client_->Get(client::Pods(), "default", name);
      if (pod.ok()) {
        last = *pod;
        if (pred(last)) return last;
      }
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << "timed out waiting on pod " << name << "; last: " << json::serialize(last);
    return last;
  }
  json::object WaitPhase(const std::string& name, const std::string& phase) {
    return WaitPod(name, [&](const json::object& p) { return Phase(p) == phase; });
  }
  static std::string Phase(const json::object& pod) {
    const json::object* status = ObjectAt(pod, "status");
    return status == nullptr ? "" : StringAt(*status, "phase");
  }
  static const json::object& FirstContainerStatus(const json::object& pod) {
    static const json::object kEmpty;
    const json::object* status = ObjectAt(pod, "status");
    const json::array* list = status == nullptr ? nullptr : ArrayAt(*status, "containerStatuses");
    return list == nullptr || list->empty() ? kEmpty : list->front().as_object();
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> client_;
  std::unique_ptr<NodeAgent> agent_;
};

TEST_F(NodeAgentTest, RegistersNodesAndKeepsTheirLeasesFresh) {
  auto nodes = client_->List(client::Nodes(), "");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->items.size(), 3u);
  auto gpu = client_->Get(client::Nodes(), "", "gpu-1");
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const json::object& meta = *ObjectAt(*gpu, "metadata");
  EXPECT_EQ(StringAt(*ObjectAt(meta, "labels"), "nvidia.com/gpu.product"), "Tesla-T4");
  EXPECT_EQ(StringAt(*ObjectAt(meta, "labels"), "node.kubernetes.io/instance-type"), "g4dn.xlarge");
  const json::array* taints = ArrayAt(*ObjectAt(*gpu, "spec"), "taints");
  ASSERT_NE(taints, nullptr);
  EXPECT_EQ(json::serialize(*taints),
            R"([{"key":"nvidia.com/gpu","effect":"NoSchedule","value":"present"}])");
  const json::object& status = *ObjectAt(*gpu, "status");
  EXPECT_EQ(StringAt(*ObjectAt(status, "allocatable"), "nvidia.com/gpu"), "1");
  EXPECT_EQ(StringAt(*ObjectAt(status, "capacity"), "memory"), "16Gi");
  bool ready = false;
  for (const json::value& c : *ArrayAt(status, "conditions")) {
    if (StringAt(c.as_object(), "type") == "Ready") {
      ready = StringAt(c.as_object(), "status") == "True" &&
              StringAt(c.as_object(), "reason") == "KubeletReady";
    }
  }
  EXPECT_TRUE(ready);
  EXPECT_EQ(StringAt(*ObjectAt(status, "nodeInfo"), "kubeletVersion"), "v1.32.0");
  EXPECT_EQ(json::serialize(*ArrayAt(status, "addresses")),
            R"([{"type":"InternalIP","address":"10.1.0.2"},{"type":"Hostname","address":"gpu-1"}])");

  auto lease = client_->Get(client::Leases(), "kube-node-lease", "gpu-1");
  ASSERT_TRUE(lease.ok()) << lease.status();
  const std::string first = StringAt(*ObjectAt(*lease, "spec"), "renewTime");
  EXPECT_EQ(StringAt(*ObjectAt(*lease, "spec"), "holderIdentity"), "gpu-1");
  EXPECT_FALSE(first.empty());
  const json::array* owners = ArrayAt(*ObjectAt(*lease, "metadata"), "ownerReferences");
  ASSERT_NE(owners, nullptr);
  EXPECT_EQ(StringAt(owners->at(0).as_object(), "uid"), MetaString(*gpu, "uid"));
  std::string renewed = first;
  for (int i = 0; i < 100 && renewed == first; ++i) {
    std::this_thread::sleep_for(50ms);
    auto again = client_->Get(client::Leases(), "kube-node-lease", "gpu-1");
    ASSERT_TRUE(again.ok());
    renewed = StringAt(*ObjectAt(*again, "spec"), "renewTime");
  }
  EXPECT_GT(renewed, first);

  NodeAgentStats stats = agent_->Stats();
  EXPECT_EQ(stats.nodes, 3);
  EXPECT_EQ(stats.gpus_total, 2);
  EXPECT_EQ(stats.gpus_free, 2);
}

TEST_F(NodeAgentTest, ABoundPodRunsToSucceededAndItsLogIsServed) {
  CreatePod(R"({"metadata":{"name":"hello"},
                "spec":{"nodeName":"local","restartPolicy":"Never","containers":[
                  {"name":"main","image":"busybox",
                   "command":["sh","-c","echo hello from $(POD) on $NODE"],
                   "env":[{"name":"POD","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},
                          {"name":"NODE","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}]}]}})");
  json::object pod = WaitPhase("hello", "Succeeded");
  const json::object& cs = FirstContainerStatus(pod);
  EXPECT_EQ(IntAt(*ObjectAt(*ObjectAt(cs, "state"), "terminated"), "exitCode"), 0);
  EXPECT_EQ(StringAt(*ObjectAt(*ObjectAt(cs, "state"), "terminated"), "reason"), "Completed");
  EXPECT_EQ(StringAt(*ObjectAt(pod, "status"), "qosClass"), "BestEffort");  // left as it was
  auto log = client_->Logs("default", "hello");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(*log, "hello from hello on local\n");

  client::ListOptions about;
  about.field_selector = "involvedObject.name=hello";
  auto events = client_->List(client::Events(), "default", about);
  ASSERT_TRUE(events.ok()) << events.status();
  bool started = false;
  for (const json::object& e : events->items) {
    if (StringAt(e, "reason") == "Started") {
      started = true;
      EXPECT_EQ(StringAt(e, "message"), "Started container main");
      EXPECT_EQ(StringAt(*ObjectAt(e, "source"), "component"), "kubelet");
      EXPECT_EQ(StringAt(*ObjectAt(e, "source"), "host"), "local");
    }
  }
  EXPECT_TRUE(started);
}

TEST_F(NodeAgentTest, ExitCodeAnnotationFailsASimulatedPod) {
  // Bound as the scheduler binds: a Binding that also records the GPU it chose.
  CreatePod(R"({"metadata":{"name":"sim","annotations":{"muster.dev/run-seconds":"0.2",
                                                        "muster.dev/exit-code":"3"}},
                "spec":{"restartPolicy":"Never",
                        "tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"}],
                        "containers":[{"name":"trainer","image":"tf",
                          "resources":{"limits":{"nvidia.com/gpu":1}}}]}})");
  client::Binding binding;
  binding.ns = "default";
  binding.pod = "sim";
  binding.node = "gpu-0";
  binding.annotations["muster.dev/gpu-indices"] = "0";
  ASSERT_TRUE(client_->Bind(binding).ok());
  json::object running = WaitPhase("sim", "Running");
  EXPECT_EQ(agent_->Stats().gpus_free, 1);
  EXPECT_EQ(StringAt(*ObjectAt(running, "status"), "hostIP"), "10.1.0.1");
  json::object failed = WaitPhase("sim", "Failed");
  const json::object& cs = FirstContainerStatus(failed);
  const json::object* terminated = ObjectAt(*ObjectAt(cs, "state"), "terminated");
  ASSERT_NE(terminated, nullptr);
  EXPECT_EQ(IntAt(*terminated, "exitCode"), 3);
  EXPECT_EQ(StringAt(*terminated, "reason"), "Error");
  for (int i = 0; i < 100 && agent_->Stats().gpus_free != 2; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(agent_->Stats().gpus_free, 2);
  EXPECT_EQ(agent_->Stats().pods_failed, 1);
}

TEST_F(NodeAgentTest, DeletingARunningPodStopsItAndThePodGoes) {
  CreatePod(R"({"metadata":{"name":"long"},
                "spec":{"nodeName":"local","containers":[
                  {"name":"main","image":"busybox","command":["sh","-c","echo up; exec sleep 60"]}]}})");
  WaitPhase("long", "Running");
  EXPECT_EQ(agent_->Stats().pods_running, 1);
  ASSERT_TRUE(client_->Delete(client::Pods(), "default", "long").ok());
  // Bound pods delete gracefully: the agent stops the process, then confirms.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  absl::StatusOr<json::object> pod = client_->Get(client::Pods(), "default", "long");
  while (pod.ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    pod = client_->Get(client::Pods(), "default", "long");
  }
  EXPECT_TRUE(absl::IsNotFound(pod.status())) << pod.status();
  for (int i = 0; i < 100 && agent_->Stats().pods_running != 0; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(agent_->Stats().pods_running, 0);
  client::ListOptions about;
  about.field_selector = "involvedObject.name=long,reason=Killing";
  auto events = client_->List(client::Events(), "default", about);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->items.size(), 1u);
  EXPECT_EQ(StringAt(events->items[0], "message"), "Stopping container main");
}

TEST_F(NodeAgentTest, StopEndsEveryProcessAndARestartPicksThePodsUp) {
  CreatePod(R"({"metadata":{"name":"svc"},
                "spec":{"nodeName":"local","restartPolicy":"Always","containers":[
                  {"name":"main","image":"busybox","command":["sh","-c",
                   "trap 'echo stopping; exit 0' TERM; echo start; while true; do sleep 0.05; done"]}]}})");
  WaitPhase("svc", "Running");
  for (int i = 0; i < 500 && client_->Logs("default", "svc").value_or("").empty(); ++i) {
    std::this_thread::sleep_for(10ms);  // until the trap is set
  }
  agent_->Stop();  // SIGTERM first: the container says goodbye
  // (The shell also reports its sleep child as Terminated: the whole group got SIGTERM.)
  EXPECT_THAT(client_->Logs("default", "svc").value_or(""), MatchesRegex("start\n(.*\n)?stopping\n"));
  // A new agent (a restart of `muster up`) finds the container gone and starts it again.
  auto nodes = ParseClusterFile(kCluster);
  ASSERT_TRUE(nodes.ok());
  NodeAgentOptions options;
  options.data_dir = dir_;
  options.backoff_initial = 100ms;
  agent_ = std::make_unique<NodeAgent>(*client_, *nodes, options);
  ASSERT_TRUE(agent_->Start().ok());
  json::object pod = WaitPod("svc", [](const json::object& p) {
    const json::object& cs = FirstContainerStatus(p);
    const json::object* state = ObjectAt(cs, "state");
    return IntAt(cs, "restartCount") == 1 && state != nullptr &&
           ObjectAt(*state, "running") != nullptr;
  });
  const json::object& cs = FirstContainerStatus(pod);
  EXPECT_EQ(StringAt(*ObjectAt(*ObjectAt(cs, "lastState"), "terminated"), "reason"),
            "ContainerStatusUnknown");
  // As kubelet: the logs are the current run's, and --previous the run the restart ended.
  auto log = client_->Logs("default", "svc");
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(*log, "start\n");
  client::Request previous;
  previous.method = "GET";
  previous.path = client::Pods().Path("default", "svc", "log");
  previous.query.emplace_back("previous", "true");
  auto earlier = apiserver::LocalTransport(*server_).Do(previous);
  ASSERT_TRUE(earlier.ok()) << earlier.status();
  EXPECT_EQ(earlier->status, 200) << earlier->body;
  EXPECT_THAT(earlier->body, MatchesRegex("start\n(.*\n)?stopping\n"));
}

// One agent carries a thousand simulated nodes: every node registered, every bound pod running,
// and the GPU counts add up.
// The node lifecycle controller marks a node whose Lease came late Ready=Unknown; the kubelet
// writes its status again at once rather than at its next report (here an hour away), so the
// node does not stay NotReady, untainted and unschedulable, until then.
TEST(NodeAgentStatusTest, ANodeMarkedNotReadyBySomeoneElseIsReportedReadyAgainAtOnce) {
  const std::string dir = apiserver::testing::MakeTempDir("agent-ready");
  ASSERT_FALSE(dir.empty());
  auto server = apiserver::testing::StartTestServer(dir);
  ASSERT_TRUE(server.ok()) << server.status();
  {
    client::Client client(std::make_shared<apiserver::LocalTransport>(**server));
    auto nodes = ParseClusterFile("nodePools:\n  - {name: sim, count: 2}\n");
    ASSERT_TRUE(nodes.ok()) << nodes.status();
    NodeAgentOptions options;
    options.data_dir = dir;
    options.lease_renew_interval = 1h;
    options.status_report_interval = 1h;
    NodeAgent agent(client, *nodes, options);
    ASSERT_TRUE(agent.Start().ok());
    auto ready_status = [&](const std::string& name) {
      auto node = client.Get(client::Nodes(), "", name);
      if (!node.ok()) return std::string("no node");
      for (const json::value& c : *ArrayAt(*ObjectAt(*node, "status"), "conditions")) {
        if (StringAt(c.as_object(), "type") == "Ready") return StringAt(c.as_object(), "status");
      }
      return std::string("no Ready condition");
    };
    ASSERT_EQ(ready_status("sim-1"), "True");
    // What kube-controller-manager writes: the conditions Unknown with NodeStatusUnknown.
    auto marked = client.Patch(
        client::Nodes(), "", "sim-1", client::PatchType::kStrategic,
        R"({"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown",)"
        R"("message":"Kubelet stopped posting node status."}]}})",
        "status");
    ASSERT_TRUE(marked.ok()) << marked.status();
    std::string seen;
    for (int i = 0; i < 200 && (seen = ready_status("sim-1")) != "True"; ++i) {
      std::this_thread::sleep_for(25ms);
    }
    EXPECT_EQ(seen, "True") << "sim-1 was not reported Ready again within 5 s";
    EXPECT_EQ(ready_status("sim-0"), "True");
    agent.Stop();
  }
  apiserver::testing::StopTestServer(*server, dir);
}

// A new node registers as the kubelet does: its Node is created with its status, so a watcher's
// first sight of it (ADDED) is Ready with its capacity, and nothing writes the Node again until
// its next status report; its Lease is created beside it. A restart on the same store finds
// the Node and writes its status again.
TEST(NodeAgentRegistrationTest, ANewNodeIsCreatedReadyAndItsLeaseBesideIt) {
  const std::string dir = apiserver::testing::MakeTempDir("agent-register");
  ASSERT_FALSE(dir.empty());
  auto server = apiserver::testing::StartTestServer(dir);
  ASSERT_TRUE(server.ok()) << server.status();
  {
    client::Client client(std::make_shared<apiserver::LocalTransport>(**server));
    auto listed = client.List(client::Nodes(), "");
    ASSERT_TRUE(listed.ok()) << listed.status();
    std::mutex mu;
    std::vector<std::pair<client::WatchEventType, json::object>> seen;
    std::atomic<bool> stop{false};
    std::thread watcher([&] {
      (void)client.Watch(client::Nodes(), "", listed->resource_version, {},
                         [&](client::WatchEvent& e) {
                           std::lock_guard<std::mutex> lock(mu);
                           seen.emplace_back(e.type, *e.object);
                           return true;
                         },
                         stop);
    });
    auto nodes = ParseClusterFile(
        "nodePools:\n  - {name: sim, count: 2, gpu: {count: 8, model: A100}}\n");
    ASSERT_TRUE(nodes.ok()) << nodes.status();
    // A Lease left from an earlier life of sim-1 (its Node gone): the new node's Lease create
    // meets it and renews it instead.
    auto stale = client.Create(
        client::Leases(), "kube-node-lease",
        json::parse(R"({"metadata":{"name":"sim-1"},"spec":{"holderIdentity":"old",)"
                    R"("renewTime":"2020-01-01T00:00:00.000000Z"}})")
            .as_object());
    ASSERT_TRUE(stale.ok()) << stale.status();
    NodeAgentOptions options;
    options.data_dir = dir;
    options.lease_renew_interval = 1h;
    options.status_report_interval = 1h;
    options.record_events = false;
    auto ready = [](const json::object& node) {
      const json::object* status = ObjectAt(node, "status");
      const json::array* conditions = status ? ArrayAt(*status, "conditions") : nullptr;
      if (conditions == nullptr) return false;
      for (const json::value& c : *conditions) {
        if (StringAt(c.as_object(), "type") == "Ready") {
          return StringAt(c.as_object(), "status") == "True";
        }
      }
      return false;
    };
    {
      NodeAgent agent(client, *nodes, options);
      ASSERT_TRUE(agent.Start().ok());
      for (const char* name : {"sim-0", "sim-1"}) {
        auto lease = client.Get(client::Leases(), "kube-node-lease", name);
        ASSERT_TRUE(lease.ok()) << name << ": " << lease.status();
        EXPECT_EQ(StringAt(*ObjectAt(*lease, "spec"), "holderIdentity"), name);
        EXPECT_GT(StringAt(*ObjectAt(*lease, "spec"), "renewTime"), "2020-01-01T00:00:00.000000Z");
      }
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      for (;;) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (seen.size() >= 2) break;
        }
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the watch saw no two Nodes";
        std::this_thread::sleep_for(10ms);
      }
      std::this_thread::sleep_for(200ms);  // a separate status write would have arrived by now
      std::lock_guard<std::mutex> lock(mu);
      ASSERT_EQ(seen.size(), 2u) << "each Node written once: created with its status";
      for (const auto& [type, node] : seen) {
        EXPECT_EQ(type, client::WatchEventType::kAdded);
        EXPECT_TRUE(ready(node)) << json::serialize(node);
        EXPECT_EQ(StringAt(*ObjectAt(*ObjectAt(node, "status"), "capacity"), "nvidia.com/gpu"),
                  "8");
      }
      seen.clear();
      agent.Stop();
    }
    // Marked not Ready while no agent ran; the next agent finds the Node and reports it again.
    auto marked = client.Patch(
        client::Nodes(), "", "sim-0", client::PatchType::kStrategic,
        R"({"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown"}]}})",
        "status");
    ASSERT_TRUE(marked.ok()) << marked.status();
    {
      NodeAgent again(client, *nodes, options);
      ASSERT_TRUE(again.Start().ok());
      auto node = client.Get(client::Nodes(), "", "sim-0");
      ASSERT_TRUE(node.ok()) << node.status();
      EXPECT_TRUE(ready(*node)) << json::serialize(*node);
      again.Stop();
    }
    stop = true;  // the watch polls it
    watcher.join();
  }
  apiserver::testing::StopTestServer(*server, dir);
}

// The NVLinks of a cluster file's pool on the Node, for the scheduler's nvlink plugin: on a node
// it registers, and on one an earlier run registered without them (merged into its annotations).
TEST(NodeAgentTopologyTest, NodesCarryTheirGpusNvLinks) {
  char dir[] = "/tmp/muster-agent-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  apiserver::ApiServerOptions options;
  options.data_dir = dir;
  options.listen = "127.0.0.1:0";
  auto server = apiserver::ApiServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  client::Client client(std::make_shared<apiserver::LocalTransport>(**server));
  auto earlier = client.Create(
      client::Nodes(), "",
      json::parse(R"({"metadata":{"name":"dgx-0","annotations":{"team":"a"}}})").as_object());
  ASSERT_TRUE(earlier.ok()) << earlier.status();
  auto nodes = ParseClusterFile(
      "nodePools:\n"
      "  - {name: dgx, count: 2, gpu: {count: 8, model: Tesla-V100-SXM2-32GB, nvlink: dgx-1}}\n"
      "  - {name: t4, gpu: {count: 2, model: Tesla-T4}}\n");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  NodeAgentOptions agent_options;
  agent_options.data_dir = dir;
  agent_options.record_events = false;
  {
    NodeAgent agent(client, *nodes, agent_options);
    ASSERT_TRUE(agent.Start().ok());
    const std::string cube_mesh =
        "v1;gpus=8;nvlink=0-1:1,0-2:1,0-3:2,0-4:2,1-2:2,1-3:1,1-5:2,2-3:2,2-6:1,3-7:1,4-5:1,"
        "4-6:1,4-7:2,5-6:2,5-7:1,6-7:2";
    for (const char* name : {"dgx-0", "dgx-1", "t4"}) {
      auto node = client.Get(client::Nodes(), "", name);
      ASSERT_TRUE(node.ok()) << node.status();
      const json::object* annotations = ObjectAt(*ObjectAt(*node, "metadata"), "annotations");
      ASSERT_NE(annotations, nullptr) << name;
      EXPECT_EQ(StringAt(*annotations, "muster.dev/gpu-topology"),
                std::string(name) == "t4" ? "" : cube_mesh)
          << name;
      if (std::string(name) == "dgx-0") {
        EXPECT_EQ(StringAt(*annotations, "team"), "a");
      }
    }
    agent.Stop();
  }
  (*server)->Stop();
  std::filesystem::remove_all(dir);
}

TEST(NodeAgentScaleTest, AThousandSimulatedNodes) {
  char dir[] = "/tmp/muster-agent-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  apiserver::ApiServerOptions options;
  options.data_dir = dir;
  options.listen = "127.0.0.1:0";
  auto server = apiserver::ApiServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  client::Client client(std::make_shared<apiserver::LocalTransport>(**server));
  constexpr int kNodes = 1000;
  constexpr int kPods = 2000;
  auto nodes = ParseClusterFile(
      "nodePools:\n  - {name: sim, count: 1000, gpu: {count: 8, model: A100}}\n");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  NodeAgentOptions agent_options;
  agent_options.data_dir = dir;
  agent_options.record_events = false;
  {
    NodeAgent agent(client, *nodes, agent_options);
    ASSERT_TRUE(agent.Start().ok());
    for (int i = 0; i < kPods; ++i) {
      json::object pod = json::parse(R"({"metadata":{"annotations":{}},"spec":{"containers":[
          {"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":1}}}]}})")
                             .as_object();
      pod["metadata"].as_object()["name"] = "p" + std::to_string(i);
      pod["metadata"].as_object()["annotations"].as_object()["muster.dev/gpu-indices"] =
          std::to_string(i / kNodes);
      pod["spec"].as_object()["nodeName"] = "sim-" + std::to_string(i % kNodes);
      auto created = client.Create(client::Pods(), "default", pod);
      ASSERT_TRUE(created.ok()) << created.status();
    }
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (agent.Stats().pods_running < kPods && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
    }
    NodeAgentStats stats = agent.Stats();
    EXPECT_EQ(stats.nodes, kNodes);
    EXPECT_EQ(stats.pods_running, kPods);
    EXPECT_EQ(stats.gpus_total, 8 * kNodes);
    EXPECT_EQ(stats.gpus_free, 8 * kNodes - kPods);
    auto listed = client.List(client::Leases(), "kube-node-lease");
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ(listed->items.size(), static_cast<size_t>(kNodes));
    // The agent counts a pod running before its status write reaches the API: wait for those.
    client::ListOptions running;
    running.field_selector = "status.phase=Running";
    size_t listed_running = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      auto pods = client.List(client::Pods(), "default", running);
      ASSERT_TRUE(pods.ok());
      listed_running = pods->items.size();
      if (listed_running == static_cast<size_t>(kPods)) break;
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(listed_running, static_cast<size_t>(kPods));
    agent.Stop();
  }
  (*server)->Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace muster::node
