// The pod manager and workers over the real runtimes (processes on this machine, simulated
// containers), with a fake sink in place of the API server.

#include "node/pod_manager.h"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/time.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/json_access.h"
#include "node/process_runtime.h"
#include "node/simulated_runtime.h"

namespace muster::node {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Builds pod objects as the API server stores them once bound.
class PodBuilder {
 public:
  explicit PodBuilder(std::string name) {
    pod_ = json::parse(R"({"apiVersion":"v1","kind":"Pod",
        "metadata":{"namespace":"default","annotations":{}},
        "spec":{"restartPolicy":"Never","terminationGracePeriodSeconds":30,"containers":[]},
        "status":{"phase":"Pending","qosClass":"BestEffort","conditions":[
          {"type":"PodScheduled","status":"True","lastProbeTime":null,
           "lastTransitionTime":"2024-01-01T00:00:00Z"}]}})")
               .as_object();
    Meta()["name"] = name;
    Meta()["uid"] = "uid-" + name;
  }
  PodBuilder& Node(const std::string& node) {
    Spec()["nodeName"] = node;
    return *this;
  }
  PodBuilder& Uid(const std::string& uid) {
    Meta()["uid"] = uid;
    return *this;
  }
  PodBuilder& RestartPolicy(const std::string& policy) {
    Spec()["restartPolicy"] = policy;
    return *this;
  }
  PodBuilder& Annotation(const std::string& k, const std::string& v) {
    Meta()["annotations"].as_object()[k] = v;
    return *this;
  }
  // Adds a container; `json_extra` is merged into it ("env", "resources", "volumeMounts").
  PodBuilder& Container(const std::string& name, std::vector<std::string> command,
                        const std::string& json_extra = "{}", bool init = false) {
    json::object c = json::parse(json_extra).as_object();
    c["name"] = name;
    c["image"] = "busybox";
    if (!command.empty()) {
      json::array cmd;
      for (auto& s : command) cmd.emplace_back(s);
      c["command"] = std::move(cmd);
    }
    const char* list = init ? "initContainers" : "containers";
    if (!Spec().contains(list)) Spec()[list] = json::array();
    Spec()[list].as_array().push_back(std::move(c));
    return *this;
  }
  PodBuilder& Shell(const std::string& name, const std::string& script,
                    const std::string& json_extra = "{}") {
    return Container(name, {"sh", "-c", script}, json_extra);
  }
  PodBuilder& Init(const std::string& name, const std::string& script,
                   const std::string& json_extra = "{}") {
    return Container(name, {"sh", "-c", script}, json_extra, true);
  }
  PodBuilder& Overhead(const std::string& json_object) {
    Spec()["overhead"] = json::parse(json_object);
    return *this;
  }
  PodBuilder& Volumes(const std::string& json_array) {
    Spec()["volumes"] = json::parse(json_array);
    return *this;
  }
  PodBuilder& Deleting(int64_t grace_seconds) {
    Meta()["deletionTimestamp"] = "2030-01-01T00:00:00Z";
    Meta()["deletionGracePeriodSeconds"] = grace_seconds;
    return *this;
  }
  PodBuilder& Status(const std::string& status_json) {
    pod_["status"] = json::parse(status_json);
    return *this;
  }
  json::object Obj() const { return pod_; }

 private:
  json::object& Meta() { return pod_["metadata"].as_object(); }
  json::object& Spec() { return pod_["spec"].as_object(); }
  json::object pod_;
};

// Records what the manager reports, as the API server would keep it.
class FakeSink : public PodSink {
 public:
  absl::Status WriteStatus(const PodRef& pod, const json::object& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    statuses_[pod.name] = status;
    history_[pod.name].push_back(status);
    cv_.notify_all();
    return absl::OkStatus();
  }
  absl::Status ConfirmDeletion(const PodRef& pod) override {
    std::lock_guard<std::mutex> lock(mu_);
    deleted_.push_back(pod.name);
    deleted_at_[pod.name] = std::chrono::steady_clock::now();
    cv_.notify_all();
    return absl::OkStatus();
  }
  void RecordEvent(const PodRef& pod, const std::string& node, const PodEvent& event) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_[pod.name].push_back(event.type + " " + event.reason + ": " + event.message);
    cv_.notify_all();
  }
  absl::StatusOr<json::object> GetObject(std::string_view resource, const std::string& ns,
                                         const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (resource != "configmaps") return absl::NotFoundError("secrets \"" + name + "\" not found");
    auto it = config_maps_.find(ns + "/" + name);
    if (it == config_maps_.end()) return absl::NotFoundError("configmaps \"" + name + "\" not found");
    return it->second;
  }

  void AddConfigMap(const std::string& ns, const std::string& name, const std::string& data_json) {
    std::lock_guard<std::mutex> lock(mu_);
    config_maps_[ns + "/" + name] = json::object{{"data", json::parse(data_json)}};
  }

  // Waits until `pred(status)` holds for the last status of `pod`; returns that status.
  json::object WaitStatus(const std::string& pod, const std::function<bool(const json::object&)>& pred,
                          std::chrono::milliseconds timeout = 15s) {
    std::unique_lock<std::mutex> lock(mu_);
    json::object found;
    bool ok = cv_.wait_for(lock, timeout, [&] {
      auto it = statuses_.find(pod);
      if (it == statuses_.end() || !pred(it->second)) return false;
      found = it->second;
      return true;
    });
    auto it = statuses_.find(pod);
    EXPECT_TRUE(ok) << "timed out waiting on " << pod << "; last status: "
                    << (it == statuses_.end() ? "none" : json::serialize(it->second));
    return found;
  }
  json::object WaitPhase(const std::string& pod, const std::string& phase,
                         std::chrono::milliseconds timeout = 15s) {
    return WaitStatus(
        pod, [&](const json::object& s) { return StringAt(s, "phase") == phase; }, timeout);
  }
  bool WaitDeleted(const std::string& pod, std::chrono::milliseconds timeout = 15s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return deleted_at_.count(pod) != 0; });
  }
  std::chrono::steady_clock::time_point DeletedAt(const std::string& pod) {
    std::lock_guard<std::mutex> lock(mu_);
    return deleted_at_.at(pod);
  }
  std::vector<std::string> Events(const std::string& pod) {
    std::lock_guard<std::mutex> lock(mu_);
    return events_[pod];
  }
  std::vector<json::object> History(const std::string& pod) {
    std::lock_guard<std::mutex> lock(mu_);
    return history_[pod];
  }
  bool WaitEvent(const std::string& pod, const std::string& substring,
                 std::chrono::milliseconds timeout = 15s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      for (const auto& e : events_[pod]) {
        if (e.find(substring) != std::string::npos) return true;
      }
      return false;
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, json::object> statuses_;
  std::map<std::string, std::vector<json::object>> history_;
  std::vector<std::string> deleted_;
  std::map<std::string, std::chrono::steady_clock::time_point> deleted_at_;
  std::map<std::string, std::vector<std::string>> events_;
  std::map<std::string, json::object> config_maps_;
};

