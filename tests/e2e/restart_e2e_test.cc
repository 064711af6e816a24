// Crash safety of `muster up` as a whole (issue 4, acceptance 3): 100 Volcano Jobs, each a gang of
// 4 pods × 1 GPU, are submitted to a cluster of 20 simulated 8-GPU nodes (40 gangs fit at once),
// and `muster up` is killed with SIGKILL twice while the gangs are being placed: first as soon as
// the test's watch sees a pod bound (the scheduler is then in the middle of its first burst of
// bindings), then once 200 pods have been bound (GPUs freed by finished pods are being handed out
// again). After each kill a bare `muster apiserver` reads the store exactly as the kill
// left it, then `muster up` restarts on the same data directory. A watch on the pods runs across
// the whole run (resumed after each restart from the revision the kill left), and the test
// checks, from the API:
//   - no pod is bound twice: once a pod (by UID) has a node, it keeps it; a finished pod never
//     runs again and a started one is never started afresh;
//   - no gang is partly bound: in the store as each kill left it, every PodGroup has 0 or at least
//     minMember pods bound, and every gang's bindings seen by the watch came in one commit (their
//     resourceVersions are consecutive);
//   - no GPU of a node (annotation muster.dev/gpu-indices) is held by two unfinished pods at once;
//   - every Job ends Completed with its 4 pods Succeeded, and no binding was refused because the
//     pod was already bound.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "e2e_support.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace muster::e2e {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

constexpr int kJobs = 100;
constexpr int kGangSize = 4;
constexpr int kPods = kJobs * kGangSize;
constexpr char kPodsPath[] = "/api/v1/namespaces/default/pods";
constexpr char kJobsPath[] = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs";
constexpr char kPodGroupsPath[] =
    "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups";
constexpr char kEventsPath[] = "/api/v1/namespaces/default/events";

// 160 GPUs for 400 one-GPU pods: the gangs are placed in waves as earlier ones finish.
constexpr char kClusterFile[] = R"(nodePools:
  - name: gpu
    count: 20
    allocatable: {cpu: "32", memory: 128Gi, pods: "110"}
    gpu: {count: 8, model: NVIDIA-A100-SXM4-40GB, memory: 40960Mi}
    runtime: simulated
)";

// Job gang-NNN: kGangSize pods of one GPU each, all needed at once, each running two seconds.
std::string JobJson(int i) {
  json::object gpu_limit{{"limits", json::object{{"nvidia.com/gpu", 1}}}};
  json::object container{{"name", "worker"}, {"image", "busybox"}, {"resources", gpu_limit}};
  json::object pod_template{
      {"metadata", json::object{{"annotations", json::object{{"muster.dev/run-seconds", "2"}}}}},
      {"spec", json::object{{"restartPolicy", "Never"}, {"containers", json::array{container}}}}};
  json::object task{{"name", "worker"}, {"replicas", kGangSize}, {"template", pod_template}};
  json::object job{{"apiVersion", "batch.volcano.sh/v1alpha1"},
                   {"kind", "Job"},
                   {"metadata", json::object{{"name", fmt::format("gang-{:03}", i)}}},
                   {"spec", json::object{{"minAvailable", kGangSize},
                                         {"schedulerName", "volcano"},
                                         {"queue", "default"},
                                         {"tasks", json::array{task}}}}};
  return json::serialize(job);
}

// The value at `path` in `v`; nullptr when absent.
const json::value* At(const json::value& v, std::initializer_list<std::string_view> path) {
  const json::value* at = &v;
  for (std::string_view key : path) {
    if (!at->is_object()) return nullptr;
    at = at->get_object().if_contains(key);
    if (at == nullptr) return nullptr;
  }
  return at;
}

// The string at `path` in `v` ("" when absent or not a string).
std::string Str(const json::value& v, std::initializer_list<std::string_view> path) {
  const json::value* at = At(v, path);
  return at != nullptr && at->is_string() ? std::string(at->get_string()) : "";
}

