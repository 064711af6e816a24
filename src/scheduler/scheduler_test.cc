// The scheduler against a real embedded API server (port 0, temporary data directory), through
// the client layer: in-process (apiserver::LocalTransport) and, in one test, over HTTP with the
// kubeconfig the server writes, so that nothing assumes the scheduler shares the server's
// process.

#include "scheduler/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "client/client.h"
#include "client/http_transport.h"
#include "controller/podgroup_controller.h"
#include "fmt/format.h"

namespace muster::scheduler {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using testing::HasSubstr;

// --- objects -----------------------------------------------------------------------------------

json::object Node(const std::string& name, int gpus) {
  return json::object{
      {"metadata", json::object{{"name", name}}},
      {"status",
       json::object{
           {"allocatable", json::object{{"cpu", "8"},
                                        {"memory", "32Gi"},
                                        {"pods", "110"},
                                        {"nvidia.com/gpu", std::to_string(gpus)}}},
           {"conditions", json::array{json::object{{"type", "Ready"}, {"status", "True"}}}}}}};
}

json::object Queue(const std::string& name) {
  return json::object{{"metadata", json::object{{"name", name}}},
                      {"spec", json::object{{"weight", 1}}}};
}

json::object PodGroup(const std::string& name, int min_member, const std::string& queue) {
  return json::object{{"metadata", json::object{{"name", name}}},
                      {"spec", json::object{{"minMember", min_member}, {"queue", queue}}}};
}

// A pod asking for `gpus` GPUs (in limits, as manifests do). `scheduler` "" leaves
// schedulerName out; `group` "" leaves the group annotation out.
json::object Pod(const std::string& name, const std::string& scheduler, const std::string& group,
                 int gpus, const std::string& node = "") {
  json::object meta{{"name", name}};
  if (!group.empty()) {
    meta["annotations"] = json::object{{"scheduling.k8s.io/group-name", group}};
  }
  json::object container{
      {"name", "c"},
      {"image", "busybox"},
      {"resources",
       json::object{{"limits", json::object{{"nvidia.com/gpu", std::to_string(gpus)}}}}}};
  json::object spec{{"containers", json::array{container}}};
  if (!scheduler.empty()) spec["schedulerName"] = scheduler;
  if (!node.empty()) spec["nodeName"] = node;
  return json::object{{"metadata", std::move(meta)}, {"spec", std::move(spec)}};
}

std::string Str(const json::value* v) {
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}
const json::value* At(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::value* v = nullptr;
  const json::object* cur = &o;
  for (std::string_view p : path) {
    if (cur == nullptr) return nullptr;
    v = cur->if_contains(p);
    if (v == nullptr) return nullptr;
    cur = v->is_object() ? &v->get_object() : nullptr;
  }
  return v;
}
std::string NodeOf(const json::object& pod) { return Str(At(pod, {"spec", "nodeName"})); }
std::string Annotation(const json::object& o, std::string_view key) {
  const json::value* a = At(o, {"metadata", "annotations"});
  return a != nullptr && a->is_object() ? Str(a->get_object().if_contains(key)) : "";
}
std::string Version(const json::object& o) { return Str(At(o, {"metadata", "resourceVersion"})); }
// Two objects written by one store commit carry consecutive revisions.
bool OneCommit(const json::object& a, const json::object& b) {
  int64_t va = std::stoll("0" + Version(a)), vb = std::stoll("0" + Version(b));
  return va > 0 && vb > 0 && (va - vb == 1 || vb - va == 1);
}

// The condition of `type` in status.conditions, or an empty object.
json::object ConditionOf(const json::object& o, std::string_view type) {
  const json::value* conds = At(o, {"status", "conditions"});
  if (conds == nullptr || !conds->is_array()) return {};
  for (const json::value& c : conds->get_array()) {
    if (c.is_object() && Str(c.get_object().if_contains("type")) == type) return c.get_object();
  }
  return {};
}

// Blocks until `done` holds (checked every 10 ms) or `timeout` passes.
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = 15s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

// --- fixture -----------------------------------------------------------------------------------

// Forwards to another transport; refuses the first `refuse` gang bindings as a conflict would.
class RefusingTransport : public client::Transport {
 public:
  RefusingTransport(std::shared_ptr<client::Transport> inner, int refuse)
      : inner_(std::move(inner)), refuse_(refuse) {}
  absl::StatusOr<client::Response> Do(const client::Request& r) override { return inner_->Do(r); }
  absl::StatusOr<client::Response> Stream(const client::Request& r,
                                          const std::function<bool(std::string_view)>& on_line,
                                          const std::atomic<bool>& stop) override {
    return inner_->Stream(r, on_line, stop);
  }
  std::optional<absl::StatusOr<std::vector<absl::Status>>> BindAll(
      const std::vector<client::Binding>& bindings) override {
    if (refuse_ > 0) {
      --refuse_;
      return std::vector<absl::Status>(
          bindings.size(), absl::AbortedError("the object has been modified; please retry"));
    }
    return inner_->BindAll(bindings);
  }
  bool BindsAtomically() const override { return inner_->BindsAtomically(); }