const json::object& FirstContainer(const json::object& status, const char* list = "containerStatuses") {
  static const json::object kEmpty;
  const json::array* a = ArrayAt(status, list);
  return a == nullptr || a->empty() ? kEmpty : a->front().as_object();
}

std::string ConditionOf(const json::object& status, const std::string& type) {
  if (const json::array* conditions = ArrayAt(status, "conditions")) {
    for (const json::value& c : *conditions) {
      if (StringAt(c.as_object(), "type") == type) {
        return StringAt(c.as_object(), "status") + "/" + StringAt(c.as_object(), "reason") + "/" +
               StringAt(c.as_object(), "message");
      }
    }
  }
  return "absent";
}

std::string Terminated(const json::object& cs, const char* field) {
  const json::object* state = ObjectAt(cs, "state");
  const json::object* t = state == nullptr ? nullptr : ObjectAt(*state, "terminated");
  if (t == nullptr) return "not terminated";
  if (std::string(field) == "exitCode") return std::to_string(IntAt(*t, "exitCode").value_or(-1));
  return StringAt(*t, field);
}

class PodManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/muster-pods-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (manager_) manager_->Stop();
    process_.Shutdown(0ms);
    simulated_.Shutdown(0ms);
    manager_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Nodes: "proc" (process runtime, 2 GPUs) and "sim" (simulated, 1 GPU), then `extra`.
  void StartManager(const std::vector<NodeConfig>& extra = {}) {
    NodeConfig proc;
    proc.name = "proc";
    proc.runtime = RuntimeKind::kProcess;
    proc.internal_ip = "127.0.0.1";
    proc.gpus.resize(2);
    proc.gpus[1].index = 1;
    proc.allocatable["cpu"] = common::Quantity::FromUnits(4);
    NodeConfig sim;
    sim.name = "sim";
    sim.runtime = RuntimeKind::kSimulated;
    sim.internal_ip = "10.1.0.1";
    sim.pod_cidr = "10.128.0.0/24";
    sim.gpus.resize(1);
    PodManagerOptions options;
    options.worker.data_dir = dir_;
    options.worker.backoff_initial = 50ms;
    options.worker.backoff_max = 200ms;
    options.worker.setup_retry = 100ms;
    options.write_retry = 100ms;
    std::vector<NodeConfig> nodes{proc, sim};
    nodes.insert(nodes.end(), extra.begin(), extra.end());
    manager_ = std::make_unique<PodManager>(std::move(nodes), sink_, simulated_, process_, options);
    EXPECT_TRUE(manager_->Start().ok());
  }

  std::string Log(const std::string& pod, const std::string& container) {
    return common::ReadFile(dir_ + "/logs/default/" + pod + "/" + container + ".log").value_or("");
  }

  std::string dir_;
  FakeSink sink_;
  ProcessRuntime process_;
  SimulatedRuntime simulated_;
  std::unique_ptr<PodManager> manager_;
};

TEST_F(PodManagerTest, ProcessPodRunsToSucceededWithItsOutputLogged) {
  StartManager();
  manager_->Upsert(PodBuilder("hello").Node("proc").Shell("main", "echo hello; sleep 0.3").Obj());
  json::object running = sink_.WaitPhase("hello", "Running");
  EXPECT_EQ(StringAt(running, "hostIP"), "127.0.0.1");
  EXPECT_THAT(StringAt(running, "podIP"), ::testing::MatchesRegex(R"(127\.[1-9][0-9]*\..*)"));
  EXPECT_FALSE(StringAt(running, "startTime").empty());
  EXPECT_EQ(ConditionOf(running, "Ready"), "True//");
  EXPECT_EQ(ConditionOf(running, "PodScheduled"), "True//");  // kept as found
  EXPECT_TRUE(IntAt(FirstContainer(running), "restartCount") == 0);

  json::object done = sink_.WaitPhase("hello", "Succeeded");
  const json::object& cs = FirstContainer(done);
  EXPECT_EQ(Terminated(cs, "exitCode"), "0");
  EXPECT_EQ(Terminated(cs, "reason"), "Completed");
  EXPECT_EQ(ConditionOf(done, "Ready"), "False/PodCompleted/");
  EXPECT_EQ(ConditionOf(done, "ContainersReady"), "False/PodCompleted/");
  EXPECT_EQ(ConditionOf(done, "Initialized"), "True/PodCompleted/");
  EXPECT_EQ(Log("hello", "main"), "hello\n");
  EXPECT_THAT(sink_.Events("hello"), ::testing::Contains("Normal Started: Started container main"));
  EXPECT_EQ(manager_->Counts().succeeded, 1);
}