// The integer at `path` in `v` (0 when absent or not an integer).
int64_t Int(const json::value& v, std::initializer_list<std::string_view> path) {
  const json::value* at = At(v, path);
  if (at == nullptr) return 0;
  return at->is_int64()    ? at->get_int64()
         : at->is_uint64() ? static_cast<int64_t>(at->get_uint64())
                           : 0;
}

bool Terminal(const std::string& phase) { return phase == "Succeeded" || phase == "Failed"; }

// What the checks need of one state of a pod.
struct PodState {
  std::string uid, name, node, phase, start_time, group;
  std::set<int> gpus;
  int64_t revision = 0;
};

PodState ReadPod(const json::value& pod) {
  PodState s;
  s.uid = Str(pod, {"metadata", "uid"});
  s.name = Str(pod, {"metadata", "name"});
  s.node = Str(pod, {"spec", "nodeName"});
  s.phase = Str(pod, {"status", "phase"});
  s.start_time = Str(pod, {"status", "startTime"});
  s.group = Str(pod, {"metadata", "annotations", "scheduling.k8s.io/group-name"});
  s.revision = std::atoll(Str(pod, {"metadata", "resourceVersion"}).c_str());
  std::istringstream gpus(Str(pod, {"metadata", "annotations", "muster.dev/gpu-indices"}));
  for (std::string index; std::getline(gpus, index, ',');) s.gpus.insert(std::atoi(index.c_str()));
  return s;
}

// Every state of every pod seen through watches and full lists, checked as it arrives.
// Thread-safe.
class PodHistory {
 public:
  // One watch event (ADDED, MODIFIED, DELETED), in revision order.
  void Event(std::string_view type, const json::value& object) {
    std::lock_guard lock(mu_);
    PodState pod = ReadPod(object);
    const bool deleted = type == "DELETED";
    CheckTransition(pod, /*from_watch=*/true);
    for (auto& [node, held] : held_) held.erase(pod.uid);
    if (!deleted && Holds(pod)) {
      for (const auto& [other, gpus] : held_[pod.node]) {
        std::vector<int> both;
        std::set_intersection(gpus.begin(), gpus.end(), pod.gpus.begin(), pod.gpus.end(),
                              std::back_inserter(both));
        if (!both.empty()) {
          violations_.push_back(fmt::format(
              "rv {}: pod {} got GPU(s) {} of node {} held by unfinished pod {}", pod.revision,
              pod.name, fmt::join(both, ","), pod.node, pods_[other].name));
        }
      }
      held_[pod.node][pod.uid] = pod.gpus;
    }
    pods_[pod.uid] = std::move(pod);
  }

  // A full list: the state of every pod at one revision.
  void List(const json::array& items) {
    std::lock_guard lock(mu_);
    held_.clear();
    for (const json::value& item : items) {
      PodState pod = ReadPod(item);
      CheckTransition(pod, /*from_watch=*/false);
      if (Holds(pod)) held_[pod.node][pod.uid] = pod.gpus;
      pods_[pod.uid] = std::move(pod);
    }
    for (const auto& [node, held] : held_) {
      std::map<int, std::string> owner;
      for (const auto& [uid, gpus] : held) {
        for (int g : gpus) {
          auto [it, fresh] = owner.emplace(g, pods_[uid].name);
          if (!fresh) {
            violations_.push_back(fmt::format("listed: GPU {} of node {} held by {} and {}", g,
                                              node, it->second, pods_[uid].name));
          }
        }
      }
    }
  }