 private:
  std::shared_ptr<client::Transport> inner_;
  std::atomic<int> refuse_;
};

// Forwards to another transport; holds each bind 500 ms and counts how many were in flight at
// once, as a loaded API server's round trips would show.
class SlowBindTransport : public client::Transport {
 public:
  explicit SlowBindTransport(std::shared_ptr<client::Transport> inner) : inner_(std::move(inner)) {}
  absl::StatusOr<client::Response> Do(const client::Request& r) override {
    if (!r.path.ends_with("/binding")) return inner_->Do(r);
    int now = ++in_flight_;
    for (int seen = most_; now > seen && !most_.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(500ms);  // long enough for a second writer to wake under load
    auto response = inner_->Do(r);
    --in_flight_;
    return response;
  }
  absl::StatusOr<client::Response> Stream(const client::Request& r,
                                          const std::function<bool(std::string_view)>& on_line,
                                          const std::atomic<bool>& stop) override {
    return inner_->Stream(r, on_line, stop);
  }
  int most_in_flight() const { return most_; }

 private:
  std::shared_ptr<client::Transport> inner_;
  std::atomic<int> in_flight_{0};
  std::atomic<int> most_{0};
};

enum class Via { kInProcess, kHttp, kSlowHttp };

class SchedulerTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("scheduler");
    ASSERT_FALSE(dir_.empty());
    auto server = apiserver::testing::StartTestServer(dir_ + "/data");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    admin_ =
        std::make_unique<client::Client>(std::make_shared<apiserver::LocalTransport>(*server_));
  }

  void TearDown() override {
    if (scheduler_) scheduler_->Stop();
    scheduler_.reset();
    if (podgroup_controller_) podgroup_controller_->Stop();
    podgroup_controller_.reset();
    client_.reset();
    admin_.reset();
    apiserver::testing::StopTestServer(server_, dir_);
  }

  // Fast cycles and short backoffs keep the tests quick.
  SchedulerOptions FastOptions() {
    SchedulerOptions o;
    o.period = 50ms;
    o.debounce = 5ms;
    o.backoff_initial = 100ms;
    o.backoff_max = 400ms;
    o.log = [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.emplace_back(line);
    };
    return o;
  }

  void StartScheduler(SchedulerOptions options, Via via = Via::kInProcess, int refuse_binds = 0) {
    std::shared_ptr<client::Transport> transport;
    if (via == Via::kHttp || via == Via::kSlowHttp) {
      auto config = client::LoadKubeconfig(server_->kubeconfig_path());
      ASSERT_TRUE(config.ok()) << config.status();
      auto http = client::MakeHttpTransport(*config);
      ASSERT_TRUE(http.ok()) << http.status();
      transport = *http;
    } else {
      transport = std::make_shared<apiserver::LocalTransport>(*server_);
    }
    if (via == Via::kSlowHttp) {
      slow_ = std::make_shared<SlowBindTransport>(transport);
      transport = slow_;
    }
    if (refuse_binds > 0) {
      transport = std::make_shared<RefusingTransport>(transport, refuse_binds);
    }
    client_ = std::make_unique<client::Client>(transport);
    scheduler_ = std::make_unique<Scheduler>(*client_, std::move(options));
    absl::Status st = scheduler_->Start();
    ASSERT_TRUE(st.ok()) << st;
    ASSERT_TRUE(scheduler_->WaitForSync(10s));
  }

  void Create(const client::Resource& r, const std::string& ns, json::object o) {
    auto created = admin_->Create(r, ns, std::move(o));
    ASSERT_TRUE(created.ok()) << created.status();
  }
  json::object Get(const client::Resource& r, const std::string& ns, const std::string& name) {
    auto got = admin_->Get(r, ns, name);
    return got.ok() ? *got : json::object{};
  }
  json::object GetPod(const std::string& name) { return Get(client::Pods(), "default", name); }
  json::object GetPodGroup(const std::string& name) {
    return Get(client::PodGroups(), "default", name);
  }

