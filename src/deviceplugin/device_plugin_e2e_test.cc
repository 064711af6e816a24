// Acceptance tests of `muster device-plugin`: the real binary, GPUs from the fake NVML, and the
// kubelet emulator (its own Registration server and DevicePlugin client) over real unix sockets
// in a temporary folder; its ops endpoint (--listen-address) over HTTP on loopback.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "deviceplugin/testing/kubelet_emulator.h"
#include "deviceplugin/testing/subprocess.h"
#include "fmt/format.h"
#include "gpu/fake/fake_machine.h"
#include "gtest/gtest.h"
#include "tests/e2e/e2e_support.h"

namespace muster::deviceplugin {
namespace {

using namespace std::chrono_literals;
using gpu::testing::FakeMachine;
using testing::KubeletEmulator;
using testing::Subprocess;
using DeviceList = KubeletEmulator::DeviceList;

std::string Uuid(int gpu) { return fmt::format("GPU-00000000-0000-4000-8000-{:012d}", gpu); }
std::string MigUuid(int gpu, int slot) {
  return fmt::format("MIG-00000000-0000-4000-8000-{:06d}{:06d}", gpu, slot);
}

std::vector<std::string> Ids(const DeviceList& devices) {
  std::vector<std::string> ids;
  for (const auto& d : devices) ids.push_back(d.id());
  return ids;
}

std::string Health(const DeviceList& devices, const std::string& id) {
  for (const auto& d : devices) {
    if (d.id() == id) return d.health();
  }
  return "absent";
}

std::map<std::string, std::string> Envs(const v1beta1::AllocateResponse& response) {
  const auto& envs = response.container_responses(0).envs();
  return {envs.begin(), envs.end()};
}

class DevicePluginE2eTest : public ::testing::Test {
 protected:
  void UseMachine(const std::string& text) {
    machine_ = std::make_unique<FakeMachine>(text);
    dir_ = machine_->dir() + "/dp";
    std::filesystem::create_directories(dir_);
  }

  void StartKubelet() {
    auto emulator = KubeletEmulator::Start(dir_);
    ASSERT_TRUE(emulator.ok()) << emulator.status();
    kubelet_ = std::move(*emulator);
  }

  // Starts `muster device-plugin` with the fake NVML and `args`.
  void StartPlugin(std::vector<std::string> args = {}) {
    std::vector<std::string> argv = {MUSTER_BINARY_PATH, "device-plugin", "--device-plugin-dir",
                                     dir_, "--sysfs-root", machine_->dir() + "/sys"};
    if (std::find(args.begin(), args.end(), "--nvml-library") == args.end()) {
      argv.push_back("--nvml-library");
      argv.push_back(gpu::testing::FakeNvmlLibrary());
    }
    argv.insert(argv.end(), args.begin(), args.end());
    plugin_ = std::make_unique<Subprocess>(
        argv,
        std::vector<std::string>{"MUSTER_FAKE_NVML_CONFIG=" + machine_->config_path(),
                                 "MUSTER_FAKE_NVML_EVENTS=" + machine_->events_path()},
        machine_->dir() + "/plugin.log");
  }

