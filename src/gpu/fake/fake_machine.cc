#include "gpu/fake/fake_machine.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "fmt/format.h"

namespace muster::gpu::testing {

std::string FakeNvmlDir() { return MUSTER_FAKE_NVML_DIR; }
std::string FakeNvmlLibrary() { return FakeNvmlDir() + "/libnvidia-ml.so.1"; }

FakeMachine::FakeMachine(const std::string& machine_file_text) {
  // Short, so that unix socket paths under it stay within sun_path's 108 bytes.
  std::string templ = "/tmp/muster-gpu-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = templ;
  Rewrite(machine_file_text);
  std::ofstream(events_path()).flush();
}

FakeMachine::~FakeMachine() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void FakeMachine::Rewrite(const std::string& machine_file_text) const {
  std::string tmp = config_path() + ".tmp";
  std::ofstream(tmp) << machine_file_text;
  std::filesystem::rename(tmp, config_path());
}

void FakeMachine::AppendEvent(const std::string& line) const {
  std::ofstream out(events_path(), std::ios::app);
  out << line << "\n";
}

void FakeMachine::Activate() const {
  setenv("MUSTER_FAKE_NVML_CONFIG", config_path().c_str(), 1);
  setenv("MUSTER_FAKE_NVML_EVENTS", events_path().c_str(), 1);
}

std::string FakeMachine::EnvAssignments() const {
  return fmt::format("MUSTER_FAKE_NVML_CONFIG={} MUSTER_FAKE_NVML_EVENTS={}", config_path(),
                     events_path());
}

std::string Dgx1Machine() {
  std::string text = "driver 535.161.08\ncuda 12020\n";
  for (int i = 0; i < 8; ++i) {
    text += fmt::format(
        "gpu name=\"Tesla V100-SXM2-32GB\" memory_mib=32768 cc=7.0 socket={} switch={} "
        "mig=unsupported\n",
        i / 4, i / 2);
  }
  const int links[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1},
                          {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
                          {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
  for (const auto& l : links) {
    text += fmt::format("nvlink gpu={} peer={} links={}\n", l[0], l[1], l[2]);
  }
  return text;
}

std::string TwoGpuMachine(const std::string& extra) {
  return "driver 550.107.02\ncuda 12040\n"
         "gpu name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559 cc=9.0 bus=0000:18:00.0 mig=off\n"
         "gpu name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559 cc=9.0 bus=0000:2a:00.0 mig=off\n" +
         extra;
}

std::string MixedMigMachine() {
  return "driver 550.107.02\ncuda 12040\n"
         "gpu name=\"NVIDIA A100-SXM4-80GB\" memory_mib=81920 cc=8.0 mig=on\n"
         "gpu name=\"NVIDIA A100-SXM4-80GB\" memory_mib=81920 cc=8.0 mig=on\n"
         "mig gpu=0 gi=7 ci=0 gi_slices=1 ci_slices=1 memory_mib=9728 sms=14 profile_id=0\n"
         "mig gpu=0 gi=8 ci=0 gi_slices=1 ci_slices=1 memory_mib=9728 sms=14 profile_id=0\n"
         "mig gpu=0 gi=3 ci=0 gi_slices=2 ci_slices=2 memory_mib=19968 sms=28 profile_id=1\n"
         "mig gpu=1 gi=1 ci=0 gi_slices=3 ci_slices=3 memory_mib=40192 sms=42 profile_id=2 "
         "copy=3 decoders=2 jpeg=0\n"
         "mig gpu=1 gi=2 ci=0 gi_slices=3 ci_slices=3 memory_mib=40192 sms=42 profile_id=2 "
         "copy=3 decoders=2 jpeg=0\n";
}

}  // namespace muster::gpu::testing