  // "<reason> [<source>]: <message>" of every event about the object.
  std::vector<std::string> EventsAbout(const std::string& kind, const std::string& name) {
    std::vector<std::string> out;
    auto list = admin_->List(client::Events(), "default");
    if (!list.ok()) return out;
    for (const json::object& e : list->items) {
      if (Str(At(e, {"involvedObject", "kind"})) != kind ||
          Str(At(e, {"involvedObject", "name"})) != name) {
        continue;
      }
      out.push_back(fmt::format("{} [{}]: {}", Str(At(e, {"reason"})),
                                Str(At(e, {"source", "component"})), Str(At(e, {"message"}))));
    }
    return out;
  }

  void TwoOneGpuNodes() {
    Create(client::Nodes(), "", Node("n1", 1));
    Create(client::Nodes(), "", Node("n2", 1));
  }
  void GangOfTwo() {
    Create(client::Queues(), "", Queue("ml"));
    Create(client::PodGroups(), "default", PodGroup("pg", 2, "ml"));
    Create(client::Pods(), "default", Pod("w-0", "volcano", "pg", 1));
    Create(client::Pods(), "default", Pod("w-1", "volcano", "pg", 1));
  }
  bool Bound(const std::string& pod) { return !NodeOf(GetPod(pod)).empty(); }

  // Both pods of the gang are bound (in one store transaction when `one_transaction`) with
  // their GPU devices; the PodGroup, the queue and the events say so in Volcano's words.
  void ExpectGangBound(bool one_transaction) {
    json::object w0 = GetPod("w-0"), w1 = GetPod("w-1");
    EXPECT_NE(NodeOf(w0), NodeOf(w1));
    EXPECT_EQ(Annotation(w0, "muster.dev/gpu-indices"), "0");
    EXPECT_EQ(Annotation(w1, "muster.dev/gpu-indices"), "0");
    if (one_transaction) {
      EXPECT_TRUE(OneCommit(w0, w1)) << Version(w0) << " " << Version(w1);
    }
    EXPECT_EQ(Str(ConditionOf(w0, "PodScheduled").if_contains("status")), "True");

    // The phase and the Scheduled condition may come in different writes: wait for both.
    ASSERT_TRUE(WaitFor([&] {
      json::object pg = GetPodGroup("pg");
      return Str(At(pg, {"status", "phase"})) == "Running" &&
             Str(ConditionOf(pg, "Scheduled").if_contains("status")) == "True";
    }));
    json::object scheduled = ConditionOf(GetPodGroup("pg"), "Scheduled");
    EXPECT_EQ(Str(scheduled.if_contains("status")), "True");
    EXPECT_EQ(Str(scheduled.if_contains("reason")), "tasks in gang are ready to be scheduled");

    ASSERT_TRUE(WaitFor([&] { return EventsAbout("Pod", "w-1").size() == 1; }));
    EXPECT_THAT(EventsAbout("Pod", "w-0"),
                testing::ElementsAre("Scheduled [volcano]: Successfully assigned default/w-0 to " +
                                     NodeOf(w0)));
    EXPECT_THAT(EventsAbout("Pod", "w-1"),
                testing::ElementsAre("Scheduled [volcano]: Successfully assigned default/w-1 to " +
                                     NodeOf(w1)));
    ASSERT_TRUE(WaitFor([&] { return !EventsAbout("PodGroup", "pg").empty(); }));
    EXPECT_THAT(EventsAbout("PodGroup", "pg"),
                testing::ElementsAre("Scheduled [volcano]: pod group is ready"));

    auto running = [&] {
      json::object q = Get(client::Queues(), "", "ml");
      const json::value* n = At(q, {"status", "running"});
      return n != nullptr && n->is_int64() && n->as_int64() == 1;
    };
    ASSERT_TRUE(WaitFor(running));
    EXPECT_EQ(Str(At(Get(client::Queues(), "", "ml"), {"status", "allocated", "nvidia.com/gpu"})),
              "2");
  }