  // Stops the plugin with SIGTERM; it must exit 0.
  void StopPlugin() {
    if (plugin_ == nullptr) return;
    plugin_->Signal(SIGTERM);
    auto status = plugin_->Wait(15s);
    EXPECT_EQ(status, std::optional<int>(0)) << plugin_->Output();
    plugin_.reset();
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    std::string path = machine_->dir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  DeviceList Devices(const std::string& resource,
                     std::function<bool(const DeviceList&)> accept = nullptr) {
    auto devices = kubelet_->WaitForDevices(resource, std::move(accept), 20s);
    EXPECT_TRUE(devices.ok()) << devices.status() << "\n" << PluginLog();
    return devices.ok() ? *devices : DeviceList{};
  }

  std::string PluginLog() const { return plugin_ != nullptr ? plugin_->Output() : ""; }

  // Starts the plugin serving its ops endpoint on a free loopback port, taken from its start-up
  // line as scripts take it.
  void StartPluginWithOps(std::vector<std::string> args = {}) {
    args.push_back("--listen-address=127.0.0.1:0");
    StartPlugin(std::move(args));
    const std::regex line(
        "muster device-plugin: serving /healthz, /livez, /readyz and /metrics at "
        "http://127\\.0\\.0\\.1:([0-9]+)\n");
    std::smatch match;
    for (int i = 0; i < 500 && plugin_->Running(); ++i) {
      std::string log = PluginLog();
      if (std::regex_search(log, match, line)) {
        ops_port_ = static_cast<uint16_t>(std::stoi(match[1]));
        return;
      }
      std::this_thread::sleep_for(20ms);
    }
    FAIL() << "no ops endpoint line in:\n" << PluginLog();
  }

  // GET `path` on the ops endpoint (status 0 when it does not answer).
  e2e::HttpResult Ops(const std::string& path) {
    e2e::TestHttpClient client(ops_port_);
    return client.Send("GET", path, "", "", "*/*").value_or(e2e::HttpResult{});
  }

  // Polls `path` until it answers `status` with `text` in the body: the endpoint follows what the
  // log and the kubelet emulator show a moment later.
  e2e::HttpResult WaitForOps(const std::string& path, int status, const std::string& text = "") {
    e2e::HttpResult result;
    for (int i = 0; i < 200; ++i) {
      result = Ops(path);
      if (result.status == status && result.body.find(text) != std::string::npos) break;
      std::this_thread::sleep_for(50ms);
    }
    return result;
  }

  void TearDown() override {
    if (plugin_ != nullptr && plugin_->Running()) StopPlugin();
    plugin_.reset();
    kubelet_.reset();
    machine_.reset();
  }

  std::unique_ptr<FakeMachine> machine_;
  std::string dir_;
  std::unique_ptr<KubeletEmulator> kubelet_;
  std::unique_ptr<Subprocess> plugin_;
  uint16_t ops_port_ = 0;
};

// /metrics answered with every one of `lines`.
void ExpectMetrics(const e2e::HttpResult& metrics, const std::vector<std::string>& lines) {
  EXPECT_EQ(metrics.status, 200);
  for (const std::string& line : lines) {
    EXPECT_NE(metrics.body.find(line), std::string::npos) << line << " not in:\n" << metrics.body;
  }
}

void WriteNuma(const FakeMachine& machine, const std::string& bus, int node) {
  std::string dir = machine.dir() + "/sys/bus/pci/devices/" + bus;
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/numa_node") << node << "\n";
}

TEST_F(DevicePluginE2eTest, RegistersAndListsEveryGpuWithItsNumaNode) {
  UseMachine(gpu::testing::TwoGpuMachine());
  WriteNuma(*machine_, "0000:18:00.0", 0);
  WriteNuma(*machine_, "0000:2a:00.0", 1);
  StartKubelet();
  StartPlugin();
  DeviceList devices = Devices("nvidia.com/gpu");
  auto registrations = kubelet_->Registrations();
  ASSERT_EQ(registrations.size(), 1u);
  EXPECT_EQ(registrations[0].request.version(), "v1beta1");
  EXPECT_EQ(registrations[0].request.endpoint(), "nvidia-gpu.sock");
  EXPECT_EQ(registrations[0].request.resource_name(), "nvidia.com/gpu");
  EXPECT_TRUE(registrations[0].request.options().get_preferred_allocation_available());
  EXPECT_FALSE(registrations[0].request.options().pre_start_required());
  EXPECT_TRUE(registrations[0].options.get_preferred_allocation_available());
  EXPECT_FALSE(registrations[0].options.pre_start_required());
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].id(), Uuid(0));
  EXPECT_EQ(devices[0].health(), "Healthy");
  ASSERT_EQ(devices[0].topology().nodes_size(), 1);
  EXPECT_EQ(devices[0].topology().nodes(0).id(), 0);
  EXPECT_EQ(devices[1].id(), Uuid(1));
  EXPECT_EQ(devices[1].topology().nodes(0).id(), 1);
  EXPECT_TRUE(kubelet_->PreStartContainer("nvidia.com/gpu", {Uuid(0)}).ok());
  struct stat st {};
  EXPECT_EQ(stat((dir_ + "/nvidia-gpu.sock").c_str(), &st), 0);
}

TEST_F(DevicePluginE2eTest, XidMakesAGpuUnhealthyAndRecoveryHealthyAgain) {
  UseMachine(gpu::testing::TwoGpuMachine());
  StartKubelet();
  StartPlugin({"--health-reprobe-interval", "300ms"});
  Devices("nvidia.com/gpu");
  machine_->AppendEvent("xid 0 13");  // an application error: ignored
  machine_->AppendEvent("lost 1");
  machine_->AppendEvent("xid 1 79");  // fallen off the bus
  DeviceList unhealthy = Devices("nvidia.com/gpu", [](const DeviceList& list) {
    return Health(list, Uuid(1)) == "Unhealthy";
  });
  EXPECT_EQ(Health(unhealthy, Uuid(0)), "Healthy");
  EXPECT_EQ(unhealthy.size(), 2u);  // the full list, not just the change
  // Lost, it stays unhealthy across probes.
  std::this_thread::sleep_for(1s);
  int updates = kubelet_->ListUpdates("nvidia.com/gpu");
  EXPECT_EQ(updates, 2) << PluginLog();
  machine_->AppendEvent("recover 1");
  DeviceList healthy = Devices("nvidia.com/gpu", [](const DeviceList& list) {
    return Health(list, Uuid(1)) == "Healthy";
  });
  EXPECT_EQ(Health(healthy, Uuid(0)), "Healthy");
  EXPECT_EQ(kubelet_->ListUpdates("nvidia.com/gpu"), 3);
  EXPECT_NE(PluginLog().find("XID 13 on GPU 0 ignored"), std::string::npos) << PluginLog();
}

TEST_F(DevicePluginE2eTest, OpsEndpointReportsRegistrationAndDeviceHealth) {
  UseMachine(gpu::testing::TwoGpuMachine());
  StartKubelet();
  ASSERT_NO_FATAL_FAILURE(StartPluginWithOps({"--health-reprobe-interval", "300ms"}));
  Devices("nvidia.com/gpu");
  e2e::HttpResult ready = WaitForOps("/readyz?verbose", 200);
  EXPECT_EQ(ready.status, 200) << ready.body << PluginLog();
  EXPECT_EQ(ready.body, "[+]plugins ok\nreadyz check passed\n");
  EXPECT_EQ(Ops("/livez").status, 200);
  const std::string gpu0 = fmt::format(
      "muster_device_plugin_device_healthy{{device=\"{}\",resource=\"nvidia.com/gpu\"}} ", Uuid(0));
  const std::string gpu1 = fmt::format(
      "muster_device_plugin_device_healthy{{device=\"{}\",resource=\"nvidia.com/gpu\"}} ", Uuid(1));
  const std::string healthy =
      "muster_device_plugin_devices{health=\"Healthy\",resource=\"nvidia.com/gpu\"} ";
  const std::string unhealthy =
      "muster_device_plugin_devices{health=\"Unhealthy\",resource=\"nvidia.com/gpu\"} ";
  ExpectMetrics(Ops("/metrics"), {"# TYPE muster_device_plugin_devices gauge\n",
                                  "# TYPE muster_device_plugin_device_healthy gauge\n",
                                  "# TYPE muster_device_plugin_registered gauge\n",
                                  "muster_device_plugin_registered 1\n", healthy + "2\n",
                                  unhealthy + "0\n", gpu0 + "1\n", gpu1 + "1\n"});

  machine_->AppendEvent("lost 1");
  machine_->AppendEvent("xid 1 79");
  Devices("nvidia.com/gpu",
          [](const DeviceList& list) { return Health(list, Uuid(1)) == "Unhealthy"; });
  ExpectMetrics(Ops("/metrics"), {healthy + "1\n", unhealthy + "1\n", gpu0 + "1\n", gpu1 + "0\n"});

  machine_->AppendEvent("recover 1");
  Devices("nvidia.com/gpu",
          [](const DeviceList& list) { return Health(list, Uuid(1)) == "Healthy"; });
  ExpectMetrics(Ops("/metrics"), {healthy + "2\n", unhealthy + "0\n", gpu1 + "1\n"});
}

TEST_F(DevicePluginE2eTest, AllocateForEachDeviceListStrategy) {
  UseMachine(gpu::testing::TwoGpuMachine());
  StartKubelet();

  StartPlugin();
  Devices("nvidia.com/gpu");
  auto envvar = kubelet_->Allocate("nvidia.com/gpu", {{Uuid(1)}, {Uuid(0), Uuid(1)}});
  ASSERT_TRUE(envvar.ok()) << envvar.status();
  ASSERT_EQ(envvar->container_responses_size(), 2);
  EXPECT_EQ(Envs(*envvar), (std::map<std::string, std::string>{{"NVIDIA_VISIBLE_DEVICES", Uuid(1)}}));
  EXPECT_EQ(envvar->container_responses(1).envs().at("NVIDIA_VISIBLE_DEVICES"),
            Uuid(0) + "," + Uuid(1));
  auto unknown = kubelet_->Allocate("nvidia.com/gpu", {{"GPU-nonexistent"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(unknown.status().message())
                .find("invalid allocation request for 'nvidia.com/gpu': unknown device: "
                      "GPU-nonexistent"),
            std::string::npos)
      << unknown.status();
  StopPlugin();

  StartPlugin({"--device-id-strategy", "index", "--device-list-strategy", "volume-mounts"});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(2));
  Devices("nvidia.com/gpu");
  auto mounts = kubelet_->Allocate("nvidia.com/gpu", {{Uuid(1)}});
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  EXPECT_EQ(Envs(*mounts)["NVIDIA_VISIBLE_DEVICES"], "/var/run/nvidia-container-devices");
  ASSERT_EQ(mounts->container_responses(0).mounts_size(), 1);
  EXPECT_EQ(mounts->container_responses(0).mounts(0).container_path(),
            "/var/run/nvidia-container-devices/1");
  EXPECT_EQ(mounts->container_responses(0).mounts(0).host_path(), "/dev/null");
  StopPlugin();

  std::string dev_root = machine_->dir() + "/devroot";
  std::filesystem::create_directories(dev_root + "/dev");
  std::ofstream(dev_root + "/dev/nvidiactl");
  std::string config = WriteFile("cdi.yaml", fmt::format(R"(version: v1
flags:
  nvidiaDevRoot: {}
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: [cdi-annotations, cdi-cri]
)",
                                                         dev_root));
  StartPlugin({"--config-file", config});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(3));
  Devices("nvidia.com/gpu");
  auto cdi = kubelet_->Allocate("nvidia.com/gpu", {{Uuid(0)}});
  ASSERT_TRUE(cdi.ok()) << cdi.status();
  const auto& container = cdi->container_responses(0);
  EXPECT_TRUE(container.envs().empty());
  EXPECT_EQ(container.annotations().at("cdi.k8s.io/nvidia-device-plugin_gpu"),
            "nvidia.com/gpu=" + Uuid(0));
  ASSERT_EQ(container.cdi_devices_size(), 1);
  EXPECT_EQ(container.cdi_devices(0).name(), "nvidia.com/gpu=" + Uuid(0));
  ASSERT_EQ(container.devices_size(), 2);
  EXPECT_EQ(container.devices(0).container_path(), "/dev/nvidiactl");
  EXPECT_EQ(container.devices(0).host_path(), dev_root + "/dev/nvidiactl");
  EXPECT_EQ(container.devices(1).container_path(), "/dev/nvidia0");
  EXPECT_EQ(container.devices(1).permissions(), "rw");
}

