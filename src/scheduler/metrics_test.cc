// The scheduler's Prometheus metrics (scheduler/metrics.h) against a real embedded API server,
// in-process, as scheduler_test.cc runs the scheduler: a gang placed, a gang that does not fit
// and then does, a gang left below minAvailable holding a GPU, and bindings the API refuses,
// each read back from the registry the scheduler was given. Timing-dependent values are checked
// only for what must hold whatever the machine's speed (counts, consistency between series,
// lower bounds the test itself witnessed).

#include "scheduler/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apiserver/apiserver.h"
#include "apiserver/local_transport.h"
#include "apiserver/testing/test_server.h"
#include "client/client.h"
#include "fmt/format.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "scheduler/scheduler.h"

namespace muster::scheduler {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using testing::HasSubstr;
using Labels = std::map<std::string, std::string>;

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

// A Volcano pod of group `group` asking 500m CPU, 1Gi and `gpus` GPUs; bound to `node` already
// when given.
json::object Pod(const std::string& name, const std::string& group, int gpus,
                 const std::string& node = "") {
  json::object container{
      {"name", "c"},
      {"image", "busybox"},
      {"resources",
       json::object{{"requests", json::object{{"cpu", "500m"}, {"memory", "1Gi"}}},
                    {"limits", json::object{{"nvidia.com/gpu", std::to_string(gpus)}}}}}};
  json::object spec{{"containers", json::array{container}}, {"schedulerName", "volcano"}};
  if (!node.empty()) spec["nodeName"] = node;
  return json::object{
      {"metadata",
       json::object{{"name", name},
                    {"annotations", json::object{{"scheduling.k8s.io/group-name", group}}}}},
      {"spec", std::move(spec)}};
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = 15s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

// --- reading the registry ----------------------------------------------------------------------

// One series of the registry as Collect() gives it; nullptr when absent.
struct Series {
  prometheus::MetricType type;
  prometheus::ClientMetric metric;
};

std::optional<Series> Find(prometheus::Registry& registry, const std::string& name,
                           const Labels& labels = {}) {
  for (const prometheus::MetricFamily& f : registry.Collect()) {
    if (f.name != name) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      Labels got;
      for (const auto& l : m.label) got[l.name] = l.value;
      if (got == labels) return Series{f.type, m};
    }
  }
  return std::nullopt;
}

// A counter's or gauge's value; NaN when the series is absent.
double Value(prometheus::Registry& registry, const std::string& name, const Labels& labels = {}) {
  auto s = Find(registry, name, labels);
  if (!s) return NAN;
  if (s->type == prometheus::MetricType::Counter) return s->metric.counter.value;
  if (s->type == prometheus::MetricType::Gauge) return s->metric.gauge.value;
  return NAN;
}

// A histogram's sample count; -1 when the series is absent.
int64_t Count(prometheus::Registry& registry, const std::string& name, const Labels& labels = {}) {
  auto s = Find(registry, name, labels);
  if (!s || s->type != prometheus::MetricType::Histogram) return -1;
  return static_cast<int64_t>(s->metric.histogram.sample_count);
}

double Sum(prometheus::Registry& registry, const std::string& name, const Labels& labels = {}) {
  auto s = Find(registry, name, labels);
  return s ? s->metric.histogram.sample_sum : NAN;
}

// The label sets of every series of family `name`.
std::vector<Labels> SeriesOf(prometheus::Registry& registry, const std::string& name) {
  std::vector<Labels> out;
  for (const prometheus::MetricFamily& f : registry.Collect()) {
    if (f.name != name) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      Labels got;
      for (const auto& l : m.label) got[l.name] = l.value;
      out.push_back(std::move(got));
    }
  }
  return out;
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
  // Atomic as the in-process transport it wraps: the scheduler hands it whole gangs (BindAll),
  // which is where it refuses.
  [[nodiscard]] bool BindsAtomically() const override { return inner_->BindsAtomically(); }
  std::optional<absl::StatusOr<std::vector<absl::Status>>> BindAll(
      const std::vector<client::Binding>& bindings) override {
    if (refuse_ > 0) {
      --refuse_;
      return std::vector<absl::Status>(
          bindings.size(), absl::AbortedError("the object has been modified; please retry"));
    }
    return inner_->BindAll(bindings);
  }