  // Starts the scheduler with `allocate, backfill`, allocate's `arguments` and backoffs so long
  // that a gang backed off sits out the rest of the test; returns once GangOfTwo's group is
  // admitted (and so tried).
  void StartWithAllocateArguments(const std::string& arguments) {
    std::string conf = dir_ + "/volcano-scheduler.conf";
    std::ofstream(conf) << "actions: \"allocate, backfill\"\n"
                           "tiers:\n- plugins: [{name: priority}, {name: gang}]\n"
                           "- plugins: [{name: predicates}, {name: nodeorder}]\n"
                           "configurations:\n- name: allocate\n  arguments: "
                        << arguments << "\n";
    SchedulerOptions o = FastOptions();
    o.conf_path = conf;
    o.backoff_initial = 10min;
    o.backoff_max = 10min;
    StartScheduler(o);
    ASSERT_TRUE(WaitFor([&] {
      return Str(At(GetPodGroup("pg"), {"status", "phase"})) == "Inqueue";
    }));
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> admin_;   // the test's own client (kubectl's role)
  std::unique_ptr<client::Client> client_;  // the scheduler's
  std::unique_ptr<Scheduler> scheduler_;
  std::shared_ptr<SlowBindTransport> slow_;  // Via::kSlowHttp
  // Started by the tests that need plain pods grouped, as `muster up` runs it beside the scheduler.
  std::unique_ptr<controller::Controller> podgroup_controller_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(SchedulerTest, GangIsBoundTogetherWithItsGpus) {
  TwoOneGpuNodes();
  GangOfTwo();
  StartScheduler(FastOptions());
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  ExpectGangBound(/*one_transaction=*/true);
  SchedulerStats stats = scheduler_->Stats();
  EXPECT_EQ(stats.pods_bound, 2u);
  EXPECT_EQ(stats.bind_failures, 0u);
  EXPECT_GE(stats.cycles, 1u);
  EXPECT_EQ(stats.gangs_waiting, 0);
  // The cycle that bound the gang did work: the percentiles cover it and stay within the
  // longest cycle.
  EXPECT_GT(stats.cycle_p99.count(), 0);
  EXPECT_LE(stats.cycle_p50, stats.cycle_p99);
  EXPECT_LE(stats.cycle_p99, stats.longest_cycle);
  EXPECT_LE(stats.session_p50, stats.session_p99);
  EXPECT_LE(stats.session_p99, stats.cycle_p99);
}

// Acceptance item 2 of issue 4: the same over HTTP, through the client layer only.
TEST_F(SchedulerTest, GangIsBoundOverHttp) {
  TwoOneGpuNodes();
  GangOfTwo();
  StartScheduler(FastOptions(), Via::kHttp);
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  ExpectGangBound(/*one_transaction=*/false);
  // The cycle counts its binds once they are written, after the pods show them.
  EXPECT_TRUE(WaitFor([&] { return scheduler_->Stats().pods_bound == 2u; }))
      << scheduler_->Stats().pods_bound;
}

// Over a real API server a gang's binds are one POST each: they go out side by side, so that
// the gang is partly bound for one round trip rather than for all of them in turn (issue 12,
// item 4: bench/peers saw every gang of 8 partly bound for several round trips).
TEST_F(SchedulerTest, AGangsBindsOverHttpGoOutSideBySide) {
  TwoOneGpuNodes();
  GangOfTwo();
  StartScheduler(FastOptions(), Via::kSlowHttp);
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  ExpectGangBound(/*one_transaction=*/false);
  EXPECT_EQ(slow_->most_in_flight(), 2);
}

TEST_F(SchedulerTest, GangThatCannotFitWaitsWholeUntilResourcesAreFreed) {
  TwoOneGpuNodes();
  // The seed's blocker: a plain pod holding n2's GPU.
  Create(client::Pods(), "default", Pod("blocker", "", "", 1, "n2"));
  GangOfTwo();
  SchedulerOptions options = FastOptions();
  options.estimate_every_seconds = 0;  // as often as an answer may have moved
  StartScheduler(options);

  const std::string want_pg =
      "1/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
      "Pending: 1 Schedulable, 1 Unschedulable. Origin reason is w-1: 0/2 nodes are "
      "unavailable: 2 Insufficient nvidia.com/gpu.";
  ASSERT_TRUE(WaitFor([&] {
    return Str(ConditionOf(GetPodGroup("pg"), "Unschedulable").if_contains("message")) == want_pg;
  })) << boost::json::serialize(GetPodGroup("pg"));
  json::object pg = GetPodGroup("pg");
  EXPECT_EQ(Str(At(pg, {"status", "phase"})), "Inqueue");
  EXPECT_EQ(Str(ConditionOf(pg, "Unschedulable").if_contains("reason")), "NotEnoughResources");

  ASSERT_TRUE(WaitFor([&] {
    return !ConditionOf(GetPod("w-1"), "PodScheduled").empty() &&
           !ConditionOf(GetPod("w-0"), "PodScheduled").empty();
  }));
  json::object w0 = ConditionOf(GetPod("w-0"), "PodScheduled");
  json::object w1 = ConditionOf(GetPod("w-1"), "PodScheduled");
  EXPECT_EQ(Str(w1.if_contains("status")), "False");
  EXPECT_EQ(Str(w1.if_contains("reason")), "Unschedulable");
  EXPECT_EQ(Str(w1.if_contains("message")),
            "0/2 nodes are unavailable: 2 Insufficient nvidia.com/gpu.");
  EXPECT_EQ(Str(w0.if_contains("reason")), "Schedulable");
  EXPECT_EQ(Str(w0.if_contains("message")),
            "Pod default/w-0 can possibly be assigned to n1, once minAvailable is satisfied");
  EXPECT_FALSE(Bound("w-0"));
  EXPECT_FALSE(Bound("w-1"));
  // Once a second cycle has left it waiting, the gang carries its wait reason (estimates.h) and
  // the Estimated condition beside Volcano's; the blocker has no expected end, so no estimate.
  ASSERT_TRUE(WaitFor([&] { return !ConditionOf(GetPodGroup("pg"), "Estimated").empty(); }))
      << boost::json::serialize(GetPodGroup("pg"));
  pg = GetPodGroup("pg");
  EXPECT_EQ(Str(ConditionOf(pg, "Estimated").if_contains("reason")), "NoEstimate");
  EXPECT_THAT(Annotation(pg, "muster.dev/wait-reason"), testing::HasSubstr("default/blocker"));
  EXPECT_EQ(Annotation(pg, "muster.dev/estimated-start"), "");

  // Cycles go on (and the gang backs off), but nothing that did not change is written again:
  // the objects keep their versions and each event is recorded once.
  // Nor are the start estimates computed again: nothing they depend on changed (the
  // scheduler's own status and annotation writes coming back do not count).
  std::string pg_version = Version(GetPodGroup("pg"));
  std::string w1_version = Version(GetPod("w-1"));
  uint64_t cycles = scheduler_->Stats().cycles;
  uint64_t estimate_runs = scheduler_->Stats().estimate_runs;
  EXPECT_GE(estimate_runs, 1u);
  ASSERT_TRUE(WaitFor([&] { return scheduler_->Stats().cycles >= cycles + 8; }));
  EXPECT_EQ(scheduler_->Stats().estimate_runs, estimate_runs);
  EXPECT_EQ(Version(GetPodGroup("pg")), pg_version);
  EXPECT_EQ(Version(GetPod("w-1")), w1_version);
  EXPECT_THAT(EventsAbout("Pod", "w-1"),
              testing::ElementsAre("FailedScheduling [volcano]: 0/2 nodes are unavailable: 2 "
                                   "Insufficient nvidia.com/gpu."));
  EXPECT_THAT(EventsAbout("PodGroup", "pg"),
              testing::ElementsAre("Unschedulable [volcano]: 2/2 tasks in gang unschedulable: " +
                                   want_pg.substr(want_pg.find(": ") + 2)));
  EXPECT_FALSE(Bound("w-0"));
  EXPECT_EQ(scheduler_->Stats().gangs_waiting, 1);
  EXPECT_EQ(scheduler_->Stats().pods_pending, 2);

  // The blocker goes: both trainers are bound together.
  client::DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(admin_->Delete(client::Pods(), "default", "blocker", now).ok());
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  EXPECT_TRUE(OneCommit(GetPod("w-0"), GetPod("w-1")));
  ASSERT_TRUE(WaitFor([&] {
    return Str(At(GetPodGroup("pg"), {"status", "phase"})) == "Running";
  }));
}

TEST_F(SchedulerTest, DefaultSchedulerPodsGetKubeSchedulersWords) {
  TwoOneGpuNodes();
  Create(client::Pods(), "default", Pod("big", "", "", 2));
  Create(client::Pods(), "default", Pod("small", "default-scheduler", "", 1));
  SchedulerOptions o = FastOptions();
  o.serve_default_scheduler = true;
  StartScheduler(o);

  ASSERT_TRUE(WaitFor([&] { return Bound("small"); }));
  ASSERT_TRUE(WaitFor([&] { return EventsAbout("Pod", "big").size() == 1; }));
  EXPECT_THAT(EventsAbout("Pod", "big"),
              testing::ElementsAre("FailedScheduling [default-scheduler]: 0/2 nodes are "
                                   "available: 2 Insufficient nvidia.com/gpu."));
  json::object cond = ConditionOf(GetPod("big"), "PodScheduled");
  EXPECT_EQ(Str(cond.if_contains("reason")), "Unschedulable");
  EXPECT_EQ(Str(cond.if_contains("message")),
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
  ASSERT_TRUE(WaitFor([&] { return EventsAbout("Pod", "small").size() == 1; }));
  EXPECT_THAT(EventsAbout("Pod", "small"),
              testing::ElementsAre("Scheduled [default-scheduler]: Successfully assigned "
                                   "default/small to " +
                                   NodeOf(GetPod("small"))));
  // No PodGroup is written for them.
  auto groups = admin_->List(client::PodGroups(), "default");
  ASSERT_TRUE(groups.ok());
  EXPECT_TRUE(groups->items.empty());
}

TEST_F(SchedulerTest, DefaultSchedulerPodsAreLeftAloneUnlessServed) {
  TwoOneGpuNodes();
  Create(client::Pods(), "default", Pod("plain", "", "", 1));
  GangOfTwo();
  StartScheduler(FastOptions());
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  EXPECT_FALSE(Bound("plain"));
  EXPECT_TRUE(EventsAbout("Pod", "plain").empty());
}

TEST_F(SchedulerTest, StandalonePodGetsAOneMemberPodGroupAsVolcanoGivesIt) {
  TwoOneGpuNodes();
  Create(client::Pods(), "default", Pod("solo", "volcano", "", 1));
  std::string uid = Str(At(GetPod("solo"), {"metadata", "uid"}));
  podgroup_controller_ = controller::NewPodGroupController(*admin_);
  ASSERT_TRUE(podgroup_controller_->Start().ok());
  StartScheduler(FastOptions());
  ASSERT_TRUE(WaitFor([&] { return Bound("solo"); }));
  json::object pod = GetPod("solo");
  EXPECT_EQ(Annotation(pod, "scheduling.k8s.io/group-name"), "podgroup-" + uid);
  json::object pg = GetPodGroup("podgroup-" + uid);
  ASSERT_FALSE(pg.empty());
  EXPECT_EQ(At(pg, {"spec", "minMember"})->as_int64(), 1);
  EXPECT_EQ(Str(At(pg, {"spec", "queue"})), "default");
  const json::value* owners = At(pg, {"metadata", "ownerReferences"});
  ASSERT_NE(owners, nullptr);
  EXPECT_EQ(Str(owners->as_array().at(0).as_object().if_contains("kind")), "Pod");
  EXPECT_EQ(Str(owners->as_array().at(0).as_object().if_contains("uid")), uid);
  ASSERT_TRUE(WaitFor([&] {
    return Str(At(GetPodGroup("podgroup-" + uid), {"status", "phase"})) == "Running";
  }));
}

TEST_F(SchedulerTest, RefusedBindIsUndoneAndRetried) {
  TwoOneGpuNodes();
  GangOfTwo();
  StartScheduler(FastOptions(), Via::kInProcess, /*refuse_binds=*/1);
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  json::object w0 = GetPod("w-0"), w1 = GetPod("w-1");
  // Retried from a clean state: each pod on its own node with its own GPU, in one transaction.
  EXPECT_NE(NodeOf(w0), NodeOf(w1));
  EXPECT_TRUE(OneCommit(w0, w1));
  SchedulerStats stats = scheduler_->Stats();
  EXPECT_EQ(stats.bind_failures, 2u);
  EXPECT_EQ(stats.pods_bound, 2u);
  ASSERT_TRUE(WaitFor([&] { return EventsAbout("Pod", "w-0").size() == 2; }));
  EXPECT_THAT(EventsAbout("Pod", "w-0"),
              testing::Contains(testing::StartsWith(
                  "FailedScheduling [volcano]: failed to bind to node " + NodeOf(w0))));
  EXPECT_THAT(EventsAbout("Pod", "w-0"), testing::Contains(testing::StartsWith("Scheduled")));
}

// Another scheduler (kube-scheduler) binds a pod while muster's session runs from a snapshot
// without it: the gang placed on that node in the meantime is not bound, so the node is never
// over its allocatable, and it waits whole for room (issue 11, item 8).
TEST_F(SchedulerTest, AGangIsNotBoundOntoANodeAnotherSchedulerFilledDuringTheCycle) {
  TwoOneGpuNodes();
  GangOfTwo();
  SchedulerOptions o = FastOptions();
  std::atomic<bool> raced{false};
  o.before_binds = [&](const std::function<size_t()>& changes_waiting) {
    if (raced.exchange(true)) return;
    Create(client::Pods(), "default", Pod("other", "", "", 1, "n1"));
    EXPECT_TRUE(WaitFor([&] { return changes_waiting() > 0; }));
  };
  StartScheduler(o);
  ASSERT_TRUE(WaitFor([&] { return scheduler_->Stats().gangs_deferred == 1; }))
      << "w-0 on '" << NodeOf(GetPod("w-0")) << "', w-1 on '" << NodeOf(GetPod("w-1")) << "'";
  ASSERT_TRUE(WaitFor([&] { return scheduler_->Stats().cycles >= 5; }));
  EXPECT_EQ(NodeOf(GetPod("other")), "n1");
  EXPECT_FALSE(Bound("w-0"));
  EXPECT_FALSE(Bound("w-1"));
  EXPECT_EQ(scheduler_->Stats().pods_bound, 0u);
  std::lock_guard<std::mutex> lock(log_mu_);
  EXPECT_THAT(log_, testing::Contains(HasSubstr(
                        "not binding gang default/pg this cycle: node n1 took pods of another "
                        "scheduler")));
}

TEST_F(SchedulerTest, PreemptionEvictsTheLowerPriorityGangGracefully) {
  Create(client::PriorityClasses(), "",
         json::object{{"metadata", json::object{{"name", "low"}}}, {"value", 1}});
  Create(client::PriorityClasses(), "",
         json::object{{"metadata", json::object{{"name", "high"}}}, {"value", 1000}});
  Create(client::Nodes(), "", Node("n1", 1));
  auto job = [&](const std::string& name, const std::string& priority) {
    json::object pg = PodGroup(name, 1, "default");
    pg["spec"].as_object()["priorityClassName"] = priority;
    Create(client::PodGroups(), "default", pg);
    json::object pod = Pod(name + "-0", "volcano", name, 1);
    pod["spec"].as_object()["priorityClassName"] = priority;
    Create(client::Pods(), "default", pod);
  };
  job("low", "low");
  std::string conf = dir_ + "/volcano-scheduler.conf";
  std::ofstream(conf) << R"(actions: "enqueue, allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
)";
  SchedulerOptions o = FastOptions();
  o.conf_path = conf;
  StartScheduler(o);
  ASSERT_TRUE(WaitFor([&] { return Bound("low-0"); }));
  // The node agent's part: the pod runs.
  ASSERT_TRUE(admin_
                  ->Patch(client::Pods(), "default", "low-0", client::PatchType::kMerge,
                          R"({"status":{"phase":"Running"}})", "status")
                  .ok());

  job("high", "high");
  ASSERT_TRUE(WaitFor([&] { return At(GetPod("low-0"), {"metadata", "deletionTimestamp"}); }));
  json::object ready = ConditionOf(GetPod("low-0"), "Ready");
  EXPECT_EQ(Str(ready.if_contains("status")), "False");
  EXPECT_EQ(Str(ready.if_contains("reason")), "Evict");
  EXPECT_EQ(Str(ready.if_contains("message")), "Pod is evicted, because of preempt");
  ASSERT_TRUE(WaitFor([&] { return EventsAbout("Pod", "low-0").size() == 2; }));
  EXPECT_THAT(EventsAbout("Pod", "low-0"),
              testing::Contains("Evict [volcano]: Pod is evicted, because of preempt"));
  // The preemptor waits for the victim, its node nominated.
  ASSERT_TRUE(WaitFor([&] {
    return Str(At(GetPod("high-0"), {"status", "nominatedNodeName"})) == "n1";
  }));
  EXPECT_FALSE(Bound("high-0"));
  // Counted once the cycle's writes are done, which the nomination is one of.
  EXPECT_TRUE(WaitFor([&] { return scheduler_->Stats().evictions == 1u; }))
      << scheduler_->Stats().evictions;

  // The node agent's part: the victim's containers stop and the pod goes.
  client::DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(admin_->Delete(client::Pods(), "default", "low-0", now).ok());
  ASSERT_TRUE(WaitFor([&] { return Bound("high-0"); }));
  EXPECT_EQ(NodeOf(GetPod("high-0")), "n1");
  EXPECT_EQ(Annotation(GetPod("high-0"), "muster.dev/gpu-indices"), "0");
  EXPECT_EQ(scheduler_->Stats().evictions, 1u);
}

TEST_F(SchedulerTest, ConfigurationFileIsReloadedWhenItChanges) {
  TwoOneGpuNodes();
  GangOfTwo();
  std::string conf = dir_ + "/volcano-scheduler.conf";
  // Admission only: the gang is admitted but never placed.
  std::ofstream(conf) << "actions: \"enqueue\"\ntiers:\n- plugins:\n  - name: gang\n";
  SchedulerOptions o = FastOptions();
  o.conf_path = conf;
  StartScheduler(o);
  ASSERT_TRUE(WaitFor([&] {
    return Str(At(GetPodGroup("pg"), {"status", "phase"})) == "Inqueue";
  }));
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(Bound("w-0"));

  // A file that does not parse is refused; the configuration in force stays.
  std::ofstream(conf, std::ios::trunc) << "actions: \"enqueue, teleport\"\n";
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(log_mu_);
    for (const auto& line : log_) {
      if (line.find("teleport") != std::string::npos) return true;
    }
    return false;
  }));
  EXPECT_FALSE(Bound("w-0"));

  std::ofstream(conf, std::ios::trunc)
      << "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: "
         "predicates\n";
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  EXPECT_GE(scheduler_->Stats().conf_reloads, 1u);
}

