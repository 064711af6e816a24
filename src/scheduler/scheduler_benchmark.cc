// The live scheduler's throughput, end to end through the embedded API server in-process:
// 10,000 one-GPU pods in 1,250 gangs of 8 (PodGroups created directly, no job controller, no
// node agents: pods never finish, so only the 8,000 that fit at once are bound) onto 1,000 nodes
// of 8 GPUs. Figures: pods bound per second from the first create to the last bind,
// and the scheduler's cycle latencies. A plain driver that prints its figures; run it alone
// (other work on the machine skews them). Flags: --nodes N --gangs N --size N.

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "boost/json/object.hpp"
#include "client/client.h"
#include "fmt/format.h"
#include "scheduler/scheduler.h"

namespace json = boost::json;
using namespace muster;
using Clock = std::chrono::steady_clock;

namespace {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool Ok(const absl::StatusOr<json::object>& r, const char* what) {
  if (r.ok()) return true;
  fmt::print(stderr, "{}: {}\n", what, std::string(r.status().message()));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 1000, gangs = 1250, size = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nodes")) nodes = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--gangs")) gangs = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--size")) size = std::atoi(argv[i + 1]);
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = (std::filesystem::path(tmp ? tmp : "/tmp") / "muster-sched-bench-XXXXXX");
  if (::mkdtemp(dir.data()) == nullptr) return 1;

  int rc = 0;
  {
    apiserver::ApiServerOptions so;
    so.data_dir = dir;
    so.listen = "127.0.0.1:0";
    auto server = apiserver::ApiServer::Start(so);
    if (!server.ok()) {
      fmt::print(stderr, "{}\n", std::string(server.status().message()));
      return 1;
    }
    client::Client admin(std::make_shared<apiserver::LocalTransport>(**server));
    client::Client sched_client(std::make_shared<apiserver::LocalTransport>(**server));

    for (int n = 0; n < nodes; ++n) {
      json::object node{
          {"metadata", json::object{{"name", fmt::format("node-{:04}", n)}}},
          {"status",
           json::object{
               {"allocatable",
                json::object{
                    {"cpu", "96"}, {"memory", "768Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}}},
               {"conditions", json::array{json::object{{"type", "Ready"}, {"status", "True"}}}}}}};
      if (!Ok(admin.Create(client::Nodes(), "", node), "node")) return 1;
    }

    scheduler::SchedulerOptions options;
    options.log = [](std::string_view) {};
    scheduler::Scheduler sched(sched_client, options);
    if (!sched.Start().ok() || !sched.WaitForSync(std::chrono::seconds(30))) return 1;

    const int pods = gangs * size;
    // Without node agents nothing finishes: only what fits at once can be bound.
    const int placeable = std::min(pods, nodes * 8 / size * size);
    Clock::time_point start = Clock::now();
    for (int g = 0; g < gangs; ++g) {
      std::string group = fmt::format("gang-{:04}", g);
      json::object pg{{"metadata", json::object{{"name", group}}},
                      {"spec", json::object{{"minMember", size}}}};
      if (!Ok(admin.Create(client::PodGroups(), "default", pg), "podgroup")) return 1;
      for (int i = 0; i < size; ++i) {
        json::object container{
            {"name", "c"},
            {"image", "x"},
            {"resources", json::object{{"limits", json::object{{"nvidia.com/gpu", "1"}}}}}};
        json::object pod{
            {"metadata",
             json::object{{"name", fmt::format("{}-{}", group, i)},
                          {"annotations", json::object{{"scheduling.k8s.io/group-name", group}}}}},
            {"spec",
             json::object{{"schedulerName", "volcano"}, {"containers", json::array{container}}}}};
        if (!Ok(admin.Create(client::Pods(), "default", pod), "pod")) return 1;
      }
    }
    Clock::time_point created = Clock::now();
    Clock::time_point deadline = created + std::chrono::seconds(120);
    while (sched.Stats().pods_bound < static_cast<uint64_t>(placeable) && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    Clock::time_point bound = Clock::now();
    scheduler::SchedulerStats st = sched.Stats();
    sched.Stop();
    scheduler::SchedulerStats after = sched.Stats();

    fmt::print("nodes {} x 8 GPUs, {} gangs of {} one-GPU pods ({} pods)\n", nodes, gangs, size,
               pods);
    fmt::print("created in              {:.2f} s ({:.0f} objects/s)\n", Seconds(created - start),
               (pods + gangs) / Seconds(created - start));
    fmt::print("pods bound              {} of {} that fit\n", st.pods_bound, placeable);
    fmt::print("first create->last bind {:.2f} s: {:.0f} pods bound/s\n", Seconds(bound - start),
               st.pods_bound / Seconds(bound - start));
    fmt::print("cycles                  {} (average {:.1f} ms, longest {:.1f} ms)\n", st.cycles,
               st.cycles ? st.total_cycle_time.count() / 1000.0 / st.cycles : 0.0,
               st.longest_cycle.count() / 1000.0);
    fmt::print("events                  {} written, {} dropped\n", after.events_written,
               after.events_dropped);
    fmt::print("write errors            {}, bind failures {}\n", st.write_errors, st.bind_failures);
    if (st.pods_bound < static_cast<uint64_t>(placeable)) rc = 1;
    (*server)->Stop();
  }
  std::filesystem::remove_all(dir);
  return rc;
}
