// BuildContainerLaunch and its helpers without a runtime: what a container would be started
// with, and which set-up problems keep it waiting with which reason. The pod manager's tests
// (pod_manager_test.cc) run such launches end to end.

#include "node/container_launch.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "boost/json/parse.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "node/pod_worker.h"

namespace muster::node {
namespace {

namespace json = boost::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

TEST(ExpandVariableRefsTest, DefinedNamesAreReplacedAndOthersKeptAsWritten) {
  const std::map<std::string, std::string> vars{{"FOO", "foo"}, {"EMPTY", ""}};
  EXPECT_EQ(ExpandVariableRefs("$(FOO)-x", vars), "foo-x");
  EXPECT_EQ(ExpandVariableRefs("[$(EMPTY)]", vars), "[]");
  EXPECT_EQ(ExpandVariableRefs("$(MISSING) $(FOO)", vars), "$(MISSING) foo");
  EXPECT_EQ(ExpandVariableRefs("$$(FOO) $$", vars), "$(FOO) $");
  EXPECT_EQ(ExpandVariableRefs("cost $5 $(FOO", vars), "cost $5 $(FOO");
  EXPECT_EQ(ExpandVariableRefs("ends in $", vars), "ends in $");
}

TEST(ClimbsOutTest, OnlyADotDotComponentClimbs) {
  EXPECT_TRUE(ClimbsOut(".."));
  EXPECT_TRUE(ClimbsOut("/data/../etc"));
  EXPECT_TRUE(ClimbsOut("a/.."));
  EXPECT_FALSE(ClimbsOut(""));
  EXPECT_FALSE(ClimbsOut("/data/..hidden/x"));
  EXPECT_FALSE(ClimbsOut("a/./b"));
}

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class ContainerLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/muster-launch-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    data_dir_ = dir;
    node_.name = "node-a";
    node_.internal_ip = "10.1.0.1";
    node_.runtime = RuntimeKind::kProcess;
    node_.allocatable["cpu"] = common::Quantity::FromUnits(8);
  }
  void TearDown() override { std::filesystem::remove_all(data_dir_); }

  // A pod "default/p" with `spec` (JSON) and labels app=demo.
  void SetPod(const std::string& spec) {
    pod_ = json::parse(R"({"metadata":{"namespace":"default","name":"p","uid":"u1",
        "labels":{"app":"demo"},"annotations":{}},"spec":)" +
                       spec + "}")
               .as_object();
  }
  void Annotate(const std::string& key, const std::string& value) {
    pod_["metadata"].as_object()["annotations"].as_object()[key] = value;
  }
  const json::object& Container(size_t i) {
    return pod_["spec"].as_object()["containers"].as_array()[i].as_object();
  }

  LaunchResult Build(size_t i, bool init = false) {
    std::vector<const json::object*> containers;
    for (const json::value& c : pod_["spec"].as_object()["containers"].as_array()) {
      containers.push_back(&c.as_object());
    }
    const LaunchContext context{.pod = pod_,
                                .ns = ns_,
                                .name = name_,
                                .uid = uid_,
                                .pod_ip = pod_ip_,
                                .node = node_,
                                .data_dir = data_dir_,
                                .containers = containers,
                                .get_object = objects_};
    return BuildContainerLaunch(context, {.spec = Container(i),
                                          .init = init,
                                          .devices = devices_,
                                          .first_run = true,
                                          .resume_seconds = resume_seconds_});
  }

  std::string ns_ = "default", name_ = "p", uid_ = "u1", pod_ip_ = "10.128.0.7";
  std::string data_dir_;
  NodeConfig node_;
  json::object pod_;
  std::vector<const NodeDevice*> devices_;
  std::optional<double> resume_seconds_;
  std::map<std::string, json::object> config_map_objects_;
  std::map<std::string, json::object> secret_objects_;
  ObjectGetter objects_ = [this](std::string_view resource, const std::string& ns,
                                 const std::string& name) -> absl::StatusOr<json::object> {
    const auto& objects = resource == "secrets" ? secret_objects_ : config_map_objects_;
    auto it = objects.find(ns + "/" + name);
    if (it == objects.end()) return absl::NotFoundError(name);
    return it->second;
  };
};

