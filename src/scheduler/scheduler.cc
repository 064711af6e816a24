// The live scheduler (scheduler.h): the informers' changes applied to the cluster view, the loop
// that runs a cycle once a change that matters has settled or the period is up, the cycle itself
// (core::Session over the view, then what it writes: scheduler_write.cc), and start and stop.

#include "scheduler/scheduler.h"

#include <algorithm>
#include <ctime>
#include <utility>
#include <vector>

#include "api/time.h"
#include "common/thread.h"
#include "core/actions/reserve.h"
#include "scheduler/scheduler_state.h"

namespace muster::scheduler {
namespace {

// The p-th percentile (nearest rank) of `samples`, which it reorders.
std::chrono::microseconds Percentile(std::vector<std::chrono::microseconds>& samples, double p) {
  if (samples.empty()) return std::chrono::microseconds(0);
  size_t rank = static_cast<size_t>(p * static_cast<double>(samples.size()));
  rank = std::min(rank, samples.size() - 1);
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(rank),
                   samples.end());
  return samples[rank];
}

}  // namespace

// --- the loop ----------------------------------------------------------------------------------

void Scheduler::State::Loop() {
  {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop && !Synced()) cv.wait_for(lock, std::chrono::milliseconds(10));
  }
  Clock::time_point next_period = Clock::now();
  while (true) {
    std::vector<Delta> batch;
    {
      std::unique_lock<std::mutex> lock(mu);
      while (!stop) {
        Clock::time_point now = Clock::now();
        if (now >= next_period) break;
        if (wake && now >= first_wake + options.debounce) break;
        Clock::time_point deadline =
            wake ? std::min(next_period, first_wake + options.debounce) : next_period;
        cv.wait_until(lock, deadline);
      }
      if (stop) return;
      batch.swap(deltas);
      wake = false;
    }
    Clock::time_point start = Clock::now();
    next_period = start + options.period;
    RunCycle(std::move(batch), start);
  }
}

void Scheduler::State::Apply(Delta& d) {
  const std::string key = Key(d.ns, d.name);
  switch (d.kind) {
    case Kind::kPod: {
      std::string job;
      if (d.deleted) {
        job = mirror.RemovePod(d.ns, d.name);
        memo.ForgetPod(key);
      } else {
        memo.SawPod(key, d.resource_version);
        job = mirror.UpsertPod(std::get<api::Pod>(std::move(d.object)));
      }
      if (!job.empty()) dirty_jobs.insert(job);
      if (d.effect.helps == Helps::kEveryone) backoff.ResetAll();
      if (d.effect.helps == Helps::kItsGang && !job.empty()) backoff.Reset(job);
      break;
    }
    case Kind::kNode:
      if (d.deleted) {
        mirror.RemoveNode(d.name);
      } else {
        mirror.UpsertNode(std::get<api::Node>(d.object));
      }
      if (d.effect.helps != Helps::kNobody) backoff.ResetAll();
      break;
    case Kind::kPodGroup:
      if (d.deleted) {
        mirror.RemovePodGroup(d.ns, d.name);
        memo.ForgetPodGroup(key);
      } else {
        memo.SawPodGroup(key, d.resource_version);
        if (d.effect == ChangeEffect{}) {
          mirror.UpsertPodGroupStatus(std::get<api::PodGroup>(d.object));
        } else {
          mirror.UpsertPodGroup(std::get<api::PodGroup>(d.object));
        }
      }
      if (d.effect.helps != Helps::kNobody) backoff.Reset(key);
      break;
    case Kind::kQueue:
      if (d.deleted) {
        mirror.RemoveQueue(d.name);
        memo.queues.erase(d.name);
      } else {
        memo.SawQueue(d.name, d.resource_version);
        mirror.UpsertQueue(std::get<api::Queue>(d.object));
      }
      if (d.effect.helps != Helps::kNobody) backoff.ResetAll();
      break;
    case Kind::kPriorityClass:
      if (d.deleted) {
        mirror.RemovePriorityClass(d.name);
      } else {
        mirror.UpsertPriorityClass(std::get<api::PriorityClass>(d.object));
      }
      if (d.effect.helps != Helps::kNobody) backoff.ResetAll();
      break;
    case Kind::kHyperNode:
      if (d.deleted) {
        mirror.RemoveHyperNode(d.name);
      } else {
        mirror.UpsertHyperNode(std::get<api::HyperNode>(d.object));
      }
      if (d.effect.helps != Helps::kNobody) backoff.ResetAll();
      break;
  }
}