TEST_F(PodManagerTest, ExitCodeSetsThePhase) {
  StartManager();
  manager_->Upsert(PodBuilder("fails").Node("proc").Shell("main", "echo bad >&2; exit 3").Obj());
  json::object failed = sink_.WaitPhase("fails", "Failed");
  const json::object& cs = FirstContainer(failed);
  EXPECT_EQ(Terminated(cs, "exitCode"), "3");
  EXPECT_EQ(Terminated(cs, "reason"), "Error");
  EXPECT_EQ(IntAt(cs, "restartCount"), 0);
  EXPECT_EQ(ConditionOf(failed, "Ready"),
            "False/ContainersNotReady/containers with unready status: [main]");
  EXPECT_EQ(Log("fails", "main"), "bad\n");
  // A terminal pod is written once, not again.
  std::this_thread::sleep_for(200ms);
  int failed_writes = 0;
  for (const auto& s : sink_.History("fails")) failed_writes += StringAt(s, "phase") == "Failed";
  EXPECT_EQ(failed_writes, 1);
}

TEST_F(PodManagerTest, EnvironmentAndGpusAreWhatThePodSays) {
  StartManager();
  manager_->Upsert(
      PodBuilder("env")
          .Node("proc")
          .Annotation("muster.dev/gpu-indices", "1")
          .Annotation("team", "ml")
          .Shell("main",
                 "echo NV=$NVIDIA_VISIBLE_DEVICES CUDA=$CUDA_VISIBLE_DEVICES; echo FOO=$FOO; "
                 "echo BAR=$BAR; echo POD=$POD NS=$NS NODE=$NODE IP=$IP TEAM=$TEAM CPU=$CPU; "
                 "echo HOST=$HOSTNAME; echo ARG=$0",
                 R"j({"args":["$(FOO)-arg"],
                     "resources":{"limits":{"nvidia.com/gpu":1}},
                     "env":[{"name":"FOO","value":"foo"},
                            {"name":"BAR","value":"$(FOO)-bar $$(FOO)"},
                            {"name":"POD","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},
                            {"name":"NS","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}},
                            {"name":"NODE","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}},
                            {"name":"IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},
                            {"name":"TEAM","valueFrom":{"fieldRef":{"fieldPath":"metadata.annotations['team']"}}},
                            {"name":"CPU","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu"}}}]})j")
          .Obj());
  const std::string ip = StringAt(sink_.WaitPhase("env", "Succeeded"), "podIP");  // its own
  EXPECT_EQ(Log("env", "main"), "NV=1 CUDA=1\nFOO=foo\nBAR=foo-bar $(FOO)\nPOD=env NS=default "
            "NODE=proc IP=" + ip + " TEAM=ml CPU=4\nHOST=env\nARG=foo-arg\n");

  // Without GPUs: none visible.
  manager_->Upsert(PodBuilder("nogpu").Node("proc").Shell(
      "main", "echo NV=$NVIDIA_VISIBLE_DEVICES CUDA=[$CUDA_VISIBLE_DEVICES]").Obj());
  sink_.WaitPhase("nogpu", "Succeeded");
  EXPECT_EQ(Log("nogpu", "main"), "NV=void CUDA=[]\n");
}

// The scheduler's nvlink plugin names a linked set, not the lowest free GPUs: each container
// sees exactly that set, in CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES.
TEST_F(PodManagerTest, AMultiGpuPodSeesExactlyTheGpusTheSchedulerChose) {
  NodeConfig dgx;
  dgx.name = "dgx";
  dgx.runtime = RuntimeKind::kProcess;
  dgx.internal_ip = "127.0.0.1";
  dgx.gpus.resize(8);
  for (int g = 0; g < 8; ++g) dgx.gpus[g].index = g;
  dgx.allocatable["cpu"] = common::Quantity::FromUnits(8);
  StartManager({dgx});
  const std::string print = "echo NV=$NVIDIA_VISIBLE_DEVICES CUDA=$CUDA_VISIBLE_DEVICES; sleep 5";
  manager_->Upsert(PodBuilder("quad").Node("dgx")
                       .Annotation("muster.dev/gpu-indices", "4,5,6,7")
                       .Shell("main", print, R"({"resources":{"limits":{"nvidia.com/gpu":4}}})")
                       .Obj());
  manager_->Upsert(PodBuilder("pair").Node("dgx")
                       .Annotation("muster.dev/gpu-indices", "0,3")
                       .Shell("main", print, R"({"resources":{"limits":{"nvidia.com/gpu":2}}})")
                       .Obj());
  sink_.WaitPhase("quad", "Running");
  sink_.WaitPhase("pair", "Running");
  for (int i = 0; i < 100 && (Log("quad", "main").empty() || Log("pair", "main").empty()); ++i) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(Log("quad", "main"), "NV=4,5,6,7 CUDA=4,5,6,7\n");
  EXPECT_EQ(Log("pair", "main"), "NV=0,3 CUDA=0,3\n");
}

TEST_F(PodManagerTest, PodsSharingAGpuBothSeeTheDeviceTheSchedulerRecorded) {
  StartManager();
  for (const char* name : {"half-a", "half-b"}) {
    manager_->Upsert(PodBuilder(name).Node("proc")
                         .Annotation("muster.dev/gpu-indices", "1")
                         .Shell("main", "echo NV=$NVIDIA_VISIBLE_DEVICES CUDA=$CUDA_VISIBLE_DEVICES",
                                R"({"resources":{"requests":{"muster.dev/gpu-milli":500}}})")
                         .Obj());
  }
  sink_.WaitPhase("half-a", "Succeeded");
  sink_.WaitPhase("half-b", "Succeeded");
  EXPECT_EQ(Log("half-a", "main"), "NV=1 CUDA=1\n");
  EXPECT_EQ(Log("half-b", "main"), "NV=1 CUDA=1\n");
}

TEST_F(PodManagerTest, GpusWithoutTheAnnotationAreTheLowestFreeOnes) {
  StartManager();
  manager_->Upsert(PodBuilder("a").Node("proc")
                       .Shell("main", "echo $CUDA_VISIBLE_DEVICES; sleep 5",
                              R"({"resources":{"limits":{"nvidia.com/gpu":1}}})")
                       .Obj());
  sink_.WaitPhase("a", "Running");
  EXPECT_EQ(manager_->Gpus().in_use, 1);
  EXPECT_EQ(manager_->Gpus().total, 3);
  manager_->Upsert(PodBuilder("b").Node("proc")
                       .Shell("main", "echo $CUDA_VISIBLE_DEVICES",
                              R"({"resources":{"limits":{"nvidia.com/gpu":1}}})")
                       .Obj());
  sink_.WaitPhase("b", "Succeeded");
  EXPECT_EQ(Log("a", "main"), "0\n");
  EXPECT_EQ(Log("b", "main"), "1\n");
  // More than the node has left: the kubelet's admission error.
  manager_->Upsert(PodBuilder("c").Node("proc")
                       .Shell("main", "true", R"({"resources":{"limits":{"nvidia.com/gpu":2}}})")
                       .Obj());
  json::object c = sink_.WaitPhase("c", "Failed");
  EXPECT_EQ(StringAt(c, "reason"), "UnexpectedAdmissionError");
  EXPECT_EQ(StringAt(c, "message"),
            "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
            "Requested: 2, Available: 1, which is unexpected");
}

TEST_F(PodManagerTest, MigDevicesAndReplicasAreExportedAsNvidiasPluginWouldAllocateThem) {
  // GPU 0 shared by two replicas (nvidia.com/gpu, numbered by the scheduler), GPU 1 split into
  // two MIG devices (nvidia.com/mig-1g.10gb, handed out by the node).
  NodeConfig mig;
  mig.name = "mig";
  mig.runtime = RuntimeKind::kProcess;
  mig.internal_ip = "127.0.0.1";
  mig.device_resources = {
      {"nvidia.com/gpu", {{"GPU-0::0", "GPU-0", "0"}, {"GPU-0::1", "GPU-0", "0"}}},
      {"nvidia.com/mig-1g.10gb", {{"MIG-a", "MIG-a", "MIG-a"}, {"MIG-b", "MIG-b", "MIG-b"}}}};
  StartManager({mig});
  EXPECT_EQ(manager_->Gpus().total, 3 + 4);
  const std::string print = "echo NV=$NVIDIA_VISIBLE_DEVICES CUDA=$CUDA_VISIBLE_DEVICES; sleep 5";
  manager_->Upsert(PodBuilder("m1").Node("mig")
                       .Shell("main", print,
                              R"({"resources":{"limits":{"nvidia.com/mig-1g.10gb":1}}})")
                       .Obj());
  sink_.WaitPhase("m1", "Running");
  manager_->Upsert(PodBuilder("m2").Node("mig")
                       .Shell("main", print,
                              R"({"resources":{"limits":{"nvidia.com/mig-1g.10gb":1}}})")
                       .Obj());
  sink_.WaitPhase("m2", "Running");
  // No MIG device left: admission fails and holds nothing (the replicas stay free).
  manager_->Upsert(PodBuilder("both").Node("mig")
                       .Annotation("muster.dev/gpu-indices", "0,1")
                       .Shell("main", "echo NV=$NVIDIA_VISIBLE_DEVICES CUDA=$CUDA_VISIBLE_DEVICES",
                              R"({"resources":{"limits":{"nvidia.com/gpu":2,
                                                         "nvidia.com/mig-1g.10gb":1}}})")
                       .Obj());
  json::object both = sink_.WaitPhase("both", "Failed");
  EXPECT_EQ(StringAt(both, "message"),
            "Allocate failed due to requested number of devices unavailable for "
            "nvidia.com/mig-1g.10gb. Requested: 1, Available: 0, which is unexpected");
  manager_->Upsert(PodBuilder("replicas").Node("mig")
                       .Annotation("muster.dev/gpu-indices", "0,1")
                       .Shell("main", "echo NV=$NVIDIA_VISIBLE_DEVICES CUDA=$CUDA_VISIBLE_DEVICES",
                              R"({"resources":{"limits":{"nvidia.com/gpu":2}}})")
                       .Obj());
  // Both replicas of GPU 0 in one container name the GPU once.
  sink_.WaitPhase("replicas", "Succeeded");
  EXPECT_EQ(Log("replicas", "main"), "NV=GPU-0 CUDA=0\n");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(Log("m1", "main"), "NV=MIG-a CUDA=MIG-a\n");
  EXPECT_EQ(Log("m2", "main"), "NV=MIG-b CUDA=MIG-b\n");
  EXPECT_EQ(manager_->Gpus().in_use, 2);
}