TEST_F(ContainerLaunchTest, ProcessEnvironmentFollowsThePodsEnvInOrderWithExpansion) {
  config_map_objects_["default/settings"] =
      json::parse(R"({"data":{"MODE":"fast","LEVEL":"3"}})").as_object();
  SetPod(R"j({"containers":[
      {"name":"main","command":["run","$(GREETING)"],"args":["$(PATH)","$(MUSTER_ROOT)"],
       "resources":{"requests":{"memory":"64Mi"},"limits":{"cpu":"1500m"}},
       "envFrom":[{"configMapRef":{"name":"settings"},"prefix":"CFG_"}],
       "env":[{"name":"GREETING","value":"hi-$(CFG_MODE)"},
              {"name":"APP","valueFrom":{"fieldRef":{"fieldPath":"metadata.labels['app']"}}},
              {"name":"NODE","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}},
              {"name":"POD_IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},
              {"name":"CPU_MILLI","valueFrom":{"resourceFieldRef":
                  {"resource":"limits.cpu","divisor":"1m"}}},
              {"name":"MEM_MI","valueFrom":{"resourceFieldRef":
                  {"resource":"requests.memory","divisor":"1Mi"}}},
              {"name":"SIDE_CPU","valueFrom":{"resourceFieldRef":
                  {"containerName":"side","resource":"limits.cpu"}}},
              {"name":"LEVEL","valueFrom":{"configMapKeyRef":{"name":"settings","key":"LEVEL"}}},
              {"name":"GONE","valueFrom":{"configMapKeyRef":
                  {"name":"settings","key":"nope","optional":true}}},
              {"name":"CFG_MODE","value":"slow"}]},
      {"name":"side","command":["sleep"]}]})j");
  LaunchResult built = Build(0);
  ASSERT_TRUE(built.launch.ok()) << built.launch.status();
  EXPECT_THAT(built.waiting_reason, IsEmpty());
  const std::string root = data_dir_ + "/pods/default/p/main/rootfs";
  // The agent's own PATH is in the environment but not referable.
  EXPECT_THAT(built.launch->argv, ElementsAre("run", "hi-fast", "$(PATH)", root));
  const std::vector<std::string>& env = built.launch->env;
  for (const char* entry :
       {"HOSTNAME=p", "CFG_LEVEL=3", "GREETING=hi-fast", "APP=demo", "NODE=node-a",
        "POD_IP=10.128.0.7", "CPU_MILLI=1500", "MEM_MI=64", "SIDE_CPU=8", "LEVEL=3",
        "NVIDIA_VISIBLE_DEVICES=void", "CUDA_VISIBLE_DEVICES="}) {
    EXPECT_THAT(env, Contains(entry));
  }
  EXPECT_THAT(env, Contains("MUSTER_ROOT=" + root));
  EXPECT_THAT(env, Not(Contains(StartsWith("GONE="))));
  // A later definition replaces an earlier one where it stood.
  auto mode = std::find(env.begin(), env.end(), "CFG_MODE=slow");
  auto greeting = std::find(env.begin(), env.end(), "GREETING=hi-fast");
  ASSERT_NE(mode, env.end());
  EXPECT_LT(mode, greeting);
  EXPECT_EQ(built.launch->working_dir, data_dir_ + "/pods/default/p/main");
  EXPECT_EQ(built.launch->log_path, data_dir_ + "/logs/default/p/main.log");
  EXPECT_TRUE(built.launch->truncate_log);
  EXPECT_TRUE(std::filesystem::is_directory(root));
}