TEST_F(DevicePluginE2eTest, PreferredAllocationsFollowTheNvLinkTopology) {
  UseMachine(gpu::testing::Dgx1Machine());
  StartKubelet();
  StartPlugin();
  DeviceList devices = Devices("nvidia.com/gpu");
  ASSERT_EQ(devices.size(), 8u);
  std::vector<std::string> all = Ids(devices);
  // The scheduler's choice (api/gpu_sets.h): the first of the NV2 pairs.
  auto pair = kubelet_->PreferredAllocation("nvidia.com/gpu", all, {}, 2);
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_EQ(*pair, (std::vector<std::string>{Uuid(0), Uuid(3)}));
  auto with_one = kubelet_->PreferredAllocation("nvidia.com/gpu", all, {Uuid(1)}, 2);
  ASSERT_TRUE(with_one.ok()) << with_one.status();
  EXPECT_EQ(*with_one, (std::vector<std::string>{Uuid(1), Uuid(2)}));
  auto quad = kubelet_->PreferredAllocation("nvidia.com/gpu", all, {Uuid(6)}, 4);
  ASSERT_TRUE(quad.ok()) << quad.status();
  EXPECT_EQ(*quad, (std::vector<std::string>{Uuid(4), Uuid(5), Uuid(6), Uuid(7)}));
  auto rest = kubelet_->PreferredAllocation(
      "nvidia.com/gpu", {Uuid(0), Uuid(1), Uuid(4), Uuid(5), Uuid(6), Uuid(7)}, {}, 2);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(*rest, (std::vector<std::string>{Uuid(0), Uuid(4)}));
  EXPECT_FALSE(kubelet_->PreferredAllocation("nvidia.com/gpu", {Uuid(0)}, {}, 2).ok());
}