 private:
  std::shared_ptr<client::Transport> inner_;
  std::atomic<int> refuse_;
};

class SchedulerMetricsTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = apiserver::testing::MakeTempDir("scheduler-metrics");
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
    client_.reset();
    admin_.reset();
    apiserver::testing::StopTestServer(server_, dir_);
  }

  void StartScheduler(int refuse_binds = 0) {
    SchedulerOptions o;
    o.period = 50ms;
    o.debounce = 5ms;
    o.backoff_initial = 100ms;
    o.backoff_max = 400ms;
    o.log = [](std::string_view) {};
    o.metrics = registry_;
    std::shared_ptr<client::Transport> transport =
        std::make_shared<apiserver::LocalTransport>(*server_);
    if (refuse_binds > 0) transport = std::make_shared<RefusingTransport>(transport, refuse_binds);
    client_ = std::make_unique<client::Client>(transport);
    scheduler_ = std::make_unique<Scheduler>(*client_, std::move(o));
    absl::Status st = scheduler_->Start();
    ASSERT_TRUE(st.ok()) << st;
    ASSERT_TRUE(scheduler_->WaitForSync(10s));
  }

  void Create(const client::Resource& r, const std::string& ns, json::object o) {
    auto created = admin_->Create(r, ns, std::move(o));
    ASSERT_TRUE(created.ok()) << created.status();
  }
  bool Bound(const std::string& pod) {
    auto got = admin_->Get(client::Pods(), "default", pod);
    if (!got.ok()) return false;
    const json::value* spec = got->if_contains("spec");
    const json::value* node =
        spec != nullptr && spec->is_object() ? spec->get_object().if_contains("nodeName") : nullptr;
    return node != nullptr && node->is_string() && !node->get_string().empty();
  }
  double V(const std::string& name, const Labels& labels = {}) {
    return Value(*registry_, name, labels);
  }

  std::string dir_;
  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> admin_;
  std::unique_ptr<client::Client> client_;
  std::unique_ptr<Scheduler> scheduler_;
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
};

// --- tests -------------------------------------------------------------------------------------

TEST(ExponentialBucketsRangeTest, SpansMinToMaxByOneFactor) {
  const std::vector<double> b = ExponentialBucketsRange(1, 5000, 20);
  ASSERT_EQ(b.size(), 20u);
  EXPECT_DOUBLE_EQ(b.front(), 1);
  EXPECT_NEAR(b.back(), 5000, 1e-9);
  const double factor = std::pow(5000.0, 1.0 / 19);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_NEAR(b[i] / b[i - 1], factor, 1e-12) << i;
  const std::vector<double> plugin = ExponentialBucketsRange(0.1, 100, 15);
  ASSERT_EQ(plugin.size(), 15u);
  EXPECT_DOUBLE_EQ(plugin.front(), 0.1);
  EXPECT_NEAR(plugin.back(), 100, 1e-9);
  EXPECT_TRUE(ExponentialBucketsRange(0, 10, 5).empty());
  EXPECT_TRUE(ExponentialBucketsRange(1, 10, 0).empty());
}

