#include "controller/job_pods.h"

#include <string>

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "controller/job_plugins.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::controller {
namespace {

namespace json = boost::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// The seed's gang job (tests/e2e/manifests/tensorflow-job.yaml) as the API server stores it.
constexpr char kSeedJob[] = R"({
  "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
  "metadata": {"name": "gang-tf-job", "namespace": "default", "uid": "0a1b",
               "creationTimestamp": "2024-05-01T12:00:00Z",
               "annotations": {"volcano.sh/preemptable": "false"}},
  "spec": {"minAvailable": 2, "schedulerName": "volcano", "queue": "ml-queue", "maxRetry": 3,
    "tasks": [{"name": "trainer", "replicas": 2, "minAvailable": 2,
      "template": {"metadata": {"labels": {"app": "tf"}},
        "spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                  "effect": "NoSchedule"}],
                 "containers": [{"name": "trainer", "image": "akash202k/tf-volcano-demo:v1",
                   "resources": {"requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1},
                                 "limits": {"cpu": "2", "memory": "4Gi",
                                            "nvidia.com/gpu": 1}}}]}}}]},
  "status": {"state": {"phase": "Pending"}, "version": 3}})";

Job MustDecode(std::string_view text) {
  absl::StatusOr<Job> job = DecodeJob(json::parse(text).as_object());
  EXPECT_TRUE(job.ok()) << job.status();
  return *job;
}

const json::value& At(const json::value& v, std::initializer_list<std::string_view> path) {
  const json::value* cur = &v;
  for (std::string_view key : path) {
    if (cur->is_array()) {
      cur = &cur->get_array().at(std::stoul(std::string(key)));
    } else {
      cur = &cur->get_object().at(key);
    }
  }
  return *cur;
}

std::vector<std::string> EnvNames(const json::value& container) {
  std::vector<std::string> names;
  const json::value* env = container.get_object().if_contains("env");
  if (env == nullptr) return names;
  for (const json::value& e : env->get_array()) {
    names.emplace_back(e.get_object().at("name").get_string());
  }
  return names;
}

std::string EnvValue(const json::value& container, std::string_view name) {
  for (const json::value& e : container.get_object().at("env").get_array()) {
    if (e.get_object().at("name").get_string() == name) {
      const json::value* v = e.get_object().if_contains("value");
      return v == nullptr ? "<valueFrom>" : std::string(v->get_string());
    }
  }
  return "<absent>";
}

TEST(MakePodTest, SeedJobPodCarriesVolcanosNamesLabelsAndAnnotations) {
  Job job = MustDecode(kSeedJob);
  json::value pod = MakePod(job, 0, 1);
  EXPECT_EQ(At(pod, {"metadata", "name"}), "gang-tf-job-trainer-1");
  EXPECT_EQ(At(pod, {"metadata", "namespace"}), "default");
  EXPECT_EQ(json::serialize(At(pod, {"metadata", "labels"})),
            R"({"app":"tf","volcano.sh/job-name":"gang-tf-job","volcano.sh/task-spec":"trainer",)"
            R"("volcano.sh/task-index":"1","volcano.sh/job-namespace":"default",)"
            R"("volcano.sh/queue-name":"ml-queue"})");
  const json::value& annotations = At(pod, {"metadata", "annotations"});
  EXPECT_EQ(At(annotations, {"scheduling.k8s.io/group-name"}), "gang-tf-job-0a1b");
  EXPECT_EQ(At(annotations, {"volcano.sh/job-name"}), "gang-tf-job");
  EXPECT_EQ(At(annotations, {"volcano.sh/task-spec"}), "trainer");
  EXPECT_EQ(At(annotations, {"volcano.sh/task-index"}), "1");
  EXPECT_EQ(At(annotations, {"volcano.sh/queue-name"}), "ml-queue");
  EXPECT_EQ(At(annotations, {"volcano.sh/job-version"}), "3");
  EXPECT_EQ(At(annotations, {"volcano.sh/template-uid"}), "gang-tf-job-trainer");
  EXPECT_EQ(At(annotations, {"volcano.sh/preemptable"}), "false");
  EXPECT_EQ(json::serialize(At(pod, {"metadata", "ownerReferences"})),
            R"([{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","name":"gang-tf-job",)"
            R"("uid":"0a1b","controller":true,"blockOwnerDeletion":true}])");
  EXPECT_EQ(At(pod, {"spec", "schedulerName"}), "volcano");
  // The template is copied whole, tolerations and resources included.
  EXPECT_EQ(At(pod, {"spec", "tolerations", "0", "key"}), "nvidia.com/gpu");
  EXPECT_EQ(At(pod, {"spec", "containers", "0", "image"}), "akash202k/tf-volcano-demo:v1");
}