TEST_F(DevicePluginE2eTest, RegistersAgainWhenTheKubeletRestarts) {
  UseMachine(gpu::testing::TwoGpuMachine());
  StartKubelet();
  StartPlugin();
  Devices("nvidia.com/gpu");
  ASSERT_TRUE(kubelet_->Restart().ok());  // deletes every socket, then creates kubelet.sock
  ASSERT_TRUE(kubelet_->WaitForRegistrations(2)) << PluginLog();
  DeviceList devices = Devices("nvidia.com/gpu");
  EXPECT_EQ(devices.size(), 2u);
  auto registrations = kubelet_->Registrations();
  EXPECT_EQ(registrations[1].request.resource_name(), "nvidia.com/gpu");
  EXPECT_EQ(registrations[1].request.endpoint(), "nvidia-gpu.sock");
  auto allocation = kubelet_->Allocate("nvidia.com/gpu", {{Uuid(0)}});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(Envs(*allocation)["NVIDIA_VISIBLE_DEVICES"], Uuid(0));
}

TEST_F(DevicePluginE2eTest, WaitsForAKubeletThatStartsLater) {
  UseMachine(gpu::testing::TwoGpuMachine());
  StartPlugin();
  ASSERT_TRUE(plugin_->WaitForOutput("waiting for the kubelet", 10s)) << PluginLog();
  StartKubelet();
  EXPECT_EQ(Devices("nvidia.com/gpu").size(), 2u);
}