// A simulated node of 4 CPUs and 8Gi for the kubelet's admission of requests.
NodeConfig SmallNode() {
  NodeConfig small;
  small.name = "small";
  small.runtime = RuntimeKind::kSimulated;
  small.internal_ip = "10.1.0.2";
  small.pod_cidr = "10.128.1.0/24";
  small.allocatable["cpu"] = common::Quantity::FromUnits(4);
  small.allocatable["memory"] = common::Quantity::FromUnits(int64_t{8} << 30);
  small.allocatable["pods"] = common::Quantity::FromUnits(110);
  return small;
}

std::string CpuRequest(const std::string& cpu) {
  return R"({"resources":{"requests":{"cpu":")" + cpu + R"("}}})";
}

TEST_F(PodManagerTest, APodThatDoesNotFitBesideTheAdmittedOnesIsRejectedAsByTheKubelet) {
  StartManager({SmallNode()});
  manager_->Upsert(PodBuilder("first")
                       .Node("small")
                       .Container("c", {}, CpuRequest("1500m"))
                       .Annotation("muster.dev/run-seconds", "1")
                       .Obj());
  sink_.WaitPhase("first", "Running");
  PodBuilder second = PodBuilder("second").Node("small").Container("c", {}, CpuRequest("1500m"));
  manager_->Upsert(second.Obj());
  sink_.WaitPhase("second", "Running");

  manager_->Upsert(PodBuilder("third").Node("small").Container("c", {}, CpuRequest("1500m")).Obj());
  json::object third = sink_.WaitPhase("third", "Failed");
  EXPECT_EQ(StringAt(third, "reason"), "OutOfcpu");
  EXPECT_EQ(StringAt(third, "message"),
            "Pod was rejected: Node didn't have enough resource: cpu, requested: 1500, used: 3000, "
            "capacity: 4000");
  EXPECT_THAT(sink_.Events("third"),
              ::testing::Contains("Warning OutOfcpu: Node didn't have enough resource: cpu, "
                                  "requested: 1500, used: 3000, capacity: 4000"));
  EXPECT_THAT(sink_.Events("third"), ::testing::Not(::testing::Contains(HasSubstr("Started"))));

  // A pod that finished leaves its room to the next one.
  sink_.WaitPhase("first", "Succeeded");
  manager_->Upsert(
      PodBuilder("fourth").Node("small").Container("c", {}, CpuRequest("1500m")).Obj());
  sink_.WaitPhase("fourth", "Running");
  // So does a deleted one.
  manager_->Upsert(second.Deleting(30).Obj());
  ASSERT_TRUE(sink_.WaitDeleted("second"));
  manager_->Remove(second.Obj());
  manager_->Upsert(PodBuilder("fifth").Node("small").Container("c", {}, CpuRequest("2500m")).Obj());
  sink_.WaitPhase("fifth", "Running");
  EXPECT_EQ(manager_->Counts().failed, 1);
}