  int Bound() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(std::count_if(pods_.begin(), pods_.end(),
                                          [](const auto& p) { return !p.second.node.empty(); }));
  }

  std::vector<std::string> Violations() const {
    std::lock_guard lock(mu_);
    return violations_;
  }

  // Gangs whose every binding the watch saw, and those of them whose bindings were not one
  // commit (resourceVersions not consecutive: another write came between them).
  std::pair<int, std::vector<std::string>> GangsBoundInOneCommit() const {
    std::lock_guard lock(mu_);
    int checked = 0;
    std::vector<std::string> split;
    for (const auto& [group, revisions] : bind_revisions_) {
      if (listed_binds_.contains(group) || revisions.size() != static_cast<size_t>(kGangSize)) {
        continue;
      }
      ++checked;
      auto [lo, hi] = std::minmax_element(revisions.begin(), revisions.end());
      if (*hi - *lo != kGangSize - 1) {
        split.push_back(fmt::format("{} bound at revisions {}", group, fmt::join(revisions, ",")));
      }
    }
    return {checked, split};
  }

 private:
  // A pod that holds its GPUs: bound and not finished.
  static bool Holds(const PodState& pod) {
    return !pod.node.empty() && !Terminal(pod.phase) && !pod.gpus.empty();
  }

  void CheckTransition(const PodState& pod, bool from_watch) {
    auto it = pods_.find(pod.uid);
    const PodState* was = it == pods_.end() ? nullptr : &it->second;
    if (was != nullptr && !was->node.empty() && pod.node != was->node) {
      violations_.push_back(fmt::format("rv {}: pod {} (uid {}) was bound to {}, now to \"{}\"",
                                        pod.revision, pod.name, pod.uid, was->node, pod.node));
    }
    if (was != nullptr && Terminal(was->phase) && pod.phase != was->phase) {
      violations_.push_back(fmt::format("rv {}: pod {} was {}, now {}", pod.revision, pod.name,
                                        was->phase, pod.phase));
    }
    if (was != nullptr && !was->start_time.empty() && pod.start_time != was->start_time) {
      violations_.push_back(fmt::format("rv {}: pod {} started at {}, started again at {}",
                                        pod.revision, pod.name, was->start_time, pod.start_time));
    }
    if ((was == nullptr || was->node.empty()) && !pod.node.empty()) {
      if (from_watch) {
        bind_revisions_[pod.group].push_back(pod.revision);
      } else {
        listed_binds_.insert(pod.group);
      }
    }
  }

  mutable std::mutex mu_;
  std::map<std::string, PodState> pods_;                              // by UID
  std::map<std::string, std::map<std::string, std::set<int>>> held_;  // node -> UID -> GPUs
  std::map<std::string, std::vector<int64_t>> bind_revisions_;        // group -> revisions
  std::set<std::string> listed_binds_;  // groups with a binding first seen in a list
  std::vector<std::string> violations_;
};

// Watches the pods of one API server from a revision into a PodHistory until the server goes
// away or Stop(); relists (into the history) when the revision is too old to watch from.
class PodWatcher {
 public:
  PodWatcher(uint16_t port, int64_t from_revision, PodHistory& history)
      : thread_([this, port, from_revision, &history] { Run(port, from_revision, history); }) {}
  ~PodWatcher() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // Waits until the watch ends by itself (the server died), having read every event it sent.
  void Drain() {
    if (thread_.joinable()) thread_.join();
  }
  int relists() const { return relists_; }