// With allocate's reserveGpus a gang that would get a reservation is never backed off: held back
// it would be out of the session, and the jobs behind it would take the room it waits for.
TEST_F(SchedulerTest, AGangDueAReservationIsNotBackedOffAndKeepsItsRoom) {
  TwoOneGpuNodes();
  // n1's GPU is taken for another hour; n2's is free.
  json::object holder = Pod("holder", "", "", 1, "n1");
  holder["metadata"].as_object()["annotations"] =
      json::object{{"muster.dev/expected-runtime", "1h"}};
  Create(client::Pods(), "default", holder);
  GangOfTwo();
  StartWithAllocateArguments("{reserveGpus: 2}");
  uint64_t cycles = scheduler_->Stats().cycles;
  ASSERT_TRUE(WaitFor([&] { return scheduler_->Stats().cycles >= cycles + 3; }));
  // Creation times count whole seconds: a job created in the gang's second could sort ahead of it.
  std::this_thread::sleep_for(1100ms);

  // A one-GPU job of two hours: on n2 it would hold the gang back an hour longer.
  Create(client::PodGroups(), "default", PodGroup("small", 1, "ml"));
  json::object small = Pod("small-0", "volcano", "small", 1);
  small["metadata"].as_object()["annotations"].as_object()["muster.dev/expected-runtime"] = "2h";
  Create(client::Pods(), "default", small);
  ASSERT_TRUE(WaitFor([&] {
    return Str(ConditionOf(GetPodGroup("small"), "Unschedulable").if_contains("message"))
               .find("waits for the reservation of default/pg") != std::string::npos;
  })) << boost::json::serialize(GetPodGroup("small"));
  EXPECT_FALSE(Bound("small-0"));

  // The holder leaves: the gang takes both GPUs.
  client::DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(admin_->Delete(client::Pods(), "default", "holder", now).ok());
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  EXPECT_FALSE(Bound("small-0"));
}