TEST_F(PodManagerTest, AdmissionCountsInitContainersLimitsAndOverhead) {
  StartManager({SmallNode()});
  // cpu: max(500m + 500m, 3) + 250m = 3250m; memory: 1Gi (a limit without a request) + 1Gi.
  manager_->Upsert(
      PodBuilder("big")
          .Node("small")
          .Container("init", {}, CpuRequest("3"), /*init=*/true)
          .Container("a", {}, R"({"resources":{"limits":{"cpu":"500m","memory":"1Gi"}}})")
          .Container("b", {}, CpuRequest("500m"))
          .Overhead(R"({"cpu":"250m","memory":"1Gi"})")
          .Obj());
  sink_.WaitPhase("big", "Running");
  manager_->Upsert(PodBuilder("cpu").Node("small").Container("c", {}, CpuRequest("1")).Obj());
  json::object cpu = sink_.WaitPhase("cpu", "Failed");
  EXPECT_EQ(StringAt(cpu, "reason"), "OutOfcpu");
  EXPECT_EQ(StringAt(cpu, "message"),
            "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000, used: 3250, "
            "capacity: 4000");
  manager_->Upsert(PodBuilder("memory")
                       .Node("small")
                       .Container("c", {}, R"({"resources":{"requests":{"memory":"7Gi"}}})")
                       .Obj());
  json::object memory = sink_.WaitPhase("memory", "Failed");
  EXPECT_EQ(StringAt(memory, "reason"), "OutOfmemory");
  EXPECT_EQ(StringAt(memory, "message"),
            "Pod was rejected: Node didn't have enough resource: memory, requested: 7516192768, "
            "used: 2147483648, capacity: 8589934592");
  manager_->Upsert(PodBuilder("fits").Node("small").Container("c", {}, CpuRequest("750m")).Obj());
  sink_.WaitPhase("fits", "Running");
}