TEST(MakePodTest, TemplateSchedulerWinsAndJobVolumesAreMounted) {
  Job job = MustDecode(R"({"metadata": {"name": "j", "namespace": "ns", "uid": "u"},
    "spec": {"schedulerName": "volcano", "queue": "q",
      "volumes": [{"mountPath": "/data", "volumeClaimName": "claim"},
                  {"mountPath": "/again", "volumeClaimName": "claim"}],
      "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"schedulerName": "muster",
        "containers": [{"name": "a"}, {"name": "b"}]}}}]}})");
  json::value pod = MakePod(job, 0, 0);
  EXPECT_EQ(At(pod, {"spec", "schedulerName"}), "muster");
  EXPECT_EQ(json::serialize(At(pod, {"spec", "volumes"})),
            R"([{"name":"j-volume-0","persistentVolumeClaim":{"claimName":"claim"}}])");
  EXPECT_EQ(json::serialize(At(pod, {"spec", "containers", "1", "volumeMounts"})),
            R"([{"mountPath":"/data","name":"j-volume-0"}])");
}

TEST(PodGroupTest, SeedJobPodGroup) {
  Job job = MustDecode(kSeedJob);
  json::value pg = MakePodGroup(job, nullptr);
  EXPECT_EQ(At(pg, {"metadata", "name"}), "gang-tf-job-0a1b");
  EXPECT_EQ(At(pg, {"metadata", "annotations", "volcano.sh/preemptable"}), "false");
  EXPECT_EQ(At(pg, {"metadata", "ownerReferences", "0", "kind"}), "Job");
  EXPECT_EQ(json::serialize(At(pg, {"spec"})),
            R"({"minMember":2,"minTaskMember":{"trainer":2},"queue":"ml-queue",)"
            R"("minResources":{"cpu":"4","memory":"8Gi","nvidia.com/gpu":"2"}})");
}

TEST(PodGroupTest, NetworkTopologyIsCopiedFromTheJob) {
  Job job = MustDecode(R"({"metadata": {"name": "j", "namespace": "ns", "uid": "u"},
    "spec": {"minAvailable": 1, "queue": "q",
      "networkTopology": {"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"},
      "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}]}})");
  // highestTierAllowed wins over highestTierName, as in Volcano's job controller.
  EXPECT_EQ(json::serialize(At(MakePodGroup(job, nullptr), {"spec", "networkTopology"})),
            R"({"mode":"hard","highestTierAllowed":1})");
  job.spec.network_topology->highest_tier_allowed.reset();
  job.spec.network_topology->mode = "soft";
  EXPECT_EQ(json::serialize(At(MakePodGroup(job, nullptr), {"spec", "networkTopology"})),
            R"({"mode":"soft","highestTierName":"rack"})");
  // Without one, the PodGroup has none (SeedJobPodGroup: the whole spec).
  EXPECT_FALSE(MakePodGroup(MustDecode(kSeedJob), nullptr)["spec"].as_object().contains(
      "networkTopology"));
  // A bad value is refused with its path.
  absl::StatusOr<Job> bad = DecodeJob(json::parse(R"({"metadata": {"name": "j"},
    "spec": {"networkTopology": {"highestTierAllowed": "one"}}})").as_object());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("spec.networkTopology.highestTierAllowed"));
}

TEST(PodGroupTest, MinResourcesTakeEachTasksMinimumFirstThenByPriority) {
  Job job = MustDecode(R"({"metadata": {"name": "j", "namespace": "ns", "uid": "u"},
    "spec": {"minAvailable": 3, "queue": "q", "tasks": [
      {"name": "low", "replicas": 2, "minAvailable": 1, "template": {"spec": {
        "containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}]}}},
      {"name": "high", "replicas": 3, "minAvailable": 1, "template": {"spec": {
        "priorityClassName": "important",
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "5"}}}],
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}}]}})");
  PriorityLookup priority = [](const std::string& name) -> std::optional<int32_t> {
    if (name == "important") return 1000;
    return std::nullopt;
  };
  // One of each (5 + 1, the init container dominating), then the third from "high" (5).
  EXPECT_THAT(MinResources(job, priority), ElementsAre(Pair("cpu", "11")));
  // Without priorities the third comes from "low", the first task.
  EXPECT_THAT(MinResources(job, nullptr), ElementsAre(Pair("cpu", "7")));
  // minAvailable below the tasks' minimums: the first pods in priority order.
  job.spec.min_available = 1;
  EXPECT_THAT(MinResources(job, priority), ElementsAre(Pair("cpu", "5")));
}