// Under allocate's strictOrder nothing is backed off: a head that waits its backoff out would let
// the jobs behind it go first.
TEST_F(SchedulerTest, UnderStrictOrderTheHeadIsNotBackedOffAndNothingPassesIt) {
  TwoOneGpuNodes();
  Create(client::Pods(), "default", Pod("holder", "", "", 1, "n1"));
  GangOfTwo();
  StartWithAllocateArguments("{strictOrder: true}");
  std::this_thread::sleep_for(1100ms);  // the next job is created in a later second

  Create(client::PodGroups(), "default", PodGroup("small", 1, "ml"));
  Create(client::Pods(), "default", Pod("small-0", "volcano", "small", 1));
  ASSERT_TRUE(WaitFor([&] {
    return Str(At(GetPodGroup("small"), {"status", "phase"})) == "Inqueue";
  }));
  uint64_t cycles = scheduler_->Stats().cycles;
  ASSERT_TRUE(WaitFor([&] { return scheduler_->Stats().cycles >= cycles + 5; }));
  EXPECT_FALSE(Bound("small-0")) << "n2 is free, but the gang ahead of it waits";

  client::DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(admin_->Delete(client::Pods(), "default", "holder", now).ok());
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  EXPECT_FALSE(Bound("small-0"));
}

TEST_F(SchedulerTest, ABadConfigurationFileAtStartIsAnError) {
  std::string conf = dir_ + "/bad.conf";
  std::ofstream(conf) << "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: nosuchplugin\n";
  SchedulerOptions o = FastOptions();
  o.conf_path = conf;
  client_ = std::make_unique<client::Client>(std::make_shared<apiserver::LocalTransport>(*server_));
  Scheduler s(*client_, o);
  absl::Status st = s.Start();
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("nosuchplugin"));
}

}  // namespace
}  // namespace muster::scheduler