TEST_F(PodManagerTest, AdoptedPodsAreCountedButNeverRejected) {
  StartManager({SmallNode()});
  const std::string started = api::FormatTime(std::chrono::system_clock::now() - 1s);
  // Two running pods of 3 CPUs each, found after a restart (placed by two schedulers, say).
  for (const char* name : {"adopted-a", "adopted-b"}) {
    manager_->Upsert(PodBuilder(name)
                         .Node("small")
                         .Container("c", {}, CpuRequest("3"))
                         .Status(R"({"phase":"Running","startTime":")" + started +
                                 R"(","containerStatuses":[{"name":"c","restartCount":0,
                                    "state":{"running":{"startedAt":")" +
                                 started + R"("}}}]})")
                         .Obj());
    json::object running = sink_.WaitPhase(name, "Running");
    EXPECT_EQ(StringAt(running, "reason"), "");
  }
  manager_->Upsert(PodBuilder("new").Node("small").Container("c", {}, CpuRequest("500m")).Obj());
  json::object rejected = sink_.WaitPhase("new", "Failed");
  EXPECT_EQ(StringAt(rejected, "message"),
            "Pod was rejected: Node didn't have enough resource: cpu, requested: 500, used: 6000, "
            "capacity: 4000");
  EXPECT_EQ(manager_->Counts().running, 2);
}

TEST_F(PodManagerTest, RestartPolicyOnFailureRestartsUntilSuccess) {
  StartManager();
  // Fails twice, then succeeds; the count survives in the working directory.
  manager_->Upsert(PodBuilder("flaky").Node("proc").RestartPolicy("OnFailure")
                       .Shell("main", "n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; "
                                      "echo try $n; [ $n -ge 2 ]")
                       .Obj());
  json::object done = sink_.WaitPhase("flaky", "Succeeded");
  const json::object& cs = FirstContainer(done);
  EXPECT_EQ(IntAt(cs, "restartCount"), 2);
  const json::object* last = ObjectAt(cs, "lastState");
  ASSERT_NE(last, nullptr);
  ASSERT_NE(ObjectAt(*last, "terminated"), nullptr);
  EXPECT_EQ(IntAt(*ObjectAt(*last, "terminated"), "exitCode"), 1);
  EXPECT_EQ(Log("flaky", "main"), "try 0\ntry 1\ntry 2\n");
  EXPECT_TRUE(sink_.WaitEvent("flaky", "Warning BackOff: Back-off restarting failed container main "
                                       "in pod flaky_default(uid-flaky)"));
}

TEST_F(PodManagerTest, RestartPolicyAlwaysKeepsThePodRunning) {
  StartManager();
  manager_->Upsert(PodBuilder("always").Node("proc").RestartPolicy("Always")
                       .Shell("main", "echo run").Obj());
  json::object s = sink_.WaitStatus("always", [](const json::object& st) {
    return IntAt(FirstContainer(st), "restartCount").value_or(0) >= 3;
  });
  EXPECT_EQ(StringAt(s, "phase"), "Running");
  // Between runs: waiting in CrashLoopBackOff with the last run in lastState.
  bool saw_backoff = false;
  for (const auto& st : sink_.History("always")) {
    const json::object* state = ObjectAt(FirstContainer(st), "state");
    if (state != nullptr && ObjectAt(*state, "waiting") != nullptr &&
        StringAt(*ObjectAt(*state, "waiting"), "reason") == "CrashLoopBackOff") {
      saw_backoff = true;
      EXPECT_THAT(StringAt(*ObjectAt(*state, "waiting"), "message"),
                  HasSubstr("restarting failed container=main pod=always_default(uid-always)"));
      EXPECT_EQ(StringAt(st, "phase"), "Running");
    }
  }
  EXPECT_TRUE(saw_backoff);
}

TEST_F(PodManagerTest, RestartPolicyNeverDoesNotRestart) {
  StartManager();
  manager_->Upsert(PodBuilder("once").Node("proc").Shell("main", "echo once; exit 1").Obj());
  sink_.WaitPhase("once", "Failed");
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(Log("once", "main"), "once\n");
}

TEST_F(PodManagerTest, InitContainersRunFirstInOrderAndShareVolumes) {
  StartManager();
  const std::string mount = R"({"volumeMounts":[{"name":"scratch","mountPath":"/work"}]})";
  manager_->Upsert(PodBuilder("init")
                       .Node("proc")
                       .Volumes(R"([{"name":"scratch","emptyDir":{}}])")
                       .Init("first", "echo first >> $MUSTER_ROOT/work/order", mount)
                       .Init("second", "echo second >> $MUSTER_ROOT/work/order", mount)
                       .Shell("main", "cat $MUSTER_ROOT/work/order", mount)
                       .Obj());
  json::object done = sink_.WaitPhase("init", "Succeeded");
  EXPECT_EQ(Log("init", "main"), "first\nsecond\n");
  const json::array* init = ArrayAt(done, "initContainerStatuses");
  ASSERT_NE(init, nullptr);
  ASSERT_EQ(init->size(), 2u);
  EXPECT_EQ(Terminated(init->at(1).as_object(), "reason"), "Completed");
  // While the init containers ran, the pod was Pending and not initialized.
  bool saw_init_pending = false;
  for (const auto& st : sink_.History("init")) {
    if (StringAt(st, "phase") == "Pending" &&
        ConditionOf(st, "Initialized").rfind("False/ContainersNotInitialized/", 0) == 0) {
      saw_init_pending = true;
    }
  }
  EXPECT_TRUE(saw_init_pending);
}

TEST_F(PodManagerTest, FailedInitContainerFailsANeverPod) {
  StartManager();
  manager_->Upsert(PodBuilder("badinit").Node("proc")
                       .Init("setup", "exit 2")
                       .Shell("main", "echo never")
                       .Obj());
  json::object failed = sink_.WaitPhase("badinit", "Failed");
  EXPECT_EQ(ConditionOf(failed, "Initialized"),
            "False/ContainersNotInitialized/containers with incomplete status: [setup]");
  const json::object* state = ObjectAt(FirstContainer(failed), "state");
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(StringAt(*ObjectAt(*state, "waiting"), "reason"), "PodInitializing");
  EXPECT_EQ(Log("badinit", "main"), "");
}

