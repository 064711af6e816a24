// kubelet-emulator: the kubelet's side of the device plugin API, for checking a device plugin by
// hand or from scripts/gpu-check.sh. Serves <dir>/kubelet.sock, waits for plugins to register,
// prints what they advertise, allocates from each resource and asks each for a preferred
// allocation; with --restart it then restarts like a kubelet (every socket deleted, kubelet.sock
// re-created) and checks that every plugin registers again. Exit status 0 when every step worked.

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "deviceplugin/testing/kubelet_emulator.h"
#include "fmt/format.h"

namespace {

using muster::deviceplugin::testing::KubeletEmulator;

void PrintAllocation(const v1beta1::AllocateResponse& response) {
  for (const auto& container : response.container_responses()) {
    std::map<std::string, std::string> envs(container.envs().begin(), container.envs().end());
    for (const auto& [k, v] : envs) fmt::print("    env {}={}\n", k, v);
    for (const auto& m : container.mounts()) {
      fmt::print("    mount {} -> {}{}\n", m.host_path(), m.container_path(),
                 m.read_only() ? " (ro)" : "");
    }
    for (const auto& d : container.devices()) {
      fmt::print("    device {} -> {} ({})\n", d.host_path(), d.container_path(), d.permissions());
    }
    std::map<std::string, std::string> annotations(container.annotations().begin(),
                                                   container.annotations().end());
    for (const auto& [k, v] : annotations) fmt::print("    annotation {}={}\n", k, v);
    for (const auto& c : container.cdi_devices()) fmt::print("    cdi {}\n", c.name());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kubelet-emulator: the kubelet's side of the device plugin API v1beta1"};
  std::string dir;
  int timeout_s = 60;
  int settle_ms = 2000;
  bool restart = false;
  int expect = 1;
  app.add_option("--dir", dir, "the device plugin folder to serve kubelet.sock in")->required();
  app.add_option("--timeout", timeout_s, "seconds to wait for registrations")->capture_default_str();
  app.add_option("--settle-ms", settle_ms,
                 "after the expected registrations, how long to wait for more")
      ->capture_default_str();
  app.add_option("--expect", expect, "resources that must register")->capture_default_str();
  app.add_flag("--restart", restart, "then restart like a kubelet and check re-registration");
  CLI11_PARSE(app, argc, argv);

  auto emulator = KubeletEmulator::Start(dir);
  if (!emulator.ok()) {
    fmt::print(stderr, "kubelet-emulator: {}\n", std::string(emulator.status().message()));
    return 1;
  }
  fmt::print("kubelet emulator: serving {}\n", (*emulator)->socket_path());
  std::fflush(stdout);
  auto timeout = std::chrono::seconds(timeout_s);
  if (!(*emulator)->WaitForRegistrations(static_cast<size_t>(expect), timeout)) {
    fmt::print(stderr, "kubelet-emulator: fewer than {} registrations within {} s\n", expect,
               timeout_s);
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
  bool ok = true;
  for (const auto& r : (*emulator)->Registrations()) {
    fmt::print("registered {}: version {}, endpoint {}, preferred allocation {}, pre-start {}\n",
               r.request.resource_name(), r.request.version(), r.request.endpoint(),
               r.options.get_preferred_allocation_available() ? "yes" : "no",
               r.options.pre_start_required() ? "yes" : "no");
  }
  for (const std::string& resource : (*emulator)->Resources()) {
    auto devices = (*emulator)->WaitForDevices(resource, nullptr, timeout);
    if (!devices.ok()) {
      fmt::print(stderr, "kubelet-emulator: {}\n", std::string(devices.status().message()));
      ok = false;
      continue;
    }
    fmt::print("{}: {} device{}\n", resource, devices->size(), devices->size() == 1 ? "" : "s");
    std::vector<std::string> healthy;
    for (const auto& d : *devices) {
      std::string numa;
      for (const auto& n : d.topology().nodes()) numa += fmt::format(" NUMA {}", n.id());
      fmt::print("  {} {}{}\n", d.id(), d.health(), numa);
      if (d.health() == "Healthy") healthy.push_back(d.id());
    }
    if (healthy.empty()) {
      fmt::print(stderr, "kubelet-emulator: {} has no healthy device\n", resource);
      ok = false;
      continue;
    }
    auto allocation = (*emulator)->Allocate(resource, {{healthy.front()}});
    if (!allocation.ok()) {
      fmt::print(stderr, "kubelet-emulator: {}\n", std::string(allocation.status().message()));
      ok = false;
      continue;
    }
    fmt::print("  Allocate [{}]:\n", healthy.front());
    PrintAllocation(*allocation);
    if (healthy.size() >= 2) {
      auto preferred = (*emulator)->PreferredAllocation(resource, healthy, {}, 2);
      if (!preferred.ok()) {
        fmt::print(stderr, "kubelet-emulator: {}\n", std::string(preferred.status().message()));
        ok = false;
        continue;
      }
      fmt::print("  GetPreferredAllocation size 2 of {}: {}\n", healthy.size(),
                 fmt::join(*preferred, ", "));
    }
  }
  if (restart && ok) {
    size_t before = (*emulator)->Registrations().size();
    std::vector<std::string> resources = (*emulator)->Resources();
    if (auto s = (*emulator)->Restart(); !s.ok()) {
      fmt::print(stderr, "kubelet-emulator: {}\n", std::string(s.message()));
      return 1;
    }
    fmt::print("restarted: sockets deleted, {} re-created\n", (*emulator)->socket_path());
    if (!(*emulator)->WaitForRegistrations(before + resources.size(), timeout)) {
      fmt::print(stderr, "kubelet-emulator: the plugins did not register again within {} s\n",
                 timeout_s);
      return 1;
    }
    for (const std::string& resource : resources) {
      auto devices = (*emulator)->WaitForDevices(resource, nullptr, timeout);
      if (!devices.ok()) {
        fmt::print(stderr, "kubelet-emulator: {}\n", std::string(devices.status().message()));
        return 1;
      }
      fmt::print("re-registered {}: {} device{}\n", resource, devices->size(),
                 devices->size() == 1 ? "" : "s");
    }
  }
  fmt::print("{}\n", ok ? "OK" : "FAILED");
  (*emulator)->Stop();
  return ok ? 0 : 1;
}