TEST_F(SchedulerMetricsTest, APlacedGangShowsInEverySeries) {
  Create(client::Nodes(), "", Node("n1", 1));
  Create(client::Nodes(), "", Node("n2", 1));
  Create(client::Queues(), "", Queue("ml"));
  Create(client::PodGroups(), "default", PodGroup("pg", 2, "ml"));
  Create(client::Pods(), "default", Pod("w-0", "pg", 1));
  Create(client::Pods(), "default", Pod("w-1", "pg", 1));
  StartScheduler();
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  // The cycle that bound them records its gauges as it ends.
  ASSERT_TRUE(WaitFor([&] {
    return V("volcano_queue_allocated_milli_cpu", {{"queue_name", "ml"}}) == 1000;
  }));
  scheduler_->Stop();  // no cycle runs while the series are compared

  prometheus::Registry& r = *registry_;
  const double cycles = V("muster_scheduler_cycles_total");
  EXPECT_GE(cycles, 1);
  EXPECT_EQ(V("muster_pods_bound_total"), 2);
  EXPECT_EQ(V("muster_bind_failures_total"), 0);
  EXPECT_EQ(V("volcano_schedule_attempts_total", {{"result", "scheduled"}}), 2);
  EXPECT_EQ(V("volcano_schedule_attempts_total", {{"result", "error"}}), 0);
  EXPECT_EQ(V("volcano_schedule_attempts_total", {{"result", "unschedulable"}}), 0)
      << "both pods fitted in the cycle that first tried them";

  // One e2e sample per cycle; every action and plugin of Volcano's default configuration once
  // per cycle (no default-scheduler pods, so no second session).
  const auto n = static_cast<int64_t>(cycles);
  EXPECT_EQ(Count(r, "volcano_e2e_scheduling_latency_milliseconds"), n);
  EXPECT_GT(Sum(r, "volcano_e2e_scheduling_latency_milliseconds"), 0);
  for (const char* action : {"enqueue", "allocate", "backfill"}) {
    EXPECT_EQ(Count(r, "volcano_action_scheduling_latency_milliseconds", {{"action", action}}), n)
        << action;
  }
  EXPECT_EQ(SeriesOf(r, "volcano_action_scheduling_latency_milliseconds").size(), 3u);
  for (const char* plugin : {"priority", "gang", "conformance", "overcommit", "drf", "predicates",
                             "proportion", "nodeorder"}) {
    for (const char* on : {"OnSessionOpen", "OnSessionClose"}) {
      EXPECT_EQ(Count(r, "volcano_plugin_scheduling_latency_milliseconds",
                      {{"plugin", plugin}, {"OnSession", on}}),
                n)
          << plugin << " " << on;
    }
  }
  // The cycles' steps fit in the cycles.
  double steps = 0;
  for (const Labels& l : SeriesOf(r, "volcano_action_scheduling_latency_milliseconds")) {
    steps += Sum(r, "volcano_action_scheduling_latency_milliseconds", l);
  }
  for (const Labels& l : SeriesOf(r, "volcano_plugin_scheduling_latency_milliseconds")) {
    steps += Sum(r, "volcano_plugin_scheduling_latency_milliseconds", l);
  }
  EXPECT_LE(steps, Sum(r, "volcano_e2e_scheduling_latency_milliseconds"));

  // The queue holds two pods' worth: 2 x 500m, 2 x 1Gi, 2 GPUs (in thousandths, as Volcano).
  EXPECT_EQ(V("volcano_queue_allocated_milli_cpu", {{"queue_name", "ml"}}), 1000);
  EXPECT_EQ(V("volcano_queue_allocated_memory_bytes", {{"queue_name", "ml"}}), 2.0 * (1 << 30));
  EXPECT_EQ(V("volcano_queue_allocated_scalar_resources",
              {{"queue_name", "ml"}, {"resource", "nvidia.com/gpu"}}),
            2000);
  EXPECT_TRUE(std::isnan(
      V("volcano_queue_allocated_milli_cpu", {{"queue_name", "default-scheduler:pods"}})))
      << "the default scheduler's own queue is not a Volcano queue";
  // Its deserved share, as proportion water-fills it: the one queue asking deserves what it
  // asks for, no more.
  EXPECT_EQ(V("volcano_queue_deserved_milli_cpu", {{"queue_name", "ml"}}), 1000);
  EXPECT_EQ(V("volcano_queue_deserved_memory_bytes", {{"queue_name", "ml"}}), 2.0 * (1 << 30));
  EXPECT_EQ(V("volcano_queue_deserved_scalar_resources",
              {{"queue_name", "ml"}, {"resource", "nvidia.com/gpu"}}),
            2000);

  // Nothing waits.
  EXPECT_EQ(V("volcano_unschedule_job_count"), 0);
  EXPECT_TRUE(SeriesOf(r, "volcano_unschedule_task_count").empty());
  EXPECT_EQ(V("muster_gangs_waiting"), 0);
  EXPECT_EQ(V("muster_gpus_idle_in_partial_gangs"), 0);
  // The gang waited from its first cycle to its binds: one decision.
  EXPECT_EQ(Count(r, "muster_gang_decision_latency_milliseconds"), 1);
  EXPECT_GT(Sum(r, "muster_gang_decision_latency_milliseconds"), 0);

  // The histograms have Volcano's buckets (and +Inf).
  auto e2e = Find(r, "volcano_e2e_scheduling_latency_milliseconds");
  ASSERT_TRUE(e2e);
  ASSERT_EQ(e2e->metric.histogram.bucket.size(), 21u);
  EXPECT_DOUBLE_EQ(e2e->metric.histogram.bucket.front().upper_bound, 1);
  EXPECT_NEAR(e2e->metric.histogram.bucket[19].upper_bound, 5000, 1e-9);
  EXPECT_TRUE(std::isinf(e2e->metric.histogram.bucket.back().upper_bound));

  // And the text a scrape gets declares each family with its type (a family without series,
  // here volcano_unschedule_task_count, is left out of the text by prometheus-cpp).
  const std::string text = prometheus::TextSerializer().Serialize(r.Collect());
  for (const char* declared :
       {"# TYPE volcano_e2e_scheduling_latency_milliseconds histogram\n",
        "# TYPE volcano_action_scheduling_latency_milliseconds histogram\n",
        "# TYPE volcano_plugin_scheduling_latency_milliseconds histogram\n",
        "# TYPE volcano_schedule_attempts_total counter\n",
        "# TYPE volcano_unschedule_job_count gauge\n",
        "# TYPE volcano_queue_allocated_milli_cpu gauge\n",
        "# TYPE volcano_queue_allocated_memory_bytes gauge\n",
        "# TYPE volcano_queue_allocated_scalar_resources gauge\n",
        "# TYPE volcano_queue_deserved_milli_cpu gauge\n",
        "# TYPE volcano_queue_deserved_memory_bytes gauge\n",
        "# TYPE volcano_queue_deserved_scalar_resources gauge\n",
        "# TYPE muster_gang_decision_latency_milliseconds histogram\n",
        "# TYPE muster_pods_bound_total counter\n", "# TYPE muster_bind_failures_total counter\n",
        "# TYPE muster_gangs_waiting gauge\n", "# TYPE muster_gpus_idle_in_partial_gangs gauge\n",
        "# TYPE muster_scheduler_cycles_total counter\n"}) {
    EXPECT_THAT(text, HasSubstr(declared));
  }
}

