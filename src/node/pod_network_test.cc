// Addresses and names of process pods (pod_network.h), their namespaces (pod_isolation.h), and
// both through the pod manager with real processes.

#include "node/pod_network.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/str_join.h"
#include "boost/json/parse.hpp"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/json_access.h"
#include "node/pod_manager.h"
#include "node/process_runtime.h"
#include "node/simulated_runtime.h"

namespace muster::node {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using namespace std::chrono_literals;

// A bound pod: `spec_json` is merged into its spec (hostname, subdomain, containers).
json::object NetPod(const std::string& name, const std::string& spec_json = "{}",
                    const std::string& labels_json = "{}") {
  json::object pod = json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"namespace": "default"},
      "spec": {"nodeName": "proc", "restartPolicy": "Never", "containers": []}})")
                         .as_object();
  json::object& meta = pod["metadata"].as_object();
  meta["name"] = name;
  meta["uid"] = "uid-" + name;
  meta["labels"] = json::parse(labels_json);
  const json::value spec = json::parse(spec_json);
  for (const auto& [k, v] : spec.as_object()) pod["spec"].as_object()[k] = v;
  return pod;
}

json::object HeadlessServiceObject(const std::string& name, const std::string& selector_json,
                                   const std::string& cluster_ip = "None") {
  return json::object{
      {"metadata", json::object{{"namespace", "default"}, {"name", name}}},
      {"spec", json::object{{"clusterIP", cluster_ip}, {"selector", json::parse(selector_json)}}}};
}