TEST_F(PodManagerTest, ConfigMapVolumesBecomeFiles) {
  StartManager();
  const std::string pod_volumes = R"([{"name":"svc","configMap":{"name":"job-svc"}}])";
  const std::string mount = R"({"volumeMounts":[{"name":"svc","mountPath":"/etc/volcano"}]})";
  manager_->Upsert(PodBuilder("hosts").Node("proc").Volumes(pod_volumes)
                       .Shell("main", "cat $MUSTER_ROOT/etc/volcano/trainer.host", mount)
                       .Obj());
  // Missing: the container waits in ContainerCreating and says why.
  json::object waiting = sink_.WaitStatus("hosts", [](const json::object& s) {
    const json::object* state = ObjectAt(FirstContainer(s), "state");
    return state != nullptr && ObjectAt(*state, "waiting") != nullptr &&
           !StringAt(*ObjectAt(*state, "waiting"), "message").empty();
  });
  EXPECT_EQ(StringAt(waiting, "phase"), "Pending");
  EXPECT_TRUE(sink_.WaitEvent("hosts", "Warning FailedMount: MountVolume.SetUp failed for volume "
                                       "\"svc\" : configmap \"job-svc\" not found"));
  // Once it exists, the pod runs with the file in place.
  sink_.AddConfigMap("default", "job-svc", R"({"trainer.host":"job-trainer-0.job\njob-trainer-1.job"})");
  sink_.WaitPhase("hosts", "Succeeded");
  EXPECT_EQ(Log("hosts", "main"), "job-trainer-0.job\njob-trainer-1.job");
}

TEST_F(PodManagerTest, AContainerWithoutACommandFailsSayingWhy) {
  StartManager();
  manager_->Upsert(PodBuilder("image").Node("proc").Container("trainer", {}).Obj());
  json::object failed = sink_.WaitPhase("image", "Failed");
  const json::object& cs = FirstContainer(failed);
  EXPECT_EQ(Terminated(cs, "reason"), "StartError");
  EXPECT_EQ(Terminated(cs, "exitCode"), "128");
  EXPECT_EQ(Terminated(cs, "message"),
            "container \"trainer\" has no command: the process runtime runs a container's command "
            "and args on this machine and does not run images (image \"busybox\")");
  EXPECT_TRUE(sink_.WaitEvent("image", "Warning Failed: Error: container \"trainer\" has no command"));
}

// What `kubectl run a --image=busybox --restart=Never -- sh -c 'echo $0 $1' x y` makes: args and
// no command. The image's entrypoint is not there to run them, so they are the command line.
TEST_F(PodManagerTest, ArgsWithoutACommandAreTheCommandLine) {
  StartManager();
  manager_->Upsert(PodBuilder("args")
                       .Node("proc")
                       .Container("main", {}, R"({"args": ["sh", "-c", "echo $0 $1", "x", "y"]})")
                       .Obj());
  sink_.WaitPhase("args", "Succeeded");
  EXPECT_EQ(Log("args", "main"), "x y\n");
}

TEST_F(PodManagerTest, DeletionStopsTheContainersThenConfirms) {
  StartManager();
  PodBuilder pod = PodBuilder("long").Node("proc").Shell("main", "echo up; exec sleep 60");
  manager_->Upsert(pod.Obj());
  sink_.WaitPhase("long", "Running");
  const auto start = std::chrono::steady_clock::now();
  manager_->Upsert(pod.Deleting(30).Obj());
  ASSERT_TRUE(sink_.WaitDeleted("long"));
  EXPECT_LT(sink_.DeletedAt("long") - start, 5s);  // sleep ends on SIGTERM
  EXPECT_THAT(sink_.Events("long"), ::testing::Contains("Normal Killing: Stopping container main"));
  manager_->Remove(pod.Obj());
  for (int i = 0; i < 100 && std::filesystem::exists(dir_ + "/logs/default/long"); ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/logs/default/long"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/pods/default/long"));
  EXPECT_EQ(process_.Running(), 0u);
}

TEST_F(PodManagerTest, DeletionKillsAfterTheGracePeriod) {
  StartManager();
  PodBuilder pod = PodBuilder("stubborn").Node("proc").Shell(
      "main", "trap 'echo TERM' TERM; echo up; while true; do sleep 0.05; done");
  manager_->Upsert(pod.Obj());
  sink_.WaitPhase("stubborn", "Running");
  for (int i = 0; i < 500 && Log("stubborn", "main").empty(); ++i) {
    std::this_thread::sleep_for(10ms);  // until the trap is set
  }
  const auto start = std::chrono::steady_clock::now();
  manager_->Upsert(pod.Deleting(1).Obj());
  ASSERT_TRUE(sink_.WaitDeleted("stubborn"));
  EXPECT_GE(sink_.DeletedAt("stubborn") - start, 1s);
  EXPECT_THAT(Log("stubborn", "main"), HasSubstr("TERM"));
}