TEST_F(DevicePluginE2eTest, NotReadyUntilRegisteredWithTheKubelet) {
  UseMachine(gpu::testing::TwoGpuMachine());
  ASSERT_NO_FATAL_FAILURE(StartPluginWithOps());
  ASSERT_TRUE(plugin_->WaitForOutput("waiting for the kubelet", 10s)) << PluginLog();
  e2e::HttpResult ready = WaitForOps("/readyz", 500, "not registered");
  EXPECT_EQ(ready.status, 500) << PluginLog();
  EXPECT_EQ(ready.body, fmt::format("[-]plugins failed: not registered with the kubelet: "
                                    "{}/kubelet.sock is not there yet\nreadyz check failed\n",
                                    dir_));
  EXPECT_EQ(Ops("/livez").status, 200);
  EXPECT_NE(Ops("/metrics").body.find("muster_device_plugin_registered 0\n"), std::string::npos);
  StartKubelet();
  Devices("nvidia.com/gpu");
  EXPECT_EQ(WaitForOps("/readyz", 200).status, 200) << PluginLog();
  EXPECT_NE(Ops("/metrics").body.find("muster_device_plugin_registered 1\n"), std::string::npos);
}

TEST_F(DevicePluginE2eTest, SighupRediscoversANewMigLayout) {
  UseMachine(gpu::testing::TwoGpuMachine());
  StartKubelet();
  StartPlugin({"--mig-strategy", "mixed"});
  EXPECT_EQ(Devices("nvidia.com/gpu").size(), 2u);
  machine_->Rewrite(gpu::testing::MixedMigMachine());
  plugin_->Signal(SIGHUP);
  EXPECT_EQ(Ids(Devices("nvidia.com/mig-3g.40gb")),
            (std::vector<std::string>{MigUuid(1, 0), MigUuid(1, 1)}));
  EXPECT_EQ(Devices("nvidia.com/mig-1g.10gb").size(), 2u);
  ASSERT_TRUE(plugin_->Running()) << PluginLog();
}