TEST_F(ContainerLaunchTest, ReplicasOfOneGpuAreNamedOnce) {
  const NodeDevice a{"GPU-a::0", "GPU-a", "0"}, b{"GPU-a::1", "GPU-a", "0"},
      c{"GPU-b", "GPU-b", "1"};
  devices_ = {&a, &b, &c};
  SetPod(R"({"containers":[{"name":"main","command":["true"]}]})");
  LaunchResult built = Build(0);
  ASSERT_TRUE(built.launch.ok()) << built.launch.status();
  EXPECT_THAT(built.launch->env, Contains("NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b"));
  EXPECT_THAT(built.launch->env, Contains("CUDA_VISIBLE_DEVICES=0,1"));
}

TEST_F(ContainerLaunchTest, EnvironmentProblemsWaitAsCreateContainerConfigError) {
  for (const char* env : {
           R"({"name":"X","valueFrom":{"fieldRef":{"fieldPath":"spec.schedulerName"}}})",
           R"({"name":"X","valueFrom":{"configMapKeyRef":{"name":"absent","key":"k"}}})",
           R"({"name":"X","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}})",
           R"({"name":"X","valueFrom":{"resourceFieldRef":{"resource":"cpu"}}})",
           R"({"name":"X","valueFrom":{"resourceFieldRef":
               {"containerName":"other","resource":"limits.cpu"}}})",
       }) {
    SetPod(std::string(R"({"containers":[{"name":"main","command":["true"],"env":[)") + env +
           "]}]}");
    LaunchResult built = Build(0);
    EXPECT_FALSE(built.launch.ok()) << env;
    EXPECT_FALSE(absl::IsFailedPrecondition(built.launch.status())) << env;
    EXPECT_EQ(built.waiting_reason, "CreateContainerConfigError") << env;
  }
  SetPod(R"({"containers":[{"name":"main","command":["true"],
      "envFrom":[{"secretRef":{"name":"s"}}]}]})");
  LaunchResult built = Build(0);
  EXPECT_EQ(built.launch.status().message(), "secret \"s\" not found");
  EXPECT_EQ(built.waiting_reason, "CreateContainerConfigError");
}

// Secrets as the kubelet gives them: a key of data decoded (secretKeyRef), every key under a
// prefix (envFrom), and a volume of files, one per key or per item.
TEST_F(ContainerLaunchTest, SecretsReachTheEnvironmentAndVolumesDecoded) {
  secret_objects_["default/creds"] =
      json::parse(R"({"data":{"token":"czNjcjN0","user":"bWw="}})").as_object();
  SetPod(R"({"volumes":[{"name":"keys","secret":{"secretName":"creds","defaultMode":384,
                          "items":[{"key":"token","path":"auth/token"},
                                   {"key":"user","path":"user","mode":292}]}}],
             "containers":[{"name":"main","command":["true"],
                "volumeMounts":[{"name":"keys","mountPath":"/etc/keys"}],
                "envFrom":[{"secretRef":{"name":"creds"},"prefix":"DB_"}],
                "env":[{"name":"TOKEN","valueFrom":{"secretKeyRef":
                           {"name":"creds","key":"token"}}}]}]})");
  LaunchResult built = Build(0);
  ASSERT_TRUE(built.launch.ok()) << built.launch.status();
  EXPECT_THAT(built.launch->env, Contains("TOKEN=s3cr3t"));
  EXPECT_THAT(built.launch->env, Contains("DB_user=ml"));
  EXPECT_THAT(built.launch->env, Contains("DB_token=s3cr3t"));
  const std::filesystem::path root = data_dir_ + "/pods/default/p/main/rootfs";
  EXPECT_EQ(ReadAll(root / "etc/keys/auth/token"), "s3cr3t");
  // Modes: defaultMode (0600, as ssh wants a private key), an item's own (0444).
  EXPECT_EQ(std::filesystem::status(root / "etc/keys/auth/token").permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(std::filesystem::status(root / "etc/keys/user").permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::group_read |
                std::filesystem::perms::others_read);

  SetPod(R"({"containers":[{"name":"main","command":["true"],
      "env":[{"name":"X","valueFrom":{"secretKeyRef":{"name":"creds","key":"absent"}}}]}]})");
  EXPECT_EQ(Build(0).launch.status().message(), "couldn't find key absent in Secret default/creds");
}