TEST_F(PodManagerTest, ForcedDeletionStillStopsTheProcesses) {
  StartManager();
  PodBuilder pod = PodBuilder("forced").Node("proc").Shell("main", "exec sleep 60");
  manager_->Upsert(pod.Obj());
  sink_.WaitPhase("forced", "Running");
  manager_->Remove(pod.Obj());
  for (int i = 0; i < 250 && process_.Running() > 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(process_.Running(), 0u);
}

TEST_F(PodManagerTest, SimulatedPodsFollowTheirAnnotations) {
  StartManager();
  const auto start = std::chrono::steady_clock::now();
  manager_->Upsert(PodBuilder("sim-ok").Node("sim").Container("c", {})
                       .Annotation("muster.dev/run-seconds", "0.3").Obj());
  manager_->Upsert(PodBuilder("sim-fail").Node("sim").Container("c", {})
                       .Annotation("muster.dev/run-seconds", "0.1")
                       .Annotation("muster.dev/exit-code", "3").Obj());
  manager_->Upsert(PodBuilder("sim-forever").Node("sim").Container("c", {}).Obj());
  json::object ok = sink_.WaitPhase("sim-ok", "Succeeded");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_EQ(StringAt(ok, "hostIP"), "10.1.0.1");
  EXPECT_EQ(StringAt(ok, "podIP").rfind("10.128.0.", 0), 0u);
  json::object failed = sink_.WaitPhase("sim-fail", "Failed");
  EXPECT_EQ(Terminated(FirstContainer(failed), "exitCode"), "3");
  json::object forever = sink_.WaitPhase("sim-forever", "Running");
  EXPECT_NE(StringAt(forever, "podIP"), StringAt(ok, "podIP"));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(manager_->Counts().running, 1);
  EXPECT_EQ(manager_->Counts().succeeded, 1);
  EXPECT_EQ(manager_->Counts().failed, 1);

  manager_->Upsert(PodBuilder("sim-bad").Node("sim").Container("c", {})
                       .Annotation("muster.dev/run-seconds", "soon").Obj());
  json::object bad = sink_.WaitPhase("sim-bad", "Pending");
  const json::object* waiting = ObjectAt(*ObjectAt(FirstContainer(bad), "state"), "waiting");
  ASSERT_NE(waiting, nullptr);
  EXPECT_EQ(StringAt(*waiting, "reason"), "CreateContainerConfigError");
  EXPECT_EQ(StringAt(*waiting, "message"),
            "annotation muster.dev/run-seconds: \"soon\" is not a number of seconds");
}

TEST_F(PodManagerTest, PodsOfOtherNodesAreIgnored) {
  StartManager();
  manager_->Upsert(PodBuilder("elsewhere").Node("other").Shell("main", "true").Obj());
  manager_->Upsert(PodBuilder("unbound").Shell("main", "true").Obj());
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(sink_.History("elsewhere").empty());
  EXPECT_TRUE(sink_.History("unbound").empty());
}

TEST_F(PodManagerTest, AdoptedPodsContinue) {
  StartManager();
  const std::string started = api::FormatTime(std::chrono::system_clock::now() - 1s);
  // A simulated pod that had run for 1 s of its 1.5 s finishes about 0.5 s later, not restarted.
  manager_->Upsert(PodBuilder("resumed").Node("sim").Container("c", {})
                       .Annotation("muster.dev/run-seconds", "1.5")
                       .Status(R"({"phase":"Running","startTime":")" + started +
                               R"(","podIP":"10.128.0.77","containerStatuses":[{"name":"c",
                                  "restartCount":0,"state":{"running":{"startedAt":")" + started +
                               R"("}}}]})")
                       .Obj());
  const auto t0 = std::chrono::steady_clock::now();
  json::object done = sink_.WaitPhase("resumed", "Succeeded");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1200ms);
  EXPECT_EQ(StringAt(done, "podIP"), "10.128.0.77");
  EXPECT_EQ(IntAt(FirstContainer(done), "restartCount"), 0);
  EXPECT_THAT(sink_.Events("resumed"), ::testing::Not(::testing::Contains(HasSubstr("Started"))));

  // A process container that was running is gone: reported lost and restarted (OnFailure).
  manager_->Upsert(PodBuilder("lost").Node("proc").RestartPolicy("OnFailure")
                       .Shell("main", "echo again")
                       .Status(R"({"phase":"Running","startTime":")" + started +
                               R"(","containerStatuses":[{"name":"main","restartCount":4,
                                  "state":{"running":{"startedAt":")" + started + R"("}}}]})")
                       .Obj());
  json::object lost = sink_.WaitPhase("lost", "Succeeded");
  const json::object& cs = FirstContainer(lost);
  EXPECT_EQ(IntAt(cs, "restartCount"), 5);
  EXPECT_EQ(StringAt(*ObjectAt(*ObjectAt(cs, "lastState"), "terminated"), "reason"),
            "ContainerStatusUnknown");

  // Finished pods stay finished and are not written again.
  manager_->Upsert(PodBuilder("finished").Node("proc").Shell("main", "echo no")
                       .Status(R"({"phase":"Succeeded","startTime":")" + started + R"("})")
                       .Obj());
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(sink_.History("finished").empty());
  EXPECT_EQ(Log("finished", "main"), "");
}

TEST_F(PodManagerTest, ANewPodOfTheSameNameStartsAfresh) {
  StartManager();
  manager_->Upsert(PodBuilder("same").Node("proc").Shell("main", "echo first").Obj());
  sink_.WaitPhase("same", "Succeeded");
  manager_->Upsert(PodBuilder("same").Uid("uid-second").Node("proc")
                       .Shell("main", "echo second; exit 4").Obj());
  sink_.WaitPhase("same", "Failed");
  EXPECT_EQ(Log("same", "main"), "second\n");
}

}  // namespace
}  // namespace muster::node