TEST(PodGroupTest, UpdateOnlyWhenTheSpecDiffers) {
  Job job = MustDecode(kSeedJob);
  json::object desired = MakePodGroup(job, nullptr);
  json::object existing = desired;
  existing["status"] = json::object{{"phase", "Inqueue"}};
  existing["spec"].as_object()["minResources"] =
      json::object{{"cpu", "4000m"}, {"memory", "8Gi"}, {"nvidia.com/gpu", 2}};
  EXPECT_FALSE(UpdatedPodGroup(existing, desired).has_value());

  job.spec.min_available = 1;
  job.spec.tasks[0].min_available = 1;
  std::optional<json::object> updated = UpdatedPodGroup(existing, MakePodGroup(job, nullptr));
  ASSERT_TRUE(updated.has_value());
  EXPECT_EQ(At(*updated, {"spec", "minMember"}), 1);
  EXPECT_EQ(At(*updated, {"spec", "minTaskMember", "trainer"}), 1);
  EXPECT_EQ(At(*updated, {"spec", "minResources", "cpu"}), "2");
  EXPECT_EQ(At(*updated, {"status", "phase"}), "Inqueue");  // status untouched
}

// --- Plugins ------------------------------------------------------------------------------------

constexpr char kPytorchJob[] = R"({"metadata": {"name": "pt", "namespace": "ns", "uid": "u"},
  "spec": {"minAvailable": 3, "schedulerName": "volcano", "queue": "default",
    "plugins": {"pytorch": ["--master=master", "--worker=worker", "--port=23456"],
                "svc": [], "env": []},
    "tasks": [
      {"name": "master", "replicas": 1, "template": {"spec": {
        "containers": [{"name": "m", "ports": [{"containerPort": 23456}]}]}}},
      {"name": "worker", "replicas": 2, "template": {"spec": {
        "initContainers": [{"name": "init"}],
        "containers": [{"name": "w"}]}}}]}})";

json::object PodWithPlugins(const Job& job, size_t task, int index) {
  json::object pod = MakePod(job, task, index);
  for (const auto& [name, args] : job.spec.plugins) {
    PluginBuild build = MakePlugin(name, args);
    EXPECT_NE(build.plugin, nullptr) << name;
    EXPECT_EQ(build.problem, "") << name;
    build.plugin->OnPodCreate(job, task, index, pod);
  }
  return pod;
}

TEST(PluginTest, EnvGivesTheTaskIndexToEveryContainer) {
  Job job = MustDecode(kPytorchJob);
  json::value pod = PodWithPlugins(job, 1, 1);
  EXPECT_EQ(EnvValue(At(pod, {"spec", "containers", "0"}), "VC_TASK_INDEX"), "1");
  EXPECT_EQ(EnvValue(At(pod, {"spec", "containers", "0"}), "VK_TASK_INDEX"), "1");
  EXPECT_EQ(EnvValue(At(pod, {"spec", "initContainers", "0"}), "VC_TASK_INDEX"), "1");
}