TEST_F(DevicePluginE2eTest, MigMixedAdvertisesOneResourcePerProfile) {
  UseMachine(gpu::testing::MixedMigMachine() +
             "gpu name=\"NVIDIA A100-SXM4-80GB\" memory_mib=81920 cc=8.0 mig=off\n");
  StartKubelet();
  StartPlugin({"--mig-strategy", "mixed"});
  EXPECT_EQ(Ids(Devices("nvidia.com/gpu")), (std::vector<std::string>{Uuid(2)}));
  EXPECT_EQ(Ids(Devices("nvidia.com/mig-1g.10gb")),
            (std::vector<std::string>{MigUuid(0, 0), MigUuid(0, 1)}));
  EXPECT_EQ(Ids(Devices("nvidia.com/mig-2g.20gb")), (std::vector<std::string>{MigUuid(0, 2)}));
  EXPECT_EQ(Ids(Devices("nvidia.com/mig-3g.40gb")),
            (std::vector<std::string>{MigUuid(1, 0), MigUuid(1, 1)}));
  EXPECT_EQ(kubelet_->Resources().size(), 4u);
  auto allocation = kubelet_->Allocate("nvidia.com/mig-3g.40gb", {{MigUuid(1, 1)}});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(Envs(*allocation)["NVIDIA_VISIBLE_DEVICES"], MigUuid(1, 1));
  // A MIG device is not a whole GPU: asking nvidia.com/gpu for it is refused.
  EXPECT_FALSE(kubelet_->Allocate("nvidia.com/gpu", {{MigUuid(1, 1)}}).ok());
}

TEST_F(DevicePluginE2eTest, MigSingleAdvertisesMigDevicesAsGpus) {
  UseMachine(
      "gpu name=\"NVIDIA A100-SXM4-80GB\" memory_mib=81920 mig=on\n"
      "gpu name=\"NVIDIA A100-SXM4-80GB\" memory_mib=81920 mig=on\n"
      "mig gpu=0 gi=1 gi_slices=3 memory_mib=40192 sms=42 profile_id=2\n"
      "mig gpu=0 gi=2 gi_slices=3 memory_mib=40192 sms=42 profile_id=2\n"
      "mig gpu=1 gi=1 gi_slices=3 memory_mib=40192 sms=42 profile_id=2\n");
  StartKubelet();
  StartPlugin({"--mig-strategy", "single", "--device-id-strategy", "index"});
  EXPECT_EQ(Ids(Devices("nvidia.com/gpu")),
            (std::vector<std::string>{MigUuid(0, 0), MigUuid(0, 1), MigUuid(1, 0)}));
  EXPECT_EQ(kubelet_->Resources(), (std::vector<std::string>{"nvidia.com/gpu"}));
  auto allocation = kubelet_->Allocate("nvidia.com/gpu", {{MigUuid(0, 1), MigUuid(1, 0)}});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(Envs(*allocation)["NVIDIA_VISIBLE_DEVICES"], "0:1,1:0");
}