 private:
  void Run(uint16_t port, int64_t revision, PodHistory& history) {
    while (!stop_) {
      TestHttpClient client(port);
      if (!client.connected()) return;  // the server is gone
      auto status =
          client.OpenStream(fmt::format("{}?watch=true&resourceVersion={}", kPodsPath, revision));
      if (!status) return;
      bool expired = *status == 410;
      while (!stop_ && !expired && *status == 200) {
        auto line = client.ReadLine(std::chrono::milliseconds(100));
        if (!line) {
          if (!client.connected() || client.stream_ended()) break;
          continue;
        }
        json::value event = json::parse(*line);
        std::string type = Str(event, {"type"});
        if (type == "ERROR") {
          expired = Int(event, {"object", "code"}) == 410;
          if (!expired) ADD_FAILURE() << "watch error: " << *line;
          break;
        }
        if (type == "BOOKMARK") continue;
        const json::value& object = event.at("object");
        revision = std::atoll(Str(object, {"metadata", "resourceVersion"}).c_str());
        history.Event(type, object);
      }
      if (!expired) {
        if (*status != 200 && *status != 410) {
          ADD_FAILURE() << "watch from revision " << revision << ": HTTP " << *status;
          return;
        }
        if (!client.connected()) return;
        continue;  // the stream ended: watch on from the last revision seen
      }
      // Events were lost to the watch: take the whole state instead, then watch from there.
      TestHttpClient lister(port);
      auto list = lister.Send("GET", kPodsPath);
      if (!list || list->status != 200) return;
      json::value parsed = json::parse(list->body);
      history.List(parsed.at("items").as_array());
      revision = std::atoll(Str(parsed, {"metadata", "resourceVersion"}).c_str());
      ++relists_;
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<int> relists_{0};
  std::thread thread_;
};

std::optional<json::value> GetJson(TestHttpClient& client, const std::string& path) {
  auto r = client.Send("GET", path);
  if (!r || r->status != 200) return std::nullopt;
  return json::parse(r->body);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(RestartE2E, SigkillWhileHundredGangsArePlaced) {
  const auto started = Clock::now();
  TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const std::string config = temp.path() + "/cluster.yaml";
  const std::string data = temp.path() + "/data";
  const std::string log = temp.path() + "/up.log";
  std::ofstream(config) << kClusterFile;

  auto up = ServerProcess::StartUp(MusterBinary(), data, config, log);
  ASSERT_TRUE(up.has_value()) << "muster up did not start:\n" << ReadFile(log);
  PodHistory history;
  auto api = std::make_unique<TestHttpClient>(up->port());
  auto pods = GetJson(*api, kPodsPath);
  ASSERT_TRUE(pods.has_value());
  auto watcher = std::make_unique<PodWatcher>(
      up->port(), std::atoll(Str(*pods, {"metadata", "resourceVersion"}).c_str()), history);

  for (int i = 0; i < kJobs; ++i) {
    auto r = api->Send("POST", kJobsPath, JobJson(i));
    ASSERT_TRUE(r.has_value()) << "muster up died:\n" << ReadFile(log);
    ASSERT_EQ(r->status, 201) << r->body;
  }

  // Kill while the gangs are being placed: at the first binding, then once 200 pods are bound.
  for (int min_bound : {1, 200}) {
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (history.Bound() < min_bound && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_GE(history.Bound(), min_bound) << "binding too slow\n" << ReadFile(log);
    int status = up->Kill(SIGKILL);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    watcher->Drain();
    api.reset();

    // The store as the kill left it, read by an API server with nothing else running.
    int64_t kill_revision = 0;
    {
      auto bare = ServerProcess::Start(MusterBinary(), data);
      ASSERT_TRUE(bare.has_value()) << "muster apiserver did not start on the killed data dir";
      TestHttpClient reader(bare->port());
      auto listed = GetJson(reader, kPodsPath);
      auto groups = GetJson(reader, kPodGroupsPath);
      ASSERT_TRUE(listed && groups);
      kill_revision = std::atoll(Str(*listed, {"metadata", "resourceVersion"}).c_str());
      const json::array& items = listed->at("items").as_array();
      history.List(items);
      // Every gang: 0 or at least minMember pods bound. A finished Job's PodGroup is deleted
      // (as Volcano does); its pods still name it, and its minMember was kGangSize.
      std::map<std::string, int64_t> min_member;
      for (const json::value& pg : groups->at("items").as_array()) {
        min_member[Str(pg, {"metadata", "name"})] = Int(pg, {"spec", "minMember"});
      }
      std::map<std::string, int> bound;  // PodGroup -> pods bound
      int bound_total = 0;
      for (const json::value& pod : items) {
        PodState s = ReadPod(pod);
        if (!min_member.contains(s.group)) min_member[s.group] = kGangSize;
        if (s.node.empty()) continue;
        ++bound[s.group];
        ++bound_total;
      }
      for (const auto& [group, min] : min_member) {
        EXPECT_EQ(min, kGangSize) << group;
        auto it = bound.find(group);
        const int n = it == bound.end() ? 0 : it->second;
        EXPECT_TRUE(n == 0 || n >= min)
            << "gang " << group << " partly bound after the kill: " << n << " of " << min;
      }
      std::cout << fmt::format(
          "killed after the watch saw {} pods bound: the store holds {} pods, {} bound, in {} "
          "gangs; {} PodGroups; revision {}\n",
          min_bound, items.size(), bound_total, bound.size(), groups->at("items").as_array().size(),
          kill_revision);
      // Killed while placing: some gangs bound, not all.
      EXPECT_GT(bound_total, 0);
      EXPECT_LT(bound_total, kPods);
      EXPECT_EQ(bare->Kill(SIGTERM), 0) << "the bare API server did not stop cleanly";
    }

    up = ServerProcess::StartUp(MusterBinary(), data, config, log);
    ASSERT_TRUE(up.has_value()) << "muster up did not restart:\n" << ReadFile(log);
    api = std::make_unique<TestHttpClient>(up->port());
    watcher = std::make_unique<PodWatcher>(up->port(), kill_revision, history);
  }

  // Every Job reaches its final phase.
  std::map<std::string, std::string> phases;
  json::value jobs;
  const auto deadline = started + std::chrono::seconds(75);
  while (Clock::now() < deadline) {
    auto listed = GetJson(*api, kJobsPath);
    ASSERT_TRUE(listed.has_value()) << "muster up died:\n" << ReadFile(log);
    jobs = std::move(*listed);
    phases.clear();
    for (const json::value& job : jobs.at("items").as_array()) {
      phases[Str(job, {"metadata", "name"})] = Str(job, {"status", "state", "phase"});
    }
    if (std::all_of(phases.begin(), phases.end(),
                    [](const auto& p) { return p.second == "Completed"; })) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ASSERT_EQ(phases.size(), static_cast<size_t>(kJobs));
  for (const json::value& job : jobs.at("items").as_array()) {
    const std::string name = Str(job, {"metadata", "name"});
    EXPECT_EQ(phases[name], "Completed")
        << name << " status: " << json::serialize(job.at("status"));
    EXPECT_EQ(Int(job, {"status", "succeeded"}), kGangSize) << name;
    EXPECT_EQ(Int(job, {"status", "retryCount"}), 0) << name;
  }

  auto final_pods = GetJson(*api, kPodsPath);
  ASSERT_TRUE(final_pods.has_value());
  std::map<std::string, int> per_job;
  for (const json::value& pod : final_pods->at("items").as_array()) {
    PodState s = ReadPod(pod);
    EXPECT_EQ(s.phase, "Succeeded") << s.name;
    EXPECT_FALSE(s.node.empty()) << s.name;
    EXPECT_EQ(s.gpus.size(), 1u) << s.name;
    ++per_job[Str(pod, {"metadata", "labels", "volcano.sh/job-name"})];
  }
  EXPECT_EQ(per_job.size(), static_cast<size_t>(kJobs));
  for (const auto& [job, n] : per_job) EXPECT_EQ(n, kGangSize) << "pods of job " << job;

  // No binding was refused because the scheduler did not know a pod was bound already.
  auto events = GetJson(*api, kEventsPath);
  ASSERT_TRUE(events.has_value());
  for (const json::value& e : events->at("items").as_array()) {
    EXPECT_EQ(Str(e, {"message"}).find("already assigned"), std::string::npos)
        << Str(e, {"involvedObject", "name"}) << ": " << Str(e, {"message"});
  }

  // A clean stop after two crashes.
  const int relists = watcher->relists();
  int status = up->Kill(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  watcher->Stop();
  history.List(final_pods->at("items").as_array());

  for (const std::string& v : history.Violations()) ADD_FAILURE() << v;
  auto [checked, split] = history.GangsBoundInOneCommit();
  for (const std::string& s : split) ADD_FAILURE() << "gang bound in pieces: " << s;
  // Most gangs were bound while a watch saw every change (not only across a kill).
  EXPECT_GE(checked, kJobs / 2);
  std::cout << fmt::format("{} gangs seen bound in one commit, watch relists {}, {:.1f} s in all\n",
                           checked, relists,
                           std::chrono::duration<double>(Clock::now() - started).count());
  if (HasFailure()) std::cout << "muster up's log:\n" << ReadFile(log);
}

}  // namespace
}  // namespace muster::e2e