TEST_F(ContainerLaunchTest, ConfigMapVolumesAreWrittenAndLinkedAtTheirMountPath) {
  config_map_objects_["default/files"] =
      json::parse(R"({"data":{"a.txt":"alpha","b.txt":"beta"},"binaryData":{"c.bin":"aGk="}})")
          .as_object();
  SetPod(R"({"volumes":[{"name":"cfg","configMap":{"name":"files",
                          "items":[{"key":"a.txt","path":"sub/a"},{"key":"c.bin","path":"c"}]}},
                        {"name":"all","configMap":{"name":"files"}}],
             "containers":[{"name":"main","command":["true"],
                "volumeMounts":[{"name":"cfg","mountPath":"/etc/cfg"},
                                {"name":"all","mountPath":"/etc/all"}]}]})");
  LaunchResult built = Build(0);
  ASSERT_TRUE(built.launch.ok()) << built.launch.status();
  const std::filesystem::path root = data_dir_ + "/pods/default/p/main/rootfs";
  EXPECT_EQ(ReadAll(root / "etc/cfg/sub/a"), "alpha");
  EXPECT_EQ(ReadAll(root / "etc/cfg/c"), "hi");
  EXPECT_FALSE(std::filesystem::exists(root / "etc/cfg/b.txt"));
  EXPECT_EQ(ReadAll(root / "etc/all/b.txt"), "beta");
}

TEST_F(ContainerLaunchTest, VolumeProblemsWaitAsContainerCreating) {
  config_map_objects_["default/files"] = json::parse(R"({"data":{"a":"x"}})").as_object();
  for (const char* mount_and_volume : {
           R"("volumeMounts":[{"name":"v","mountPath":"etc/v"}]}],
              "volumes":[{"name":"v","emptyDir":{}}])",
           R"("volumeMounts":[{"name":"v","mountPath":"/etc/../v"}]}],
              "volumes":[{"name":"v","emptyDir":{}}])",
           R"("volumeMounts":[{"name":"v","mountPath":"/v","subPath":"../x"}]}],
              "volumes":[{"name":"v","emptyDir":{}}])",
           R"("volumeMounts":[{"name":"v","mountPath":"/v"}]}],
              "volumes":[{"name":"w","emptyDir":{}}])",
           R"("volumeMounts":[{"name":"v","mountPath":"/v"}]}],
              "volumes":[{"name":"v","persistentVolumeClaim":{"claimName":"c"}}])",
           R"("volumeMounts":[{"name":"v","mountPath":"/v"}]}],
              "volumes":[{"name":"v","configMap":{"name":"absent"}}])",
           R"("volumeMounts":[{"name":"v","mountPath":"/v"}]}],
              "volumes":[{"name":"v","configMap":{"name":"files",
                                                  "items":[{"key":"a","path":"../a"}]}}])",
           R"("volumeMounts":[{"name":"v","mountPath":"/v"}]}],
              "volumes":[{"name":"v","configMap":{"name":"files",
                                                  "items":[{"key":"b","path":"b"}]}}])",
       }) {
    SetPod(std::string(R"({"containers":[{"name":"main","command":["true"],)") + mount_and_volume +
           "}");
    LaunchResult built = Build(0);
    EXPECT_THAT(built.launch.status().message(),
                HasSubstr("MountVolume.SetUp failed for volume \"v\" : "))
        << mount_and_volume;
    EXPECT_EQ(built.waiting_reason, "ContainerCreating") << mount_and_volume;
  }
}