void Scheduler::State::RunCycle(std::vector<Delta> batch, Clock::time_point start) {
  for (Delta& d : batch) Apply(d);
  batch.clear();

  ConfWatcher::Change change = conf.Poll();
  if (!change.message.empty()) Log(change.message);
  if (change.reloaded) {
    backoff.ResetAll();
    std::lock_guard<std::mutex> lock(stats_mu);
    ++stats.conf_reloads;
  }
  if (options.repair_gangs) RepairGangs();
  if (metrics) metrics->BeforeSessions(mirror.cluster(), start);

  Clock::time_point session_start = Clock::now();
  CycleOptions cycle;
  cycle.session_id = fmt::format("{}-{}", session_prefix, ++session_seq);
  cycle.start_node_index = next_start_node;
  cycle.now_unix = static_cast<int64_t>(std::time(nullptr));
  // Strict FIFO waits for its head, and a reservation needs its gang in the session: under
  // allocate's strictOrder no gang is backed off, and with reserveGpus none that would get one.
  const core::AllocateOptions allocate =
      core::AllocateOptionsFromConf(conf.conf()).value_or(core::AllocateOptions{});
  cycle.hold_back = [this, start, allocate](const core::JobInfo& j) {
    if (allocate.strict_order || core::AsksForReservation(mirror.cluster(), j, allocate)) {
      return false;
    }
    return backoff.HeldBack(j.key, start);
  };
  if (metrics) cycle.on_step = metrics->StepTimer();
  core::CycleResult result = scheduler::RunCycle(mirror, conf.conf(), cycle);
  if (metrics) metrics->RecordDeserved(result.queue_deserved);
  next_start_node = cycle.start_node_index;
  Clock::time_point session_end = Clock::now();

  PlanContext context;
  context.source = options.event_source;
  context.now = api::FormatTime(std::chrono::system_clock::now());
  std::set<std::string> placed;
  Bind(result, context, placed);
  context.dirty_jobs.swap(dirty_jobs);
  WriteEstimates(cycle.now_unix, context.dirty_jobs);
  context.estimates = &estimator.Written();
  Write(PlanWrites(result, mirror.cluster(), context, memo));
  UpdateBackoff(result, context, placed, start);
  if (metrics) metrics->CountUnschedulable(result.pod_conditions.size());

  int waiting = 0;
  int unbound = 0;
  const core::Cluster& cluster = mirror.cluster();
  for (int id : cluster.JobIds()) {
    const core::JobInfo& j = cluster.job(id);
    unbound += j.Count(core::TaskStatus::kPending);
    if (!j.pg || IsDefaultSchedulerJob(j)) continue;
    if (j.IsPending() || j.Count(core::TaskStatus::kPending) > 0) ++waiting;
  }
  Clock::time_point end = Clock::now();
  if (metrics) metrics->AfterCycle(mirror.cluster(), waiting, end, end - start);
  const auto cycle_time = std::chrono::duration_cast<std::chrono::microseconds>(end - start);
  const auto session_time =
      std::chrono::duration_cast<std::chrono::microseconds>(session_end - session_start);
  if (recent_cycles.size() < kRecentCycles) {
    recent_cycles.push_back(cycle_time);
    recent_sessions.push_back(session_time);
  } else {
    recent_cycles[recent_next] = cycle_time;
    recent_sessions[recent_next] = session_time;
    recent_next = (recent_next + 1) % kRecentCycles;
  }
  std::vector<std::chrono::microseconds> cycles = recent_cycles, sessions = recent_sessions;
  const auto cycle_p50 = Percentile(cycles, 0.50), cycle_p99 = Percentile(cycles, 0.99);
  const auto session_p50 = Percentile(sessions, 0.50), session_p99 = Percentile(sessions, 0.99);
  std::lock_guard<std::mutex> lock(stats_mu);
  ++stats.cycles;
  stats.last_cycle = cycle_time;
  stats.longest_cycle = std::max(stats.longest_cycle, stats.last_cycle);
  stats.total_cycle_time += stats.last_cycle;
  stats.last_session = session_time;
  stats.cycle_p50 = cycle_p50;
  stats.cycle_p99 = cycle_p99;
  stats.session_p50 = session_p50;
  stats.session_p99 = session_p99;
  stats.gangs_waiting = waiting;
  stats.pods_pending = unbound;
  stats.gangs_backed_off = static_cast<int>(backoff.size());
  stats.estimate_runs = static_cast<uint64_t>(estimator.runs());
}

