#pragma once

// Test helpers around the fake NVML (fake_nvml.cc): a temporary directory holding a machine file
// and its events file, and ready-made machines.

#include <string>

namespace muster::gpu::testing {

// <build>/fake-nvml: the folder holding the fake libnvidia-ml.so.1.
std::string FakeNvmlDir();
// <build>/fake-nvml/libnvidia-ml.so.1.
std::string FakeNvmlLibrary();

// A temporary directory (removed with everything in it on destruction) with machine.conf and
// machine.conf.events. Not thread-safe.
class FakeMachine {
 public:
  explicit FakeMachine(const std::string& machine_file_text);
  ~FakeMachine();
  FakeMachine(const FakeMachine&) = delete;
  FakeMachine& operator=(const FakeMachine&) = delete;

  const std::string& dir() const { return dir_; }
  std::string config_path() const { return dir_ + "/machine.conf"; }
  std::string events_path() const { return dir_ + "/machine.conf.events"; }

  // Replaces the machine file (read again at the next first nvmlInit_v2).
  void Rewrite(const std::string& machine_file_text) const;
  // Appends one line ("xid 2 79", "lost 2", "recover 2") to the events file.
  void AppendEvent(const std::string& line) const;
  // Points this process's MUSTER_FAKE_NVML_CONFIG / _EVENTS at this machine.
  void Activate() const;
  // "MUSTER_FAKE_NVML_CONFIG=... MUSTER_FAKE_NVML_EVENTS=..." for a child's environment.
  std::string EnvAssignments() const;

 private:
  std::string dir_;
};

// Eight V100s in a DGX-1's hybrid cube-mesh: NVLinks 0-1:1 0-2:1 0-3:2 0-4:2 1-2:2 1-3:1 1-5:2
// 2-3:2 2-6:1 3-7:1 4-5:1 4-6:1 4-7:2 5-6:2 5-7:1 6-7:2; PCIe switches {0,1} {2,3} {4,5} {6,7};
// GPUs 0-3 on socket 0 and 4-7 on socket 1.
std::string Dgx1Machine();
// Two H100 80GB, no MIG; then `extra` appended.
std::string TwoGpuMachine(const std::string& extra = "");
// Two A100 80GB with MIG on: GPU 0 with 1g.10gb x2 and 2g.20gb x1; GPU 1 with 3g.40gb x2.
std::string MixedMigMachine();

}  // namespace muster::gpu::testing