TEST_F(DevicePluginE2eTest, MigSingleRefusesMixedProfilesAtStart) {
  UseMachine(gpu::testing::MixedMigMachine());
  StartPlugin({"--mig-strategy", "single"});
  ASSERT_EQ(plugin_->Wait(15s), std::optional<int>(1)) << PluginLog();
  EXPECT_NE(PluginLog().find("invalid MIG configuration for migStrategy single: more than one MIG "
                             "profile (1g.10gb, 2g.20gb, 3g.40gb); use mixed"),
            std::string::npos)
      << PluginLog();
}

TEST_F(DevicePluginE2eTest, TimeSlicingMultipliesTheDevices) {
  UseMachine(gpu::testing::TwoGpuMachine());
  StartKubelet();
  std::string config = WriteFile("ts.yaml", R"(version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
)");
  StartPlugin({"--config-file", config});
  DeviceList devices = Devices("nvidia.com/gpu");
  ASSERT_EQ(devices.size(), 8u);
  EXPECT_EQ(devices[0].id(), Uuid(0) + "::0");
  EXPECT_EQ(devices[7].id(), Uuid(1) + "::3");
  auto allocation =
      kubelet_->Allocate("nvidia.com/gpu", {{Uuid(0) + "::1", Uuid(0) + "::3"}});
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(Envs(*allocation)["NVIDIA_VISIBLE_DEVICES"], Uuid(0));
  auto spread = kubelet_->PreferredAllocation("nvidia.com/gpu", Ids(devices), {}, 2);
  ASSERT_TRUE(spread.ok()) << spread.status();
  EXPECT_EQ(*spread, (std::vector<std::string>{Uuid(0) + "::0", Uuid(1) + "::0"}));
  StopPlugin();

  config = WriteFile("ts-renamed.yaml", R"(version: v1
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 3
)");
  StartPlugin({"--config-file", config});
  DeviceList shared = Devices("nvidia.com/gpu.shared");
  EXPECT_EQ(shared.size(), 6u);
  EXPECT_EQ(kubelet_->Registrations().back().request.endpoint(), "nvidia-gpu.shared.sock");
  EXPECT_FALSE(kubelet_->Allocate("nvidia.com/gpu.shared", {{Uuid(0) + "::0", Uuid(1) + "::0"}})
                   .ok());
}

TEST_F(DevicePluginE2eTest, ShutdownRemovesTheSocket) {
  UseMachine(gpu::testing::TwoGpuMachine());
  StartKubelet();
  StartPlugin();
  Devices("nvidia.com/gpu");
  std::string socket = dir_ + "/nvidia-gpu.sock";
  ASSERT_EQ(access(socket.c_str(), F_OK), 0);
  StopPlugin();
  EXPECT_NE(access(socket.c_str(), F_OK), 0);
}