// --- Scheduler ---------------------------------------------------------------------------------

Scheduler::Scheduler(client::Client& client, SchedulerOptions options)
    : state_(std::make_unique<State>(client, std::move(options))) {}

Scheduler::~Scheduler() { Stop(); }

absl::Status Scheduler::Start() {
  State& s = *state_;
  if (!s.informers.empty()) return absl::FailedPreconditionError("a scheduler starts only once");
  if (absl::Status st = s.conf.Load(); !st.ok()) return st;
  s.Log(fmt::format("scheduling pods of {} with the configuration from {}",
                    fmt::join(s.options.scheduler_names, ", "), s.conf.Source()));
  auto add = [&](const client::Resource& resource, client::InformerHandlers handlers) {
    auto informer = std::make_unique<client::Informer>(s.client, resource);
    informer->AddHandlers(std::move(handlers));
    s.informers.push_back(std::move(informer));
  };
  add(client::Nodes(), s.Handlers<api::Node>(Kind::kNode, api::DecodeNode, NodeChange));
  add(client::PriorityClasses(),
      s.Handlers<api::PriorityClass>(Kind::kPriorityClass, api::DecodePriorityClass,
                                     PriorityClassChange));
  add(client::Queues(), s.Handlers<api::Queue>(Kind::kQueue, api::DecodeQueue, QueueChange));
  // HyperNodes where the scheduler may list them (muster up serves them; a Kubernetes cluster
  // with Volcano's CRDs from before 1.11, or without the RBAC rule, does not let it): without
  // them gangs have no topology to keep to, and an informer that can never list would hold
  // every cycle back.
  // A 429 (Volcano's CRDs applied a moment ago, their storage "(re)initializing") is waited out
  // for a while, not taken for a cluster without HyperNodes.
  if (absl::Status probe = client::ListableWithin(s.client, client::HyperNodes(),
                                                  std::chrono::seconds(30));
      probe.ok()) {
    add(client::HyperNodes(),
        s.Handlers<api::HyperNode>(Kind::kHyperNode, api::DecodeHyperNode, HyperNodeChange));
  } else {
    s.Log(fmt::format("not watching HyperNodes (topology.volcano.sh/v1alpha1), gangs are placed "
                      "without a network topology: {}",
                      std::string(probe.message())));
  }
  add(client::PodGroups(),
      s.Handlers<api::PodGroup>(Kind::kPodGroup, api::DecodePodGroup, PodGroupChange));
  add(client::Pods(), s.Handlers<api::Pod>(Kind::kPod, api::DecodePod, PodChange));
  absl::Status started = s.events.Start();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stop = false;
  }
  for (auto& informer : s.informers) {
    if (started.ok()) started = informer->Start();
  }
  if (started.ok()) started = common::StartThread(s.loop, "the scheduler", [&s] { s.Loop(); });
  if (!started.ok()) Stop();
  return started;
}

void Scheduler::Stop() {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stop = true;
  }
  s.cv.notify_all();
  if (s.loop.joinable()) s.loop.join();
  // Each informer notices its stop within a watch poll; stop them together, not in turn.
  // One that cannot get a thread for that is stopped in turn.
  std::vector<std::thread> stopping;
  for (auto& informer : s.informers) {
    client::Informer* i = informer.get();
    std::thread t;
    if (common::StartThread(t, "stopping an informer", [i] { i->Stop(); }).ok()) {
      stopping.push_back(std::move(t));
    } else {
      i->Stop();
    }
  }
  for (auto& t : stopping) t.join();
  s.events.Stop();
}

bool Scheduler::WaitForSync(std::chrono::milliseconds timeout) const {
  Clock::time_point deadline = Clock::now() + timeout;
  for (const auto& informer : state_->informers) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!informer->WaitForSync(std::max(left, std::chrono::milliseconds(0)))) return false;
  }
  return !state_->informers.empty();
}

SchedulerStats Scheduler::Stats() const {
  SchedulerStats out;
  {
    std::lock_guard<std::mutex> lock(state_->stats_mu);
    out = state_->stats;
  }
  out.events_written = state_->events.written();
  out.events_dropped = state_->events.dropped();
  return out;
}

}  // namespace muster::scheduler