TEST_F(SchedulerMetricsTest, AGangThatDoesNotFitIsCountedUntilItDoes) {
  Create(client::Nodes(), "", Node("n1", 1));
  Create(client::Queues(), "", Queue("ml"));
  Create(client::PodGroups(), "default", PodGroup("pg", 2, "ml"));
  Create(client::Pods(), "default", Pod("w-0", "pg", 1));
  Create(client::Pods(), "default", Pod("w-1", "pg", 1));
  StartScheduler();

  // One GPU for a gang of two: the gang lacks both its tasks, cycle after cycle. (A cycle sets
  // its gauges one after another, so the test waits for all it reads.)
  ASSERT_TRUE(WaitFor([&] {
    return V("volcano_unschedule_job_count") == 1 &&
           V("volcano_unschedule_task_count", {{"job_id", "pg"}}) == 2 &&
           V("muster_gangs_waiting") == 1 &&
           V("volcano_queue_allocated_milli_cpu", {{"queue_name", "ml"}}) == 0;
  }));
  const auto seen_waiting = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor([&] {
    return V("volcano_schedule_attempts_total", {{"result", "unschedulable"}}) >= 2;
  }));
  EXPECT_EQ(V("muster_pods_bound_total"), 0);
  EXPECT_EQ(Count(*registry_, "muster_gang_decision_latency_milliseconds"), 0);
  // A gang that does not fit whole holds nothing: the queue has no CPU and never had a GPU.
  EXPECT_TRUE(std::isnan(V("volcano_queue_allocated_scalar_resources",
                           {{"queue_name", "ml"}, {"resource", "nvidia.com/gpu"}})));

  std::this_thread::sleep_for(100ms);
  const auto before_fit = std::chrono::steady_clock::now();
  Create(client::Nodes(), "", Node("n2", 1));
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  ASSERT_TRUE(WaitFor(
      [&] { return V("volcano_unschedule_job_count") == 0 && V("muster_gangs_waiting") == 0; }));
  EXPECT_TRUE(SeriesOf(*registry_, "volcano_unschedule_task_count").empty())
      << "the series goes once the gang has its tasks";
  EXPECT_EQ(V("muster_pods_bound_total"), 2);
  ASSERT_EQ(Count(*registry_, "muster_gang_decision_latency_milliseconds"), 1);
  // It was waiting before the test saw it so, and placed only after the node came.
  const double witnessed =
      std::chrono::duration<double, std::milli>(before_fit - seen_waiting).count();
  EXPECT_GE(Sum(*registry_, "muster_gang_decision_latency_milliseconds"), witnessed);
}

