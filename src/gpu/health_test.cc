#include "gpu/health.h"

#include <condition_variable>
#include <mutex>

#include "gpu/discover.h"
#include "gpu/fake/fake_machine.h"
#include "gtest/gtest.h"

namespace muster::gpu {
namespace {

using namespace std::chrono_literals;
using testing::FakeMachine;

// Starts a monitor over a fake machine and records what it reports.
class HealthHarness {
 public:
  HealthHarness(const FakeMachine& machine, HealthOptions options) {
    machine.Activate();
    auto nvml = Nvml::Load(testing::FakeNvmlLibrary());
    EXPECT_TRUE(nvml.ok()) << nvml.status();
    nvml_ = *nvml;
    auto system = DiscoverSystem(*nvml_, "/nonexistent");
    EXPECT_TRUE(system.ok()) << system.status();
    gpus_ = system->devices;
    options.wait_timeout_ms = 20;
    options.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      log_ += line + "\n";
    };
    auto monitor = HealthMonitor::Start(nvml_, gpus_, options,
                                        [this](const std::vector<HealthChange>& changes) {
                                          std::lock_guard<std::mutex> lock(mu_);
                                          for (const auto& c : changes) changes_.push_back(c);
                                          cv_.notify_all();
                                        });
    EXPECT_TRUE(monitor.ok()) << monitor.status();
    monitor_ = std::move(*monitor);
  }
  ~HealthHarness() { monitor_->Stop(); }

  // Waits until `count` changes have been reported; returns them all.
  std::vector<HealthChange> WaitForChanges(size_t count, std::chrono::milliseconds timeout = 5s) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return changes_.size() >= count; });
    return changes_;
  }
  std::vector<HealthChange> Changes() {
    std::lock_guard<std::mutex> lock(mu_);
    return changes_;
  }
  std::string Log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  const std::vector<GpuDevice>& gpus() const { return gpus_; }
  HealthMonitor& monitor() { return *monitor_; }

 private:
  std::shared_ptr<Nvml> nvml_;
  std::vector<GpuDevice> gpus_;
  std::unique_ptr<HealthMonitor> monitor_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<HealthChange> changes_;
  std::string log_;
};

HealthOptions NoRecovery() {
  HealthOptions options;
  options.reprobe_interval = 0ms;
  return options;
}

TEST(HealthTest, CriticalXidMakesTheGpuUnhealthy) {
  FakeMachine machine(testing::TwoGpuMachine());
  HealthHarness harness(machine, NoRecovery());
  machine.AppendEvent("xid 1 79");
  auto changes = harness.WaitForChanges(1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].uuid, harness.gpus()[1].uuid);
  EXPECT_FALSE(changes[0].healthy);
  EXPECT_EQ(changes[0].reason, "XID 79");
  auto snapshot = harness.monitor().Snapshot();
  EXPECT_TRUE(snapshot[harness.gpus()[0].uuid]);
  EXPECT_FALSE(snapshot[harness.gpus()[1].uuid]);
}

TEST(HealthTest, ApplicationXidsAreIgnoredAndTheListIsConfigurable) {
  FakeMachine machine(testing::TwoGpuMachine());
  HealthOptions options = NoRecovery();
  options.ignored_xids.insert(48);
  HealthHarness harness(machine, options);
  for (int xid : {13, 31, 43, 45, 68, 109, 48}) {
    machine.AppendEvent("xid 0 " + std::to_string(xid));
  }
  machine.AppendEvent("xid 0 94");  // contained ECC error: not on the list
  auto changes = harness.WaitForChanges(1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].reason, "XID 94");
}

TEST(HealthTest, MigEventHitsOnlyItsComputeInstanceAndWholeGpuEventsHitAll) {
  FakeMachine machine(testing::MixedMigMachine());
  HealthHarness harness(machine, NoRecovery());
  const auto& gpu0 = harness.gpus()[0];
  machine.AppendEvent("xid 0 94 8 0");  // GI 8, CI 0: the second 1g.10gb
  auto changes = harness.WaitForChanges(1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].uuid, gpu0.mig_devices[1].uuid);

  machine.AppendEvent("xid 1 79");  // the whole of GPU 1: the GPU and both MIG devices
  changes = harness.WaitForChanges(4);
  ASSERT_EQ(changes.size(), 4u);
  EXPECT_EQ(changes[1].uuid, harness.gpus()[1].uuid);
  EXPECT_EQ(changes[2].uuid, harness.gpus()[1].mig_devices[0].uuid);
  EXPECT_EQ(changes[3].uuid, harness.gpus()[1].mig_devices[1].uuid);
}

TEST(HealthTest, RecoveredGpuBecomesHealthyAgainAfterReprobe) {
  FakeMachine machine(testing::TwoGpuMachine());
  HealthOptions options;
  options.reprobe_interval = 100ms;
  HealthHarness harness(machine, options);
  machine.AppendEvent("lost 1");
  machine.AppendEvent("xid 1 79");
  auto changes = harness.WaitForChanges(1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_FALSE(changes[0].healthy);
  // While the GPU is lost, probes fail and it stays unhealthy.
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(harness.Changes().size(), 1u);
  machine.AppendEvent("recover 1");
  changes = harness.WaitForChanges(2);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[1].uuid, harness.gpus()[1].uuid);
  EXPECT_TRUE(changes[1].healthy);
  EXPECT_TRUE(harness.monitor().Snapshot()[harness.gpus()[1].uuid]);
}

TEST(HealthTest, WithoutReprobeAnUnhealthyGpuStaysUnhealthy) {
  FakeMachine machine(testing::TwoGpuMachine());
  HealthHarness harness(machine, NoRecovery());
  machine.AppendEvent("xid 0 79");
  ASSERT_EQ(harness.WaitForChanges(1).size(), 1u);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(harness.Changes().size(), 1u);
  EXPECT_FALSE(harness.monitor().Snapshot()[harness.gpus()[0].uuid]);
}

TEST(HealthTest, GpusWithoutEventSupportAreNotWatched) {
  FakeMachine machine(
      "gpu events=unsupported\n"
      "gpu\n");
  HealthHarness harness(machine, NoRecovery());
  machine.AppendEvent("xid 0 79");
  machine.AppendEvent("xid 1 79");
  auto changes = harness.WaitForChanges(1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].uuid, harness.gpus()[1].uuid);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(harness.Changes().size(), 1u);
}

TEST(HealthTest, GpusWhoseEventsCannotBeRegisteredStayHealthyAndUnwatched) {
  FakeMachine machine(
      "gpu events=denied\n"
      "gpu\n");
  HealthHarness harness(machine, NoRecovery());
  EXPECT_TRUE(harness.monitor().Snapshot()[harness.gpus()[0].uuid]);
  machine.AppendEvent("xid 0 79");
  machine.AppendEvent("xid 1 79");
  auto changes = harness.WaitForChanges(1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].uuid, harness.gpus()[1].uuid);
  EXPECT_NE(harness.Log().find("GPU 0 (" + harness.gpus()[0].uuid +
                               ") is not watched: nvmlDeviceRegisterEvents: Insufficient "
                               "Permissions (NVML error 4)"),
            std::string::npos)
      << harness.Log();
}

TEST(HealthTest, XidsWrittenBeforeStartAreHistory) {
  FakeMachine machine(testing::TwoGpuMachine());
  machine.AppendEvent("xid 0 79");
  HealthHarness harness(machine, NoRecovery());
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(harness.Changes().empty());
}

}  // namespace
}  // namespace muster::gpu