TEST_F(ContainerLaunchTest, OptionalConfigMapsThatAreMissingReadAsEmpty) {
  SetPod(R"({"volumes":[{"name":"v","configMap":{"name":"absent","optional":true}}],
             "containers":[{"name":"main","command":["true"],
                "volumeMounts":[{"name":"v","mountPath":"/v"}],
                "envFrom":[{"configMapRef":{"name":"absent","optional":true}},
                           {"secretRef":{"name":"s","optional":true}}],
                "env":[{"name":"OPTIONAL_KEY","valueFrom":{"configMapKeyRef":
                           {"name":"absent","key":"k","optional":true}}},
                       {"name":"OPTIONAL_SECRET","valueFrom":{"secretKeyRef":
                           {"name":"s","key":"k","optional":true}}}]}]})");
  LaunchResult built = Build(0);
  ASSERT_TRUE(built.launch.ok()) << built.launch.status();
  EXPECT_THAT(built.launch->env, Not(Contains(StartsWith("OPTIONAL_KEY="))));
  EXPECT_THAT(built.launch->env, Not(Contains(StartsWith("OPTIONAL_SECRET="))));
}

TEST_F(ContainerLaunchTest, AProcessContainerWithoutACommandCannotStart) {
  SetPod(R"({"containers":[{"name":"main","image":"busybox"}]})");
  LaunchResult built = Build(0);
  EXPECT_TRUE(absl::IsFailedPrecondition(built.launch.status())) << built.launch.status();
  EXPECT_THAT(built.launch.status().message(), HasSubstr("image \"busybox\""));
  EXPECT_THAT(built.waiting_reason, IsEmpty());
}

TEST_F(ContainerLaunchTest, SimulatedContainersFollowTheAnnotations) {
  node_.runtime = RuntimeKind::kSimulated;
  SetPod(R"({"containers":[{"name":"main","image":"busybox"}]})");
  LaunchResult built = Build(0);
  ASSERT_TRUE(built.launch.ok()) << built.launch.status();
  EXPECT_EQ(built.launch->description, "default/p/main");
  EXPECT_EQ(built.launch->run_seconds, -1);
  EXPECT_EQ(built.launch->exit_code, 0);

  Annotate(kRunSecondsAnnotation, "2.5");
  Annotate(kExitCodeAnnotation, "3");
  built = Build(0);
  ASSERT_TRUE(built.launch.ok()) << built.launch.status();
  EXPECT_EQ(built.launch->run_seconds, 2.5);
  EXPECT_EQ(built.launch->exit_code, 3);

  built = Build(0, /*init=*/true);
  ASSERT_TRUE(built.launch.ok()) << built.launch.status();
  EXPECT_EQ(built.launch->run_seconds, 0);

  resume_seconds_ = 1.25;
  built = Build(0);
  ASSERT_TRUE(built.launch.ok()) << built.launch.status();
  EXPECT_EQ(built.launch->run_seconds, 1.25);
}

TEST_F(ContainerLaunchTest, BadSimulationAnnotationsWaitAsCreateContainerConfigError) {
  node_.runtime = RuntimeKind::kSimulated;
  for (auto [key, value] :
       {std::pair{kRunSecondsAnnotation, "soon"}, std::pair{kRunSecondsAnnotation, "-1"},
        std::pair{kExitCodeAnnotation, "256"}}) {
    SetPod(R"({"containers":[{"name":"main"}]})");
    Annotate(key, value);
    LaunchResult built = Build(0);
    EXPECT_TRUE(absl::IsInvalidArgument(built.launch.status())) << key << "=" << value;
    EXPECT_THAT(built.launch.status().message(), HasSubstr(key));
    EXPECT_EQ(built.waiting_reason, "CreateContainerConfigError");
  }
}

}  // namespace
}  // namespace muster::node