TEST_F(SchedulerMetricsTest, AGangBelowMinAvailableHoldingAGpuIsIdleCapacity) {
  // One of the gang's pods is on n1 already; the other asks two GPUs, which no node has.
  Create(client::Nodes(), "", Node("n1", 1));
  Create(client::Nodes(), "", Node("n2", 1));
  Create(client::Queues(), "", Queue("ml"));
  Create(client::PodGroups(), "default", PodGroup("pg", 2, "ml"));
  Create(client::Pods(), "default", Pod("w-0", "pg", 1, "n1"));
  Create(client::Pods(), "default", Pod("w-1", "pg", 2));
  StartScheduler();
  ASSERT_TRUE(WaitFor([&] { return V("muster_gpus_idle_in_partial_gangs") == 1; }));
  EXPECT_EQ(V("volcano_unschedule_task_count", {{"job_id", "pg"}}), 1);
  EXPECT_EQ(V("volcano_unschedule_job_count"), 1);
  EXPECT_EQ(V("volcano_queue_allocated_scalar_resources",
              {{"queue_name", "ml"}, {"resource", "nvidia.com/gpu"}}),
            1000);

  // Its minimum lowered to the pod it has, the gang is whole and its GPU no longer idle.
  auto patched = admin_->Patch(client::PodGroups(), "default", "pg", client::PatchType::kMerge,
                               R"({"spec":{"minMember":1}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  ASSERT_TRUE(WaitFor([&] { return V("muster_gpus_idle_in_partial_gangs") == 0; }));
  ASSERT_TRUE(WaitFor([&] { return V("volcano_unschedule_job_count") == 0; }));
  EXPECT_TRUE(SeriesOf(*registry_, "volcano_unschedule_task_count").empty());
}

TEST_F(SchedulerMetricsTest, RefusedBindingsAreErrorsThenRetried) {
  Create(client::Nodes(), "", Node("n1", 1));
  Create(client::Nodes(), "", Node("n2", 1));
  Create(client::Queues(), "", Queue("ml"));
  Create(client::PodGroups(), "default", PodGroup("pg", 2, "ml"));
  Create(client::Pods(), "default", Pod("w-0", "pg", 1));
  Create(client::Pods(), "default", Pod("w-1", "pg", 1));
  StartScheduler(/*refuse_binds=*/1);
  ASSERT_TRUE(WaitFor([&] { return Bound("w-0") && Bound("w-1"); }));
  ASSERT_TRUE(WaitFor([&] { return V("muster_pods_bound_total") == 2; }));
  EXPECT_EQ(V("muster_bind_failures_total"), 2);
  EXPECT_EQ(V("volcano_schedule_attempts_total", {{"result", "error"}}), 2);
  EXPECT_EQ(V("volcano_schedule_attempts_total", {{"result", "scheduled"}}), 2);
  ASSERT_TRUE(WaitFor([&] {
    return Count(*registry_, "muster_gang_decision_latency_milliseconds") == 1;
  })) << "one decision: the binds that held";
}

TEST_F(SchedulerMetricsTest, AQueueGoneLosesItsSeries) {
  Create(client::Nodes(), "", Node("n1", 1));
  Create(client::Queues(), "", Queue("ml"));
  Create(client::Queues(), "", Queue("spare"));
  StartScheduler();
  ASSERT_TRUE(WaitFor([&] {
    return V("volcano_queue_allocated_milli_cpu", {{"queue_name", "spare"}}) == 0 &&
           V("volcano_queue_allocated_milli_cpu", {{"queue_name", "ml"}}) == 0;
  }));
  ASSERT_TRUE(admin_->Delete(client::Queues(), "", "spare", {}).ok());
  ASSERT_TRUE(WaitFor([&] {
    return std::isnan(V("volcano_queue_allocated_milli_cpu", {{"queue_name", "spare"}}));
  }));
  EXPECT_TRUE(std::isnan(V("volcano_queue_allocated_memory_bytes", {{"queue_name", "spare"}})));
  EXPECT_EQ(V("volcano_queue_allocated_milli_cpu", {{"queue_name", "ml"}}), 0);
}

}  // namespace
}  // namespace muster::scheduler