class TempDir {
 public:
  TempDir() {
    char dir[] = "/tmp/muster-net-XXXXXX";
    EXPECT_NE(::mkdtemp(dir), nullptr);
    path_ = dir;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

PodNetwork::Options NetOptions(const TempDir& dir, PodIsolation isolation = PodIsolation::kNone) {
  PodNetwork::Options options;
  options.data_dir = dir.path();
  options.isolation = isolation;
  options.machine_hosts_path = dir.path() + "/machine-hosts";
  std::ofstream(options.machine_hosts_path) << "127.0.0.1\tlocalhost\n10.0.0.9\tbuild-box";
  return options;
}

TEST(PodHostEntriesTest, OwnLineThenPodsThenTheHeadlessServicesSelectingThem) {
  NetworkPod w0{"u0", "team", "job-w-0", "job-w-0", "job", "127.1.0.1", {{"app", "x"}}};
  NetworkPod w1{"u1", "team", "job-w-1", "job-w-1", "job", "127.1.0.2", {{"app", "x"}}};
  NetworkPod loner{"u2", "team", "loner", "loner", "", "127.1.0.3", {{"app", "x"}}};
  NetworkPod other{"u3", "other", "db-0", "db", "store", "127.1.0.4", {}};
  std::vector<HostEntry> entries = PodHostEntries(
      w1, {other, w1, loner, w0}, {{"team", "job", {{"app", "x"}}}, {"other", "none", {}}});
  std::vector<std::string> lines;
  for (const HostEntry& e : entries) lines.push_back(e.ip + " " + absl::StrJoin(e.names, " "));
  EXPECT_THAT(lines,
              ElementsAre("127.1.0.2 job-w-1.job.team.svc.cluster.local job-w-1",
                          "127.1.0.4 db.store.other.svc.cluster.local db.store.other.svc "
                          "db.store.other",  // no short form from another namespace
                          "127.1.0.1 job-w-0.job.team.svc.cluster.local job-w-0.job.team.svc "
                          "job-w-0.job.team job-w-0.job",
                          "127.1.0.2 job-w-1.job.team.svc.cluster.local job-w-1.job.team.svc "
                          "job-w-1.job.team job-w-1.job",
                          // the Service selects the pod without a subdomain too
                          "127.1.0.1 job.team.svc.cluster.local job.team.svc job.team job",
                          "127.1.0.2 job.team.svc.cluster.local job.team.svc job.team job",
                          "127.1.0.3 job.team.svc.cluster.local job.team.svc job.team job"));
  // Without a subdomain a pod's own line is its hostname alone.
  EXPECT_EQ(PodHostEntries(loner, {}, {})[0].names, std::vector<std::string>{"loner"});
  EXPECT_EQ(HostsFileText("a b", {{"1.2.3.4", {"x", "y"}}}),
            "a b\n# muster: this pod's own names, then the pods and headless Services of the "
            "process nodes\n1.2.3.4\tx\ty\n");
}

TEST(PodNetworkTest, EachPodGetsALoopbackAddressOfItsOwnAndKeepsIt) {
  TempDir dir;
  PodNetwork network(NetOptions(dir));
  const std::string a = network.Publish(NetPod("a"), "");
  const std::string b = network.Publish(NetPod("b"), "");
  EXPECT_THAT(a, MatchesRegex(R"(127\.[1-9][0-9]*\.[0-9]+\.[1-9][0-9]*)"));
  EXPECT_NE(a, b);
  EXPECT_EQ(network.Publish(NetPod("a"), ""), a);  // published again: the same
  // A restarted agent keeps the address a pod had, when it is a pod address and free.
  EXPECT_EQ(network.Publish(NetPod("c"), "127.9.8.7"), "127.9.8.7");
  EXPECT_NE(network.Publish(NetPod("d"), "127.0.0.1"), "127.0.0.1");
  EXPECT_NE(network.Publish(NetPod("e"), a), a);
  network.Withdraw("uid-a");
  EXPECT_EQ(network.Publish(NetPod("f"), a), a);  // free again
  // The same uid always starts from the same address (a stable hash).
  TempDir other_dir;
  PodNetwork other(NetOptions(other_dir));
  EXPECT_EQ(other.Publish(NetPod("b"), ""), b);
}

TEST(PodNetworkTest, HostsFilesAreRewrittenInPlaceAsPodsComeAndGo) {
  TempDir dir;
  PodNetwork network(NetOptions(dir));
  const std::string ip0 =
      network.Publish(NetPod("w0", R"({"hostname": "w0", "subdomain": "s"})"), "");
  const std::string path = network.HostsFilePath("default", "w0");
  EXPECT_EQ(path, dir.path() + "/pods/default/w0/etc-hosts");
  std::string text = common::ReadFile(path).value_or("");
  EXPECT_EQ(text, "127.0.0.1\tlocalhost\n10.0.0.9\tbuild-box\n"
                  "# muster: this pod's own names, then the pods and headless Services of the "
                  "process nodes\n" +
                      ip0 + "\tw0.s.default.svc.cluster.local\tw0\n" + ip0 +
                      "\tw0.s.default.svc.cluster.local\tw0.s.default.svc\tw0.s.default\tw0.s\n");
  struct stat before;
  ASSERT_EQ(::stat(path.c_str(), &before), 0);

  const std::string ip1 =
      network.Publish(NetPod("w1", R"({"hostname": "w1", "subdomain": "s"})"), "");
  text = common::ReadFile(path).value_or("");
  EXPECT_THAT(text, HasSubstr(ip1 + "\tw1.s.default.svc.cluster.local\tw1.s.default.svc"));
  struct stat after;
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // a bind mount of it sees the change

  network.Withdraw("uid-w1");
  EXPECT_THAT(common::ReadFile(path).value_or(""), Not(HasSubstr("w1.s")));
  // A withdrawn pod's file is left as it was (removed with its directory).
  EXPECT_THAT(common::ReadFile(network.HostsFilePath("default", "w1")).value_or(""),
              HasSubstr("w1.s.default.svc.cluster.local\tw1\n"));
}

TEST(PodNetworkTest, HeadlessServicesNameThePodsTheySelect) {
  TempDir dir;
  PodNetwork network(NetOptions(dir));
  const std::string ip = network.Publish(NetPod("p", "{}", R"({"app": "rdv"})"), "");
  const std::string path = network.HostsFilePath("default", "p");
  network.UpsertService(HeadlessServiceObject("rdv", R"({"app": "rdv"})"));
  EXPECT_THAT(common::ReadFile(path).value_or(""),
              HasSubstr(ip + "\trdv.default.svc.cluster.local\trdv.default.svc\trdv.default"
                                 "\trdv\n"));
  // With a cluster IP muster has no proxy for it: no names.
  network.UpsertService(HeadlessServiceObject("rdv", R"({"app": "rdv"})", "10.96.0.9"));
  EXPECT_THAT(common::ReadFile(path).value_or(""), Not(HasSubstr("rdv.default")));
  network.UpsertService(HeadlessServiceObject("rdv", R"({"app": "rdv"})"));
  // Relabelled, the pod leaves the Service.
  network.Publish(NetPod("p", "{}", R"({"app": "other"})"), "");
  EXPECT_THAT(common::ReadFile(path).value_or(""), Not(HasSubstr("rdv.default")));
  network.Publish(NetPod("p", "{}", R"({"app": "rdv"})"), "");
  network.RemoveService(HeadlessServiceObject("rdv", "{}"));
  EXPECT_THAT(common::ReadFile(path).value_or(""), Not(HasSubstr("rdv.default")));
}

TEST(PodNetworkTest, WithNamespacesALaunchGetsTheHostsFileAndTheHostname) {
  TempDir dir;
  PodNetwork network(NetOptions(dir, PodIsolation::kUserNamespace));
  const std::string long_name(70, 'x');
  network.Publish(NetPod(long_name), "");
  ContainerLaunch launch;
  ASSERT_TRUE(network.PrepareLaunch("uid-" + long_name, launch).ok());
  EXPECT_EQ(launch.isolation.isolation, PodIsolation::kUserNamespace);
  EXPECT_EQ(launch.isolation.hosts_file, network.HostsFilePath("default", long_name));
  EXPECT_EQ(launch.isolation.hostname, std::string(63, 'x'));  // a DNS label at most
  EXPECT_EQ(launch.isolation.uid_map, Cat(::geteuid(), " ", ::geteuid(), " 1"));

  ContainerLaunch unknown;  // a pod not published is left as it is
  ASSERT_TRUE(network.PrepareLaunch("uid-nobody", unknown).ok());
  EXPECT_EQ(unknown.isolation.isolation, PodIsolation::kNone);
}

TEST(PodNetworkTest, WithoutNamespacesMasterAddrBecomesTheAddressOrWaitsForIt) {
  TempDir dir;
  PodNetwork network(NetOptions(dir, PodIsolation::kNone));
  const std::string worker_ip =
      network.Publish(NetPod("pt-worker-0", R"({"subdomain": "pt"})"), "");
  ContainerLaunch launch;
  launch.env = {"PATH=/bin", "MASTER_ADDR=pt-master-0.pt"};
  absl::Status early = network.PrepareLaunch("uid-pt-worker-0", launch);
  EXPECT_TRUE(absl::IsUnavailable(early)) << early;
  EXPECT_EQ(early.message(), "MASTER_ADDR: no pod has the address of pt-master-0.pt yet");

  const std::string master_ip =
      network.Publish(NetPod("pt-master-0", R"({"subdomain": "pt"})"), "");
  ASSERT_TRUE(network.PrepareLaunch("uid-pt-worker-0", launch).ok());
  EXPECT_THAT(launch.env, ElementsAre("PATH=/bin", "MASTER_ADDR=" + master_ip));
  EXPECT_EQ(launch.isolation.isolation, PodIsolation::kNone);

  // A name outside the pods' zones is not ours to wait for.
  ContainerLaunch external;
  external.env = {"MASTER_ADDR=trainer.example.com"};
  ASSERT_TRUE(network.PrepareLaunch("uid-pt-worker-0", external).ok());
  EXPECT_THAT(external.env, ElementsAre("MASTER_ADDR=trainer.example.com"));
}

// --- Real processes ------------------------------------------------------------------------------

// Pod statuses as the pod manager reports them.
class NetSink : public PodSink {
 public:
  absl::Status WriteStatus(const PodRef& pod, const json::object& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    statuses_[pod.name] = status;
    cv_.notify_all();
    return absl::OkStatus();
  }
  absl::Status ConfirmDeletion(const PodRef&) override { return absl::OkStatus(); }
  void RecordEvent(const PodRef&, const std::string&, const PodEvent&) override {}
  absl::StatusOr<json::object> GetObject(std::string_view, const std::string&,
                                         const std::string& name) override {
    return absl::NotFoundError(name);
  }
  json::object WaitForPhase(const std::string& pod, const std::string& phase) {
    std::unique_lock<std::mutex> lock(mu_);
    const bool reached = cv_.wait_for(lock, 20s, [&] {
      auto it = statuses_.find(pod);
      return it != statuses_.end() && StringAt(it->second, "phase") == phase;
    });
    EXPECT_TRUE(reached) << pod << " never " << phase;
    return statuses_[pod];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, json::object> statuses_;
};

class PodNetworkProcessTest : public ::testing::Test {
 protected:
  void StartManager(std::optional<PodIsolation> isolation) {
    NodeConfig proc;
    proc.name = "proc";
    proc.runtime = RuntimeKind::kProcess;
    proc.internal_ip = "127.0.0.1";
    proc.allocatable["cpu"] = common::Quantity::FromUnits(4);
    PodManagerOptions options;
    options.worker.data_dir = dir_.path();
    options.worker.setup_retry = 100ms;
    options.pod_isolation = isolation;
    manager_ = std::make_unique<PodManager>(std::vector<NodeConfig>{proc}, sink_, simulated_,
                                            process_, options);
    ASSERT_TRUE(manager_->Start().ok());
  }
  void TearDown() override {
    if (manager_) manager_->Stop();
    process_.Shutdown(0ms);
    simulated_.Shutdown(0ms);
  }
  std::string Log(const std::string& pod) {
    return common::ReadFile(dir_.path() + "/logs/default/" + pod + "/main.log").value_or("");
  }
  static json::object ShellPod(const std::string& name, const std::string& spec_json,
                               const std::string& script, const std::string& labels = "{}") {
    json::object pod = NetPod(name, spec_json, labels);
    pod["spec"].as_object()["containers"] = json::array{json::object{
        {"name", "main"}, {"image", "busybox"}, {"command", json::array{"sh", "-c", script}}}};
    return pod;
  }

  TempDir dir_;
  NetSink sink_;
  ProcessRuntime process_;
  SimulatedRuntime simulated_;
  std::unique_ptr<PodManager> manager_;
};

class PodNamespacesTest : public PodNetworkProcessTest,
                          public ::testing::WithParamInterface<PodIsolation> {};

TEST_P(PodNamespacesTest, PodsResolveEachOthersNamesAndHaveTheirOwnHostname) {
  if (!CanIsolatePods(GetParam())) {
    GTEST_SKIP() << "this machine does not allow a " << PodIsolationName(GetParam());
  }
  const std::string machine_hosts = common::ReadFile("/etc/hosts").value_or("");
  StartManager(GetParam());
  manager_->UpsertService(HeadlessServiceObject("rdv", R"({"app": "rdv"})"));
  // w0 waits until w1's name resolves, then says what it sees.
  manager_->Upsert(ShellPod(
      "w0", R"({"hostname": "w0", "subdomain": "rdv"})",
      "for i in $(seq 200); do getent hosts w1.rdv >/dev/null && break; sleep 0.05; done; "
      "hostname; for n in w1.rdv w0.rdv.default.svc.cluster.local rdv w0; do "
      "echo $n $(getent hosts $n | cut -d' ' -f1 | sort -u); done",
      R"({"app": "rdv"})"));
  manager_->Upsert(ShellPod("w1", R"({"hostname": "w1", "subdomain": "rdv"})", "sleep 2"));
  const std::string ip0 = StringAt(sink_.WaitForPhase("w0", "Succeeded"), "podIP");
  const std::string ip1 = StringAt(sink_.WaitForPhase("w1", "Running"), "podIP");
  ASSERT_NE(ip0, ip1);
  EXPECT_EQ(Log("w0"), Cat("w0\nw1.rdv ", ip1, "\nw0.rdv.default.svc.cluster.local ", ip0,
                           "\nrdv ", ip0, "\nw0 ", ip0, "\n"));
  // Nothing reached the machine's own view.
  EXPECT_EQ(common::ReadFile("/etc/hosts").value_or(""), machine_hosts);
  EXPECT_THAT(common::ReadFile("/proc/self/mountinfo").value_or(""), Not(HasSubstr("etc-hosts")));
}

INSTANTIATE_TEST_SUITE_P(Isolation, PodNamespacesTest,
                         ::testing::Values(PodIsolation::kMountNamespace,
                                           PodIsolation::kUserNamespace),
                         [](const auto& info) {
                           return info.param == PodIsolation::kMountNamespace ? "Mount" : "User";
                         });

TEST_F(PodNetworkProcessTest, WithoutNamespacesMasterAddrIsTheMastersAddress) {
  StartManager(PodIsolation::kNone);
  json::object worker = ShellPod("pt-worker-0", R"({"subdomain": "pt"})", "echo $MASTER_ADDR");
  worker["spec"].as_object()["containers"].as_array()[0].as_object()["env"] =
      json::array{json::object{{"name", "MASTER_ADDR"}, {"value", "pt-master-0.pt"}}};
  manager_->Upsert(worker);  // waits for the master's address
  std::this_thread::sleep_for(300ms);
  manager_->Upsert(ShellPod("pt-master-0", R"({"subdomain": "pt"})", "sleep 1"));
  sink_.WaitForPhase("pt-worker-0", "Succeeded");
  const std::string master_ip = StringAt(sink_.WaitForPhase("pt-master-0", "Running"), "podIP");
  EXPECT_EQ(Log("pt-worker-0"), master_ip + "\n");
}

TEST(PodIsolationTest, AFailedStepIsNamedWhenTheContainerCannotStart) {
  const PodIsolation isolation = ProbePodIsolation();
  if (isolation == PodIsolation::kNone) {
    GTEST_SKIP() << "this machine allows neither mount nor user namespaces";
  }
  ProcessRuntime runtime;
  TempDir dir;
  ContainerLaunch launch;
  launch.description = "default/p/main";
  launch.argv = {"/bin/true"};
  launch.working_dir = dir.path();
  launch.log_path = dir.path() + "/main.log";
  launch.isolation = PodIsolationPlan::For(isolation, dir.path() + "/missing", "p");
  absl::StatusOr<ContainerId> id = runtime.Start(launch, [](ContainerId, const ContainerExit&) {});
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().message(),
            Cat("pod namespaces (", PodIsolationName(isolation),
                "): bind-mount the pod's hosts file on /etc/hosts: no such file or directory"));
  runtime.Shutdown(0ms);
}

}  // namespace
}  // namespace muster::node