TEST_F(DevicePluginE2eTest, WritesGpuFeatureDiscoveryLabels) {
  UseMachine(gpu::testing::TwoGpuMachine());
  StartKubelet();
  std::string labels = machine_->dir() + "/features.d/gfd";
  StartPlugin({"--labels-file", labels});
  Devices("nvidia.com/gpu");
  std::string text;
  for (int i = 0; i < 100 && text.empty(); ++i) {
    std::ifstream in(labels);
    std::stringstream s;
    s << in.rdbuf();
    text = s.str();
    if (text.empty()) std::this_thread::sleep_for(50ms);
  }
  for (const char* line :
       {"nvidia.com/gpu.count=2\n", "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n",
        "nvidia.com/gpu.memory=81559\n", "nvidia.com/gpu.family=hopper\n",
        "nvidia.com/cuda.driver-version.full=550.107.02\n", "nvidia.com/mig.strategy=none\n",
        "nvidia.com/gpu.replicas=1\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
  }
}

TEST_F(DevicePluginE2eTest, NoDriverFailsOrWaitsAsFailOnInitErrorSays) {
  UseMachine("gpu\n");
  StartPlugin({"--nvml-library", "/nonexistent/libnvidia-ml.so.1"});
  ASSERT_EQ(plugin_->Wait(15s), std::optional<int>(1)) << PluginLog();
  EXPECT_NE(PluginLog().find("muster device-plugin: no NVIDIA driver found: "
                             "/nonexistent/libnvidia-ml.so.1 could not be loaded"),
            std::string::npos)
      << PluginLog();
  ASSERT_NO_FATAL_FAILURE(StartPluginWithOps(
      {"--nvml-library", "/nonexistent/libnvidia-ml.so.1", "--fail-on-init-error=false"}));
  ASSERT_TRUE(plugin_->WaitForOutput("failOnInitError is false: waiting", 10s)) << PluginLog();
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(plugin_->Running());
  // Waiting is not ready: the node has no GPUs to offer.
  e2e::HttpResult ready = WaitForOps("/readyz", 500, "no GPUs served");
  EXPECT_EQ(ready.status, 500);
  EXPECT_NE(ready.body.find("[-]plugins failed: no GPUs served: no NVIDIA driver found: "
                            "/nonexistent/libnvidia-ml.so.1 could not be loaded"),
            std::string::npos)
      << ready.body;
  EXPECT_NE(ready.body.find("failOnInitError is false: waiting\n"), std::string::npos)
      << ready.body;
  EXPECT_NE(Ops("/metrics").body.find("muster_device_plugin_registered 0\n"), std::string::npos);
  StopPlugin();
}

// The labels on a Node of the real API server (`muster apiserver`), checked with kubectl.
TEST_F(DevicePluginE2eTest, LabelsTheNodeThroughTheApiServer) {
  if (system("kubectl version --client >/dev/null 2>&1") != 0) GTEST_SKIP() << "no kubectl";
  UseMachine(gpu::testing::TwoGpuMachine("nvlink gpu=0 peer=1 links=18\n"));
  std::string data = machine_->dir() + "/api";
  Subprocess apiserver({MUSTER_BINARY_PATH, "apiserver", "--data-dir", data, "--listen",
                        "127.0.0.1:0"},
                       {}, machine_->dir() + "/apiserver.log");
  ASSERT_TRUE(apiserver.WaitForOutput("export KUBECONFIG=", 30s)) << apiserver.Output();
  std::string kubeconfig = data + "/kubeconfig";
  std::string node = WriteFile("node.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-1\n"
                                            "  labels:\n    team: a\n");
  std::string kubectl = "/usr/bin/env";
  auto created = testing::RunCommand({kubectl, "kubectl", "--kubeconfig", kubeconfig, "apply",
                                      "-f", node},
                                     {}, machine_->dir() + "/kubectl.log");
  ASSERT_EQ(created.exit_status, 0) << created.output;
  StartKubelet();
  StartPlugin({"--kubeconfig", kubeconfig, "--node-name", "gpu-1"});
  Devices("nvidia.com/gpu");
  std::string labels;
  for (int i = 0; i < 100; ++i) {
    auto got = testing::RunCommand({kubectl, "kubectl", "--kubeconfig", kubeconfig, "get", "node",
                                    "gpu-1", "-o", "jsonpath={.metadata.labels}"},
                                   {}, machine_->dir() + "/kubectl.log");
    labels = got.output;
    if (labels.find("nvidia.com/gpu.count") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(labels.find("\"nvidia.com/gpu.count\":\"2\""), std::string::npos) << labels;
  EXPECT_NE(labels.find("\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\""),
            std::string::npos)
      << labels;
  EXPECT_NE(labels.find("\"team\":\"a\""), std::string::npos) << labels;  // merged, not replaced
  // The GPUs' NVLinks, for the scheduler's nvlink plugin, in the same patch.
  auto annotations =
      testing::RunCommand({kubectl, "kubectl", "--kubeconfig", kubeconfig, "get", "node", "gpu-1",
                           "-o", "jsonpath={.metadata.annotations.muster\\.dev/gpu-topology}"},
                          {}, machine_->dir() + "/kubectl.log");
  EXPECT_EQ(annotations.output, "v1;gpus=2;nvlink=0-1:18");
  StopPlugin();
  apiserver.Signal(SIGTERM);
  EXPECT_EQ(apiserver.Wait(15s), std::optional<int>(0)) << apiserver.Output();
}

}  // namespace
}  // namespace muster::deviceplugin