TEST(PluginTest, PytorchGivesMasterAddressWorldSizeAndRank) {
  Job job = MustDecode(kPytorchJob);
  json::value master = PodWithPlugins(job, 0, 0);
  const json::value& m = At(master, {"spec", "containers", "0"});
  EXPECT_EQ(EnvValue(m, "MASTER_ADDR"), "pt-master-0.pt");
  EXPECT_EQ(EnvValue(m, "MASTER_PORT"), "23456");
  EXPECT_EQ(EnvValue(m, "WORLD_SIZE"), "3");
  EXPECT_EQ(EnvValue(m, "RANK"), "0");
  EXPECT_EQ(At(m, {"ports"}).as_array().size(), 1u);  // the port was already open

  json::value worker = PodWithPlugins(job, 1, 1);
  const json::value& w = At(worker, {"spec", "containers", "0"});
  EXPECT_EQ(EnvValue(w, "RANK"), "2");
  EXPECT_EQ(json::serialize(At(w, {"ports"})),
            R"([{"name":"pytorchjob-port","containerPort":23456}])");
  // Only app containers get pytorch's variables.
  EXPECT_EQ(EnvNames(At(worker, {"spec", "initContainers", "0"})),
            (std::vector<std::string>{"VK_TASK_INDEX", "VC_TASK_INDEX", "VC_MASTER_HOSTS",
                                      "VC_MASTER_NUM", "VC_WORKER_HOSTS", "VC_WORKER_NUM"}));
}

TEST(PluginTest, PytorchArgumentsRenameRolesAndPort) {
  Job job = MustDecode(kPytorchJob);
  job.spec.tasks[0].name = "chief";
  PluginBuild build = MakePlugin("pytorch", {"--master", "chief", "-port=29500"});
  ASSERT_NE(build.plugin, nullptr);
  EXPECT_EQ(build.problem, "");
  json::object made = MakePod(job, 0, 0);
  build.plugin->OnPodCreate(job, 0, 0, made);
  const json::value pod(std::move(made));
  const json::value& c = At(pod, {"spec", "containers", "0"});
  EXPECT_EQ(EnvValue(c, "MASTER_ADDR"), "pt-chief-0.pt");
  EXPECT_EQ(EnvValue(c, "MASTER_PORT"), "29500");
  EXPECT_EQ(EnvValue(c, "RANK"), "0");

  PluginBuild bad = MakePlugin("pytorch", {"--port=abc"});
  ASSERT_NE(bad.plugin, nullptr);  // Volcano goes on with the defaults
  EXPECT_EQ(bad.problem,
            "plugin pytorch flagset parse failed, err: invalid value \"abc\" for flag -port: "
            "parse error");
}

TEST(PluginTest, SvcGivesHostnamesHostListsAndTheHeadlessService) {
  Job job = MustDecode(kPytorchJob);
  json::value pod = PodWithPlugins(job, 1, 0);
  EXPECT_EQ(At(pod, {"spec", "hostname"}), "pt-worker-0");
  EXPECT_EQ(At(pod, {"spec", "subdomain"}), "pt");
  const json::value& w = At(pod, {"spec", "containers", "0"});
  EXPECT_EQ(EnvValue(w, "VC_WORKER_HOSTS"), "<valueFrom>");
  EXPECT_THAT(std::string(json::serialize(At(w, {"env"}))),
              HasSubstr(R"({"name":"VC_WORKER_HOSTS","valueFrom":{"configMapKeyRef":)"
                        R"({"name":"pt-svc","key":"VC_WORKER_HOSTS"}}})"));
  EXPECT_EQ(json::serialize(At(w, {"volumeMounts"})),
            R"([{"mountPath":"/etc/volcano","name":"pt-svc"}])");
  EXPECT_EQ(json::serialize(At(pod, {"spec", "volumes"})),
            R"([{"name":"pt-svc","configMap":{"name":"pt-svc"}}])");

  EXPECT_THAT(GenerateHosts(job),
              ElementsAre(Pair("VC_MASTER_HOSTS", "pt-master-0.pt"), Pair("VC_MASTER_NUM", "1"),
                          Pair("VC_WORKER_HOSTS", "pt-worker-0.pt,pt-worker-1.pt"),
                          Pair("VC_WORKER_NUM", "2"), Pair("master.host", "pt-master-0.pt"),
                          Pair("worker.host", "pt-worker-0.pt\npt-worker-1.pt")));

  PluginBuild svc = MakePlugin("svc", {"--publish-not-ready-addresses"});
  std::vector<PluginObject> objects = svc.plugin->Objects(job);
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_EQ(objects[0].resource, "configmaps");
  EXPECT_EQ(At(objects[0].object, {"metadata", "name"}), "pt-svc");
  EXPECT_EQ(At(objects[0].object, {"data", "worker.host"}), "pt-worker-0.pt\npt-worker-1.pt");
  EXPECT_EQ(objects[1].resource, "services");
  EXPECT_EQ(json::serialize(objects[1].object),
            R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"pt","namespace":"ns",)"
            R"("ownerReferences":[{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",)"
            R"("name":"pt","uid":"u","controller":true,"blockOwnerDeletion":true}]},)"
            R"("spec":{"clusterIP":"None","selector":{"volcano.sh/job-name":"pt",)"
            R"("volcano.sh/job-namespace":"ns"},"publishNotReadyAddresses":true,)"
            R"("ports":[{"name":"placeholder-volcano","port":1,"protocol":"TCP",)"
            R"("targetPort":1}]}})");
}

TEST(PluginTest, FixedHostnameIsListedOnce) {
  Job job = MustDecode(R"({"metadata": {"name": "j", "namespace": "ns", "uid": "u"},
    "spec": {"tasks": [{"name": "db-main", "replicas": 3,
      "template": {"spec": {"hostname": "db", "subdomain": "net"}}}]}})");
  EXPECT_THAT(GenerateHosts(job),
              ElementsAre(Pair("VC_DB_MAIN_HOSTS", "db.net"), Pair("VC_DB_MAIN_NUM", "1"),
                          Pair("db-main.host", "db.net")));
}

TEST(PluginTest, TensorflowDescribesTheClusterToEachPod) {
  Job job = MustDecode(R"({"metadata": {"name": "tf", "namespace": "ns", "uid": "u"},
    "spec": {"plugins": {"tensorflow": ["--port=5000", "--worker=trainer"]}, "tasks": [
      {"name": "ps", "replicas": 1, "template": {"spec": {"containers": [{"name": "p"}]}}},
      {"name": "trainer", "replicas": 2, "template": {"spec": {
        "initContainers": [{"name": "i"}], "containers": [{"name": "t"}]}}}]}})");
  json::value pod = PodWithPlugins(job, 1, 1);
  EXPECT_EQ(EnvValue(At(pod, {"spec", "containers", "0"}), "TF_CONFIG"),
            R"({"cluster":{"ps":["tf-ps-0.tf:5000"],"worker":["tf-trainer-0.tf:5000",)"
            R"("tf-trainer-1.tf:5000"]},"task":{"type":"worker","index":1}})");
  EXPECT_EQ(At(pod, {"spec", "initContainers", "0"}).as_object().count("env"), 0u);

  Job single = MustDecode(R"({"metadata": {"name": "one", "namespace": "ns", "uid": "u"},
    "spec": {"plugins": {"tensorflow": []}, "tasks": [
      {"name": "worker", "replicas": 1, "template": {"spec": {"containers": [{"name": "w"}]}}}]}})");
  json::value alone = PodWithPlugins(single, 0, 0);
  EXPECT_EQ(At(alone, {"spec", "containers", "0"}).as_object().count("env"), 0u);
}

TEST(PluginTest, UnimplementedPluginsAreNamed) {
  PluginBuild ray = MakePlugin("ray", {});
  EXPECT_EQ(ray.plugin, nullptr);
  EXPECT_EQ(ray.problem, "job plugin ray is not supported by muster; ignored");
}

TEST(FlagSetTest, ParsesAsGosFlagPackage) {
  std::string s = "default";
  int n = 1;
  bool b = false;
  FlagSet flags;
  flags.String("name", &s);
  flags.Int("n", &n);
  flags.Bool("b", &b);
  EXPECT_TRUE(flags.Parse({"-name=x", "--n", "42", "--b", "rest", "--n=7"}).ok());
  EXPECT_EQ(s, "x");
  EXPECT_EQ(n, 42);  // parsing stopped at "rest"
  EXPECT_TRUE(b);
  EXPECT_TRUE(flags.Parse({"--b=false", "--", "--n=9"}).ok());
  EXPECT_FALSE(b);
  EXPECT_EQ(n, 42);
  EXPECT_EQ(flags.Parse({"--other=1"}).message(), "flag provided but not defined: -other");
  EXPECT_EQ(flags.Parse({"--n"}).message(), "flag needs an argument: -n");
  EXPECT_EQ(flags.Parse({"--b=maybe"}).message(),
            "invalid boolean value \"maybe\" for -b: parse error");
  EXPECT_EQ(flags.Parse({"---n=1"}).message(), "bad flag syntax: ---n=1");
  EXPECT_EQ(flags.Parse({"--n=99999999999"}).message(),
            "invalid value \"99999999999\" for flag -n: value out of range");
}

}  // namespace
}  // namespace muster::controller
